package matcheval

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// NeedleClass is a kind of token a user quotes when asking about an old
// turn: one with punctuation or inner structure that a word tokenizer
// splits.
type NeedleClass struct {
	Name string
	RE   *regexp.Regexp
}

// NeedleClasses are the token classes of the needle probes, most specific
// first (a token is classed by the first class whose expression matches it
// whole).
var NeedleClasses = []NeedleClass{
	{"url", regexp.MustCompile(`(?:https?://)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?::\d+)?/[A-Za-z0-9_./%~-]*[A-Za-z0-9_]`)},
	{"email", regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`)},
	{"timestamp", regexp.MustCompile(`\d{2}:\d{2}:\d{2}(?:[.,]\d+)?Z?|\d{2}\.\d{4,}Z`)},
	{"version", regexp.MustCompile(`v?\d+\.\d+\.\d+(?:[.-][0-9A-Za-z]+)*`)},
	{"hash", regexp.MustCompile(`[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*`)},
	{"decimal", regexp.MustCompile(`\d+\.\d+`)},
	{"path", regexp.MustCompile(`[A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)+\.[A-Za-z0-9]+|[A-Za-z0-9_-]+\.(?:py|go|js|ts|json|toml|yaml|yml|cfg|txt|md|rst|c|h|rs|java|sh)`)},
	{"slash", regexp.MustCompile(`[A-Za-z][A-Za-z0-9_-]*/[A-Za-z][A-Za-z0-9_-]*`)},
	{"snake", regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+`)},
	{"camel", regexp.MustCompile(`[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*`)},
	{"kebab", regexp.MustCompile(`[a-z][a-z0-9]*(?:-[a-z0-9]+)+`)},
	{"quoted", regexp.MustCompile(`"[A-Za-z][^"\n]{8,40}"|'[A-Za-z][^'\n]{8,40}'`)},
}

// needleCandidateRE finds the tokens of a text the needle classes judge:
// maximal runs of characters that occur inside such tokens, and quoted
// strings.
var needleCandidateRE = regexp.MustCompile(`"[A-Za-z][^"\n]{8,40}"|'[A-Za-z][^'\n]{8,40}'|[A-Za-z0-9_./:@%~+-]+`)

// needleClass returns the class of token tok (matched whole), or "".
func needleClass(tok string) string {
	for _, c := range NeedleClasses {
		if loc := c.RE.FindStringIndex(tok); loc != nil && loc[0] == 0 && loc[1] == len(tok) {
			return c.Name
		}
	}
	return ""
}

// needleTemplates are the questions a user returning to an old problem
// asks, quoting the token.
var needleTemplates = []string{
	"Going back to the start of this: what did we find about %s?",
	"Earlier you looked at %s. What exactly did it show?",
	"Remind me what the output said for %s.",
	"Where did %s come from, and what was around it?",
}

// maxNeedleTurns: a needle occurs in at most this many turns of the
// session ("once or a few times").
const maxNeedleTurns = 3

