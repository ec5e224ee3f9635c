package contextfold_test

// Store-scale benchmarks (BENCHMARKS.md, "Store scale"). Public API only, so
// they measure whatever the core does. Sizes 1k and 10k always; 100k with
// CONTEXTFOLD_BENCH_LARGE=1 (building it takes minutes). Stores are built
// once per run, or kept in CONTEXTFOLD_BENCH_DIR across runs when it is set.
//
//	go test -run '^$' -bench 'Scale|Ingest' -benchtime 20x .
//	CONTEXTFOLD_BENCH_LARGE=1 CONTEXTFOLD_BENCH_DIR=/var/tmp/cfbench go test -run '^$' -bench Scale -benchtime 20x -timeout 3h .

import (
	"bufio"
	"fmt"
	"github.com/contextfold/contextfold/internal/benchlat"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
)

const benchSeed = 42

var benchGen = testgen.New(benchSeed)

// benchSizes are the store sizes measured.
func benchSizes() []int {
	if os.Getenv("CONTEXTFOLD_BENCH_LARGE") == "1" {
		return []int{1_000, 10_000, 100_000}
	}
	return []int{1_000, 10_000}
}

// benchStoreDir returns the directory of a store of n generated nodes.
func benchStoreDir(b *testing.B, n int) string {
	b.Helper()
	var dir string
	if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
		dir = filepath.Join(root, fmt.Sprintf("store-%d", n))
	} else {
		d, err := os.MkdirTemp("", "contextfold-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = filepath.Join(d, ".contextfold")
	}
	start := time.Now()
	if err := benchGen.BuildStore(dir, n, contextfold.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("store of %d nodes ready in %v (%s)", n, time.Since(start).Round(time.Millisecond), dir)
	return dir
}

// BenchmarkStoreScale measures fold, scan, recall and load at each size.
func BenchmarkStoreScale(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			dir := benchStoreDir(b, n)
			b.Run("scan", func(b *testing.B) { benchQuery(b, dir, n, true) })
			b.Run("ranked-scan", func(b *testing.B) { benchRanked(b, dir) })
			b.Run("recall", func(b *testing.B) { benchQuery(b, dir, n, false) })
			b.Run("load", func(b *testing.B) { benchLoad(b, dir, n) })
			b.Run("fold", func(b *testing.B) { benchFold(b, dir, n) })
		})
	}
}

func benchQuery(b *testing.B, dir string, n int, scan bool) {
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Scan(benchGen.Prompt(-1)); err != nil { // load the index
		b.Fatal(err)
	}
	var lat benchlat.Latencies
	picks := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if scan {
			res, err := s.Scan(benchGen.Prompt(i))
			if err != nil {
				b.Fatal(err)
			}
			picks += len(res.Selected)
		} else {
			hits, err := s.Recall(benchGen.Query(i))
			if err != nil {
				b.Fatal(err)
			}
			picks += len(hits)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b, "")
	b.ReportMetric(float64(picks)/float64(len(lat)), "results/op")
	if picks == 0 {
		b.Fatal("no query matched anything: the benchmark measures nothing")
	}
}

// benchRanked measures the ranked scan in process (match.Scan, mode
// ranked). The first scan builds the ranked index, or loads it from the
// per-user cache (CONTEXTFOLD_BENCH_DIR/cache when set); it is reported as
// build-ms and not timed with the scans.
func benchRanked(b *testing.B, dir string) {
	if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
		b.Setenv(cachedir.Env, filepath.Join(root, "cache"))
	} else {
		b.Setenv(cachedir.Env, b.TempDir())
	}
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if _, err := match.Scan(s, benchGen.Prompt(-1), match.Ranked); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "build-ms")
	// A running process: the prompts' posting lists cached and the work
	// an index does beside the scans after it is opened (the filter of
	// rule "typos") done, as in a proxy some seconds into its session.
	for i, warm := 0, time.Now(); i < 20 || time.Since(warm) < 2*time.Second; i++ {
		if _, err := match.Scan(s, benchGen.Prompt(i), match.Ranked); err != nil {
			b.Fatal(err)
		}
	}
	var lat benchlat.Latencies
	picks := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		res, err := match.Scan(s, benchGen.Prompt(i), match.Ranked)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		picks += len(res.Selected)
	}
	b.StopTimer()
	lat.Report(b, "")
	b.ReportMetric(float64(picks)/float64(len(lat)), "results/op")
	if picks == 0 {
		b.Fatal("no prompt matched anything: the benchmark measures nothing")
	}
}

