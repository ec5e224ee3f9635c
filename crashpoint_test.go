//go:build !race

package contextfold_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// crashAtBatch is the number of turns a crash-at child folds per batch.
const crashAtBatch = 6

// crashAtChild is the child of TestCrashAtEveryBatchPhase. arg is
// "POINT:N:LIMIT:JOURNAL": fold batches of crashAtBatch turns from the step
// after the last indexed one up to step LIMIT (exclusive), printing
// "folded NEXT" after each batch returns, and kill itself with SIGKILL at
// the Nth time the write path passes fsutil.CrashPoint POINT (no point: no
// kill). JOURNAL "1" journals every index update (JournalThreshold 1), so
// that the batch's index commit is a journal append rather than a rewrite.
// SPARES "1" makes spare files for each batch before it (Store.FillSpares:
// from the second batch on, once cold_nodes/ exists, the batch writes its
// nodes into spares). DEFERRED "1" folds each batch with
// FoldBatchEachDeferred, as the proxy does: the batch's syncs and renames
// run on their own goroutine after the fold returned ("forwarded NEXT" is
// printed then: the moment the proxy sends the request upstream), and
// "folded NEXT" only once its FoldCommit's Wait returned (the moment the
// proxy answers).
func crashAtChild(s *contextfold.Store, arg string) error {
	parts := strings.Split(arg, ":")
	for len(parts) < 6 {
		parts = append(parts, "0")
	}
	if len(parts) != 6 {
		return fmt.Errorf("crash-at wants POINT:N:LIMIT:JOURNAL[:SPARES[:DEFERRED]], got %q", arg)
	}
	spares, deferred := parts[4] == "1", parts[5] == "1"
	point := parts[0]
	nth, _ := strconv.Atoi(parts[1])
	limit, _ := strconv.Atoi(parts[2])
	if parts[3] == "1" {
		contextfold.JournalThreshold = 1
	}
	// Each batch is one group, whatever the machine's speed: a batch that
	// took FoldCommitInterval (2 s) on a loaded machine would commit a first
	// group on the fold's own path, shifting the Nth point, and, deferred,
	// its points would wait for a return that never comes (a hung child).
	contextfold.FoldCommitEvery, contextfold.FoldCommitInterval = 1<<30, time.Hour
	seen := 0
	// Deferred, the commit's points wait until the fold's return was
	// printed: the kill then always comes after the forward.
	var retMu sync.Mutex
	returned := make(chan struct{})
	fsutil.CrashPoint = func(p string) {
		if deferred && p != fsutil.BatchFirstWritten {
			retMu.Lock()
			ch := returned
			retMu.Unlock()
			<-ch
		}
		if p == point {
			if seen++; seen == nth {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	es, err := s.Entries()
	if err != nil {
		return err
	}
	next := 0
	if len(es) > 0 {
		next = es[len(es)-1].StepID + 1
	}
	for next < limit {
		k := min(crashAtBatch, limit-next)
		if spares {
			if err := s.FillSpares(k, nil); err != nil {
				return err
			}
		}
		if deferred {
			retMu.Lock()
			returned = make(chan struct{})
			retMu.Unlock()
			c, err := s.FoldBatchEachDeferred(durableGen.SmallTurns(next, k), func(int, *contextfold.FoldResult) {})
			if err != nil {
				return err
			}
			fmt.Println("forwarded", next+k)
			close(returned)
			if err := c.Wait(); err != nil {
				return err
			}
		} else if _, err := s.FoldBatch(durableGen.SmallTurns(next, k)); err != nil {
			return err
		}
		next += k
		fmt.Println("folded", next)
	}
	return nil
}

// TestCrashAtEveryBatchPhase kills a folding process at every point of a
// batch's durable write where the disk holds a distinct state (fsutil's
// crash points: the first node written to its temporary file, all written,
// all synced (the rewritten index's temporary file with them), the first
// renamed into place, all renamed, cold_nodes/ synced and the index not yet
// named, the index renamed into place and its directory not synced), at
// the 1st, 2nd and 4th batch, with the index rewritten and with it
// journaled. After every kill the store holds an
// earlier state or the new one: validate reports only what a crash may
// leave (orphans, temporary files), every batch the process acknowledged is
// indexed and hydrates verified with the bytes folded, and a new process
// then folds the rest and leaves a store that validates clean (the orphans
// of the killed batch adopted, its temporary files removed). With spare
// files made before each batch (Store.FillSpares) the same holds: a spare
// is never a node but through the batch's commit, the spares holding a
// killed batch's nodes (and the store root's spare holding its rewritten
// index, written before the nodes' sync) are reported as temporary files,
// and the next process removes every spare (written or empty). An index
// committed before its batch's nodes are named fails it (broken
// references after the kill and after folding on). With the batch's
// durable part deferred (FoldBatchEachDeferred, deferred=1) every point is
// passed after the fold returned (the request forwarded) and before it is
// durable: the same holds, and a batch is acknowledged only once durable.
func TestCrashAtEveryBatchPhase(t *testing.T) {
	points := []string{fsutil.BatchFirstWritten, fsutil.BatchWritten, fsutil.BatchSynced, fsutil.BatchRenamedFirst,
		fsutil.BatchRenamed, fsutil.BatchDirSynced, fsutil.BatchLastRenamed}
	const limit = 4*crashAtBatch + 3
	for _, mode := range []struct{ journal, spares, deferred string }{{"0", "0", "0"}, {"1", "0", "0"}, {"0", "1", "0"},
		{"0", "0", "1"}, {"1", "0", "1"}, {"0", "1", "1"}} {
		journal := mode.journal
		for _, point := range points {
			for _, nth := range []int{1, 2, 4} {
				name := fmt.Sprintf("journal=%s/spares=%s/deferred=%s/%s/%d", journal, mode.spares, mode.deferred, point, nth)
				t.Run(name, func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), ".contextfold")
					cmd := childCmd(t, "crash-at", dir, fmt.Sprintf("%s:%d:%d:%s:%s:%s", point, nth, limit, journal, mode.spares, mode.deferred))
					stdout, err := cmd.StdoutPipe()
					if err != nil {
						t.Fatal(err)
					}
					var stderr strings.Builder
					cmd.Stderr = &stderr
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					acked, forwarded := 0, 0
					sc := bufio.NewScanner(stdout)
					for sc.Scan() {
						if n, ok := strings.CutPrefix(sc.Text(), "folded "); ok {
							acked, _ = strconv.Atoi(n)
						}
						if n, ok := strings.CutPrefix(sc.Text(), "forwarded "); ok {
							forwarded, _ = strconv.Atoi(n)
						}
					}
					err = cmd.Wait()
					ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
					killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
					if !killed && (point != fsutil.BatchLastRenamed || journal != "1") {
						// Every batch passes every batch point; the
						// last-file point (the index renamed into place)
						// is passed by index rewrites only: a journaled
						// store's first batch.
						t.Fatalf("the child was not killed at %s (%v): %s", point, err, stderr.String())
					}
					if !killed && err != nil {
						t.Fatalf("child: %v\n%s", err, stderr.String())
					}
					if killed && mode.deferred == "1" && forwarded <= acked && point != fsutil.BatchFirstWritten {
						// Every point after the writes is passed once the
						// fold returned: the kill came between the
						// forward and the durable end.
						t.Errorf("killed at %s with %d steps forwarded and %d acknowledged: the point was not passed after the fold returned", point, forwarded, acked)
					}
					// A batch's nodes are named before the index points
					// at them: a kill leaves orphans and temporary files,
					// never an entry without its node.
					rep, err := openDurable(t, dir).Validate()
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range rep.Findings {
						if f.Kind != contextfold.KindOrphan && f.Kind != contextfold.KindTempFile {
							t.Errorf("after the kill: a %s finding (only orphans and temporary files may be left): %s", f.Kind, f.Message)
						}
					}
					if mode.spares == "1" && nth >= 2 && (point == fsutil.BatchWritten || point == fsutil.BatchSynced) {
						// The killed batch wrote its nodes into spares, never
						// named: temporary files that validate reports.
						// The rewritten index went into the root's spare,
						// written before the nodes' sync.
						written, root := 0, 0
						for _, f := range rep.Findings {
							if fi, err := os.Stat(f.File); err == nil && fsutil.SpareNameRE.MatchString(filepath.Base(f.File)) &&
								f.Kind == contextfold.KindTempFile && fi.Size() > 0 {
								if filepath.Dir(f.File) == dir {
									root++
								} else {
									written++
								}
							}
						}
						if written != crashAtBatch || root != 1 {
							t.Errorf("%d spares holding a node and %d root spares holding the index reported as temporary files after the kill, want %d and 1: %+v", written, root, crashAtBatch, rep.Findings)
						}
					}
					validated := map[int]string{}
					a := checkAfterCrash(t, dir, validated)
					for step := range acked {
						if _, ok := validated[step]; !ok {
							t.Errorf("step %d was acknowledged before the kill and is not indexed intact", step)
						}
					}
					if t.Failed() {
						t.Fatalf("after the kill (acknowledged %d steps): %+v", acked, a)
					}
					// A new process folds the rest: the store is then clean.
					out, err := childCmd(t, "crash-at", dir, fmt.Sprintf(":0:%d:%s", limit, journal)).CombinedOutput()
					if err != nil {
						t.Fatalf("folding on after the kill: %v\n%s", err, out)
					}
					s := openDurable(t, dir)
					rep, err = s.Validate()
					if err != nil {
						t.Fatal(err)
					}
					if !rep.OK() || rep.Passed != limit {
						t.Fatalf("after folding on: passed %d of %d, findings %+v", rep.Passed, limit, rep.Findings)
					}
					for step := range limit {
						h, err := s.Hydrate(step)
						if err != nil || h.RawContent != foldedTurn(t, s, step).RawContent {
							t.Fatalf("step %d after folding on: %v", step, err)
						}
					}
					if n := countStrayFiles(t, dir); n != 0 {
						t.Errorf("%d temporary files left after folding on", n)
					}
				})
			}
		}
	}
}
