package contextfold_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/testgen"
)

// These tests run with the race detector too (the deferred commit is a
// goroutine beside the Store's readers), so they do not share the
// durability tests' helpers (built without it).
var deferGen = testgen.New(20250101)

func openDeferred(t testing.TB, dir string) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// holdCommit makes a deferred commit stop at point (after the nodes'
// fsyncs, before their renames, for BatchSynced) until the returned
// release is called; reached is closed once it stopped there. The batch
// commits as one group, whatever the machine's speed (a batch that took
// contextfold.FoldCommitInterval would commit a first group on the
// caller's path, and stop there, holding the caller).
func holdCommit(t *testing.T, point string) (reached <-chan struct{}, release func()) {
	t.Helper()
	every, interval := contextfold.FoldCommitEvery, contextfold.FoldCommitInterval
	contextfold.FoldCommitEvery, contextfold.FoldCommitInterval = 1<<30, time.Hour
	t.Cleanup(func() { contextfold.FoldCommitEvery, contextfold.FoldCommitInterval = every, interval })
	at, goOn := make(chan struct{}), make(chan struct{})
	var once, rel sync.Once
	fsutil.CrashPoint = func(p string) {
		if p == point {
			once.Do(func() { close(at); <-goOn })
		}
	}
	release = func() { rel.Do(func() { close(goOn) }) }
	t.Cleanup(func() { release(); fsutil.CrashPoint = nil })
	return at, release
}

// TestFoldDeferredServesPendingNodes folds a batch with its durable part
// deferred and stopped before any node is named: this Store then hydrates
// every node of the batch, verified (a node whose temporary file is
// changed fails the SHA-256 check, as a tampered file does), while another
// reader of the directory sees none of it; a writer of this Store waits
// for the commit; once it is done the nodes are named, and the store
// validates clean with both batches. The batch's nodes are written into
// spare files (FillSpares) on the fold's path, as past the bytes a
// deferred fold holds in memory (set to none here).
func TestFoldDeferredServesPendingNodes(t *testing.T) {
	defer contextfold.SetDeferBytesForTest(0)()
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.FillSpares(6, nil); err != nil {
		t.Fatal(err)
	}
	reached, release := holdCommit(t, fsutil.BatchSynced)
	c, err := s.FoldBatchEachDeferred(deferGen.SmallTurns(2, 6), func(int, *contextfold.FoldResult) {})
	if err != nil || c == nil {
		t.Fatalf("deferred fold: %v, commit %v", err, c)
	}
	select {
	case <-reached:
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("the deferred commit never reached its fsyncs' end")
	}
	servesPending(t, s, 2, 8)
	// Verified like any read: a changed byte in a pending node is refused.
	var tmp string
	var orig []byte
	spares, _ := filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, fsutil.SparePrefix+"*"))
	for _, f := range spares {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(`"step_id": 3,`)) {
			tmp, orig = f, data
		}
	}
	if tmp == "" {
		t.Fatalf("no spare holds step 3: %v", spares)
	}
	i := bytes.Index(orig, []byte("FAIL"))
	bad := bytes.Clone(orig)
	bad[i] = 'X'
	if err := os.WriteFile(tmp, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var ic *contextfold.IntegrityCheckError
	if _, err := s.Hydrate(3); !errors.As(err, &ic) {
		t.Errorf("a changed pending node hydrated: %v", err)
	}
	if err := os.WriteFile(tmp, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	pendingThenClean(t, s, dir, c, release)
}

// TestFoldDeferredServesHeldNodes is TestFoldDeferredServesPendingNodes
// without spare files: the deferred fold holds its nodes in memory and the
// commit creates their files. When the fold returns, no node and no
// temporary file of the batch is on disk; stopped at its first file's
// write (the commit writes several at once), no node is named, and this
// Store hydrates every node of the batch from memory, verified; the rest
// as there.
func TestFoldDeferredServesHeldNodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	reached, release := holdCommit(t, fsutil.BatchFirstWritten)
	var onReturn []string
	c, err := s.FoldBatchEachDeferred(deferGen.SmallTurns(2, 6), func(i int, _ *contextfold.FoldResult) {
		if i == 5 { // the last node: every one is encoded, the commit not begun
			onReturn, _ = filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, ".*"))
		}
	})
	if err != nil || c == nil {
		t.Fatalf("deferred fold: %v, commit %v", err, c)
	}
	if len(onReturn) != 0 {
		t.Fatalf("on the fold's path: temporary files %v, want none", onReturn)
	}
	select {
	case <-reached:
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("the deferred commit never wrote its first file")
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, ".*")); len(tmps) < 1 || len(tmps) > 6 {
		t.Fatalf("at the commit's first write: temporary files %v, want 1 to 6", tmps)
	}
	servesPending(t, s, 2, 8)
	pendingThenClean(t, s, dir, c, release)
}

