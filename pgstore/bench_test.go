package pgstore_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/benchlat"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/pgstore"
)

// Latency of the protocol operations on a PostgreSQL session of N nodes
// (CONTEXTFOLD_BENCH_NODES, default 1000), with the store's index warm, as
// a proxy replica holds it. Run:
//
//	CONTEXTFOLD_BENCH_NODES=100000 go test -run '^$' -bench . -benchtime 200x ./pgstore
//
// BENCHMARKS.md has the figures side by side with the directory store.

func benchNodes(b *testing.B) int {
	n := 1000
	if v := os.Getenv("CONTEXTFOLD_BENCH_NODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("CONTEXTFOLD_BENCH_NODES=%q: %v", v, err)
		}
	}
	return n
}

// gen makes the session's turns (internal/testgen's small turns: a command,
// its result and an error line) and the prompts, as the store-scale
// benchmarks of the root package do.
var gen = testgen.New(42)

func benchTurn(i int) contextfold.Turn { return gen.SmallTurn(i) }

// benchStore returns a session of n nodes (folded in batches) and its URL.
func benchStore(b *testing.B, n int) (*contextfold.Store, string) {
	b.Helper()
	u := sessionURL(b, testURL(b))
	s, err := pgstore.OpenURL(u, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 2000
	for lo := 0; lo < n; lo += batch {
		turns := make([]contextfold.Turn, 0, batch)
		for i := lo; i < min(n, lo+batch); i++ {
			turns = append(turns, benchTurn(i))
		}
		if _, err := s.FoldBatch(turns); err != nil {
			b.Fatal(err)
		}
	}
	return s, u
}

func BenchmarkPostgres(b *testing.B) {
	n := benchNodes(b)
	s, _ := benchStore(b, n)
	if _, err := s.Scan(gen.Prompt(-1)); err != nil { // warm: the index read (and its snapshot built)
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("ScanWarm/%d", n), func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.Scan(gen.Prompt(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("Hydrate/%d", n), func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.Hydrate(i % n); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A fold event: 50 new nodes in one FoldBatch (one transaction).
	b.Run(fmt.Sprintf("FoldBatch50/%d", n), func(b *testing.B) {
		var lat benchlat.Latencies
		next := 2 * n
		for b.Loop() {
			turns := make([]contextfold.Turn, 50)
			for j := range turns {
				turns[j] = benchTurn(next + j)
			}
			next += len(turns)
			start := time.Now()
			if _, err := s.FoldBatch(turns); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		lat.Report(b, "")
	})
	b.Run(fmt.Sprintf("Fold/%d", n), func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.Fold(benchTurn(n + i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
