package match_test

import (
	"slices"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
)

// Rule "a first asks for the oldest" (ranked.Params.FirstAsks): a rerun's
// output updates the first run's (intent ownership: the newer node holds
// every prompt word the older holds, and they share repro_check.py), so a
// question about the run hydrates the rerun only; a question about the
// first run also hydrates the first run, which holds its answer. Before,
// both hydrated the rerun only (the end-of-session questions of `cfeval
// questions`: "what did the first reproduction print for Logistic?").
func TestFirstAsksForTheOldest(t *testing.T) {
	s := newStore(t, "")
	turns := testgen.New(9).SmallTurns(0, 60)
	turns[10] = contextfold.Turn{StepID: 10, Summary: "tool bash $ python repro_check.py: repro script run",
		RawContent: "[tool observation bash]\nrepro script run (repro_check.py): dagum result TIMEOUT\n"}
	turns[30] = contextfold.Turn{StepID: 30, Summary: "tool bash $ python repro_check.py: repro script run",
		RawContent: "[tool observation bash]\nrepro script run (repro_check.py): dagum result 0.25\n"}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	for prompt, wantOld := range map[string]bool{
		"what did the repro script run print for dagum?":            false,
		"what did the first repro script run print for dagum?":      true,
		"what did the repro script run print for dagum originally?": true,
	} {
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := steps(res.Selected)
		if !slices.Contains(got, 30) || slices.Contains(got, 10) != wantOld {
			t.Errorf("%q: hydrated %v, want 30 and (%v) the first run 10", prompt, got, wantOld)
		}
	}
}