// TestFoldDeferredWritesSparesInCommit: a deferred fold with spare files
// (FillSpares) writes none of them on its path (each spare is empty when
// its last node is handed over), this Store hydrates every node from
// memory while the commit is stopped before its first write, and the
// commit writes the nodes into the spares: the named nodes are the
// spares' inodes, no spare is left, and the store validates clean.
func TestFoldDeferredWritesSparesInCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.FillSpares(6, nil); err != nil {
		t.Fatal(err)
	}
	spareGlob := filepath.Join(dir, contextfold.ColdNodesDir, fsutil.SparePrefix+"*")
	spares, _ := filepath.Glob(spareGlob)
	var spareFiles []os.FileInfo
	for _, f := range spares {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		spareFiles = append(spareFiles, fi)
	}
	if len(spareFiles) < 6 {
		t.Fatalf("%d spares, want 6 at least", len(spareFiles))
	}
	reached, release := holdCommit(t, fsutil.BatchFirstWritten)
	var written []string
	c, err := s.FoldBatchEachDeferred(deferGen.SmallTurns(2, 6), func(i int, _ *contextfold.FoldResult) {
		if i == 5 {
			for _, f := range spares {
				if fi, err := os.Stat(f); err != nil || fi.Size() != 0 {
					written = append(written, f)
				}
			}
		}
	})
	if err != nil || c == nil {
		t.Fatalf("deferred fold: %v, commit %v", err, c)
	}
	if len(written) != 0 {
		t.Fatalf("spares written on the fold's path: %v", written)
	}
	select {
	case <-reached:
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("the deferred commit never wrote its first file")
	}
	servesPending(t, s, 2, 8)
	release()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	for step := 2; step < 8; step++ {
		fi, err := os.Stat(s.NodePath(step))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(spareFiles, func(sp os.FileInfo) bool { return os.SameFile(sp, fi) }) {
			t.Errorf("step %d was not written into a spare", step)
		}
	}
	if left, _ := filepath.Glob(spareGlob); len(left) != len(spares)-6 {
		t.Errorf("spares left %v, want %d", left, len(spares)-6)
	}
	if rep, err := openDeferred(t, dir).Validate(); err != nil || !rep.OK() {
		t.Fatalf("validate after the commit: %+v, %v", rep, err)
	}
}

// servesPending checks that s hydrates steps [from, to) of deferGen while
// their commit runs, none of them named yet.
func servesPending(t *testing.T, s *contextfold.Store, from, to int) {
	t.Helper()
	for step := from; step < to; step++ {
		if _, err := os.Stat(s.NodePath(step)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("step %d is named before its commit: %v", step, err)
		}
		h, err := s.Hydrate(step)
		if err != nil {
			t.Fatalf("step %d while its commit runs: %v", step, err)
		}
		if want := deferGen.SmallTurn(step).RawContent; h.RawContent != want {
			t.Fatalf("step %d while its commit runs: %q, want %q", step, h.RawContent, want)
		}
	}
}