// benchFold folds new turns into the store (it grows by b.N nodes; run
// with a small -benchtime such as 20x).
func benchFold(b *testing.B, dir string, n int) {
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := s.Status()
	if err != nil {
		b.Fatal(err)
	}
	next := 10_000_000 + st.Total // steps the store does not hold
	var lat benchlat.Latencies
	for b.Loop() {
		t := benchGen.Turn(next)
		t0 := time.Now()
		if _, err := s.Fold(t); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		next++
	}
	lat.Report(b, "")
}

// benchLoad measures Open + first Scan in a fresh process, which also
// reports its resident memory with the index loaded.
func benchLoad(b *testing.B, dir string, n int) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var lat benchlat.Latencies
	var rss, hwm, heap float64
	for i := 0; b.Loop(); i++ {
		cmd := exec.Command(exe, "-test.run=^TestScaleHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CONTEXTFOLD_SCALE_CHILD="+dir, "CONTEXTFOLD_SCALE_PROMPT="+benchGen.Prompt(i))
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("load child: %v\n%s", err, out)
		}
		m := map[string]float64{}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					m[k] = f
				}
			}
		}
		if _, ok := m["load_ns"]; !ok {
			b.Fatalf("load child said: %s", out)
		}
		lat = append(lat, time.Duration(m["load_ns"]))
		rss, hwm, heap = max(rss, m["rss_kb"]), max(hwm, m["hwm_kb"]), max(heap, m["heap_bytes"])
	}
	lat.Report(b, "load-")
	b.ReportMetric(rss/1024, "rss-MB")
	b.ReportMetric(hwm/1024, "peak-rss-MB")
	b.ReportMetric(heap/(1<<20), "heap-MB")
}

// TestScaleHelperProcess is not a test: it is the fresh process of the load
// benchmark. It opens the store, scans once, and prints the time taken and
// its memory.
func TestScaleHelperProcess(t *testing.T) {
	dir := os.Getenv("CONTEXTFOLD_SCALE_CHILD")
	if dir == "" {
		t.Skip("helper process of the load benchmark; runs only as its child")
	}
	t0 := time.Now()
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err == nil {
		_, err = s.Scan(os.Getenv("CONTEXTFOLD_SCALE_PROMPT"))
	}
	d := time.Since(t0)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("load_ns=%d\nheap_bytes=%d\n", d.Nanoseconds(), ms.HeapAlloc)
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		for _, k := range []string{"VmRSS", "VmHWM"} {
			if v, ok := strings.CutPrefix(line, k+":"); ok {
				fmt.Printf("%s_kb=%s\n", strings.ToLower(k[2:]), strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			}
		}
	}
	runtime.KeepAlive(s)
	os.Exit(0)
}

// BenchmarkIngest10k folds 10,000 generated turns with one FoldBatch into a
// fresh store per iteration (run with -benchtime 1x).
func BenchmarkIngest10k(b *testing.B) {
	const n = 10_000
	turns := benchGen.Turns(0, n)
	for b.Loop() {
		b.StopTimer()
		d, err := os.MkdirTemp("", "contextfold-ingest-")
		if err != nil {
			b.Fatal(err)
		}
		s, err := contextfold.Open(filepath.Join(d, ".contextfold"), contextfold.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rs, err := s.FoldBatch(turns)
		b.StopTimer()
		if err != nil || len(rs) != n {
			b.Fatalf("ingest: %v (%d results)", err, len(rs))
		}
		os.RemoveAll(d)
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "turns/s")
}
