//go:build !race

// These multi-process tests run without the race detector (scripts/test.sh
// runs them separately): the race detector sees only one process, the
// children fold on a single goroutine, and its 5–10× slowdown would stretch
// 2,000 folds from 8 processes to a quarter of an hour.

package contextfold_test

// Durability tests: crash injection (SIGKILL of a folding child process),
// concurrent folds from several processes with readers, and write failures
// (disk full, read-only directory, permission denied). They use the public
// API only, so they hold for any implementation of the core.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/testgen"
)

// The child processes are this test binary run again with
// CONTEXTFOLD_DURABILITY_CHILD naming the mode (the os/exec helper-process
// pattern: no TestMain, so it composes with any other test file).
const (
	envChild     = "CONTEXTFOLD_DURABILITY_CHILD"
	envChildDir  = "CONTEXTFOLD_DURABILITY_DIR"
	envChildArg  = "CONTEXTFOLD_DURABILITY_ARG"
	durableSeed  = 20250101
	fixedUnixSec = 1_700_000_000
)

var durableGen = testgen.New(durableSeed)

// fixedClock makes every fold of a step write the same bytes, so a step
// re-folded after a crash is identical to the one the generator describes.
func fixedClock() time.Time { return time.Unix(fixedUnixSec, 0).UTC() }

func openDurable(t testing.TB, dir string) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDurabilityHelperProcess is not a test: it is the body of the child
// processes the durability tests start.
func TestDurabilityHelperProcess(t *testing.T) {
	mode := os.Getenv(envChild)
	if mode == "" {
		t.Skip("helper process of the durability tests; runs only as their child")
	}
	code := 0
	if err := childMain(mode, os.Getenv(envChildDir), os.Getenv(envChildArg)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		code = 1
	}
	os.Exit(code)
}

func childMain(mode, dir, arg string) error {
	s, err := contextfold.Open(dir, contextfold.Options{Clock: fixedClock})
	if err != nil {
		return err
	}
	switch mode {
	case "crash":
		// Fold from the step after the last indexed one, in batches of
		// 1–4, until killed. Orphans of a killed fold are re-folded.
		es, err := s.Entries()
		if err != nil {
			return err
		}
		next := 0
		if len(es) > 0 {
			next = es[len(es)-1].StepID + 1
		}
		r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(next)))
		fmt.Println("ready")
		for limit := next + 10_000; next < limit; {
			k := 1 + r.IntN(4)
			ts := make([]contextfold.Turn, k)
			for i := range ts {
				ts[i] = durableGen.SmallTurn(next + i)
			}
			if k == 1 {
				_, err = s.Fold(ts[0])
			} else {
				_, err = s.FoldBatch(ts)
			}
			if err != nil {
				return err
			}
			next += k
			fmt.Println("folded") // the parent times its kills by these
		}
		return nil
	case "crash-at":
		return crashAtChild(s, arg)
	case "concurrent":
		p, _ := strconv.Atoi(arg)
		for i := range 250 {
			if _, err := s.Fold(durableGen.SmallTurn(p*1000 + i)); err != nil {
				return fmt.Errorf("process %d fold %d: %w", p, i, err)
			}
		}
		return nil
	case "fold-one":
		// Report, as JSON on stdout, what folding one turn did.
		step, _ := strconv.Atoi(arg)
		_, err := s.Fold(durableGen.SmallTurn(step))
		var sf *contextfold.StoreFileError
		out := map[string]any{
			"ok":               err == nil,
			"store_file_error": errors.As(err, &sf),
			"eacces":           errors.Is(err, syscall.EACCES),
			"erofs":            errors.Is(err, syscall.EROFS),
		}
		if err != nil {
			out["error"] = err.Error()
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// foldedTurn returns step's turn of the generator as s folds it: scrubbed
// with s's scrubber (Store.ScrubbedTurn). A generated log line can read
// as a secret to a rule (step 2092's "KeyError: config token postgres"
// redacts "postgres"), so the raw text is not what every step hydrates;
// comparing with it failed whenever a reader happened to pick such a step.
func foldedTurn(t testing.TB, s *contextfold.Store, step int) contextfold.Turn {
	t.Helper()
	want, _, err := s.ScrubbedTurn(durableGen.SmallTurn(step))
	if err != nil {
		t.Fatal(err)
	}
	return want
}

func childCmd(t testing.TB, mode, dir, arg string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestDurabilityHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envChildDir+"="+dir, envChildArg+"="+arg)
	return cmd
}

