//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/testgen"
)

// BenchmarkOneShotFolds folds the first 2,500 turns of a session into a new
// store with one `contextfold fold --input -` process per turn, as a hook
// does (38 s originally, every fold rewriting the whole index
// below a 4 MiB index). It reports the total wall time (total-s), the
// per-fold p50 and max, how often recall_index.json was rewritten
// (index-rewrites, counted by its inode changing), and its final size.
// FOLD_ONESHOT_N sets the number of turns. Each iteration is a new store.
//
//	go test -run '^$' -bench OneShotFolds -benchtime 1x ./cmd/contextfold
func BenchmarkOneShotFolds(b *testing.B) {
	n := 2500
	if v, err := strconv.Atoi(os.Getenv("FOLD_ONESHOT_N")); err == nil && v > 0 {
		n = v
	}
	bin := filepath.Join(b.TempDir(), "contextfold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	turns := testgen.New(42).Turns(0, n)
	inputs := make([][]byte, n)
	for i, t := range turns {
		in, err := json.Marshal(map[string]any{"step_id": t.StepID, "summary": t.Summary, "raw_content": t.RawContent})
		if err != nil {
			b.Fatal(err)
		}
		inputs[i] = in
	}
	env := append(os.Environ(), "CONTEXTFOLD_CACHE_DIR="+b.TempDir())
	var total time.Duration
	var lat []time.Duration
	rewrites, size := 0, int64(0)
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), ".contextfold")
		last := uint64(0)
		t0 := time.Now()
		for i := range turns {
			cmd := exec.Command(bin, "--dir", dir, "fold", "--input", "-")
			cmd.Env = env
			stdin, err := cmd.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			f0 := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			stdin.Write(inputs[i])
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				b.Fatalf("fold %d: %v", i, err)
			}
			lat = append(lat, time.Since(f0))
			if fi, err := os.Stat(filepath.Join(dir, "recall_index.json")); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Ino != last {
					rewrites, last = rewrites+1, st.Ino
				}
				size = fi.Size()
			}
		}
		total += time.Since(t0)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(total.Seconds()/float64(b.N), "total-s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(rewrites)/float64(b.N), "index-rewrites")
	b.ReportMetric(float64(size)/(1<<20), "index-MB")
}
