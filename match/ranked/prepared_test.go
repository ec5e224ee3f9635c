package ranked

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
)

// Analyses prepared ahead of a fold (PrepareAnalysis) are taken for the
// nodes whose text they are of, and the index is the one a refresh from
// disk builds (the same snapshot bytes, the same answers); one prepared
// from another text is not used; the fold takes every prepared analysis
// of its steps out of the memo.
func TestPreparedAnalysesBuildTheSameIndex(t *testing.T) {
	s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	g := testgen.New(9)
	turns := g.SmallTurns(0, 120)
	for i, tr := range turns {
		switch i % 3 {
		case 0: // the node's very text (scrubbing off: the turn's)
			PrepareAnalysis(s, tr.StepID, tr.Summary+"\n"+tr.Payload())
		case 1: // another text: not used
			PrepareAnalysis(s, tr.StepID, tr.Summary+"\nsomething else entirely "+tr.Payload())
		}
	}
	rs, err := s.FoldBatch(turns)
	if err != nil {
		t.Fatal(err)
	}
	Folded(s, rs)
	prepared.Lock()
	left := len(prepared.m[s.Dir()])
	prepared.Unlock()
	if left != 0 {
		t.Fatalf("%d prepared analyses left after the fold", left)
	}
	viaPrepared := NewIndex()
	if err := viaPrepared.Refresh(s); err != nil {
		t.Fatal(err)
	}
	fromDisk := NewIndex()
	if err := fromDisk.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encoded(t, viaPrepared), encoded(t, fromDisk)) {
		t.Fatal("the index built from prepared analyses differs from the one built from disk")
	}
	sameAnswers(t, "prepared vs disk", g, fromDisk, viaPrepared)
}

// The prepared analyses are bounded.
func TestPreparedAnalysesBounded(t *testing.T) {
	defer func(m int) { preparedMax = m }(preparedMax)
	preparedMax = 1000
	s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 50 {
		PrepareAnalysis(s, step, "a text of some forty bytes, step by step")
	}
	prepared.Lock()
	defer prepared.Unlock()
	if n := len(prepared.m[s.Dir()]); n == 0 || n >= 50 || prepared.bytes > preparedMax {
		t.Fatalf("%d analyses, %d bytes kept under a bound of %d", n, prepared.bytes, preparedMax)
	}
	delete(prepared.m, s.Dir())
	prepared.bytes = 0
}
