//go:build unix

package contextfold_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// TestRankedScansProcess is not a test: it is a process that opens the
// store CONTEXTFOLD_SCANS_STORE (its ranked index from the per-user cache,
// CONTEXTFOLD_CACHE_DIR), runs the ranked scan of benchRanked's loading
// prompt, then of its first CONTEXTFOLD_SCANS_N prompts (0 to 400), and
// prints their allocations and the process's user and system CPU and page
// faults during them. The instructions of the scans are the difference
// between the process with N and with 0 (docs/matching.md, "What a scan
// costs"):
//
//	go test -c -o /tmp/cf.test . && for n in 0 200; do CONTEXTFOLD_SCANS_STORE=/work/rbench/store-100000 \
//	    CONTEXTFOLD_CACHE_DIR=/work/rbench/cache CONTEXTFOLD_SCANS_N=$n GOGC=off GODEBUG=asyncpreemptoff=1 \
//	    valgrind --tool=callgrind /tmp/cf.test -test.run TestRankedScansProcess; done
//
// With CONTEXTFOLD_SCANS_WARM=W (1 to 1000) the measured scans are warm, as
// benchRanked's are: after the loading prompt, prompt 0 is scanned (the
// second scan starts the build of rule "typos"' filter beside the scans),
// the process waits CONTEXTFOLD_SCANS_PAUSE seconds (default 5; 120 under
// valgrind, where the build takes about a minute: a scan without the
// filter looks its variants up in the dictionary, and the count would
// depend on when the build ends), then scans prompts 0 to W-1, then the N
// measured ones.
func TestRankedScansProcess(t *testing.T) {
	dir := os.Getenv("CONTEXTFOLD_SCANS_STORE")
	if dir == "" {
		t.Skip("a process of scans to measure; runs only with CONTEXTFOLD_SCANS_STORE")
	}
	n, err := strconv.Atoi(os.Getenv("CONTEXTFOLD_SCANS_N"))
	if err != nil || n < 0 || n > 400 {
		t.Fatalf("CONTEXTFOLD_SCANS_N=%q: want 0 to 400", os.Getenv("CONTEXTFOLD_SCANS_N"))
	}
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := match.Scan(s, benchGen.Prompt(-1), match.Ranked); err != nil {
		t.Fatal(err)
	}
	if w := os.Getenv("CONTEXTFOLD_SCANS_WARM"); w != "" {
		warm, err := strconv.Atoi(w)
		if err != nil || warm < 1 || warm > 1000 {
			t.Fatalf("CONTEXTFOLD_SCANS_WARM=%q: want 1 to 1000", w)
		}
		pause := 5
		if v := os.Getenv("CONTEXTFOLD_SCANS_PAUSE"); v != "" {
			if pause, err = strconv.Atoi(v); err != nil || pause < 0 {
				t.Fatalf("CONTEXTFOLD_SCANS_PAUSE=%q: want seconds", v)
			}
		}
		if _, err := match.Scan(s, benchGen.Prompt(0), match.Ranked); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(pause) * time.Second)
		for i := range warm {
			if _, err := match.Scan(s, benchGen.Prompt(i), match.Ranked); err != nil {
				t.Fatal(err)
			}
		}
	}
	var m0, m1 runtime.MemStats
	var r0, r1 syscall.Rusage
	runtime.ReadMemStats(&m0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for i := range n {
		if _, err := match.Scan(s, benchGen.Prompt(i), match.Ranked); err != nil {
			t.Fatal(err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	runtime.ReadMemStats(&m1)
	fmt.Printf("scans=%d alloc_bytes=%d mallocs=%d gcs=%d user_ms=%d sys_ms=%d minflt=%d\n", n, m1.TotalAlloc-m0.TotalAlloc, m1.Mallocs-m0.Mallocs, m1.NumGC-m0.NumGC,
		(r1.Utime.Nano()-r0.Utime.Nano())/1e6, (r1.Stime.Nano()-r0.Stime.Nano())/1e6, r1.Minflt-r0.Minflt)
}
