package contextfold

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold/internal/canonjson"
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
