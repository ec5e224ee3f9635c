package ranked

import (
	"fmt"
	"reflect"
	"testing"
)

// The companion rule ("conversation structure") admits a neighbour whose
// lent score is over the cut-off. At the defaults (Neighbour = Ratio) a
// neighbour of the best pick holding none of its words lends exactly the
// cut-off: it is never a companion, whatever the rounding of the two sums
// (before, about a third of such neighbours passed by one ulp). With
// Neighbour over Ratio it is.
func TestCompanionCutOffExact(t *testing.T) {
	topics := []string{"ledger_sync lock timeout", "invoice rounding drift", "cache eviction storm",
		"replica lag spike", "token refresh loop", "schema migration stall", "webhook retry burst",
		"quota exhaustion alert", "disk pressure warning", "dns resolution flake"}
	more := DefaultParams()
	more.Neighbour = 2 * more.Ratio
	for k, topic := range topics {
		for filler := 5; filler <= 40; filler += 5 {
			ix := NewIndex()
			for i := range filler {
				ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("routine output number %d", i))
			}
			ix.Add(filler, "x", 10, "s", fmt.Sprintf("the %s happened in stage %d", topic, k))
			ix.Add(filler+1, "y", 4, "s", "noted, moving on")
			prompt := "what happened with the " + topic
			r := ix.Scan(prompt, DefaultParams())
			if len(r.Picks) == 0 || r.Picks[0].Step != filler {
				t.Fatalf("%q, %d filler nodes: picks %+v", topic, filler, r.Picks)
			}
			for _, p := range r.Picks {
				if p.IsCompanion {
					t.Errorf("%q, %d filler nodes: neighbour %d holding no prompt word is a companion (score %v)", topic, filler, p.Step, p.Score)
				}
			}
			comp := 0
			for _, p := range ix.Scan(prompt, more).Picks {
				if p.IsCompanion {
					comp++
				}
			}
			if comp != 2 {
				t.Errorf("%q, %d filler nodes, Neighbour %v: %d companions, want 2 (the nodes either side)", topic, filler, more.Neighbour, comp)
			}
		}
	}
}

// Rule "long turns are not over-penalised" (Params.Delta, BM25+): several
// chat messages sent as one hold two of the prompt's words; a short
// message holds one of them. Plain BM25's length normalisation ranks a
// short one first; with the lower bound the long message, which holds
// more of what is asked, is first.
func TestDeltaLongMessage(t *testing.T) {
	build := func() *Index {
		ix := NewIndex()
		for i := range 40 {
			ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("Ana: routine chat %d about the garden, weather, lunch", i))
		}
		for i := range 3 { // apart: no topic context between them
			ix.Add(100+10*i, fmt.Sprint(100+i), 10, "s", fmt.Sprintf("Ben: guitar practice again %d", i))
			ix.Add(200+10*i, fmt.Sprint(200+i), 10, "s", fmt.Sprintf("Ben: lessons start soon %d", i))
		}
		ix.Add(50, "short", 10, "s", "Ben: my guitar")
		ix.Add(60, "long", 60, "s", "Ana: so much happened this week, the kids were sick, "+
			"the car broke down twice, work was a mess, my sister visited from abroad with her dog, "+
			"we painted the fence and repaired the roof, and I finally booked guitar lessons with a teacher downtown")
		return ix
	}
	const q = "what about the guitar lessons?"
	first := func(p Params) int {
		r := build().Scan(q, p)
		if len(r.Picks) == 0 {
			t.Fatalf("Delta %v: no picks", p.Delta)
		}
		return r.Picks[0].Step
	}
	plain, plus := DefaultParams(), DefaultParams()
	plain.Delta, plus.Delta = 0, 0.5
	if got := first(plain); got == 60 {
		t.Fatalf("plain BM25 ranks the long message first, want a short one (the test needs the length penalty)")
	}
	if got := first(plus); got != 60 {
		t.Errorf("BM25+ ranks %d first, want the long message 60 holding both words", got)
	}
	// Determinism: the same store and prompt give the same result, bit for
	// bit, from a fresh index.
	if a, b := build().Scan(q, plus), build().Scan(q, plus); !reflect.DeepEqual(a, b) {
		t.Errorf("two scans differ:\n%+v\n%+v", a, b)
	}
}

// Rule "a chat's topic admits" holds a reply whose topic context is the
// best match two turns before it (context Context2 × its score, the
// cut-off Ratio × the same score: equal at the defaults) whatever the
// scorer's constants do to the rounding of the two.
func TestChatTopicAdmitsAnyRounding(t *testing.T) {
	const q = "Which band played at the jazz concert for the birthday?"
	for _, delta := range []float64{0, 0.25, 0.5, 0.75, 1} {
		for _, k1 := range []float64{1, 1.2, 1.5} {
			ix := NewIndex()
			add := func(step int, who, text string) {
				ix.Add(step, fmt.Sprint(step), 10, who+": "+text, who+": "+text)
			}
			for i := range 60 {
				add(i, []string{"Ana", "Ben"}[i%2], fmt.Sprintf("routine chat number %d about the garden and the weather", i))
			}
			for i, w := range []string{"music", "music", "band", "band", "band"} {
				add(60+i, "Ana", "the "+w+" was loud")
			}
			add(70, "Ana", "we went to the jazz concert for the birthday with the kids")
			add(71, "Ben", "wow, nice!")
			add(72, "Ana", "the band was great, music all night")
			p := DefaultParams()
			p.Delta, p.K1 = delta, k1
			found := false
			for _, pk := range ix.Scan(q, p).Picks {
				found = found || pk.Step == 72
			}
			if !found {
				t.Errorf("Delta %v, K1 %v: the band reply (72) is not picked", delta, k1)
			}
		}
	}
}
