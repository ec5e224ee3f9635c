package matcheval

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// BenchmarkQuestionScan is the ranked scan (match.Scan; nothing is
// hydrated) of the hand-written end-of-session questions
// (testdata/endq-questions.jsonl) on their bundled sessions, each folded
// once: an op is one question's scan, the 80 in turn. "defaults" is
// ranked.DefaultParams; "no-callout" turns rules "a call brings its
// output" (Params.CallOutput) and "an agent's node is its matched lines"
// (Params.FocusAgentOver) off; "no-focusagent" the second only: what the
// rules cost a scan on real agent sessions (FocusAgentOver, 2 by
// default, is set to 2 in "defaults" all the same).
func BenchmarkQuestionScan(b *testing.B) {
	qs, err := LoadQuestions(filepath.Join("testdata", "endq-questions.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	stores := map[string]*contextfold.Store{}
	for i, q := range qs {
		if stores[q.Session] != nil {
			continue
		}
		turns, ok := transcriptTurns(filepath.Join("..", "..", "ingest", "testdata", "transcripts", q.Session))
		if !ok {
			b.Fatalf("%s: not a bundled transcript", q.Session)
		}
		s, err := foldIntoNewStore(filepath.Join(b.TempDir(), fmt.Sprint(i), ".contextfold"), turns)
		if err != nil {
			b.Fatal(err)
		}
		stores[q.Session] = s
	}
	for _, q := range qs { // the ranked indexes built, the stores' files read once
		if _, err := match.Scan(stores[q.Session], q.Q, match.Ranked); err != nil {
			b.Fatal(err)
		}
	}
	for _, set := range []string{"defaults", "no-callout", "no-focusagent"} {
		b.Run(set, func(b *testing.B) {
			p := ranked.DefaultParams()
			p.FocusAgentOver = 2
			switch set {
			case "no-callout":
				p.CallOutput, p.FocusAgentOver = false, 0
			case "no-focusagent":
				p.FocusAgentOver = 0
			}
			match.SetRankedParams(p)
			b.Cleanup(func() { match.SetRankedParams(ranked.DefaultParams()) })
			for i := 0; b.Loop(); i++ {
				q := qs[i%len(qs)]
				if _, err := match.Scan(stores[q.Session], q.Q, match.Ranked); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
