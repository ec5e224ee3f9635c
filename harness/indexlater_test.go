package harness

import (
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// A fold event on a request that does not end with the human prompt leaves
// the ranked index's refresh to later (Dispatch.IndexLater): whether
// RefreshIndex then runs beside the next dispatch, never runs, or the index
// is refreshed at once (no OverlapDurability), every request forwards the
// same messages and hydrates the same nodes. A request that ends with the
// prompt (it may scan after its fold) never leaves it. Run with -race.
func TestFoldEventIndexLaterSameScan(t *testing.T) {
	clock := func() time.Time { return time.Unix(1772445600, 0) }
	open := func(overlap bool) *Harness {
		dir := filepath.Join(t.TempDir(), "store")
		s, err := contextfold.Open(dir, contextfold.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return New(s, Config{ContextBudget: 9000, Match: match.Ranked, OverlapDurability: overlap})
	}
	eager, refreshed, lazy := open(false), open(true), open(true)
	var wg sync.WaitGroup
	later, hydrated := 0, 0
	for steps := 4; steps <= 90; steps += 2 {
		conv := aheadConv(steps)
		de, err := eager.DispatchRequest(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		dr, err := refreshed.DispatchRequest(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		dl, err := lazy.DispatchRequest(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []*Dispatch{dr, dl} {
			if err := d.WaitDurable(); err != nil {
				t.Fatal(err)
			}
		}
		if de.IndexLater() {
			t.Fatalf("%d steps: a dispatch without OverlapDurability left its index for later", steps)
		}
		if dr.IndexLater() != dl.IndexLater() {
			t.Fatalf("%d steps: the same request left its index for later in one store only", steps)
		}
		if dr.IndexLater() {
			later++
			if promptIsLatest(conv, dr.PromptIndex) {
				t.Fatalf("%d steps: a request ending with the prompt left its index for later", steps)
			}
			wg.Add(1)
			go func() { defer wg.Done(); dr.RefreshIndex() }() // beside the next dispatch
		}
		want := de.Apply(conv)
		for name, d := range map[string]*Dispatch{"refreshed later": dr, "never refreshed": dl} {
			if !reflect.DeepEqual(d.Apply(conv), want) {
				t.Fatalf("%d steps: the forwarded messages differ when the index is %s", steps, name)
			}
			if !reflect.DeepEqual(d.Hydrated, de.Hydrated) || !reflect.DeepEqual(d.WorkingSet, de.WorkingSet) {
				t.Fatalf("%d steps: hydrated %v / %v, want %v (index %s)", steps, stepsOf(d.Hydrated), d.WorkingSet, stepsOf(de.Hydrated), name)
			}
		}
		hydrated += len(de.Hydrated)
	}
	wg.Wait()
	if later == 0 || hydrated == 0 {
		t.Fatalf("%d fold events left their index for later, %d nodes hydrated: the test shows nothing", later, hydrated)
	}
}

func stepsOf(ns []HydratedNode) []int {
	var out []int
	for _, n := range ns {
		out = append(out, n.StepID)
	}
	return out
}
