package match_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// BenchmarkTypedChatScan is the cost of rule "a question is answered by
// its type" on a store-backed chat of 3,000 turns: a where-question, whose
// best 32 chat candidates are read back from their cold nodes, with the
// rule (AnswerType at its default) and without it (AnswerType 0).
func BenchmarkTypedChatScan(b *testing.B) {
	dir := filepath.Join(b.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		b.Fatal(err)
	}
	places := []string{"the beach", "a shelter", "the park", "my hometown", "the mountains"}
	var turns []contextfold.Turn
	for i := range 3000 {
		who := []string{"Caroline", "Melanie"}[i%2]
		text := fmt.Sprintf("%s: we talked about camping trip number %d with the kids, it was fun", who, i)
		if i%7 == 0 {
			text = fmt.Sprintf("%s: we went camping at %s last time, trip %d", who, places[i%len(places)], i)
		}
		turns = append(turns, contextfold.Turn{StepID: i, Summary: text[:min(100, len(text))], RawContent: text})
	}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		b.Fatal(err)
	}
	const q = "Where did Melanie go camping with the kids?"
	for _, c := range []struct {
		name string
		w    float64
	}{{"rule", ranked.DefaultParams().AnswerType}, {"off", 0}} {
		b.Run(c.name, func(b *testing.B) {
			p := ranked.DefaultParams()
			p.AnswerType = c.w
			match.SetRankedParams(p)
			defer match.SetRankedParams(ranked.DefaultParams())
			if _, err := match.Scan(s, q, match.Ranked); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := match.Scan(s, q, match.Ranked); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
