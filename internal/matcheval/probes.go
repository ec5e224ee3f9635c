package matcheval

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/match"
)

// Probe is one question about an old turn of an agent session.
type Probe struct {
	Session    string
	Step       int
	Identifier string // the distinctive identifier the question names
	Question   string
	Answer     string // the text of the line holding the identifier (at most 160 code points around it)
	// Class is the needle class of Identifier (NeedleClasses), "" for the
	// identifier probes of GenerateProbes.
	Class string
	// Also are the lines holding Identifier in the other turns that hold
	// it (needle probes): any of them reaching the model answers.
	Also []string
}

// ProbeResult is how one mode answered one probe.
type ProbeResult struct {
	Probe
	Hit    bool
	Tokens int   // hydrated tokens (what would be injected)
	Picked []int // steps hydrated
}

// ProbeReport summarises a probe run per mode.
type ProbeReport struct {
	Sessions int
	Probes   int
	Results  map[match.Mode][]ProbeResult
	// Nulls: tokens hydrated per mode for prompts that ask about nothing in
	// the archive, summed over sessions.
	Nulls map[match.Mode]map[string]int
}

// NullPrompts ask about nothing in any archive: filler, and requests for new
// work unrelated to the sessions.
var NullPrompts = []string{
	"thanks, go on",
	"ok",
	"looks good, please continue",
	"great, what's next?",
	"now write the README",
	"write a haiku about autumn leaves",
	"gracias, sigue",
	"teşekkürler, devam et",
	"谢谢，继续",
}

