package pgsessions

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
)

// The lease is exclusive per session and carries the state: a second
// Lock of the session waits while the first is held, another session does
// not; Commit bumps the version and stores the state and generation,
// Release changes nothing.
func TestLeaseExclusiveAndVersioned(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	noStore := func(string, string) (*contextfold.Store, error) { return nil, nil }
	a, err := Connect(ctx, url, noStore)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Connect(ctx, url, noStore) // another replica: its own pool
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	l1, err := a.Lock(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if l1.Version() != 0 || l1.Generation() != 1 {
		t.Fatalf("new session: version %d generation %d; want 0, 1", l1.Version(), l1.Generation())
	}
	if st, err := l1.State(); err != nil || st != nil {
		t.Fatalf("new session state %q, %v; want none", st, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if l, err := b.Lock(short, "s1"); err == nil {
		l.Release()
		t.Fatal("a second replica took the lease of a session another holds")
	}
	cancel()
	other, err := b.Lock(ctx, "s2")
	if err != nil {
		t.Fatalf("another session waited for s1's lease: %v", err)
	}
	other.Release()

	got := make(chan error, 1)
	go func() {
		l, err := b.Lock(ctx, "s1")
		if err == nil {
			var st []byte
			st, err = l.State()
			if err == nil && (l.Version() != 1 || l.Generation() != 2 || string(st) != `{"x":1}`) {
				err = fmt.Errorf("after the commit: version %d generation %d state %q", l.Version(), l.Generation(), st)
			}
			l.Release()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l1.Commit(2, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	l1.Release() // after Commit: nothing
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting replica did not get the lease after the commit")
	}
	l, err := a.Lock(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Version() != 1 {
		t.Fatalf("Release changed the version to %d", l.Version())
	}
	l.Release()
	if StoreName("s1", 1) != "s1" || StoreName("s1", 3) != "s1/g3" {
		t.Fatalf("store names %q %q", StoreName("s1", 1), StoreName("s1", 3))
	}
}
