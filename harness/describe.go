package harness

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/mdfence"
	"github.com/contextfold/contextfold/internal/progress"
)

// Format-aware reading of a turn, for folded-step records and page-table
// lines: what an agent's observation formats say about the command, its exit
// status, its first error line and the files it touched. The recall index
// keeps the reference extraction (spec §4) for matching; these functions only
// shape what the harness writes into the prompt.

// commandFor returns the command message i answers: its own, or for a tool
// output that follows an assistant message without a structured tool call
// (mini-swe-agent, SWE-agent), the first fenced shell block of that message.
func commandFor(conv []Message, i int) string {
	m := conv[i]
	if m.Command != "" || i == 0 {
		return m.Command
	}
	if m.Role != RoleTool && m.Role != RoleUser {
		return ""
	}
	prev := conv[i-1]
	if prev.Role != RoleAssistant || prev.Command != "" {
		return ""
	}
	for _, p := range prev.Parts {
		if c, ok := mdfence.FirstShellBlock(p.Text); ok {
			return c
		}
	}
	return ""
}

// observation is what a tool output says, read format by format.
type observation struct {
	body     string // the output proper (tags and prefixes removed)
	exit     string // the exit status when the output records one
	failed   bool
	editedIn []string // files an edit block (Aider SEARCH/REPLACE) touched
}

var (
	exitCodeRe = regexp.MustCompile(`(?i)(?:<returncode>\s*(-?[0-9]+)\s*</returncode>|\[Command finished with exit code (-?[0-9]+)\]|exit (?:code|status)[: ]+(-?[0-9]+))`)
	tagLineRe  = regexp.MustCompile(`</?[A-Za-z_][\w-]{0,40}>`)
	errName    = regexp.MustCompile(`\b[A-Z]\w*(?:Error|Exception)\b|\bE\s{2,}\S`)
)

// readObservation reads the formats of the agents ingest knows:
// mini-swe-agent (<returncode>, <output>), SWE-agent ("Observation:"),
// OpenHands ("[Command finished with exit code N]"), Aider edit blocks.
func readObservation(text string) observation {
	o := observation{body: text}
	t := strings.TrimSpace(text)
	t = strings.TrimPrefix(t, "Observation:")
	if mayHaveExitCode(t) { // else exitCodeRe cannot match
		if m := exitCodeRe.FindStringSubmatch(t); m != nil {
			o.exit = m[1] + m[2] + m[3]
			o.failed = strings.Trim(o.exit, "0") != ""
		}
	}
	if out, ok := between(t, "<output>", "</output>"); ok {
		t = out
	} else if i := strings.Index(t, "</returncode>"); i >= 0 {
		t = t[i+len("</returncode>"):]
	}
	o.body = strings.TrimSpace(t)
	o.editedIn = aiderEditFiles(text)
	return o
}

func between(s, open, close string) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return rest, true
	}
	return rest[:j], true
}

// aiderEditFiles returns the files of Aider SEARCH/REPLACE blocks: the line
// naming the file precedes the fence that opens the block.
func aiderEditFiles(text string) []string {
	if !strings.Contains(text, "<<<<<<< SEARCH") {
		return nil
	}
	lines := strings.Split(text, "\n")
	var out []string
	for k, l := range lines {
		if strings.TrimSpace(l) != "<<<<<<< SEARCH" {
			continue
		}
		j := k - 1
		if j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
			j--
		}
		if j >= 0 {
			if f := strings.Trim(strings.TrimSpace(lines[j]), "`*"); looksLikeFile(f) {
				out = appendUnique(out, f)
			}
		}
	}
	return out
}

// noiseLine reports a line that says nothing about what happened: a
// progress meter, a banner or separator, a bare tag.
func noiseLine(l string) bool {
	if strings.ContainsRune(l, '\r') {
		return true // a terminal progress meter redraws itself
	}
	t := strings.TrimSpace(stripTags(l))
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") && !strings.ContainsAny(t, ":.") && len(strings.Fields(t)) <= 4 {
		return true // a label line: "[tool observation execute_bash]", "[tool_result id=toolu_01]"
	}
	letters := 0
	for _, r := range t {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			letters++
		}
	}
	if letters < 3 {
		return true
	}
	for _, c := range []string{"===", "---", "***", "###", "~~~"} {
		if strings.HasPrefix(t, c) && strings.HasSuffix(t, c) {
			return true // a banner: "===== test session starts ====="
		}
	}
	if progress.Line(t) {
		return true // curl's progress meter ("% Total % Received % Xferd …") and its rows, wget's dots
	}
	if strings.Contains(t, "%|") || strings.Contains(t, "━━") || strings.Contains(t, "██") || strings.Contains(t, "[####") || strings.Contains(t, "=====>") {
		return true // tqdm, rich, pip progress bars
	}
	return false
}

