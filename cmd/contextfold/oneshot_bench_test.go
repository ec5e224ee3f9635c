package main

// The one-shot CLI benchmark (BENCHMARKS.md, "Store scale"): the wall time
// of `contextfold scan` as a fresh process on a store of n nodes, the way an
// agent hook calls it. Sizes 1k and 10k; 100k with CONTEXTFOLD_BENCH_LARGE=1.
// CONTEXTFOLD_BENCH_DIR keeps the stores across runs (shared with the root
// package's benchmarks).
//
//	go test -run '^$' -bench OneShot -benchtime 10x ./cmd/contextfold

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
)

func BenchmarkOneShotScan(b *testing.B) { oneShot(b, "exact") }

// BenchmarkOneShotScanRanked is `contextfold scan --match ranked` as a fresh
// process; the ranked index comes from the per-user cache
// (CONTEXTFOLD_BENCH_DIR/cache when set), warmed by one untimed run.
func BenchmarkOneShotScanRanked(b *testing.B) { oneShot(b, "ranked") }

func oneShot(b *testing.B, mode string) {
	bin := filepath.Join(b.TempDir(), "contextfold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	sizes := []int{1_000, 10_000}
	if os.Getenv("CONTEXTFOLD_BENCH_LARGE") == "1" {
		sizes = append(sizes, 100_000)
	}
	gen := testgen.New(42) // the root benchmarks' seed: the same stores
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var dir string
			if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
				dir = filepath.Join(root, fmt.Sprintf("store-%d", n))
			} else {
				dir = filepath.Join(b.TempDir(), ".contextfold")
			}
			if err := gen.BuildStore(dir, n, contextfold.Options{}); err != nil {
				b.Fatal(err)
			}
			cache := b.TempDir()
			if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
				cache = filepath.Join(root, "cache")
			}
			env := append(os.Environ(), "CONTEXTFOLD_CACHE_DIR="+cache)
			warm := exec.Command(bin, "--dir", dir, "scan", "--json", "--match", mode, "--", gen.Prompt(-1))
			warm.Env = env
			if out, err := warm.CombinedOutput(); err != nil {
				b.Fatalf("scan: %v\n%s", err, out)
			}
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				cmd := exec.Command(bin, "--dir", dir, "scan", "--json", "--match", mode, "--", gen.Prompt(i))
				cmd.Env = env
				t0 := time.Now()
				out, err := cmd.Output()
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatalf("scan: %v\n%s", err, out)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}
