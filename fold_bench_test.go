package contextfold_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// BenchmarkFoldLargeLog folds one large build log (16 MiB, a distinct
// identifier every few words, as real logs with hashes and addresses have)
// into a fresh store and reports the peak heap in use as a multiple of the
// input ("peak-x-input", sampled every millisecond) and the bytes allocated
// per input byte. Issue 12: a 62 MB log took 1.8 GB (29×).
//
// FOLD_BENCH_MB sets the log's size in MiB (16 by default; issue 12 asks
// for 16–64). Issue 12's target: peak-x-input at most about 8.
//
//	go test -run '^$' -bench FoldLargeLog -benchtime 3x .
//	FOLD_BENCH_MB=64 go test -run '^$' -bench FoldLargeLog -benchtime 1x .
func BenchmarkFoldLargeLog(b *testing.B) {
	mb := 16
	if v, err := strconv.Atoi(os.Getenv("FOLD_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	var sb strings.Builder
	for i := 0; sb.Len() < mb<<20; i++ {
		fmt.Fprintf(&sb, "2026-01-05T09:%02d:%02d step %d: compiled pkg%d/file_%d.go sha %x in %dms\n", i/60%60, i%60, i, i%97, i, i*2654435761, i%1000)
	}
	log := sb.String()
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	var peak atomic.Uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := contextfold.Open(filepath.Join(b.TempDir(), ".contextfold"), contextfold.Options{Scrub: contextfold.ScrubOff})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		done := make(chan struct{})
		go func() {
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
		b.StartTimer()
		if _, err := s.Fold(contextfold.Turn{StepID: 1, Summary: "go build log", RawContent: log}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		close(done)
	}
	b.ReportMetric(float64(peak.Load())/float64(len(log)), "peak-x-input")
}
