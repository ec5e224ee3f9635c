package contextfold

import (
	"runtime"
	"sync"

	"github.com/contextfold/contextfold/schema"
	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/tokens"
)

// preparedNode is a turn of a batch made ready to write: scrubbed, its cold
// node built and checked against the schema (the CPU part of a fold, which
// touches no store state).
type preparedNode struct {
	t          Turn // as scrubbed
	n          *ColdNode
	redactions int
	err        error // building the node failed
	schemaErr  error // the node does not follow the cold-node schema
}

// prepareNode scrubs t and builds its cold node. Safe for concurrent use.
func prepareNode(t Turn, sessionID string, sc *scrub.Scrubber, policyHash, now string, counter tokens.Counter) preparedNode {
	if t.SessionID == "" {
		t.SessionID = sessionID
	}
	// Secrets are redacted in memory: the original never reaches disk.
	t, redactions := scrubTurn(sc, t)
	var extra map[string]any
	if redactions > 0 {
		extra = map[string]any{"redactions": redactions}
	}
	p := preparedNode{t: t, redactions: redactions}
	p.n, p.err = buildColdNode(t, policyHash, now, redactions > 0, counter.Count(t.Payload()), extra)
	if p.err == nil {
		// Every artifact is checked against its schema before it is
		// written (the document itself: re-parsing its encoding would cost
		// several times the payload's size in memory).
		p.schemaErr = schema.ValidateValue(schema.ColdNode, p.n.Doc)
	}
	return p
}

// nodePrep prepares the new turns of a batch ahead of its writes, on up to
// GOMAXPROCS goroutines (scrubbing and extraction dominate a fold event's
// CPU time): get(i) returns turn i's preparedNode in the batch's order. At
// most prepAhead nodes are prepared and not yet taken, so that a batch of
// large turns holds a bounded number of documents at once.
type nodePrep struct {
	prepare func(Turn) preparedNode
	turns   []Turn
	slots   map[int]*prepSlot // by turn position, read-only once built; nil: prepared inline by get
	tokens  chan struct{}     // one per node prepared (or being) and not taken
	quit    chan struct{}
	wg      sync.WaitGroup
}

type prepSlot struct {
	done chan struct{}
	p    preparedNode
}

// prepAhead bounds the nodes prepared ahead per worker.
const prepAhead = 2

// newNodePrep starts preparing the turns at positions want (ascending).
// stop must be called once the batch is done with it.
func newNodePrep(turns []Turn, want []int, prepare func(Turn) preparedNode) *nodePrep {
	np := &nodePrep{prepare: prepare, turns: turns}
	workers := min(runtime.GOMAXPROCS(0), len(want))
	if workers <= 1 {
		return np // one node, or one CPU: prepared inline, as it is taken
	}
	np.slots = make(map[int]*prepSlot, len(want))
	for _, i := range want {
		np.slots[i] = &prepSlot{done: make(chan struct{})}
	}
	np.tokens = make(chan struct{}, workers*prepAhead)
	np.quit = make(chan struct{})
	jobs := make(chan int)
	np.wg.Add(1)
	go func() { // hands out positions in order, while tokens allow
		defer np.wg.Done()
		defer close(jobs)
		for _, i := range want {
			select {
			case np.tokens <- struct{}{}:
			case <-np.quit:
				return
			}
			select {
			case jobs <- i:
			case <-np.quit:
				return
			}
		}
	}()
	for range workers {
		np.wg.Add(1)
		go func() {
			defer np.wg.Done()
			for i := range jobs {
				sl := np.slots[i]
				sl.p = np.prepare(turns[i])
				close(sl.done)
			}
		}()
	}
	return np
}

// get returns the prepared node of the turn at position i (one of want),
// waiting for it. Called by one goroutine, in ascending order of i.
func (np *nodePrep) get(i int) preparedNode {
	sl, ok := np.slots[i]
	if !ok {
		return np.prepare(np.turns[i])
	}
	<-sl.done
	p := sl.p
	sl.p = preparedNode{} // the batch holds it from here on
	<-np.tokens
	return p
}

// stop ends the preparation (nodes not taken are dropped) and waits for
// its goroutines.
func (np *nodePrep) stop() {
	if np.quit == nil {
		return
	}
	close(np.quit)
	// A worker may be preparing a node no one will take: let it finish.
	np.wg.Wait()
}
