package contextfold_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
)

// TestSnapshotScanMatchesPlainScan: on realistic turns (Zipf vocabulary, so
// many query terms are held by most nodes), scan and recall over a mapped
// index snapshot — dense-term signatures, newest-first visits with early
// stop — give exactly the results of the plain in-memory index.
func TestSnapshotScanMatchesPlainScan(t *testing.T) {
	g := testgen.New(7)
	turns := g.SmallTurns(0, 1500)
	opts := contextfold.Options{Scrub: contextfold.ScrubOff}
	plain, _ := contextfold.Open(filepath.Join(t.TempDir(), "plain"), opts)
	if _, err := plain.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	restore := contextfold.SetLargeStoreModeForTest()
	defer restore()
	dir := filepath.Join(t.TempDir(), "big")
	big, _ := contextfold.Open(dir, opts)
	if _, err := big.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	fresh, _ := contextfold.Open(dir, opts) // maps the snapshot
	for i := 0; i < 300; i++ {
		q := g.Prompt(i)
		if i%3 == 0 {
			q = g.Query(i)
		}
		ws, _ := plain.Scan(q)
		gs, err := fresh.Scan(q)
		if err != nil || !reflect.DeepEqual(ws, gs) {
			t.Fatalf("scan %q: %v\nplain    %+v\nsnapshot %+v", q, err, ws.Selected, gs.Selected)
		}
		wr, _ := plain.Recall(q)
		gr, _ := fresh.Recall(q)
		if !reflect.DeepEqual(wr, gr) {
			t.Fatalf("recall %q differs", q)
		}
	}
}
