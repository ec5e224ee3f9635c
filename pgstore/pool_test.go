package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/pgstore"
)

// More concurrent writers (of different sessions) than the pool has
// connections: a write transaction holds a connection while the Store reads
// through the pool, so without a bound on the writers each could hold one and
// wait for another forever. With pool_max_conns=2, eight goroutines folding
// into eight sessions must all finish.
func TestMoreWritersThanConnections(t *testing.T) {
	db, err := pgstore.Connect(context.Background(), pgtest.URL(t)+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := testgen.New(3)
	done := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := db.Session(fmt.Sprintf("w%d", w), contextfold.Options{})
			for i := 0; err == nil && i < 10; i++ {
				_, err = s.Fold(g.SmallTurn(i))
			}
			done <- err
		}()
	}
	go func() { wg.Wait(); close(done) }()
	timeout := time.After(2 * time.Minute)
	for range 8 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("writers of different sessions deadlocked on the connection pool")
		}
	}
}
