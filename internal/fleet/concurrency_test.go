//go:build !race

package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/pgstore"
)

// envChild makes the test binary a writer child: FLEET_CHILD=MODE, the last
// four arguments DB-URL SESSION-PREFIX FIRST COUNT.
const envChild = "FLEET_CHILD"

// childMain is a writer process. Mode "one": fold steps FIRST..FIRST+COUNT-1
// of testgen seed 5 into session SESSION-PREFIX, one fold (one transaction)
// each. Mode "many": for sessions FIRST..FIRST+COUNT-1, fold steps 0..19
// into session SESSION-PREFIX-<i>, one fold each.
func childMain(mode string, args []string) error {
	dbURL, prefix := args[0], args[1]
	first, err1 := strconv.Atoi(args[2])
	count, err2 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad arguments %q", args)
	}
	g := testgen.New(5)
	opts := contextfold.Options{}
	switch mode {
	case "one":
		s, err := pgstore.OpenURL(withSession(dbURL, prefix), opts)
		if err != nil {
			return err
		}
		for step := first; step < first+count; step++ {
			if _, err := s.Fold(g.SmallTurn(step)); err != nil {
				return fmt.Errorf("fold %d: %w", step, err)
			}
		}
	case "many":
		for i := first; i < first+count; i++ {
			s, err := pgstore.OpenURL(withSession(dbURL, fmt.Sprintf("%s-%d", prefix, i)), opts)
			if err != nil {
				return err
			}
			for step := range manySteps {
				if _, err := s.Fold(g.SmallTurn(step)); err != nil {
					return fmt.Errorf("session %d fold %d: %w", i, step, err)
				}
			}
		}
	default:
		return fmt.Errorf("unknown child mode %q", mode)
	}
	return nil
}

const manySteps = 20

// writers runs n writer children of mode at once, child w with the
// arguments args(w), and waits for all; any failure fails t.
func writers(t *testing.T, mode string, n int, args func(w int) []string) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([][]byte, n)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args(w)...)...)
			cmd.Env = append(os.Environ(), envChild+"="+mode)
			outs[w], errs[w] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v\n%s", w, err, outs[w])
		}
	}
	return time.Since(start)
}

// TestConcurrentWriterProcessesOneSession: 8 processes fold 1,000 steps
// each into one session at once, one transaction per fold; every entry is
// present afterwards and the store validates clean (no lost update: the
// session row lock serialises the writers).
func TestConcurrentWriterProcessesOneSession(t *testing.T) {
	const procs, per = 8, 1000
	bin := binary(t)
	dbURL := pgtest.URL(t)
	took := writers(t, "one", procs, func(w int) []string {
		return []string{dbURL, "shared", strconv.Itoa(w * per), strconv.Itoa(per)}
	})
	s, err := pgstore.OpenURL(withSession(dbURL, "shared"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, e := range es {
		seen[e.StepID] = true
	}
	for step := range procs * per {
		if !seen[step] {
			t.Fatalf("step %d is missing from the recall index (%d entries)", step, len(es))
		}
	}
	if len(es) != procs*per {
		t.Fatalf("%d entries; want %d", len(es), procs*per)
	}
	validateClean(t, bin, withSession(dbURL, "shared"))
	t.Logf("%d processes × %d folds into one session: %v (%.0f folds/s)", procs, per, took.Round(time.Millisecond), float64(procs*per)/took.Seconds())
}

// TestManySessions: 1,000 sessions × 20 folds, written by 8 processes at
// once; every session holds its 20 entries and validates clean.
func TestManySessions(t *testing.T) {
	const procs, sessions = 8, 1000
	bin := binary(t)
	dbURL := pgtest.URL(t)
	took := writers(t, "many", procs, func(w int) []string {
		return []string{dbURL, "s", strconv.Itoa(w * sessions / procs), strconv.Itoa(sessions / procs)}
	})
	start := time.Now()
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := pgstore.OpenURL(withSession(dbURL, fmt.Sprintf("s-%d", i)), contextfold.Options{})
			if err == nil {
				var st *contextfold.Status
				if st, err = s.Status(); err == nil && st.Total != manySteps {
					err = fmt.Errorf("%d entries, want %d", st.Total, manySteps)
				}
				if err == nil {
					var rep *contextfold.Report
					if rep, err = s.Validate(); err == nil && !rep.OK() {
						err = fmt.Errorf("validate: %+v", rep.Findings)
					}
				}
			}
			if err != nil {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("session s-%d: %v", i, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d sessions are wrong; first: %s", len(bad), sessions, bad[0])
	}
	// One session through the command line as well.
	validateClean(t, bin, withSession(dbURL, "s-999"))
	t.Logf("%d sessions × %d folds by %d processes: %v; checking every session: %v", sessions, manySteps, procs, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
