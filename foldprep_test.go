package contextfold

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestNodePrepOrderAndBound: nodePrep hands back every wanted turn's node in
// the batch's order whatever order its workers finish in, never prepares
// more than prepAhead per worker ahead of what was taken (a batch of large
// turns holds a bounded number of documents), and stops cleanly with nodes
// prepared and not taken. Run it with -race: the workers and the taker
// share its slots.
func TestNodePrepOrderAndBound(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	turns := make([]Turn, 40)
	var want []int
	for i := range turns {
		turns[i] = Turn{StepID: 1000 + i, Summary: fmt.Sprint("turn ", i)}
		if i%5 != 3 { // some positions are not prepared (indexed already)
			want = append(want, i)
		}
	}
	var started, taken atomic.Int64
	var maxAhead atomic.Int64
	prepare := func(tr Turn) preparedNode {
		ahead := started.Add(1) - taken.Load()
		for {
			m := maxAhead.Load()
			if ahead <= m || maxAhead.CompareAndSwap(m, ahead) {
				break
			}
		}
		if tr.StepID%3 == 0 { // finish out of order
			time.Sleep(2 * time.Millisecond)
		}
		return preparedNode{t: tr}
	}
	np := newNodePrep(turns, want, prepare)
	for _, i := range want {
		p := np.get(i)
		taken.Add(1)
		if p.t.StepID != turns[i].StepID {
			t.Fatalf("position %d: got the node of step %d, want %d", i, p.t.StepID, turns[i].StepID)
		}
	}
	np.stop()
	// get releases its node's place before the taker counts it taken, so
	// the count sees at most one node more than the places (one taker).
	if got, bound := maxAhead.Load(), int64(4*prepAhead+1); got > bound {
		t.Errorf("%d nodes prepared ahead of the taker, want at most %d", got, bound)
	}
	// Stopped early: the workers end without anyone taking their nodes.
	started.Store(0)
	np = newNodePrep(turns, want, prepare)
	np.get(want[0])
	np.stop()
	if n := started.Load(); n > int64(1+4*prepAhead) {
		t.Errorf("%d nodes prepared after an early stop, want at most %d", n, 1+4*prepAhead)
	}
}

// TestParallelPrepSameBytes: a batch whose new nodes are prepared on
// several goroutines (nodePrep's workers, finishing in any order) writes
// the very bytes the same batch writes prepared one node after the other
// on one CPU: cold nodes, recall index and every other file of the store,
// redactions included, over batches that mix new turns with turns indexed
// already.
func TestParallelPrepSameBytes(t *testing.T) {
	clock := func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }
	fold := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dir := filepath.Join(t.TempDir(), ".contextfold")
		s, err := Open(dir, Options{Clock: clock, SessionID: "sess-1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, base := range []int{0, 100, 200} {
			turns := append(prepTurns(base), prepTurns(base+50)...)
			if base > 0 {
				turns = append(turns, prepTurns(base - 100)[:4]...) // indexed already
			}
			if _, err := s.FoldBatch(turns); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	serial, parallel := storeFiles(t, fold(1)), storeFiles(t, fold(4))
	if len(serial) < 72 {
		t.Fatalf("only %d files in the store", len(serial))
	}
	for name, want := range serial {
		if got, ok := parallel[name]; !ok || !bytes.Equal(got, want) {
			t.Errorf("%s differs when its nodes were prepared in parallel", name)
		}
	}
	if len(serial) != len(parallel) {
		t.Errorf("%d files folded serially, %d in parallel", len(serial), len(parallel))
	}
	if !bytes.Contains(parallel["cold_nodes/step_000003.json"], []byte("REDACTED")) {
		t.Error("the secret of step 3 was not redacted")
	}
}
