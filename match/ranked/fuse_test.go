package ranked

import (
	"fmt"
	"reflect"
	"testing"
)

// Rule "rank fusion" (Params.Fuse, off by default): a node plain BM25
// ranks within FuseDepth joins the picks even when the ranked scan's
// cut-off left it out, behind the picks both lists agree on; the same
// input gives the same picks.
func TestFuseAddsBM25Ranking(t *testing.T) {
	ix := NewIndex()
	for i := range 30 {
		ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("routine output number %d", i))
	}
	ix.Add(30, "a", 10, "s", "the ledger_sync job failed on a lock timeout in the nightly batch")
	ix.Add(40, "b", 10, "s", "nightly weather report: clear")
	prompt := "why did the ledger_sync job fail in the nightly batch"
	has := func(r *Result, step int) bool {
		for _, p := range r.Picks {
			if p.Step == step {
				return true
			}
		}
		return false
	}
	if r := ix.Scan(prompt, DefaultParams()); has(r, 40) || len(r.Picks) == 0 || r.Picks[0].Step != 30 {
		t.Fatalf("defaults: picks %+v, want 30 first and not 40 (under the cut-off)", r.Picks)
	}
	p := DefaultParams()
	p.Fuse, p.FuseK, p.FuseDepth = 1, 60, 5
	r := ix.Scan(prompt, p)
	if len(r.Picks) < 2 || r.Picks[0].Step != 30 || !has(r, 40) {
		t.Fatalf("fused: picks %+v, want 30 first, then 40", r.Picks)
	}
	if again := ix.Scan(prompt, p); !reflect.DeepEqual(again.Picks, r.Picks) {
		t.Errorf("fused picks differ between two scans: %+v, %+v", r.Picks, again.Picks)
	}
}
