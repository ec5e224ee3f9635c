package match

import (
	"fmt"
	"testing"

	"github.com/contextfold/contextfold"
)

// A step the ranked scan selects (a neighbour pick included) is not also
// listed below the cut-off: each step is in one list only.
func TestExplainRankedListsEachStepOnce(t *testing.T) {
	s, err := contextfold.Open(t.TempDir(), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, sum := range []string{"PostgreSQL port reverted to 5433", "Redis cache warmed in 2.1s", "the ledger test failed on rounding"} {
		if _, err := s.Fold(contextfold.Turn{StepID: i + 1, Summary: sum}); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := ExplainRanked(s, "What port is PostgreSQL on?")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Result.Selected) == 0 {
		t.Fatal("nothing selected")
	}
	seen := map[int]string{}
	for _, l := range []struct {
		name  string
		picks []contextfold.ScanPick
	}{{"selected", ex.Result.Selected}, {"dropped", ex.Result.Dropped}, {"cut_off", ex.CutOff}, {"superseded", ex.Superseded}} {
		for _, p := range l.picks {
			if prev, ok := seen[p.StepID]; ok {
				t.Errorf("step %d is in %s and %s", p.StepID, prev, l.name)
			}
			seen[p.StepID] = l.name
		}
	}
	t.Log(fmt.Sprint(seen))
}
