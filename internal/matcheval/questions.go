package matcheval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// Question is one hand-written end-of-session question about the first
// half of an agent session: what a user returning to an old problem asks.
// Questions are read from a JSON-lines file, one object a line (blank lines
// and lines starting with # are skipped).
type Question struct {
	// Session is the transcript's path, relative to the directory the
	// questions are run against.
	Session string `json:"session"`
	// Class is the needle class of the token the question quotes
	// (NeedleClasses' names), or "natural" for a question in plain words.
	Class string `json:"class"`
	Q     string `json:"q"`
	// Answer is text of the line that answers: the question is a hit when
	// the hydrated content holds it (case kept).
	Answer string `json:"answer"`
	// Also are other texts that answer as well (the assistant restating the
	// output): any of them hydrated is a hit.
	Also []string `json:"also,omitempty"`
	// Output is the step that holds the fullest evidence (the tool output),
	// or -1 when no one step does: the scan should put it first.
	Output int `json:"output"`
}

// QuestionResult is how the ranked scan answered one Question.
type QuestionResult struct {
	Question
	Hit    bool
	Tokens int   // hydrated tokens
	Picked []int // steps hydrated, in pick order
	// Holders are the steps whose payload holds Answer.
	Holders []int
	// OutputFirst: the first pick is the Output step (when Output >= 0).
	OutputFirst bool
	// Cause classes a miss by the stage of the ranked scan that lost the
	// answer: "focus window" (a holder hydrated, its window without the
	// line), "budget" (a holder dropped), "cut-off", "intent ownership"
	// (superseded), "not ranked" (no holder a candidate), "not in archive".
	Cause string
	// Needle: the first pick was made by rule "exact needles".
	Needle bool
}

// LoadQuestions reads a JSON-lines question file.
func LoadQuestions(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Question
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		q := Question{Output: -1}
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, q)
	}
	return out, sc.Err()
}

// MisspellQuestions returns the questions with one word of each misspelt,
// as a user typing fast does: a plain word of five lower-case letters or
// more (a–z, outside quotes and backquotes: never the token a question
// quotes), drawn by a generator seeded with the question's index, gets
// one edit of the noisy chat set's kind (two inner letters swapped, an
// inner letter dropped, or one doubled). A question with no such word is
// unchanged. The same questions give the same misspellings.
func MisspellQuestions(qs []Question) []Question {
	out := make([]Question, len(qs))
	for i, q := range qs {
		r := rand.New(rand.NewPCG(uint64(i), 0x7e11_0b5e))
		words := strings.Split(q.Q, " ")
		var plain []int
		quoted := false
		for j, w := range words {
			opens := strings.Count(w, "`") + strings.Count(w, `"`)
			core, _ := trimTail(w)
			if !quoted && opens == 0 && len(core) >= 5 && strings.Trim(core, "abcdefghijklmnopqrstuvwxyz") == "" {
				plain = append(plain, j)
			}
			if opens%2 == 1 {
				quoted = !quoted
			}
		}
		if len(plain) > 0 {
			j := plain[r.IntN(len(plain))]
			core, tail := trimTail(words[j])
			words[j] = string(misspell([]rune(core), r)) + tail
			q.Q = strings.Join(words, " ")
		}
		out[i] = q
	}
	return out
}