// allowedAfterCrash are the states the spec defines for an interrupted store
// (CONF-12, CONF-09); anything else means a crash corrupted it.
var allowedAfterCrash = map[string]error{
	contextfold.KindOrphan:          contextfold.ErrOrphanedNode,
	contextfold.KindBrokenReference: contextfold.ErrBrokenReference,
	contextfold.KindIntegrity:       contextfold.ErrIntegrityCheck,
	contextfold.KindTempFile:        contextfold.ErrOrphanedNode, // the temporary of a write the kill cut
}

var typedHydrateErrors = []error{
	contextfold.ErrIntegrityCheck, contextfold.ErrBrokenReference,
	contextfold.ErrOrphanedNode, contextfold.ErrNodeNotFound, contextfold.ErrPathContainment,
}

// crashAudit is what checkAfterCrash saw.
type crashAudit struct {
	entries, orphans, otherFindings, hydrateFailures, tempFiles int
}

// checkAfterCrash audits a store after a kill: validate reports only the
// states the spec defines, every indexed node hydrates verified (with the
// bytes the generator folded) or fails with a typed error, and every node
// that validated before (validated: step → artifact hash) is still there,
// unchanged and hydrating. It then adds the nodes that pass now to validated.
func checkAfterCrash(t *testing.T, dir string, validated map[int]string) crashAudit {
	t.Helper()
	var a crashAudit
	s := openDurable(t, dir)
	rep, err := s.Validate()
	if err != nil {
		t.Fatalf("validate after a crash returned an error instead of findings: %v", err)
	}
	bad := map[int]bool{}
	for _, f := range rep.Findings {
		want, ok := allowedAfterCrash[f.Kind]
		if !ok {
			t.Errorf("validate after a crash: finding of kind %q the spec does not define for a crash: %s", f.Kind, f.Message)
			a.otherFindings++
			continue
		}
		if !errors.Is(f.Err, want) {
			t.Errorf("finding %q carries error %v, want one matching %v", f.Kind, f.Err, want)
		}
		if f.Kind == contextfold.KindOrphan {
			a.orphans++
		}
		if f.StepID != nil {
			bad[*f.StepID] = true
		}
	}
	es, err := s.Entries()
	if err != nil {
		t.Fatalf("entries after a crash: %v", err)
	}
	a.entries = len(es)
	byStep := make(map[int]*contextfold.Entry, len(es))
	for _, e := range es {
		byStep[e.StepID] = e
		h, err := s.Hydrate(e.StepID)
		if err != nil {
			a.hydrateFailures++
			typed := false
			for _, te := range typedHydrateErrors {
				typed = typed || errors.Is(err, te)
			}
			if !typed {
				t.Errorf("hydrate %d after a crash: untyped error %v", e.StepID, err)
			}
			if !bad[e.StepID] {
				t.Errorf("hydrate %d fails (%v) but validate reported nothing for it", e.StepID, err)
			}
			continue
		}
		want := foldedTurn(t, s, e.StepID)
		if h.RawContent != want.RawContent || h.Summary != want.Summary {
			t.Errorf("step %d hydrated verified but holds other bytes than were folded", e.StepID)
		}
	}
	for step, art := range validated {
		e, ok := byStep[step]
		if !ok {
			t.Errorf("step %d validated before the kill and is gone from the index", step)
			continue
		}
		if e.ArtifactSHA256 != art {
			t.Errorf("step %d validated before the kill and its artifact hash changed", step)
		}
		if bad[step] {
			t.Errorf("step %d validated before the kill and now has a finding", step)
		}
	}
	for _, e := range es {
		if !bad[e.StepID] {
			validated[e.StepID] = e.ArtifactSHA256
		}
	}
	a.tempFiles = countStrayFiles(t, dir)
	return a
}

// countStrayFiles counts the temporary files a killed or failed atomic write
// left behind: hidden files other than the lock, and anything in cold_nodes/
// that is not a cold node.
func countStrayFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	top, _ := os.ReadDir(dir)
	for _, d := range top {
		if strings.HasPrefix(d.Name(), ".") && d.Name() != ".lock" {
			n++
		}
	}
	cold, _ := os.ReadDir(filepath.Join(dir, contextfold.ColdNodesDir))
	for _, d := range cold {
		if !strings.HasPrefix(d.Name(), "step_") || !strings.HasSuffix(d.Name(), ".json") {
			n++
		}
	}
	return n
}

