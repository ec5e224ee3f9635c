package matcheval

import (
	"path/filepath"
	"strings"
	"testing"
)

// The hand-written end-of-session questions (testdata/endq-questions.jsonl,
// run by `cfeval questions`) stay answerable: every session is a bundled
// transcript, every answer is text of a turn older than the session's
// last ten (folded out of the prompt by then), and the output step named
// holds it.
func TestEndOfSessionQuestionsAnswerable(t *testing.T) {
	qs, err := LoadQuestions(filepath.Join("testdata", "endq-questions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 60 {
		t.Fatalf("%d questions, want at least 60", len(qs))
	}
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
