"""Differential oracle for internal/extract: the spec §4 patterns run by
Python's own `re` module (written from the spec text, not from any
implementation). Reads a JSON list of texts on stdin, writes a JSON list of
{"identifiers","files","commands","errors","fold"} on stdout."""
import json, re, sys, unicodedata

FILES = re.compile(r'(?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+|[\w.-]+\.(?:py|js|ts|json|md|sql|sh|yml|yaml|html|css|rs|go|cs)')
COMMANDS = re.compile(r'^\s*(?:\$|>)\s*([a-zA-Z0-9_.-]+(?:\s+[^;\n\r]+)?)', re.MULTILINE)
ERRORS = re.compile(r'\b(?:[A-Z][a-zA-Z0-9]+Error|[A-Z][a-zA-Z0-9]+Exception|FATAL|PANIC|Traceback)\b|HTTP\s+[45]\d{2}|\b[A-Z]{2,}_[A-Z0-9_]+_ERROR\b')
IDENTS = re.compile(r'\b[^\W\d]\w{2,}\b|\b[0-9]{3,}\b')
STOP = """and the for with this that from are was were will can has had have
what which how did you all any not but we is it on at to of in do be or an as if by so no up my
ve ile için olan bir bu şu daha gibi kadar diye veya ya ama fakat lakin çünkü böyle
nasıl neden ne hangi var yok şey mi mu mü mı""".split()

def fold(s):
    s = unicodedata.normalize('NFC', s.lower())
    return s.replace('\u0307', '').replace('\u0131', 'i')

STOPSET = set(STOP) | {fold(w) for w in STOP}

def run(text):
    ids = sorted({fold(m.group(0)) for m in IDENTS.finditer(text)} - STOPSET)
    files = sorted({m.group(0).replace('\\', '/') for m in FILES.finditer(text)})
    cmds = sorted({c for c in (m.group(1).strip() for m in COMMANDS.finditer(text)) if c})
    errs = sorted({m.group(0) for m in ERRORS.finditer(text)})
    return {"identifiers": ids, "files": files, "commands": cmds, "errors": errs, "fold": fold(text)}

texts = json.load(sys.stdin)
json.dump([run(t) for t in texts], sys.stdout, ensure_ascii=True)