// TestCrashInjection kills a folding child process with SIGKILL at random
// moments, at least 200 times, and audits the store after every kill.
func TestCrashInjection(t *testing.T) {
	kills, perStore := 200, 25 // a fresh store every perStore kills keeps validate cheap
	maxDelay := 25 * time.Millisecond
	if testing.Short() {
		perStore = 10
		maxDelay = 15 * time.Millisecond
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill-timing seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	var (
		dir                               string
		validated                         map[int]string
		total                             crashAudit
		killedMidRun, progressed, indexed int
	)
	for k := 0; k < kills; k++ {
		if k%perStore == 0 {
			if dir != "" {
				indexed += len(validated)
			}
			dir = filepath.Join(t.TempDir(), ".contextfold")
			validated = map[int]string{}
		}
		before := len(validated)
		cmd := childCmd(t, "crash", dir, "")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child says "ready", then "folded" after each fold or batch.
		// Kill it after a random number (0–3) of folds, a random delay
		// later, so the kills land anywhere in a fold.
		wantFolds := r.IntN(4)
		reached := make(chan error, 2)
		go func() {
			sc := bufio.NewScanner(stdout)
			n := -1
			for sc.Scan() {
				if n == -1 && sc.Text() != "ready" {
					reached <- fmt.Errorf("child said %q", sc.Text())
					break
				}
				if n++; n == wantFolds {
					reached <- nil
				}
			}
			reached <- errors.New("child stopped before it was killed")
			io.Copy(io.Discard, stdout)
		}()
		select {
		case err := <-reached:
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("kill %d: %v\n%s", k, err, stderr.String())
			}
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatalf("kill %d: child did not fold %d times in 2 minutes", k, wantFolds)
		}
		time.Sleep(time.Duration(r.Int64N(int64(maxDelay))))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killedMidRun++
			} else {
				t.Fatalf("kill %d: child failed on its own: %v\n%s", k, err, stderr.String())
			}
		}
		a := checkAfterCrash(t, dir, validated)
		if t.Failed() {
			t.Fatalf("after kill %d (store %s): %+v", k, dir, a)
		}
		if len(validated) > before {
			progressed++
		}
		total.orphans += a.orphans
		total.hydrateFailures += a.hydrateFailures
		total.tempFiles = max(total.tempFiles, a.tempFiles)
	}
	indexed += len(validated)
	t.Logf("%d kills (%d by SIGKILL mid-run), %d progressed the store, %d nodes indexed and verified in all; "+
		"orphans seen %d times, hydrate failures %d, at most %d stray temp files in a store",
		kills, killedMidRun, progressed, indexed, total.orphans, total.hydrateFailures, total.tempFiles)
	if killedMidRun < kills {
		t.Errorf("only %d of %d children were killed by SIGKILL while running", killedMidRun, kills)
	}
	if progressed < kills/4 {
		t.Errorf("only %d of %d kills came after the child had folded something: the kills did not exercise folding", progressed, kills)
	}
}

