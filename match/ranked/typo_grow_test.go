package ranked

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
)

// A large snapshot's filter built beside the scans has room for the terms
// folded since it was opened (a long-running proxy keeps its snapshot and
// folds on): when they outgrow it, the build started again is sized for
// them, and once it is done the scans use it, rather than starting one
// more build each scan that again finds it full.
func TestTypoFilterRebuiltForLongTerms(t *testing.T) {
	old := typoSyncTerms
	typoSyncTerms = 10
	defer func() { typoSyncTerms = old }()
	g := testgen.New(3)
	mem := NewIndex()
	for _, tn := range g.Turns(0, 200) {
		mem.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
	}
	ix, err := decodeSnapshot(encoded(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	wait := func() {
		ix.mu.Lock()
		b := ix.typoBuild
		ix.mu.Unlock()
		if b != nil {
			b.snap.users.Wait()
		}
	}
	ix.Scan("what did we say about pottery?", p)
	ix.Scan("what did we say about pottery?", p) // the second scan starts the build
	wait()
	// Folded since: long words of letters only (a term of n letters adds
	// n keys to dels).
	word := func(i int) string {
		var b strings.Builder
		for j := range 60 {
			b.WriteByte(byte('a' + (i*7+j*j+i/26)%26))
		}
		return fmt.Sprintf("%s%c%c", b.String(), 'a'+i%26, 'a'+i/26%26)
	}
	for i := range 600 {
		text := "note: " + word(i)
		ix.Add(1000+i, fmt.Sprint(1000+i), 10, text, text)
	}
	for range 4 {
		ix.Scan("what did we say about pottery?", p)
		ix.mu.Lock()
		ready := ix.typo != nil && ix.typoBuild == nil && !ix.typo.full()
		ix.mu.Unlock()
		if ready {
			return
		}
		wait()
	}
	t.Fatal("after four scans and builds the filter is still full or being built: each scan starts a build that ends full")
}
