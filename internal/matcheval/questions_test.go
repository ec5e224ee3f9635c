package matcheval

import (
	"path/filepath"
	"strings"
	"testing"
)

// The hand-written end-of-session questions (testdata/endq-questions.jsonl,
// run by `cfeval questions`, and the held-out set endq-heldout.jsonl, run
// by `cfeval questions -q`) stay answerable: every session is a bundled
// transcript, every answer is text of a turn older than the session's
// last ten (folded out of the prompt by then), and the output step named
// holds it. The held-out set uses no session of the other.
func TestEndOfSessionQuestionsAnswerable(t *testing.T) {
	tuned := map[string]bool{}
	for _, f := range []struct {
		name string
		min  int
	}{{"endq-questions.jsonl", 60}, {"endq-heldout.jsonl", 40}} {
		t.Run(f.name, func(t *testing.T) {
			qs, err := LoadQuestions(filepath.Join("testdata", f.name))
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) < f.min {
				t.Fatalf("%d questions, want at least %d", len(qs), f.min)
			}
			for _, q := range qs {
				if f.name == "endq-questions.jsonl" {
					tuned[q.Session] = true
				} else if tuned[q.Session] {
					t.Errorf("%s: held-out question %q on a session of endq-questions.jsonl", q.Session, q.Q)
				}
			}
			checkAnswerable(t, qs)
		})
	}
}

func checkAnswerable(t *testing.T, qs []Question) {
	turnsOf := map[string][]string{}
	for _, q := range qs {
		texts, ok := turnsOf[q.Session]
		if !ok {
			turns, ok := transcriptTurns(filepath.Join("..", "..", "ingest", "testdata", "transcripts", q.Session))
			if !ok {
				t.Fatalf("%s: not a bundled transcript", q.Session)
			}
			texts = make([]string, 0, len(turns))
			for _, tn := range turns {
				texts = append(texts, tn.RawContent)
			}
			turnsOf[q.Session] = texts
		}
		first := -1
		for i, text := range texts {
			if q.answeredBy(text) {
				first = i
				break
			}
		}
		switch {
		case first < 0:
			t.Errorf("%s %q: no turn holds the answer %q", q.Session, q.Q, q.Answer)
		case first >= len(texts)-10:
			t.Errorf("%s %q: the answer is first held at turn %d, one of the last ten", q.Session, q.Q, first)
		case q.Output >= 0 && (q.Output >= len(texts) || !strings.Contains(texts[q.Output], q.Answer)):
			t.Errorf("%s %q: the output step %d does not hold %q", q.Session, q.Q, q.Output, q.Answer)
		}
	}
}