// TestConcurrentProcessFolds runs 8 processes × 250 folds into one store
// while readers in this process scan, list and hydrate.
func TestConcurrentProcessFolds(t *testing.T) {
	const procs, per = 8, 250
	dir := filepath.Join(t.TempDir(), ".contextfold")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*strings.Builder, procs)
	for p := range cmds {
		cmds[p] = childCmd(t, "concurrent", dir, strconv.Itoa(p))
		outs[p] = &strings.Builder{}
		cmds[p].Stdout, cmds[p].Stderr = outs[p], outs[p]
	}
	for p, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatalf("start %d: %v", p, err)
		}
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	type readerStats struct{ reads, hydrated, scans, rawReads int }
	stats := make([]readerStats, 3)
	readerErr := make(chan error, 100)
	report := func(err error) {
		select {
		case readerErr <- err:
		default:
		}
	}
	for rd := range 2 {
		wg.Add(1)
		go func() { // a reader through the library: a fresh Store per round, as a CLI call would have
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 7))
			last := 0
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				s, err := contextfold.Open(dir, contextfold.Options{})
				if err != nil {
					report(err)
					return
				}
				es, err := s.Entries()
				if err != nil {
					report(fmt.Errorf("reader %d: entries while folding: %w", rd, err))
					return
				}
				if len(es) < last {
					report(fmt.Errorf("reader %d: the index shrank from %d to %d entries", rd, last, len(es)))
				}
				last = len(es)
				stats[rd].reads++
				if len(es) > 0 {
					e := es[r.IntN(len(es))]
					h, err := s.Hydrate(e.StepID)
					if err != nil {
						report(fmt.Errorf("reader %d: hydrate %d, indexed, while folding: %w", rd, e.StepID, err))
					} else if want, _, err := s.ScrubbedTurn(durableGen.SmallTurn(e.StepID)); err != nil {
						report(fmt.Errorf("reader %d: scrub step %d: %w", rd, e.StepID, err))
					} else if h.RawContent != want.RawContent {
						report(fmt.Errorf("reader %d: step %d hydrated other bytes than were folded", rd, e.StepID))
					}
					stats[rd].hydrated++
				}
				res, err := s.Scan(durableGen.Prompt(i))
				if err != nil {
					report(fmt.Errorf("reader %d: scan while folding: %w", rd, err))
				} else {
					for _, p := range res.Selected {
						if _, err := s.Entry(p.StepID); err != nil {
							report(fmt.Errorf("reader %d: scan picked %d, which is not indexed: %w", rd, p.StepID, err))
						}
					}
				}
				stats[rd].scans++
			}
		}()
	}
	wg.Add(1)
	go func() { // a raw reader: the index file is always whole JSON
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(filepath.Join(dir, contextfold.IndexFile))
			if errors.Is(err, os.ErrNotExist) {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				report(err)
				return
			}
			if !json.Valid(data) {
				report(fmt.Errorf("torn index: %d bytes of invalid JSON", len(data)))
			}
			stats[2].rawReads++
		}
	}()

	var failed []string
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("process %d: %v\n%s", p, err, outs[p]))
		}
	}
	close(done)
	wg.Wait()
	close(readerErr)
	for err := range readerErr {
		t.Error(err)
	}
	if len(failed) > 0 {
		t.Fatalf("folding processes failed:\n%s", strings.Join(failed, "\n"))
	}
	t.Logf("readers: %+v", stats)
	if stats[0].reads+stats[1].reads < 2 || stats[2].rawReads < 2 {
		t.Errorf("the readers barely ran (%+v): nothing was proved about torn reads", stats)
	}

	s := openDurable(t, dir)
	es, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int, len(es))
	for i, e := range es {
		got[i] = e.StepID
	}
	var want []int
	for p := range procs {
		for i := range per {
			want = append(want, p*1000+i)
		}
	}
	sort.Ints(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d entries after %d folds; missing or extra steps", len(got), len(want))
	}
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != procs*per {
		t.Fatalf("validate after concurrent folds: passed %d, findings %v", rep.Passed, rep.Findings)
	}
	// Every step, not only those the readers happened to pick, hydrates
	// the bytes its process folded.
	for _, step := range want {
		if h, err := s.Hydrate(step); err != nil || h.RawContent != foldedTurn(t, s, step).RawContent {
			t.Fatalf("step %d after concurrent folds: other bytes than were folded (%v)", step, err)
		}
	}
	if n := countStrayFiles(t, dir); n != 0 {
		t.Errorf("%d stray temporary files left", n)
	}
}

