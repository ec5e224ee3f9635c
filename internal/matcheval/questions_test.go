package matcheval

import (
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold"
)

// parsedTranscripts memoizes transcriptTurns by path for the questions'
// checks, which ask about the same few dozen bundled transcripts some 600
// times: parsing them again for each question was 95% of the test's time
// (minutes under the race detector). Callers only read the turns. Safe for
// concurrent use.
var parsedTranscripts struct {
	sync.Mutex
	m map[string]parsedTranscript
}

type parsedTranscript struct {
	turns []contextfold.Turn
	ok    bool
}

// cachedTranscriptTurns is transcriptTurns(path), parsed once per test
// binary.
func cachedTranscriptTurns(path string) ([]contextfold.Turn, bool) {
	parsedTranscripts.Lock()
	defer parsedTranscripts.Unlock()
	if p, ok := parsedTranscripts.m[path]; ok {
		return p.turns, p.ok
	}
	if parsedTranscripts.m == nil {
		parsedTranscripts.m = map[string]parsedTranscript{}
	}
	turns, ok := transcriptTurns(path)
	parsedTranscripts.m[path] = parsedTranscript{turns, ok}
	return turns, ok
}

// The hand-written end-of-session questions (testdata/endq-questions.jsonl,
// run by `cfeval questions`, and the held-out set endq-heldout.jsonl and the
// fresh set endq-fresh.jsonl, the fourth set endq-fourth.jsonl, the fifth
// set endq-fifth.jsonl, the sixth set endq-sixth.jsonl, the seventh set
// endq-seventh.jsonl, the eighth set endq-eighth.jsonl, the ninth set
// endq-ninth.jsonl, the tenth set endq-tenth.jsonl and the eleventh set
// endq-eleventh.jsonl, run by `cfeval questions -q`) stay answerable: every
// session is a bundled transcript, every answer is text of a turn older than
// the session's last ten (folded out of the prompt by then), and the output
// step named holds it. The held-out set uses no session of the first; the
// fresh, fourth, fifth, sixth, seventh, eighth, ninth, tenth and eleventh
// sets, each written apart from the others, cover every bundled session. The
// fifth, sixth, seventh, eighth, ninth, tenth and eleventh sets' answers are
// whole lines of an output turn in the first half of its session.
func TestEndOfSessionQuestionsAnswerable(t *testing.T) {
	tuned := map[string]bool{}
	for _, f := range []struct {
		name string
		min  int
	}{{"endq-questions.jsonl", 60}, {"endq-heldout.jsonl", 40}, {"endq-fresh.jsonl", 60}, {"endq-fourth.jsonl", 60}, {"endq-fifth.jsonl", 70}, {"endq-sixth.jsonl", 70}, {"endq-seventh.jsonl", 70}, {"endq-eighth.jsonl", 70}, {"endq-ninth.jsonl", 70}, {"endq-tenth.jsonl", 70}, {"endq-eleventh.jsonl", 70}} {
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
				} else if f.name == "endq-heldout.jsonl" && tuned[q.Session] {
					t.Errorf("%s: held-out question %q on a session of endq-questions.jsonl", q.Session, q.Q)
				}
			}
			checkAnswerable(t, qs)
			if f.name == "endq-fresh.jsonl" || f.name == "endq-fourth.jsonl" || f.name == "endq-fifth.jsonl" || f.name == "endq-sixth.jsonl" || f.name == "endq-seventh.jsonl" || f.name == "endq-eighth.jsonl" || f.name == "endq-ninth.jsonl" || f.name == "endq-tenth.jsonl" || f.name == "endq-eleventh.jsonl" {
				checkFreshSet(t, qs)
			}
			if f.name == "endq-fifth.jsonl" || f.name == "endq-sixth.jsonl" || f.name == "endq-seventh.jsonl" || f.name == "endq-eighth.jsonl" || f.name == "endq-ninth.jsonl" || f.name == "endq-tenth.jsonl" || f.name == "endq-eleventh.jsonl" {
				checkWholeLineFirstHalf(t, qs)
			}
		})
	}
}

