package contextfold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// wantEvictionLog is the log the slow path writes: canonjson.Pretty of
// every event so far.
func wantEvictionLog(t *testing.T, events []any) []byte {
	t.Helper()
	data, err := canonjson.Pretty(map[string]any{"evicted": events})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEvictionLogAppendIsThePrettyLog: the cached append writes exactly the
// bytes a full re-encode would, event after event, and notices a log
// another process (here a second Store on the same directory) replaced in
// between, or one changed by hand.
func TestEvictionLogAppendIsThePrettyLog(t *testing.T) {
	s := demoStore(t)
	if s.be != nil {
		t.Skip("directory stores only")
	}
	other, err := Open(s.Dir(), Options{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), EvictionLogFile)
	var events []any
	steps := []int{137, 342, 137, 447, 37, 91}
	for i, step := range steps {
		by := s
		if i == 3 {
			by = other // another writer replaces the file between two of s's appends
		}
		if _, err := by.Evict(step); err != nil {
			t.Fatal(err)
		}
		events = append(events, map[string]any{"step_id": step, "evicted_at": "2026-01-01T00:00:00Z"})
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantEvictionLog(t, events); !bytes.Equal(got, want) {
			t.Fatalf("after evicting %v the log is\n%s\nwant\n%s", steps[:i+1], got, want)
		}
		if i == 1 && s.evLog.data == nil {
			t.Fatal("the second eviction did not keep the log it wrote: the fast path is never taken")
		}
	}
	// A log rewritten by hand (compact, one event) is read afresh, not
	// appended to by the bytes this process last wrote.
	edited := []byte(`{"evicted":[{"step_id":91,"evicted_at":"2026-01-01T00:00:00Z"}]}`)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Evict(137); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := wantEvictionLog(t, []any{
		map[string]any{"step_id": 91, "evicted_at": "2026-01-01T00:00:00Z"},
		map[string]any{"step_id": 137, "evicted_at": "2026-01-01T00:00:00Z"},
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("after a hand edit the log is\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkEvictLongSession: an eviction late in a session costs what an
// early one does (the log is appended, not re-parsed).
func BenchmarkEvictLongSession(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), ".contextfold"), Options{Clock: fixedClock})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.FoldBatch(DemoTurns()); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 2000; i++ { // a long proxy session's evictions so far
		if _, err := s.Evict(137); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Evict(137); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEvictionLogBatch: with Options.EvictionLogBatch, the first eviction
// of a step (an index change) is written at once, the repeated ones of an
// evicted step wait for the batch to fill or for Sync; the store reads its
// own events at once, another reader sees only what was written, every
// written log is whole (schema-valid, the slow path's bytes), and the
// final log is byte for byte the unbatched store's.
func TestEvictionLogBatch(t *testing.T) {
	batched, plain := demoStoreBatched(t, 4), demoStoreBatched(t, 0)
	onDisk := func(s *Store) []Eviction {
		t.Helper()
		other, err := Open(s.Dir(), Options{Clock: fixedClock})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := other.EvictionLog()
		if err != nil {
			t.Fatalf("the log on disk does not read: %v", err)
		}
		return evs
	}
	steps := []int{137, 137, 137, 342, 137, 137, 137, 137, 342}
	// What the batched store's file holds after each eviction: a first
	// eviction (137, then 342) or a full batch of 4 writes everything kept.
	wantDisk := []int{1, 1, 1, 4, 4, 4, 4, 8, 8}
	for i, step := range steps {
		for _, s := range []*Store{batched, plain} {
			if _, err := s.Evict(step); err != nil {
				t.Fatal(err)
			}
		}
		own, err := batched.EvictionLog()
		if err != nil {
			t.Fatal(err)
		}
		if len(own) != i+1 {
			t.Fatalf("after %d evictions the store reads %d events of its own", i+1, len(own))
		}
		if got := len(onDisk(batched)); got != wantDisk[i] {
			t.Fatalf("after %d evictions %d events are on disk, want %d", i+1, got, wantDisk[i])
		}
		if got := len(onDisk(plain)); got != i+1 {
			t.Fatalf("unbatched: %d events on disk after %d evictions", got, i+1)
		}
	}
	if e, err := batched.Entry(342); err != nil || !e.Evicted {
		t.Fatalf("the index does not mark 342 evicted: %v %v", e, err)
	}
	if err := batched.Sync(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(batched.Dir(), EvictionLogFile))
	want, _ := os.ReadFile(filepath.Join(plain.Dir(), EvictionLogFile))
	if !bytes.Equal(got, want) {
		t.Fatalf("after Sync the batched log is\n%s\nthe unbatched one\n%s", got, want)
	}
	if err := batched.Sync(); err != nil { // nothing kept: no write
		t.Fatal(err)
	}
	if _, err := batched.Evict(999); err == nil {
		t.Fatal("an unknown step was evicted")
	}
}

// TestWriteKeptEvictions: the events kept for a batch are written off the
// evicting path once there are enough (and not before); while the file is
// written and synced the store's reads and the evictions it keeps go on,
// a fold waits for the write, EvictionLog reads every event once, and the
// final log is byte for byte the unbatched store's.
func TestWriteKeptEvictions(t *testing.T) {
	batched, plain := demoStoreBatched(t, 8), demoStoreBatched(t, 0)
	evict := func(steps ...int) {
		t.Helper()
		for _, step := range steps {
			for _, s := range []*Store{batched, plain} {
				if _, err := s.Evict(step); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	onDisk := func() int {
		t.Helper()
		other, err := Open(batched.Dir(), Options{Clock: fixedClock})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := other.EvictionLog()
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	evict(137, 137, 137, 137) // the first written, three kept
	if wrote, err := batched.WriteKeptEvictions(4); wrote || err != nil || onDisk() != 1 {
		t.Fatalf("3 kept events written at 4 (%v, %v): %d on disk", wrote, err, onDisk())
	}
	evict(137) // four kept
	at, goOn := make(chan struct{}), make(chan struct{})
	fsutil.CrashPoint = func(p string) {
		if p == fsutil.AtomicRenamed {
			close(at)
			<-goOn
		}
	}
	t.Cleanup(func() { fsutil.CrashPoint = nil })
	wrote := make(chan error, 1)
	go func() {
		ok, err := batched.WriteKeptEvictions(4)
		if err == nil && !ok {
			err = errors.New("nothing written")
		}
		wrote <- err
	}()
	<-at // the log is renamed into place, its directory not synced
	fsutil.CrashPoint = nil
	// Meanwhile: reads, and an eviction of an evicted step (kept).
	if e, err := batched.Entry(137); err != nil || !e.Evicted {
		t.Fatalf("entry during the write: %v %v", e, err)
	}
	evict(137)
	folded := make(chan error, 1)
	go func() {
		_, err := batched.FoldBatch([]Turn{{StepID: 900, RawContent: "ok  example.com/pkg900\n"}})
		folded <- err
	}()
	close(goOn)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-folded; err != nil {
		t.Fatal(err)
	}
	if n := onDisk(); n != 5 {
		t.Fatalf("%d events on disk after the write, want 5", n)
	}
	own, err := batched.EvictionLog()
	if err != nil || len(own) != 6 {
		t.Fatalf("the store reads %d events of its own (%v), want 6", len(own), err)
	}
	if err := batched.Sync(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(batched.Dir(), EvictionLogFile))
	want, _ := os.ReadFile(filepath.Join(plain.Dir(), EvictionLogFile))
	if !bytes.Equal(got, want) {
		t.Fatalf("after Sync the log is\n%s\nthe unbatched one\n%s", got, want)
	}
}

// demoStoreBatched is a new store holding the demo turns, its eviction log
// batched by batch events (Options.EvictionLogBatch; 0: unbatched).
func demoStoreBatched(t *testing.T, batch int) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), ".contextfold"), Options{Clock: fixedClock, EvictionLogBatch: batch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(DemoTurns()); err != nil {
		t.Fatal(err)
	}
	return s
}
