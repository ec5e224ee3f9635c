package contextfold

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheSpillGivesTheSameCache: a cache whose large sections were kept
// in temporary files while it was encoded is byte for byte the
// cache encoded in memory (but for the stamp of its own index file), both
// for a first write (heap records only) and for one merging a loaded
// snapshot with new folds, and no temporary file is left beside it.
func TestCacheSpillGivesTheSameCache(t *testing.T) {
	withLargeStoreMode(t)
	var turns []Turn
	for i := range 400 {
		turns = append(turns, Turn{StepID: i*2 + 1, Summary: fmt.Sprintf("Step %d touched Service%d", i, i%11),
			RawContent: fmt.Sprintf("$ go test ./Pkg%d/...\nFAIL Pkg%d/Handler_%d.go ValueError token%d Straße\n%s", i%5, i%5, i, i, strings.Repeat("word ", i%7))})
	}
	build := func(spill int) [][]byte {
		old := CacheSpillBytes
		CacheSpillBytes = spill
		defer func() { CacheSpillBytes = old }()
		s := newTestStore(t)
		var caches [][]byte
		for _, batch := range [][]Turn{turns[:250], turns[250:]} {
			if _, err := s.FoldBatch(batch); err != nil {
				t.Fatal(err)
			}
			if err := s.Compact(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(cacheFileOf(s))
			if err != nil {
				t.Fatal(err)
			}
			clear(data[8:32])                    // the index file's stamp
			clear(data[cacheHead-4 : cacheHead]) // the head's checksum covers it
			caches = append(caches, data)
			var err2 error
			if s, err2 = Open(s.Dir(), s.opts); err2 != nil { // the next batch merges with the snapshot
				t.Fatal(err2)
			}
		}
		ents, _ := os.ReadDir(filepath.Dir(cacheFileOf(s)))
		for _, e := range ents {
			if e.Name() != IndexCacheFile && strings.Contains(e.Name(), IndexCacheFile) {
				t.Errorf("left beside the cache: %s", e.Name())
			}
		}
		return caches
	}
	inMemory, spilled := build(1<<62), build(0)
	for i := range inMemory {
		if !bytes.Equal(inMemory[i], spilled[i]) {
			t.Fatalf("write %d: the spilled cache (%d bytes) differs from the one encoded in memory (%d bytes)", i+1, len(spilled[i]), len(inMemory[i]))
		}
	}
}