// checkFreshSet: the fresh (or fourth) set asks about every bundled transcript, and
// each question's class is "natural", "vague" or a needle class.
func checkFreshSet(t *testing.T, qs []Question) {
	classes := map[string]bool{"natural": true, "vague": true}
	for _, c := range NeedleClasses {
		classes[c.Name] = true
	}
	asked := map[string]bool{}
	for _, q := range qs {
		asked[q.Session] = true
		if !classes[q.Class] {
			t.Errorf("%s %q: class %q is not natural, vague or a needle class", q.Session, q.Q, q.Class)
		}
	}
	root := filepath.Join("..", "..", "ingest", "testdata", "transcripts")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if !asked[filepath.ToSlash(rel)] {
			t.Errorf("%s: no fresh question on this bundled transcript", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkWholeLineFirstHalf: each question names an output step in the first
// half of its session, and its answer is one whole line of that step's
// payload (leading and trailing white space aside).
func checkWholeLineFirstHalf(t *testing.T, qs []Question) {
	for _, q := range qs {
		turns, ok := cachedTranscriptTurns(filepath.Join("..", "..", "ingest", "testdata", "transcripts", q.Session))
		if !ok {
			t.Fatalf("%s: not a bundled transcript", q.Session)
		}
		if q.Output < 0 || q.Output >= len(turns)/2 {
			t.Errorf("%s %q: output step %d is not in the first half of %d turns", q.Session, q.Q, q.Output, len(turns))
			continue
		}
		whole := false
		for _, line := range strings.Split(turns[q.Output].RawContent, "\n") {
			if strings.TrimSpace(line) == q.Answer {
				whole = true
				break
			}
		}
		if !whole {
			t.Errorf("%s %q: %q is not a whole line of step %d", q.Session, q.Q, q.Answer, q.Output)
		}
	}
}

func checkAnswerable(t *testing.T, qs []Question) {
	turnsOf := map[string][]string{}
	for _, q := range qs {
		texts, ok := turnsOf[q.Session]
		if !ok {
			turns, ok := cachedTranscriptTurns(filepath.Join("..", "..", "ingest", "testdata", "transcripts", q.Session))
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

// MisspellQuestions misspells exactly one plain word of a question by one
// edit, never the token it quotes, and the same questions give the same
// misspellings.
func TestMisspellQuestions(t *testing.T) {
	qs := []Question{
		{Q: "what did the reproduction script print for `pottery_classes`?"},
		{Q: `where is "DECL(pattern);" defined in parser.c?`},
		{Q: "why did it fail?"}, // no word of five letters
	}
	a, b := MisspellQuestions(qs), MisspellQuestions(qs)
	for i := range qs {
		if a[i].Q != b[i].Q {
			t.Fatalf("not deterministic: %q / %q", a[i].Q, b[i].Q)
		}
		was, now := strings.Split(qs[i].Q, " "), strings.Split(a[i].Q, " ")
		if len(was) != len(now) {
			t.Fatalf("%q → %q: words added or lost", qs[i].Q, a[i].Q)
		}
		changed := 0
		for j := range was {
			if was[j] == now[j] {
				continue
			}
			changed++
			if strings.ContainsAny(was[j], "`\"") {
				t.Errorf("%q → %q: the quoted token changed", qs[i].Q, a[i].Q)
			}
			if d := len(was[j]) - len(now[j]); d < -1 || d > 1 {
				t.Errorf("%q → %q: more than one edit", was[j], now[j])
			}
		}
		want := 1
		if i == 2 {
			want = 0
		}
		if changed != want {
			t.Errorf("%q → %q: %d words changed, want %d", qs[i].Q, a[i].Q, changed, want)
		}
	}
}
