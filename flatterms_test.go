package contextfold

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestFlatTermMergeSameCache: the cache of an index is the same bytes
// whether its heap terms are merged by heapTermMerge or by flatTermMerge,
// for an index parsed from JSON (every record on the heap) and for a
// snapshot with records folded on top of it.
func TestFlatTermMergeSameCache(t *testing.T) {
	s, _, st := cacheStore(t, 300)
	raw, err := os.ReadFile(filepath.Join(s.Dir(), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := parseIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cacheFileOf(s))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(s.Dir(), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stacked, err := decodeCache(data, st, f)
	if err != nil {
		t.Fatal(err)
	}
	more := newTestStore(t)
	if _, err := more.FoldBatch(manyTurns(340)[300:]); err != nil {
		t.Fatal(err)
	}
	rawMore, err := os.ReadFile(filepath.Join(more.Dir(), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	heapOnes, err := parseIndex(rawMore)
	if err != nil {
		t.Fatal(err)
	}
	for p := range heapOnes.len() {
		stacked.add(heapOnes.rec(int32(p)))
	}
	if stacked.nb == 0 || stacked.len() <= stacked.nb {
		t.Fatalf("want a snapshot with heap records on top: nb %d of %d", stacked.nb, stacked.len())
	}
	for name, ix := range map[string]*index{"parsed": parsed, "snapshot+heap": stacked} {
		_, spans, err := ix.encode()
		if err != nil {
			t.Fatal(err)
		}
		enc := func(min int) []byte {
			old := flatMergeMin
			flatMergeMin = min
			defer func() { flatMergeMin = old }()
			c, err := ix.encodeCache(st, spans)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		heap, flat := enc(1<<30), enc(0)
		if len(heap) < 1000 || !bytes.Equal(heap, flat) {
			t.Errorf("%s: the caches differ (%d and %d bytes)", name, len(heap), len(flat))
		}
	}
}
