package contextfold

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// withLargeStoreMode makes every store behave as a large one: updates are
// journaled and the index cache is written.
func withLargeStoreMode(t *testing.T) {
	t.Helper()
	jt, jm, ct := JournalThreshold, JournalMaxOps, IndexCacheThreshold
	JournalThreshold, JournalMaxOps, IndexCacheThreshold = 1, 8, 1
	// One index commit a batch, so that a batch's snapshot holds it all.
	ce, ci := FoldCommitEvery, FoldCommitInterval
	FoldCommitEvery, FoldCommitInterval = 1<<30, time.Hour
	t.Cleanup(func() {
		JournalThreshold, JournalMaxOps, IndexCacheThreshold = jt, jm, ct
		FoldCommitEvery, FoldCommitInterval = ce, ci
	})
}

func manyTurns(n int) []Turn {
	turns := make([]Turn, n)
	for i := range turns {
		turns[i] = Turn{StepID: i * 3, Summary: fmt.Sprintf("step %d touched service%d", i, i%7),
			RawContent: fmt.Sprintf("$ go test ./pkg%d/...\nFAIL pkg%d/handler_%d.go ValueError token%d", i%5, i%5, i, i)}
	}
	return turns
}

// TestJournalAndCacheGiveTheSameStore folds the same turns into a store in
// large-store mode (journal + cache) and into a normal one: every read gives
// the same answers, and after compaction the index bytes are identical.
func TestJournalAndCacheGiveTheSameStore(t *testing.T) {
	plain := newTestStore(t)
	turns := manyTurns(40)
	if _, err := plain.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Evict(9); err != nil {
		t.Fatal(err)
	}

	withLargeStoreMode(t)
	big := newTestStore(t)
	if _, err := big.FoldBatch(turns[:20]); err != nil { // large batch: full write + cache
		t.Fatal(err)
	}
	for _, tr := range turns[20:] { // one by one: journaled, compacted every 8
		if _, err := big.Fold(tr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := big.Evict(9); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(big.Dir(), JournalFile)); err != nil {
		t.Fatalf("expected a journal in large-store mode: %v", err)
	}
	if _, err := os.Stat(cacheFileOf(big)); err != nil {
		t.Fatalf("expected an index cache in large-store mode: %v", err)
	}
	// A fresh process's view (cache + journal) agrees with the plain store.
	for _, s := range []*Store{big, mustOpen(t, big.Dir())} {
		compareStores(t, plain, s)
	}
	if err := big.Compact(); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(plain.Dir(), IndexFile))
	b, _ := os.ReadFile(filepath.Join(big.Dir(), IndexFile))
	if !bytes.Equal(a, b) {
		t.Error("after compaction the index differs from the one written without a journal")
	}
	if _, err := os.Stat(filepath.Join(big.Dir(), JournalFile)); !os.IsNotExist(err) {
		t.Error("compaction left the journal")
	}
	compareStores(t, plain, mustOpen(t, big.Dir()))
}

func mustOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func compareStores(t *testing.T, want, got *Store) {
	t.Helper()
	we, err := want.Entries()
	if err != nil {
		t.Fatal(err)
	}
	ge, err := got.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(we) != len(ge) {
		t.Fatalf("entries: %d vs %d", len(we), len(ge))
	}
	for i := range we {
		if !reflect.DeepEqual(we[i].Doc, ge[i].Doc) || !reflect.DeepEqual(we[i].Terms(), ge[i].Terms()) {
			t.Fatalf("entry %d differs:\n%v\n%v", we[i].StepID, we[i].Doc, ge[i].Doc)
		}
	}
	for _, q := range []string{"service3 ValueError", "pkg2/handler_14.go token14 service0"} {
		ws, _ := want.Scan(q)
		gs, _ := got.Scan(q)
		if !reflect.DeepEqual(ws, gs) {
			t.Errorf("scan %q: %+v vs %+v", q, ws, gs)
		}
		wr, _ := want.Recall(q)
		gr, _ := got.Recall(q)
		if !reflect.DeepEqual(wr, gr) {
			t.Errorf("recall %q differs", q)
		}
	}
	if h, err := got.Hydrate(42); err != nil || h.StepID != 42 {
		t.Errorf("hydrate: %v", err)
	}
	if rep, err := got.Validate(); err != nil || !rep.OK() {
		t.Errorf("validate: %v %+v", err, rep)
	}
}

// TestTornJournalTailIsIgnoredAndCut: a crash mid-append leaves a line
// without its newline; readers ignore it and the next writer cuts it.
func TestTornJournalTailIsIgnoredAndCut(t *testing.T) {
	withLargeStoreMode(t)
	s := newTestStore(t)
	turns := manyTurns(6)
	if _, err := s.FoldBatch(turns[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fold(turns[3]); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(s.Dir(), JournalFile)
	f, _ := os.OpenFile(j, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"entry":{"step_id":99`)
	f.Close()
	fresh := mustOpen(t, s.Dir())
	if es, err := fresh.Entries(); err != nil || len(es) != 4 {
		t.Fatalf("entries after torn tail: %d %v", len(es), err)
	}
	if _, err := fresh.Fold(turns[4]); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(j)
	if bytes.Contains(data, []byte(`"step_id":99`)) || !bytes.HasSuffix(data, []byte("\n")) {
		t.Errorf("torn tail not cut: %q", data)
	}
	if es, _ := mustOpen(t, s.Dir()).Entries(); len(es) != 5 {
		t.Errorf("entries: %d", len(es))
	}
}

// TestStaleCacheIsIgnored: an index rewritten by another implementation
// (new inode, new size) makes the cache stale; the JSON is read instead.
func TestStaleCacheIsIgnored(t *testing.T) {
	withLargeStoreMode(t)
	s := newTestStore(t)
	if _, err := s.FoldBatch(manyTurns(20)); err != nil {
		t.Fatal(err)
	}
	ix := filepath.Join(s.Dir(), IndexFile)
	st, _ := stampOf(ix)
	cache, _ := os.ReadFile(cacheFileOf(s))
	cached, err := decodeCache(cache, st, nil)
	if err != nil || cached.len() != 20 || !cached.base.verifyAll() {
		t.Fatalf("the cache of the current index must decode: %v", err)
	}
	for i := range cache { // a flipped bit is caught by a checksum, at load or when read
		if i%97 == 0 {
			bad := append([]byte{}, cache...)
			bad[i] ^= 0x10
			if ix, err := decodeCache(bad, st, nil); err == nil && ix.base.verifyAll() {
				t.Fatalf("corrupt cache (byte %d) accepted", i)
			}
		}
	}
	data, _ := os.ReadFile(ix)
	os.Remove(ix)
	os.WriteFile(ix, bytes.Replace(data, []byte(`"summary": "step 1 touched service1"`), []byte(`"summary": "step 1 rewritten elsewhere"`), 1), 0o644)
	e, err := mustOpen(t, s.Dir()).Entry(3)
	if err != nil || e.Summary != "step 1 rewritten elsewhere" {
		t.Errorf("stale cache used: %v %q", err, e.Summary)
	}
}
