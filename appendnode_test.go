package contextfold_test

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
)

// TestAppendColdNodeBytes: a node's bytes appended after buf's are
// ReadColdNodeBytes's, read into buf's spare capacity when they fit; a
// missing node is ReadColdNodeBytes's error with buf unchanged.
func TestAppendColdNodeBytes(t *testing.T) {
	s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for i := range 3 {
		turn := benchGen.Turn(i)
		if _, err := s.Fold(turn); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, turn.StepID)
	}
	buf := append(make([]byte, 0, 256<<10), "head"...)
	for _, step := range steps {
		want, err := s.ReadColdNodeBytes(step)
		if err != nil {
			t.Fatal(err)
		}
		n := len(buf)
		got, err := s.AppendColdNodeBytes(buf, step)
		if err != nil || !bytes.Equal(got[:n], buf) || !bytes.Equal(got[n:], want) {
			t.Fatalf("step %d: %d bytes appended, %v; want %d", step, len(got)-n, err, len(want))
		}
		if &got[0] != &buf[0] {
			t.Fatalf("step %d: not read into the buffer's spare capacity", step)
		}
		buf = got
	}
	_, werr := s.ReadColdNodeBytes(1 << 30)
	got, err := s.AppendColdNodeBytes(buf, 1<<30)
	if !errors.Is(err, fs.ErrNotExist) || werr == nil || err.Error() != werr.Error() || len(got) != len(buf) {
		t.Fatalf("a missing node: %d bytes, %v; want buf unchanged and %v", len(got), err, werr)
	}
}