// describeLine returns the line a record leads with: the first error line
// of a failed output, else the first line that is not noise.
func describeLine(text string, failed bool) string {
	lines := strings.Split(text, "\n")
	if failed {
		for _, l := range lines {
			if (errLine.MatchString(l) || errName.MatchString(l)) && !noiseLine(l) {
				if c := clean(stripTags(l)); c != "" {
					return c
				}
			}
		}
	}
	for _, l := range lines {
		if noiseLine(l) {
			continue
		}
		if c := clean(stripTags(l)); len(strings.Trim(c, "-=*#`>~_ ")) >= 3 {
			return c
		}
	}
	// No line says more: the first short line of one or two letters or
	// digits ("('x', [], ['2'])", "OK", "3") is still what the command
	// printed; ingest's summary shows it, and "no output" would say it
	// printed nothing.
	for _, l := range lines {
		if c := clean(stripTags(l)); shortLine(l, c) {
			return c
		}
	}
	return ""
}

// shortLine reports a line that noiseLine rejects only for holding fewer
// than three letters or digits: one or two, no carriage return, no
// progress bar.
func shortLine(l, c string) bool {
	if strings.ContainsRune(l, '\r') || strings.Contains(c, "%|") || strings.Contains(c, "━━") || strings.Contains(c, "██") {
		return false
	}
	n := 0
	for _, r := range c {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n > 0 && n < 3
}

// knownExt lists the extensions of files a record may name.
var knownExt = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`go py pyi rs rst md markdown txt js mjs cjs ts tsx jsx json jsonl yaml yml toml cfg ini conf
		c h cc cpp cxx hpp hh java kt kts rb php cs swift m mm sh bash zsh fish ps1 sql html htm css scss sass less vue svelte
		lock mod sum xml proto gradle mk cmake ipynb r lua pl pm ex exs erl hs scala dart tf tfvars env csv tsv
		gitignore dockerignore editorconfig patch diff log out svg`) {
		knownExt[e] = true
	}
}

var bareFiles = map[string]bool{"Makefile": true, "Dockerfile": true, "Gemfile": true, "Rakefile": true,
	"Procfile": true, "Justfile": true, "LICENSE": true, "CHANGELOG": true}

// looksLikeFile reports whether tok is a file path: a known extension after
// a non-empty name, or a well-known extensionless name; never a URL, a
// number, an address or an option.
func looksLikeFile(tok string) bool {
	if tok == "" || len(tok) > 200 || strings.Contains(tok, "://") || strings.HasPrefix(tok, "-") {
		return false
	}
	base := tok
	if i := strings.LastIndexByte(tok, '/'); i >= 0 {
		base = tok[i+1:]
	}
	if bareFiles[base] {
		return true
	}
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 && !(dot == 0 && knownExt[base[1:]] && len(base) > 1) {
		return false
	}
	if !knownExt[strings.ToLower(base[dot+1:])] {
		return false
	}
	for _, r := range tok {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-/@+~", r)) {
			return false
		}
	}
	// Not a dotted number or address (1.2.3.go is no file either).
	digits := true
	for _, r := range base[:max(dot, 0)] {
		if !unicode.IsDigit(r) && r != '.' {
			digits = false
		}
	}
	return !digits
}

// fileDelims are the ASCII characters that end a token of filesIn: white
// space and the punctuation around a path in prose, code and shell.
var fileDelims = func() (t [utf8.RuneSelf]bool) {
	for _, c := range " \t\n\v\f\r\"'`()[]{}<>,;|=*&!?" {
		t[c] = true
	}
	return t
}()

// isFileDelim reports whether r ends a token of filesIn: white space
// (unicode.IsSpace) or one of fileDelims' punctuation.
func isFileDelim(r rune) bool {
	if r < utf8.RuneSelf {
		return fileDelims[r]
	}
	return unicode.IsSpace(r)
}

// filesIn returns the file paths of text in order of first appearance: whole
// tokens between delimiters, never a piece of a longer name.
func filesIn(text string, limit int) []string {
	var out []string
	// FieldsFuncSeq: the same tokens without a slice of every word of the
	// text (a tenth of what a large first request allocated).
	for tok := range strings.FieldsFuncSeq(text, isFileDelim) {
		if len(out) >= limit {
			break
		}
		for tok != "" && (tok[len(tok)-1] == '.' || tok[len(tok)-1] == ':') {
			tok = tok[:len(tok)-1] // strings.TrimRight(tok, ".:") without its cutset setup
		}
		if i := strings.IndexByte(tok, ':'); i > 0 {
			tok = tok[:i] // path:line:col
		}
		tok = strings.TrimPrefix(tok, "./")
		if strings.HasPrefix(tok, "a/") || strings.HasPrefix(tok, "b/") {
			tok = tok[2:] // diff --git a/x b/x
		}
		if looksLikeFile(tok) {
			out = appendUnique(out, tok)
		}
	}
	return out
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// targetFiles returns the files a turn touched, for its record: edit-block
// files first, then files of its command, then of its text.
func targetFiles(command, payload string) []string {
	o := readObservation(payload)
	out := append([]string{}, o.editedIn...)
	for _, f := range filesIn(command, maxTargetFiles) {
		out = appendUnique(out, f)
	}
	head := payload
	if len(head) > 16<<10 {
		head = head[:16<<10]
	}
	for _, f := range filesIn(head, 4*maxTargetFiles) {
		if len(out) >= maxTargetFiles {
			break
		}
		out = appendUnique(out, f)
	}
	if len(out) > maxTargetFiles {
		out = out[:maxTargetFiles]
	}
	return out
}
