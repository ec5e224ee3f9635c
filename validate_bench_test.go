package contextfold_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/procmem"
)

// BenchmarkValidate measures Validate (every check: containment, integrity,
// payload and projection hashes, schemas, entry agreement, orphans) on a
// fresh Store at 1k, 10k and 20k generated small nodes, from a cold process
// view (a new Store each time; the page cache is warm). Target: at
// least 2× faster than the Python reference, which takes 2.8 s at 20k.
//
//	go test -run '^$' -bench Validate -benchtime 3x .
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 20_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var dir string
			if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
				dir = filepath.Join(root, fmt.Sprintf("small-store-%d", n))
			} else {
				dir = filepath.Join(b.TempDir(), ".contextfold")
			}
			// Small turns (100–400 bytes of payload, as a session's commands
			// and results): the store the figures were taken on.
			s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
			if err != nil {
				b.Fatal(err)
			}
			if st, err := s.Status(); err != nil || st.Total != n {
				if _, err := s.FoldBatch(benchGen.SmallTurns(0, n)); err != nil {
					b.Fatal(err)
				}
				if err := s.Compact(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := procmem.CPU()
			defer func() { b.ReportMetric((procmem.CPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op") }()
			for i := 0; i < b.N; i++ {
				s, err := contextfold.Open(dir, contextfold.Options{})
				if err != nil {
					b.Fatal(err)
				}
				rep, err := s.Validate()
				if err != nil || !rep.OK() || rep.Passed != n {
					b.Fatalf("validate: %v passed %d findings %d", err, rep.Passed, len(rep.Findings))
				}
			}
		})
	}
}
