package contextfold_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/benchlat"
	"github.com/contextfold/contextfold/internal/procmem"
	"github.com/contextfold/contextfold/internal/testgen"
)

// BenchmarkFoldBatch50 measures one fold event of the store: FoldBatch of 50
// new turns of 0.5–4 KB (testgen.Turn, scrubbing on, as the proxy folds)
// into a store that grows by 50 nodes per iteration (so the index crosses
// JournalThreshold on the way in a long run). It reports the p50 and p99 of
// one batch in milliseconds (the cost of a fold event in the core: nodes
// written and made durable, then the index, without the proxy) and the
// process's CPU time per batch (cpu-ms/batch).
//
//	go test -run '^$' -bench 'FoldBatch50$' -benchtime 200x .
func BenchmarkFoldBatch50(b *testing.B) {
	const n = 50
	g := testgen.New(21)
	s, err := contextfold.Open(filepath.Join(b.TempDir(), ".contextfold"), contextfold.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }})
	if err != nil {
		b.Fatal(err)
	}
	var lat benchlat.Latencies
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		turns := g.Turns(i*n, n)
		b.StartTimer()
		start, cpu0 := time.Now(), procmem.CPU()
		if _, err := s.FoldBatch(turns); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		cpu += procmem.CPU() - cpu0
	}
	b.StopTimer()
	lat.Report(b, "")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/batch")
}

// BenchmarkPrepareNode measures the CPU part of folding one turn, what a
// fold event's node preparation does per new node before anything is
// written: scrubbing its texts, its token estimate and its projection's
// term extraction, on 50 testgen turns of 0.5–4 KB (about 2 KB on
// average) in turn, on one goroutine. ns/op is per node, and so is
// cpu-us/node, the process's CPU time (on a loaded machine the wall
// time also counts waiting for a CPU).
//
//	go test -run '^$' -bench 'PrepareNode$' .
func BenchmarkPrepareNode(b *testing.B) {
	s, err := contextfold.Open(filepath.Join(b.TempDir(), ".contextfold"), contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	turns := testgen.New(21).Turns(0, 50)
	size := 0
	for _, t := range turns {
		size += len(t.RawContent) + len(t.Summary)
	}
	b.SetBytes(int64(size / len(turns)))
	contextfold.PrepareContentForTest(s, turns[0]) // the scrubber's rules compiled
	b.ResetTimer()
	cpu0 := procmem.CPU()
	for i := range b.N {
		contextfold.PrepareContentForTest(s, turns[i%len(turns)])
	}
	b.ReportMetric(float64((procmem.CPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/node")
}
