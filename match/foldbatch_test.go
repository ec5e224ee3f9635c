package match_test

import (
	"reflect"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// match.FoldBatch in Ranked mode leaves the store's ranked index refreshed
// with the new nodes analysed from the fold's text, no cold node read back,
// and the index scans as one built from the files; in Exact
// mode it folds the same nodes.
func TestFoldBatchFeedsTheRankedIndex(t *testing.T) {
	turns := contextfold.DemoTurns()
	fed := newStore(t, "")
	if err := match.FoldBatch(fed, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	ix, err := ranked.For(fed)
	if err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.NodesFed != len(turns) || st.NodesRead != 0 {
		t.Fatalf("fed %d, read %d; want %d fed, none read", st.NodesFed, st.NodesRead, len(turns))
	}
	plain := newStore(t, "")
	if err := match.FoldBatch(plain, match.Exact, turns); err != nil {
		t.Fatal(err)
	}
	px, err := ranked.For(plain)
	if err != nil {
		t.Fatal(err)
	}
	if st := px.Stats(); st.NodesFed != 0 || st.NodesRead != len(turns) {
		t.Fatalf("exact mode: fed %d, read %d", st.NodesFed, st.NodesRead)
	}
	ef, _ := fed.Entries()
	ep, _ := plain.Entries()
	if len(ef) != len(turns) || len(ef) != len(ep) {
		t.Fatalf("%d and %d entries for %d turns", len(ef), len(ep), len(turns))
	}
	p := ranked.DefaultParams()
	picks := 0
	for _, tr := range turns {
		q := "what happened with " + tr.Summary
		a, b := ix.Scan(q, p), px.Scan(q, p)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: fed index %+v, built from files %+v", q, a, b)
		}
		picks += len(a.Picks)
	}
	if picks == 0 {
		t.Fatal("no scan picked anything: the comparison proves nothing")
	}
}
