package ranked

import (
	"fmt"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
)

// BenchmarkScanAfterFold is a proxy's turn on a store whose ranked index
// was opened from its snapshot (3,000 generated nodes of 0.5–4 KB): a
// fold of one node (Index.Add, not timed), then a scan (timed). A fold's
// terms are the common ones of every prompt, so what a fold does to the
// scan's cached posting lists and per-doc tables is what the scan after
// it costs.
func BenchmarkScanAfterFold(b *testing.B) {
	g := testgen.New(31)
	ix, err := decodeSnapshot(generatedSnapshot(b, g, 3000))
	if err != nil {
		b.Fatal(err)
	}
	p := DefaultParams()
	for i := range 20 {
		ix.Scan(g.Prompt(i), p) // the common terms' lists cached, as in a running process
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		tn := g.Turn(3000 + i)
		ix.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
		b.StartTimer()
		ix.Scan(g.Prompt(i%20), p)
	}
}

// generatedSnapshot returns the snapshot bytes of an index of n generated
// agent nodes of g.
func generatedSnapshot(tb testing.TB, g testgen.Gen, n int) []byte {
	mem := NewIndex()
	addTurns(mem, g.Turns(0, n), "")
	return encoded(tb, mem)
}
