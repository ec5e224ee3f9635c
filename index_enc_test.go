package contextfold

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestKeptEntryEncodingsSameIndexBytes: an index rewritten from the entry
// encodings its records keep (record.enc) is byte for byte the index
// encoded anew, after folds, a redacted node's entry (a non-standard one),
// evictions (an entry whose kept encoding is stale) and a reopen.
func TestKeptEntryEncodingsSameIndexBytes(t *testing.T) {
	turns := manyTurns(60)
	turns[7].RawContent += "\nexport DATABASE_PASSWORD=hunter2hunter2x9" // redacted: an entry with its count
	steps := func(s *Store, t *testing.T) [][]byte {
		var out [][]byte
		snap := func() {
			b, err := os.ReadFile(filepath.Join(s.Dir(), IndexFile))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		for _, part := range [][]Turn{turns[:20], turns[20:40]} {
			if _, err := s.FoldBatch(part); err != nil {
				t.Fatal(err)
			}
			snap()
		}
		for _, st := range []int{turns[7].StepID, turns[30].StepID} {
			if _, err := s.Evict(st); err != nil {
				t.Fatal(err)
			}
			snap()
		}
		if _, err := s.FoldBatch(turns[40:]); err != nil {
			t.Fatal(err)
		}
		snap()
		s2 := mustOpen(t, s.Dir())
		if _, err := s2.Evict(turns[50].StepID); err != nil {
			t.Fatal(err)
		}
		snap()
		return out
	}
	kept := steps(newTestStore(t), t)
	defer func(m int64) { maxEncodedBytes = m }(maxEncodedBytes)
	maxEncodedBytes = 0
	anew := steps(newTestStore(t), t)
	for i := range anew {
		if !bytes.Equal(kept[i], anew[i]) {
			t.Fatalf("index %d differs with kept encodings:\n%s\nencoded anew:\n%s", i, kept[i], anew[i])
		}
	}
	if !bytes.Contains(kept[0], []byte(`"redactions"`)) {
		t.Fatal("no entry with a redaction count: the non-standard form is not tested")
	}
}
