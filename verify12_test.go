package contextfold

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestValidateDuringALongBatchReportsNoFalseOrphans: a writer that holds
// the store lock for longer than ValidateLockWait (a long ingest commits
// its index in the middle of the batch, under the lock) makes no false
// orphans either: the nodes validate found unindexed are indexed by the
// batch's next commit, which validate reads without the lock. A real
// orphan is still reported.
func TestValidateDuringALongBatchReportsNoFalseOrphans(t *testing.T) {
	defer func(w time.Duration, e int) { ValidateLockWait, FoldCommitEvery = w, e }(ValidateLockWait, FoldCommitEvery)
	ValidateLockWait, FoldCommitEvery = 1500*time.Millisecond, 5
	s := demoStore(t)
	writer := mustOpen(t, s.Dir())
	orphan := filepath.Join(s.Dir(), ColdNodesDir, stepFileName(777777))
	if err := os.WriteFile(orphan, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	turns := make([]Turn, 40)
	for i := range turns {
		turns[i] = Turn{StepID: 1000 + i, Summary: fmt.Sprintf("turn %d", i)}
	}
	started := make(chan struct{})
	done := make(chan *Report)
	go func() {
		<-started
		rep, err := mustOpen(t, s.Dir()).Validate()
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	_, err := writer.FoldBatchProgress(turns, func(n, total int) {
		switch {
		case n == 3: // nodes 1000..1002 are on disk, not yet indexed
			close(started)
			time.Sleep(300 * time.Millisecond) // validate lists cold_nodes/ meanwhile
		case n > 3 && n < 30:
			time.Sleep(100 * time.Millisecond) // the lock stays held past ValidateLockWait
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindOrphan || rep.Findings[0].File != orphan {
		t.Errorf("validate during a long batch: want the one real orphan, got %+v", rep.Findings)
	}
}