// GenerateNeedleProbes asks, at the end of a session, about its first half
// (the turns a working set has folded): for each turn of the first half,
// at most one probe per needle class, quoting a token of that class that at
// most maxNeedleTurns turns of the session hold (case-insensitive) and
// that is at least 5 bytes long; the token is chosen by a hash of the
// session, step and class. The answer is the line holding the token in the
// probe's turn (Answer), and the lines holding it in the other turns that
// hold it (Also): any of them reaching the model answers. Deterministic.
func GenerateNeedleProbes(session string, turns []contextfold.Turn) []Probe {
	if len(turns) < 8 {
		return nil
	}
	texts := make([]string, len(turns))
	for i, t := range turns {
		texts[i] = strings.ToLower(t.Summary + "\n" + t.RawContent)
	}
	var out []Probe
	for i, t := range turns[:len(turns)/2] {
		byClass := map[string][]string{}
		seen := map[string]bool{}
		for _, loc := range needleCandidateRE.FindAllStringIndex(t.RawContent, -1) {
			tok := t.RawContent[loc[0]:loc[1]]
			if tok[0] == '"' || tok[0] == '\'' {
				// A quoted string stands alone: no letter right before
				// its opening quote ("it's") or right after its closing one.
				if loc[0] > 0 && isIdentByte(t.RawContent[loc[0]-1]) || loc[1] < len(t.RawContent) && isIdentByte(t.RawContent[loc[1]]) {
					continue
				}
			} else {
				tok = strings.TrimRight(strings.TrimLeft(tok, ".:/-+"), ".:/-+")
			}
			if len(tok) < 5 || len(tok) > 80 || seen[tok] {
				continue
			}
			seen[tok] = true
			class := needleClass(tok)
			if class == "" {
				continue
			}
			if class == "quoted" {
				tok = tok[1 : len(tok)-1] // the question quotes it; the archive may not
			}
			lower, n := strings.ToLower(tok), 0
			for _, other := range texts {
				if strings.Contains(other, lower) {
					n++
				}
			}
			if n == 0 || n > maxNeedleTurns || !strings.Contains(texts[i], lower) {
				continue
			}
			byClass[class] = append(byClass[class], tok)
		}
		for _, c := range NeedleClasses {
			cands := byClass[c.Name]
			if len(cands) == 0 {
				continue
			}
			h := fnv.New32a()
			fmt.Fprintf(h, "%s/%d/%s", session, t.StepID, c.Name)
			tok := cands[int(h.Sum32()%uint32(len(cands)))]
			q := "`" + tok + "`"
			if c.Name == "quoted" {
				q = `"` + tok + `"`
			}
			p := Probe{Session: session, Step: t.StepID, Identifier: tok, Class: c.Name,
				Question: fmt.Sprintf(needleTemplates[int(h.Sum32()/7)%len(needleTemplates)], q),
				Answer:   answerLine(t.RawContent, tok)}
			lower := strings.ToLower(tok)
			for j, other := range turns {
				if j != i && strings.Contains(texts[j], lower) {
					if k := strings.Index(other.RawContent, tok); k >= 0 {
						p.Also = append(p.Also, answerLine(other.RawContent, tok))
					}
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// RunNeedleProbes ingests every transcript under dir (each into a new
// store under tmp, every turn folded), asks GenerateNeedleProbes' questions
// at the end of each session in both modes, and scores a probe a hit when
// its answer line is in what the scan hydrates (each node hydrated as the
// mode does, within the store's default policy). perSession > 0 keeps that
// many probes per session (spread evenly, deterministic).
func RunNeedleProbes(dir, tmp string, perSession int) (*ProbeReport, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), ".md") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	rep := &ProbeReport{Results: map[match.Mode][]ProbeResult{}, Nulls: map[match.Mode]map[string]int{}}
	for i, f := range files {
		turns, ok := transcriptTurns(f)
		if !ok {
			continue // not a transcript, or an empty one
		}
		probes := GenerateNeedleProbes(filepath.Base(f), turns)
		if perSession > 0 && len(probes) > perSession {
			kept := make([]Probe, 0, perSession)
			for k := 0; k < perSession; k++ {
				kept = append(kept, probes[k*len(probes)/perSession])
			}
			probes = kept
		}
		if len(probes) == 0 {
			continue
		}
		sdir := filepath.Join(tmp, fmt.Sprintf("corpus-%d", i), ".contextfold")
		s, err := foldIntoNewStore(sdir, turns)
		if err != nil {
			return nil, err
		}
		rep.Sessions++
		rep.Probes += len(probes)
		for _, m := range []match.Mode{match.Exact, match.Ranked} {
			for _, p := range probes {
				content, tokens, picked, err := Hydrated(s, p.Question, m)
				if err != nil {
					return nil, err
				}
				rep.Results[m] = append(rep.Results[m], ProbeResult{Probe: p, Hit: p.answeredBy(content), Tokens: tokens, Picked: picked})
			}
			if rep.Nulls[m] == nil {
				rep.Nulls[m] = map[string]int{}
			}
			for _, q := range NullPrompts {
				_, tokens, _, err := Hydrated(s, q, m)
				if err != nil {
					return nil, err
				}
				rep.Nulls[m][q] += tokens
			}
		}
		if err := os.RemoveAll(filepath.Dir(sdir)); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// answeredBy reports whether content holds the probe's answer line or one
// of its Also lines.
func (p *Probe) answeredBy(content string) bool {
	if strings.Contains(content, p.Answer) {
		return true
	}
	for _, a := range p.Also {
		if strings.Contains(content, a) {
			return true
		}
	}
	return false
}