// pendingThenClean checks, while commit c of steps 2 to 7 is held (release
// lets it go on), that another reader sees the 2 steps committed before,
// that a writer of s waits for c, and that after c the store validates
// clean with both batches and a third.
func pendingThenClean(t *testing.T, s *contextfold.Store, dir string, c *contextfold.FoldCommit, release func()) {
	t.Helper()
	// Another reader sees the index as it was.
	if es, err := openDeferred(t, dir).Entries(); err != nil || len(es) != 2 {
		t.Errorf("another reader sees %d entries while the commit runs (%v), want the 2 committed", len(es), err)
	}
	// A writer waits for the commit.
	wrote := make(chan error, 1)
	go func() {
		_, err := s.FoldBatch(deferGen.SmallTurns(8, 2))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a fold ran while the deferred commit held the store (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if c.DurableAt().IsZero() {
		t.Error("DurableAt is zero after Wait")
	}
	rep, err := openDeferred(t, dir).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != 10 {
		t.Fatalf("after the commit: passed %d of 10, findings %+v", rep.Passed, rep.Findings)
	}
}

// TestFoldDeferredFailure makes a deferred commit fail for real (cold_nodes/
// replaced by a file once the nodes are synced, so their renames fail):
// Wait returns a *StoreFileError naming cold_nodes/, the Store forgets the
// batch (its index is read from disk again: the batch is not in it), and
// once the directory is back the same batch folds again and the store
// validates clean.
func TestFoldDeferredFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	cold := filepath.Join(dir, contextfold.ColdNodesDir)
	var once sync.Once
	fsutil.CrashPoint = func(p string) {
		if p == fsutil.BatchSynced {
			once.Do(func() {
				os.Rename(cold, cold+".away")
				os.WriteFile(cold, nil, 0o644)
			})
		}
	}
	t.Cleanup(func() { fsutil.CrashPoint = nil })
	c, err := s.FoldBatchEachDeferred(deferGen.SmallTurns(2, 4), func(int, *contextfold.FoldResult) {})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	var sf *contextfold.StoreFileError
	if !errors.As(err, &sf) || sf.Remedy == "" {
		t.Fatalf("Wait: %v, want a *StoreFileError with a remedy", err)
	}
	fsutil.CrashPoint = nil
	if err := os.Remove(cold); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cold+".away", cold); err != nil {
		t.Fatal(err)
	}
	if es, err := s.Entries(); err != nil || len(es) != 2 {
		t.Fatalf("after the failed commit the Store lists %d entries (%v), want the 2 committed before", len(es), err)
	}
	c, err = s.FoldBatchEachDeferred(deferGen.SmallTurns(2, 4), func(int, *contextfold.FoldResult) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	// A new process's first lock removes the temporary files the failed
	// commit left in the directory it could not reach.
	s2 := openDeferred(t, dir)
	if err := s2.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.FoldBatch(deferGen.SmallTurns(6, 1)); err != nil {
		t.Fatal(err)
	}
	rep, err := s2.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != 7 {
		t.Fatalf("after folding again: passed %d of 7, findings %+v", rep.Passed, rep.Findings)
	}
}

// TestFoldDeferredKeepsIndexVersion checks that the index version a Store
// reports while a deferred commit runs stays once the commit is done (the
// same entries: what is bound to the version, the harness's entries and
// the ranked index, is not rebuilt after every fold event), and changes
// with the next change of the index.
func TestFoldDeferredKeepsIndexVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	before, _ := s.IndexVersion()
	reached, release := holdCommit(t, fsutil.BatchSynced)
	c, err := s.FoldBatchEachDeferred(deferGen.SmallTurns(2, 3), func(int, *contextfold.FoldResult) {})
	if err != nil {
		t.Fatal(err)
	}
	<-reached
	during, _ := s.IndexVersion()
	release()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	after, _ := s.IndexVersion()
	if during == before || after != during {
		t.Errorf("versions: before %q, during the commit %q, after %q; want a new one during that stays after", before, during, after)
	}
	if _, err := s.Evict(3); err != nil {
		t.Fatal(err)
	}
	if next, _ := s.IndexVersion(); next == after {
		t.Errorf("the version %q did not change with an eviction", next)
	}
}