// identifierRE finds the kinds of identifiers a user names when asking
// about an earlier turn: paths and dotted names, snake_case and camelCase
// identifiers, error and exception names, numbers with a decimal point or
// a unit.
var identifierRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z0-9_-]+)+|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+|[A-Z][a-z]+[A-Z][A-Za-z0-9]+|[A-Z][A-Za-z]*(?:Error|Exception)\b|\b\d+\.\d+(?:ms|s|%)?`)

var questionTemplates = []string{
	"What exactly did the earlier output say about %s?",
	"Earlier there was something about %s - what did it say?",
	"Remind me what we saw for `%s` before.",
	"Why did %s come up earlier?",
}

// GenerateProbes makes at most one probe per old turn of a session (every
// turn but the last four): among the identifiers of the turn's payload that
// no other turn of the session contains (ignoring case), one chosen by a hash of the step;
// the answer is the line that holds it. Deterministic.
func GenerateProbes(session string, turns []contextfold.Turn) []Probe {
	if len(turns) <= 4 {
		return nil
	}
	texts := make([]string, len(turns))
	for i, t := range turns {
		texts[i] = strings.ToLower(t.Summary + "\n" + t.RawContent)
	}
	var out []Probe
	for i, t := range turns[:len(turns)-4] {
		var cands []string
		seen := map[string]bool{}
		for _, loc := range identifierRE.FindAllStringIndex(t.RawContent, -1) {
			// Whole tokens only: not the tail of 0001_accounts.sql.
			if loc[0] > 0 && isIdentByte(t.RawContent[loc[0]-1]) || loc[1] < len(t.RawContent) && isIdentByte(t.RawContent[loc[1]]) {
				continue
			}
			m := strings.Trim(t.RawContent[loc[0]:loc[1]], "./-")
			if len(m) < 5 || seen[m] {
				continue
			}
			seen[m] = true
			unique := true
			for j, other := range texts {
				if j != i && strings.Contains(other, strings.ToLower(m)) {
					unique = false
					break
				}
			}
			if unique {
				cands = append(cands, m)
			}
		}
		if len(cands) == 0 {
			continue
		}
		h := fnv.New32a()
		fmt.Fprintf(h, "%s/%d", session, t.StepID)
		id := cands[int(h.Sum32()%uint32(len(cands)))]
		out = append(out, Probe{Session: session, Step: t.StepID, Identifier: id,
			Question: fmt.Sprintf(questionTemplates[int(h.Sum32()/7)%len(questionTemplates)], id),
			Answer:   answerLine(t.RawContent, id)})
	}
	return out
}

// answerLine is the line of content holding id, trimmed, cut to at most 80
// code points on either side of id.
func answerLine(content, id string) string {
	i := strings.Index(content, id)
	start := strings.LastIndexByte(content[:i], '\n') + 1
	end := strings.IndexByte(content[i:], '\n')
	if end < 0 {
		end = len(content)
	} else {
		end += i
	}
	before, after := content[start:i], content[i+len(id):end]
	if r := []rune(before); len(r) > 80 {
		before = string(r[len(r)-80:])
	}
	if r := []rune(after); len(r) > 80 {
		after = string(r[:80])
	}
	return strings.TrimSpace(before + id + after)
}

// RunProbes ingests every transcript under dir (each into a new store under
// tmp), generates its probes, and answers each probe and each null prompt
// in both modes: hydrated content is what the scan selects, each node
// hydrated as the mode does (ranked: focused).
func RunProbes(dir, tmp string) (*ProbeReport, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "corpus" && p != dir {
			return filepath.SkipDir // the wider corpus is its own probe set
		}
		if !d.IsDir() && !strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".chat.history.md") {
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	rep := &ProbeReport{Results: map[match.Mode][]ProbeResult{}, Nulls: map[match.Mode]map[string]int{}}
	for i, f := range files {
		turns, ok := transcriptTurns(f)
		if !ok {
			continue // not a transcript, or an empty one
		}
		s, err := foldIntoNewStore(filepath.Join(tmp, fmt.Sprintf("session-%d", i), ".contextfold"), turns)
		if err != nil {
			return nil, err
		}
		rep.Sessions++
		name, _ := filepath.Rel(dir, f)
		probes := GenerateProbes(name, turns)
		rep.Probes += len(probes)
		for _, m := range []match.Mode{match.Exact, match.Ranked} {
			for _, p := range probes {
				content, tokens, picked, err := Hydrated(s, p.Question, m)
				if err != nil {
					return nil, err
				}
				rep.Results[m] = append(rep.Results[m], ProbeResult{Probe: p, Hit: strings.Contains(content, p.Answer), Tokens: tokens, Picked: picked})
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
	}
	return rep, nil
}

// Hydrated returns what the MMU would inject for a prompt in a mode: the
// content of every selected node, hydrated as the mode does, and its
// tokens.
func Hydrated(s *contextfold.Store, prompt string, m match.Mode) (string, int, []int, error) {
	res, err := match.Scan(s, prompt, m)
	if err != nil {
		return "", 0, nil, err
	}
	var b strings.Builder
	tokens := 0
	var picked []int
	for _, p := range res.Selected {
		h, err := match.Hydrate(s, p.StepID, prompt, m)
		if err != nil {
			return "", 0, nil, err
		}
		b.WriteString(h.Content)
		b.WriteByte('\n')
		tokens += h.TokenEstimate
		picked = append(picked, p.StepID)
	}
	return b.String(), tokens, picked, nil
}

// Format renders the report.
func (r *ProbeReport) Format(verbose bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent-session probes: %d sessions, %d probes\n\n", r.Sessions, r.Probes)
	b.WriteString("| mode | hits | mean hydrated tokens per probe | tokens for the null prompts |\n|---|---|---|---|\n")
	for _, m := range []match.Mode{match.Exact, match.Ranked} {
		hits, tok := 0, 0
		for _, x := range r.Results[m] {
			if x.Hit {
				hits++
			}
			tok += x.Tokens
		}
		null := 0
		for _, t := range r.Nulls[m] {
			null += t
		}
		fmt.Fprintf(&b, "| %s | %d / %d (%.1f %%) | %.0f | %d |\n", m, hits, len(r.Results[m]), 100*float64(hits)/float64(max(1, len(r.Results[m]))), float64(tok)/float64(max(1, len(r.Results[m]))), null)
	}
	classes := map[string]bool{}
	for _, x := range r.Results[match.Ranked] {
		if x.Class != "" {
			classes[x.Class] = true
		}
	}
	if len(classes) > 0 {
		b.WriteString("\n| class | probes | exact hits | ranked hits |\n|---|---|---|---|\n")
		for _, c := range NeedleClasses {
			if !classes[c.Name] {
				continue
			}
			n, hits := 0, map[match.Mode]int{}
			for _, m := range []match.Mode{match.Exact, match.Ranked} {
				for _, x := range r.Results[m] {
					if x.Class == c.Name {
						if m == match.Ranked {
							n++
						}
						if x.Hit {
							hits[m]++
						}
					}
				}
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", c.Name, n, hits[match.Exact], hits[match.Ranked])
		}
	}
	for _, m := range []match.Mode{match.Exact, match.Ranked} {
		var ps []string
		for q, t := range r.Nulls[m] {
			if t > 0 {
				ps = append(ps, fmt.Sprintf("%q: %d", q, t))
			}
		}
		sort.Strings(ps)
		if len(ps) > 0 {
			fmt.Fprintf(&b, "\n%s: null prompts that hydrated something: %s\n", m, strings.Join(ps, ", "))
		}
	}
	if verbose {
		b.WriteString("\nranked misses:\n")
		for _, x := range r.Results[match.Ranked] {
			if !x.Hit {
				fmt.Fprintf(&b, "  %s step %d %s: %q picked %v; answer %q\n", x.Session, x.Step, x.Class, x.Question, x.Picked, clip(x.Answer, 100))
			}
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// transcriptTurns parses a transcript file (any format ingest knows) into
// the turns a store folds; ok is false for a file that is not a transcript
// or holds no turn.
func transcriptTurns(path string) (turns []contextfold.Turn, ok bool) {
	res, err := ingest.ParseFile(path, ingest.FormatAuto)
	if err != nil {
		return nil, false
	}
	for _, t := range res.Turns {
		turns = append(turns, contextfold.Turn{StepID: t.StepID, Summary: t.Summary, RawContent: t.Payload, SessionID: t.SessionID})
	}
	return turns, len(turns) > 0
}

// foldIntoNewStore opens a new directory store at dir (scrubbing off: the
// evaluation reads the transcripts as they are) and folds turns in one
// batch.
func foldIntoNewStore(dir string, turns []contextfold.Turn) (*contextfold.Store, error) {
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		return nil, err
	}
	if _, err := s.FoldBatch(turns); err != nil {
		return nil, err
	}
	return s, nil
}
