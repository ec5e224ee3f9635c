package contextfold

import (
	"fmt"
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