// TestFoldDeferredStreamsLargeNodes: a deferred fold holds its small nodes
// in memory, but a node too large to render ahead (over 256 KiB) is
// streamed into a spare on the fold's path, as before HoldAll: it is never
// held whole in memory besides its document while a spare is left.
func TestFoldDeferredStreamsLargeNodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.FillSpares(4, nil); err != nil {
		t.Fatal(err)
	}
	turns := deferGen.SmallTurns(2, 3)
	big := deferGen.SmallTurn(5)
	big.RawContent = strings.Repeat("a line of a long build log\n", 12000) // 324 KB
	turns = append(turns, big)
	spareGlob := filepath.Join(dir, contextfold.ColdNodesDir, fsutil.SparePrefix+"*")
	var written int
	c, err := s.FoldBatchEachDeferred(turns, func(i int, _ *contextfold.FoldResult) {
		if i == 3 {
			spares, _ := filepath.Glob(spareGlob)
			for _, f := range spares {
				if fi, err := os.Stat(f); err == nil && fi.Size() > 0 {
					written++
				}
			}
		}
	})
	if err != nil || c == nil {
		t.Fatalf("deferred fold: %v, commit %v", err, c)
	}
	if written != 1 {
		t.Fatalf("%d spares written on the fold's path, want 1 (the large node)", written)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	h, err := s.Hydrate(5)
	if err != nil || h.RawContent != big.RawContent {
		t.Fatalf("the large node: %v", err)
	}
}