// RunQuestions folds each session the questions name (every turn, into a
// new store under tmp, scrubbing off) and asks its questions with the
// ranked scan, hydrating each pick as the proxy does.
func RunQuestions(qs []Question, dir, tmp string) ([]QuestionResult, error) {
	bySession := map[string][]Question{}
	var sessions []string
	for _, q := range qs {
		if bySession[q.Session] == nil {
			sessions = append(sessions, q.Session)
		}
		bySession[q.Session] = append(bySession[q.Session], q)
	}
	var out []QuestionResult
	for i, name := range sessions {
		turns, ok := transcriptTurns(filepath.Join(dir, name))
		if !ok {
			return nil, fmt.Errorf("%s: not a transcript", name)
		}
		s, err := foldIntoNewStore(filepath.Join(tmp, fmt.Sprintf("q-%d", i), ".contextfold"), turns)
		if err != nil {
			return nil, err
		}
		for _, q := range bySession[name] {
			r := QuestionResult{Question: q}
			for _, t := range turns {
				if q.answeredBy(t.RawContent) {
					r.Holders = append(r.Holders, t.StepID)
				}
			}
			ex, err := match.ExplainRanked(s, q.Q)
			if err != nil {
				return nil, err
			}
			holder := map[int]bool{}
			for _, h := range r.Holders {
				holder[h] = true
			}
			focusedAway := false
			for k, p := range ex.Result.Selected {
				h, err := match.Hydrate(s, p.StepID, q.Q, match.Ranked)
				if err != nil {
					return nil, err
				}
				r.Tokens += h.TokenEstimate
				r.Picked = append(r.Picked, p.StepID)
				if q.answeredBy(h.Content) {
					r.Hit = true
				} else if holder[p.StepID] {
					focusedAway = true
				}
				if k == 0 {
					r.OutputFirst = p.StepID == q.Output
					for _, w := range p.Why {
						if strings.Contains(w, `rule "exact needles"`) {
							r.Needle = true
						}
					}
				}
			}
			if !r.Hit {
				r.Cause = missCause(r.Holders, focusedAway, ex)
			}
			out = append(out, r)
		}
		if err := os.RemoveAll(filepath.Dir(s.Dir())); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func missCause(holders []int, focusedAway bool, ex *match.Explain) string {
	if len(holders) == 0 {
		return "not in archive"
	}
	if focusedAway {
		return "focus window"
	}
	in := func(ps []contextfold.ScanPick) bool {
		for _, p := range ps {
			for _, h := range holders {
				if p.StepID == h {
					return true
				}
			}
		}
		return false
	}
	switch {
	case in(ex.Result.Dropped):
		return "budget"
	case in(ex.CutOff):
		return "cut-off"
	case in(ex.Superseded):
		return "intent ownership"
	}
	return "not ranked"
}

// FormatQuestionsTotal renders the summary line of FormatQuestions alone:
// the results of several sets together (cfeval questions -q with a glob).
func FormatQuestionsTotal(rs []QuestionResult) string {
	var all tally
	for _, r := range rs {
		all.add(r)
	}
	return all.summary()
}

// summary is FormatQuestions' first line for the results t counts.
func (t *tally) summary() string {
	return fmt.Sprintf("end-of-session questions: %d, answer line hydrated %d (%.1f %%), output first %d / %d, %.0f tokens a question\n",
		t.n, t.hits, 100*float64(t.hits)/float64(max(1, t.n)), t.out, t.outOf, float64(t.tokens)/float64(max(1, t.n)))
}

// FormatQuestions renders the results: hits per class and per session, the
// output-first rate, and every miss with its cause.
func FormatQuestions(rs []QuestionResult, verbose bool) string {
	var b strings.Builder
	byClass, bySession := map[string]*tally{}, map[string]*tally{}
	var all tally
	add := func(m map[string]*tally, k string, r QuestionResult) {
		t := m[k]
		if t == nil {
			t = &tally{}
			m[k] = t
		}
		t.add(r)
	}
	for _, r := range rs {
		add(byClass, r.Class, r)
		add(bySession, r.Session, r)
		all.add(r)
	}
	b.WriteString(all.summary())
	table := func(title string, m map[string]*tally) {
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n| %s | questions | hits | output first | tokens a question |\n|---|---|---|---|---|\n", title)
		for _, k := range keys {
			t := m[k]
			fmt.Fprintf(&b, "| %s | %d | %d | %d / %d | %.0f |\n", k, t.n, t.hits, t.out, t.outOf, float64(t.tokens)/float64(max(1, t.n)))
		}
	}
	table("class", byClass)
	table("session", bySession)
	b.WriteString("\nmisses:\n")
	for _, r := range rs {
		if !r.Hit {
			fmt.Fprintf(&b, "  %s [%s] %q: %s; picked %v, answer in %v\n", r.Session, r.Class, r.Q, r.Cause, r.Picked, r.Holders)
		}
	}
	b.WriteString("\noutput not first:\n")
	for _, r := range rs {
		if r.Output >= 0 && !r.OutputFirst {
			fmt.Fprintf(&b, "  %s [%s] %q: picked %v, output %d, answer in %v\n", r.Session, r.Class, r.Q, r.Picked, r.Output, r.Holders)
		}
	}
	if verbose {
		b.WriteString("\nall:\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "  %v %s [%s] %q: picked %v needle=%v tokens %d, answer in %v\n", r.Hit, r.Session, r.Class, r.Q, r.Picked, r.Needle, r.Tokens, r.Holders)
		}
	}
	return b.String()
}

func (q *Question) answeredBy(content string) bool {
	if strings.Contains(content, q.Answer) {
		return true
	}
	for _, a := range q.Also {
		if strings.Contains(content, a) {
			return true
		}
	}
	return false
}

// tally counts questions, hits, outputs put first (of those with an
// output node) and hydrated tokens, for the questions report.
type tally struct{ n, hits, out, outOf, tokens int }

func (t *tally) add(r QuestionResult) {
	t.n++
	t.tokens += r.Tokens
	if r.Hit {
		t.hits++
	}
	if r.Output >= 0 {
		t.outOf++
		if r.OutputFirst {
			t.out++
		}
	}
}
