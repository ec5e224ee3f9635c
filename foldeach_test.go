package contextfold

import (
	"fmt"
	"reflect"
	"testing"
)

// FoldBatchEach hands each turn's result, in order and with its position,
// as FoldBatch returns them (the same nodes and entries, already indexed
// steps flagged), and the store it leaves is FoldBatch's.
func TestFoldBatchEachIsFoldBatch(t *testing.T) {
	turns := make([]Turn, 0, 30)
	for i := range 30 {
		turns = append(turns, Turn{StepID: i + 1, Summary: fmt.Sprintf("step %d", i+1), RawContent: fmt.Sprintf("ran go test ./pkg%d: ok\n", i)})
	}
	turns = append(turns, turns[4]) // a step folded twice in one batch
	a, b := newTestStore(t), newTestStore(t)
	if _, err := a.FoldBatch(turns[:10]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.FoldBatch(turns[:10]); err != nil {
		t.Fatal(err)
	}
	want, err := a.FoldBatch(turns)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]*FoldResult, len(turns))
	var order []int
	if err := b.FoldBatchEach(turns, func(i int, r *FoldResult) { got[i] = r; order = append(order, i) }); err != nil {
		t.Fatal(err)
	}
	for i := range order {
		if order[i] != i {
			t.Fatalf("results handed in order %v", order)
		}
	}
	for i := range turns {
		w, g := want[i], got[i]
		if g == nil || w.AlreadyIndexed != g.AlreadyIndexed || (i < 10 || i == 30) != g.AlreadyIndexed {
			t.Fatalf("turn %d: got %+v, want %+v", i, g, w)
		}
		if !reflect.DeepEqual(w.Entry, g.Entry) {
			t.Fatalf("turn %d: entry %+v, want %+v", i, g.Entry, w.Entry)
		}
		if (w.Node == nil) != (g.Node == nil) || (w.Node != nil && !reflect.DeepEqual(w.Node.Doc, g.Node.Doc)) {
			t.Fatalf("turn %d: node differs", i)
		}
	}
	ea, _ := a.Entries()
	eb, _ := b.Entries()
	if len(ea) != 30 || !reflect.DeepEqual(ea, eb) {
		t.Fatalf("indexes differ: %d and %d entries", len(ea), len(eb))
	}
}