// TestFoldHeldWaitsForStart folds a batch with its durable part held
// (FoldBatchEachHeld): until something starts it, no file of the batch is
// written (the commit's first file system step is never reached) and this
// Store serves the batch from memory, verified, while another reader sees
// only what was committed before. A fold of this Store, which must wait
// for the commit, starts it rather than waiting forever; so does Wait on
// a second held batch. The store then validates clean with every batch.
func TestFoldHeldWaitsForStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDeferred(t, dir)
	if _, err := s.FoldBatch(deferGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var points []string
	fsutil.CrashPoint = func(p string) { mu.Lock(); points = append(points, p); mu.Unlock() }
	t.Cleanup(func() { fsutil.CrashPoint = nil })
	c, err := s.FoldBatchEachHeld(deferGen.SmallTurns(2, 6), func(int, *contextfold.FoldResult) {})
	if err != nil || c == nil {
		t.Fatalf("held fold: %v, commit %v", err, c)
	}
	servesPending(t, s, 2, 8)
	if es, err := openDeferred(t, dir).Entries(); err != nil || len(es) != 2 {
		t.Errorf("another reader sees %d entries while the commit is held (%v), want the 2 committed", len(es), err)
	}
	mu.Lock()
	if len(points) > 0 {
		t.Errorf("the held commit began before its start: %v", points)
	}
	mu.Unlock()
	select {
	case <-c.Done(): // Done starts it too: not before the checks above
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("the held commit never ended once started by Done")
	}
	c2, err := s.FoldBatchEachHeld(deferGen.SmallTurns(8, 2), func(int, *contextfold.FoldResult) {})
	if err != nil || c2 == nil {
		t.Fatalf("second held fold: %v, commit %v", err, c2)
	}
	// A fold waits for the held commit before it: it starts it.
	wrote := make(chan error, 1)
	go func() {
		_, err := s.FoldBatch(deferGen.SmallTurns(10, 2))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("a fold behind a held commit never ran: nothing started the commit")
	}
	if err := c2.Wait(); err != nil || c2.DurableAt().IsZero() {
		t.Fatalf("second held commit: %v, durable at %v", err, c2.DurableAt())
	}
	c3, err := s.FoldBatchEachHeld(deferGen.SmallTurns(12, 2), func(int, *contextfold.FoldResult) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := c3.Wait(); err != nil { // Wait starts it
		t.Fatal(err)
	}
	rep, err := openDeferred(t, dir).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != 14 {
		t.Fatalf("after the commits: passed %d of 14, findings %+v", rep.Passed, rep.Findings)
	}
}

// TestEvictDuringFirstHeldFold evicts a node of a new store's first fold
// batch while its durable part is held (FoldBatchEachHeld): the recall
// index is not on disk yet, but the batch is indexed, so the eviction
// starts the commit, waits for it and evicts, with and without the
// eviction log's batch. Before, Evict saw no recall_index.json and answered
// "node not found" at once (the proxy's concurrent first requests of one
// session: TestConcurrentFirstRequestsOfOneSession).
func TestEvictDuringFirstHeldFold(t *testing.T) {
	for _, batch := range []int{0, 32} {
		dir := filepath.Join(t.TempDir(), ".contextfold")
		s, err := contextfold.Open(dir, contextfold.Options{EvictionLogBatch: batch, Clock: func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }})
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.FoldBatchEachHeld(deferGen.SmallTurns(0, 4), func(int, *contextfold.FoldResult) {})
		if err != nil || c == nil {
			t.Fatalf("held fold: %v, commit %v", err, c)
		}
		if _, err := os.Stat(filepath.Join(dir, contextfold.IndexFile)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the recall index is on disk before the held commit started (%v)", err)
		}
		ev, err := s.Evict(2)
		if err != nil || ev == nil || ev.StepID != 2 {
			t.Fatalf("batch %d: evicting a node of the held fold batch: %v, %+v", batch, err, ev)
		}
		if c.DurableAt().IsZero() {
			t.Errorf("batch %d: the eviction did not wait for the commit", batch)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		e, err := openDeferred(t, dir).Entry(2)
		if err != nil || !e.Evicted {
			t.Errorf("batch %d: step 2 after the eviction: %+v, %v", batch, e, err)
		}
		if evs, err := openDeferred(t, dir).EvictionLog(); err != nil || len(evs) != 1 {
			t.Errorf("batch %d: eviction log %+v (%v), want one event", batch, evs, err)
		}
		if _, err := s.Evict(9); !errors.Is(err, contextfold.ErrNodeNotFound) {
			t.Errorf("batch %d: evicting a step never folded: %v, want ErrNodeNotFound", batch, err)
		}
	}
}

// TestFoldHeldIndexSameBytes: a held fold's recall index, encoded straight
// into the buffer the batch holds it in (fsutil.HeldBuffer, sized from the
// index it replaces), is byte for byte the index a fold streams to its file,
// batch after batch, and so are the cold nodes.
func TestFoldHeldIndexSameBytes(t *testing.T) {
	streamed := openDeferred(t, filepath.Join(t.TempDir(), "a", ".contextfold"))
	held := openDeferred(t, filepath.Join(t.TempDir(), "b", ".contextfold"))
	from := 0
	for _, n := range []int{3, 40, 1, 60, 7} {
		turns := deferGen.SmallTurns(from, n)
		from += n
		if _, err := streamed.FoldBatch(turns); err != nil {
			t.Fatal(err)
		}
		c, err := held.FoldBatchEachHeld(turns, func(int, *contextfold.FoldResult) {})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		a, err := os.ReadFile(filepath.Join(streamed.Dir(), contextfold.IndexFile))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(held.Dir(), contextfold.IndexFile))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("after %d turns the held fold's index differs (%d bytes, streamed %d)", from, len(b), len(a))
		}
	}
	nodes := func(s *contextfold.Store) map[string][]byte {
		out := map[string][]byte{}
		m, _ := filepath.Glob(filepath.Join(s.Dir(), contextfold.ColdNodesDir, "step_*.json"))
		for _, p := range m {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(p)] = b
		}
		return out
	}
	a, b := nodes(streamed), nodes(held)
	if len(a) != from || len(b) != from {
		t.Fatalf("%d and %d cold nodes, want %d", len(a), len(b), from)
	}
	for name, want := range a {
		if !bytes.Equal(b[name], want) {
			t.Errorf("%s differs", name)
		}
	}
}