// snapshot maps every file of a store to its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".lock" {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// assertIntact checks that every file of before is unchanged, that the only
// new files are cold nodes the index does not list (orphans, which the spec
// defines and repair re-indexes), and that the store still validates and
// hydrates its previous nodes.
func assertIntact(t *testing.T, dir string, before map[string]string, prev int) {
	t.Helper()
	after := snapshot(t, dir)
	for p, b := range before {
		if after[p] != b {
			t.Errorf("%s changed after a failed write", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !strings.HasPrefix(filepath.Base(p), "step_") {
			t.Errorf("a failed write left %s behind", p)
		}
	}
	s := openDurable(t, dir)
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Kind != contextfold.KindOrphan {
			t.Errorf("after a failed write: %s finding: %s", f.Kind, f.Message)
		}
	}
	if rep.Passed != prev {
		t.Errorf("after a failed write %d nodes pass validate, want %d", rep.Passed, prev)
	}
	for step := range prev {
		if h, err := s.Hydrate(step); err != nil || h.RawContent != foldedTurn(t, s, step).RawContent {
			t.Errorf("step %d does not hydrate intact after a failed write: %v", step, err)
		}
	}
}

// failingWriter fails every write with fail.
type failingWriter struct{ fail func(p []byte) (int, error) }

func (f failingWriter) Write(p []byte) (int, error) { return f.fail(p) }

// seedStore folds steps 0..n-1 and returns the store's directory.
func seedStore(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openDurable(t, dir)
	for step := range n {
		if _, err := s.Fold(durableGen.SmallTurn(step)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWriteFailuresKeepPreviousState injects ENOSPC, a short write, EROFS and
// EACCES through fsutil.WrapWriter into each atomic write of a fold and of a
// batch in turn (cold nodes, index, whatever the implementation writes), and
// checks that the error is clear and the previous state intact.
func TestWriteFailuresKeepPreviousState(t *testing.T) {
	faults := []struct {
		name  string
		fail  func(p []byte) (int, error)
		errIs error
	}{
		{"ENOSPC", func(p []byte) (int, error) { return 0, syscall.ENOSPC }, syscall.ENOSPC},
		{"ENOSPC after half", func(p []byte) (int, error) { return len(p) / 2, syscall.ENOSPC }, syscall.ENOSPC},
		{"short write", func(p []byte) (int, error) { return len(p) / 3, nil }, nil},
		{"EROFS", func(p []byte) (int, error) { return 0, syscall.EROFS }, syscall.EROFS},
		{"EACCES", func(p []byte) (int, error) { return 0, syscall.EACCES }, syscall.EACCES},
	}
	const prev = 5
	ops := []struct {
		name string
		do   func(s *contextfold.Store) error
	}{
		{"fold", func(s *contextfold.Store) error { _, err := s.Fold(durableGen.SmallTurn(prev)); return err }},
		{"batch", func(s *contextfold.Store) error { _, err := s.FoldBatch(durableGen.SmallTurns(prev, 4)); return err }},
	}
	// wrap makes the nth atomic write (1-based) and every later one fail;
	// it returns a pointer to the number of atomic writes seen.
	wrap := func(n int, fail func(p []byte) (int, error)) (*int, func()) {
		count := 0
		old := fsutil.WrapWriter
		fsutil.WrapWriter = func(w io.Writer) io.Writer {
			count++
			if n > 0 && count >= n {
				return failingWriter{fail}
			}
			return w
		}
		return &count, func() { fsutil.WrapWriter = old }
	}
	for _, op := range ops {
		// How many atomic writes does the operation make?
		probe := openDurable(t, seedStore(t, prev))
		count, restore := wrap(0, nil)
		if err := op.do(probe); err != nil {
			restore()
			t.Fatal(err)
		}
		restore()
		writes := *count
		if writes < 1 {
			t.Fatalf("%s made no atomic write through fsutil.WriteFileAtomic: the seam cannot test it", op.name)
		}
		for _, fault := range faults {
			for n := 1; n <= writes; n++ {
				t.Run(fmt.Sprintf("%s/%s/write %d of %d", op.name, fault.name, n, writes), func(t *testing.T) {
					dir := seedStore(t, prev)
					before := snapshot(t, dir)
					s := openDurable(t, dir)
					if _, err := s.Entries(); err != nil { // warm any cache
						t.Fatal(err)
					}
					count, restore := wrap(n, fault.fail)
					err := op.do(s)
					restore()
					if *count < n {
						t.Fatalf("the operation made %d writes this time; the fault at write %d was never injected", *count, n)
					}
					if err == nil {
						t.Fatal("a failed write was reported as success")
					}
					var sf *contextfold.StoreFileError
					if !errors.As(err, &sf) || !errors.Is(err, contextfold.ErrBadStore) {
						t.Errorf("error %v (%T) is not a *StoreFileError", err, err)
					}
					if fault.errIs != nil && !errors.Is(err, fault.errIs) {
						t.Errorf("error %v does not wrap %v", err, fault.errIs)
					}
					if sf != nil && (sf.File == "" || sf.Remedy == "") {
						t.Errorf("error names no file or remedy: %+v", sf)
					}
					assertIntact(t, dir, before, prev)
					// The same Store folds again once the disk is back,
					// and a fresh one sees everything.
					if _, err := s.FoldBatch(durableGen.SmallTurns(prev, 4)); err != nil {
						t.Fatalf("fold after the fault cleared: %v", err)
					}
					rep, err := openDurable(t, dir).Validate()
					if err != nil || !rep.OK() || rep.Passed != prev+4 {
						t.Fatalf("after the retry: err %v, passed %d, findings %v", err, rep.Passed, rep.Findings)
					}
				})
			}
		}
	}
}

// TestReadOnlyAndPermissionDenied makes real writes fail the way the OS fails
// them. Tests run as root here, where permission bits do not stop writes, so
// as root the folding runs in a child process with the credentials of
// nobody, and the read-only case uses a read-only bind mount.
func TestReadOnlyAndPermissionDenied(t *testing.T) {
	const prev = 3
	runFold := func(t *testing.T, dir string, uid int) map[string]any {
		t.Helper()
		if uid < 0 { // not root: permission bits work in-process
			s := openDurable(t, dir)
			_, err := s.Fold(durableGen.SmallTurn(prev))
			var sf *contextfold.StoreFileError
			out := map[string]any{"ok": err == nil, "store_file_error": errors.As(err, &sf),
				"eacces": errors.Is(err, syscall.EACCES), "erofs": errors.Is(err, syscall.EROFS)}
			if err != nil {
				out["error"] = err.Error()
			}
			return out
		}
		cmd := childCmd(t, "fold-one", dir, strconv.Itoa(prev))
		cmd.Path = copyExecutable(t)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("child as uid %d: %v\n%s", uid, err, ee.Stderr)
			}
			t.Fatalf("child as uid %d: %v", uid, err)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("child output %q: %v", out, err)
		}
		return m
	}
	uid := -1
	if os.Geteuid() == 0 {
		uid = 65534 // nobody
	}
	// openForAll makes the store readable and traversable by nobody.
	openForAll := func(t *testing.T, dir string) {
		for p := dir; p != "/" && p != "."; p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				os.Chmod(p, fi.Mode().Perm()|0o005)
			}
		}
	}
	check := func(t *testing.T, dir string, before map[string]string, res map[string]any, errField string) {
		t.Helper()
		if res["ok"] == true {
			t.Fatalf("the fold succeeded on a store it cannot write: %v", res)
		}
		if res["store_file_error"] != true || res[errField] != true {
			t.Errorf("want a *StoreFileError wrapping %s, got %v", errField, res)
		}
		t.Logf("error: %v", res["error"])
		assertIntact(t, dir, before, prev)
	}

	t.Run("directory not writable", func(t *testing.T) {
		dir := seedStore(t, prev)
		openForAll(t, dir)
		// The lock stays writable, so the fold fails where it writes.
		os.Chmod(filepath.Join(dir, ".lock"), 0o666)
		before := snapshot(t, dir)
		for _, d := range []string{dir, filepath.Join(dir, contextfold.ColdNodesDir)} {
			if err := os.Chmod(d, 0o555); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(d, 0o755)
		}
		check(t, dir, before, runFold(t, dir, uid), "eacces")
	})
	t.Run("index not readable", func(t *testing.T) {
		dir := seedStore(t, prev)
		openForAll(t, dir)
		idx := filepath.Join(dir, contextfold.IndexFile)
		if err := os.Chmod(idx, 0o000); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(idx, 0o644)
		for _, d := range []string{dir, filepath.Join(dir, contextfold.ColdNodesDir)} {
			os.Chmod(d, 0o777) // writable: only the index read can fail
			defer os.Chmod(d, 0o755)
		}
		os.Chmod(filepath.Join(dir, ".lock"), 0o666)
		before := snapshot(t, dir)
		res := runFold(t, dir, uid)
		os.Chmod(idx, 0o644)
		check(t, dir, before, res, "eacces")
	})
	t.Run("read-only file system", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("a read-only bind mount needs root; the EROFS case runs through the seam in TestWriteFailuresKeepPreviousState")
		}
		dir := seedStore(t, prev)
		before := snapshot(t, dir)
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount as root: %v", err)
		}
		defer syscall.Unmount(dir, syscall.MNT_DETACH)
		if err := syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
		check(t, dir, before, runFold(t, dir, -1), "erofs")
	})
}

// copyExecutable copies the test binary where an unprivileged user can run
// it (the go build cache directories are private to root).
func copyExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp("", "contextfold-child-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "child.test")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
