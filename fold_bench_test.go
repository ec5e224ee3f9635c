package contextfold_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/procmem"
)

// buildLog is a build log of mb MiB with a distinct hash every line (a
// distinct identifier every few words, as real logs with hashes and
// addresses have).
func buildLog(mb int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < mb<<20; i++ {
		fmt.Fprintf(&sb, "2026-01-05T09:%02d:%02d step %d: compiled pkg%d/file_%d.go sha %x in %dms\n", i/60%60, i%60, i, i%97, i, i*2654435761, i%1000)
	}
	return sb.String()
}

// foldPeak folds log as one turn into a new store (scrubbing off, so the
// reference profile: every identifier indexed) and returns the peak heap
// in use above the baseline (HeapInuse sampled every millisecond, garbage
// not yet collected included), in bytes.
func foldPeak(tb testing.TB, dir, log string, timer func(on bool)) uint64 {
	s, err := contextfold.Open(filepath.Join(dir, ".contextfold"), contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				runtime.ReadMemStats(&m)
				if d := m.HeapInuse - min(m.HeapInuse, base.HeapInuse); d > peak.Load() {
					peak.Store(d)
				}
			}
		}
	}()
	timer(true)
	_, err = s.Fold(contextfold.Turn{StepID: 1, Summary: "go build log", RawContent: log})
	timer(false)
	close(done)
	<-exited
	if err != nil {
		tb.Fatal(err)
	}
	return peak.Load()
}

// BenchmarkFoldLargeLog folds one large build log (16 MiB) into a fresh
// store and reports the peak heap in use as a multiple of the input
// ("peak-x-input", see foldPeak) and the bytes allocated per input byte.
// A 62 MB log took 1.8 GB (29×); the target is at most 3×.
//
// FOLD_BENCH_MB sets the log's size in MiB (16 by default; 16–64 is the
// range worth measuring).
//
//	go test -run '^$' -bench FoldLargeLog -benchtime 3x .
//	FOLD_BENCH_MB=64 go test -run '^$' -bench FoldLargeLog -benchtime 1x .
func BenchmarkFoldLargeLog(b *testing.B) {
	mb := 16
	if v, err := strconv.Atoi(os.Getenv("FOLD_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	log := buildLog(mb)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		peak = max(peak, foldPeak(b, b.TempDir(), log, func(on bool) {
			if on {
				b.StartTimer()
			} else {
				b.StopTimer()
			}
		}))
	}
	b.ReportMetric(float64(peak)/float64(len(log)), "peak-x-input")
}

// TestFoldLargeLogHeapMultiple guards the memory of one large fold (issue
// 12): folding a 4 MiB build log must peak below 5× the input in heap in
// use. It was 5.5–5.7× before the second round of fold memory work and
// 2.8–3.1× after (BENCHMARKS.md, "Validate and large folds"); the bound
// passes a shared machine's noise and fails on a return to the old
// multiple. The fold runs in a child process (this test binary again), so
// that the heap other tests left does not widen the garbage collector's
// headroom; the child also reports its peak RSS. About 2 s; skipped with
// -short and under the race detector (its instrumentation changes the
// heap); scripts/test.sh runs it without.
func TestFoldLargeLogHeapMultiple(t *testing.T) {
	const child = "CONTEXTFOLD_FOLD_MEMORY_CHILD"
	if os.Getenv(child) == "1" {
		log := buildLog(4)
		peak := foldPeak(t, t.TempDir(), log, func(bool) {})
		fmt.Printf("fold-memory %d %d %d\n", len(log), peak, procmem.PeakRSS())
		return
	}
	if raceEnabled || testing.Short() {
		t.Skip("a memory measure: not under the race detector or -short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFoldLargeLogHeapMultiple$", "-test.count=1")
	cmd.Env = append(os.Environ(), child+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var in, peak, rss uint64
	i := strings.Index(string(out), "fold-memory ")
	if i < 0 {
		t.Fatalf("child printed no measure:\n%s", out)
	}
	if _, err := fmt.Sscanf(string(out[i:]), "fold-memory %d %d %d", &in, &peak, &rss); err != nil {
		t.Fatalf("child's measure: %v\n%s", err, out)
	}
	x := float64(peak) / float64(in)
	t.Logf("log %.1f MB, peak heap in use %.1f MB (%.2f× the input), child's peak RSS %.1f MB", float64(in)/(1<<20), float64(peak)/(1<<20), x, float64(rss)/(1<<20))
	if x > 5 {
		t.Fatalf("folding a %d-byte log peaked at %.2f× the input in heap, want ≤ 5×", in, x)
	}
}
