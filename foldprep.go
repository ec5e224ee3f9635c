package contextfold

import (
	"bytes"
	"runtime"
	"slices"
	"sync"

	"github.com/contextfold/contextfold/internal/canonjson"
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
	// pretty is the node's file content (canonjson.WritePretty of its
	// document), rendered by the preparing worker for a node whose
	// payload is at most prettyAheadMax bytes (nil: rendered as it is
	// written, streamed).
	pretty []byte
}

// prettyAheadMax bounds the payload of a cold node whose file content
// prepareNode renders (in parallel, on the fold's preparing workers)
// rather than the fold's own goroutine as it writes it: a larger node is
// streamed to its file, never held whole in memory besides its document.
const prettyAheadMax = 256 << 10

// prepareNode scrubs t and builds its cold node, taking what ahead holds
// when it was prepared (Store.Prepare) from this very turn under the same
// scrubber, token counter and default session (nil: computed here). Safe
// for concurrent use.
func prepareNode(t Turn, sessionID string, sc *scrub.Scrubber, policyHash, now string, counter tokens.Counter, ahead *preparedContent) preparedNode {
	c := ahead
	if c == nil || !c.matches(t, sessionID, sc, counter) {
		c = prepareContent(t, sessionID, sc, counter, false)
	}
	var extra map[string]any
	if c.redactions > 0 {
		extra = map[string]any{"redactions": c.redactions}
	}
	p := preparedNode{t: c.t, redactions: c.redactions}
	p.n, p.err = buildColdNodeFrom(c.t, c.fields, policyHash, now, c.redactions > 0, c.tokens, extra)
	if p.err == nil {
		// Every artifact is checked against its schema before it is
		// written (the document itself: re-parsing its encoding would cost
		// several times the payload's size in memory).
		p.schemaErr = schema.ValidateValue(schema.ColdNode, p.n.Doc)
	}
	if p.err == nil && p.schemaErr == nil && len(p.t.RawContent) <= prettyAheadMax {
		var b bytes.Buffer
		if canonjson.WritePretty(&b, p.n.Doc) == nil {
			p.pretty = b.Bytes()
		}
	}
	return p
}

// preparedContent is what preparing a turn derives from its content alone
// (no clock, no policy hash, no store state): the turn scrubbed, its
// redactions, its token estimate and its projection's fields. Most of a
// node's CPU time (scrubbing, extraction); Store.Prepare computes it ahead
// of the fold.
type preparedContent struct {
	in         Turn // the turn as given
	sessionID  string
	sc         *scrub.Scrubber
	counter    string // tokens.Counter's Name
	t          Turn   // scrubbed, its session id defaulted
	redactions int
	tokens     int
	fields     Projection // projectFields(t)
	// own: the values the turn's context reveals as secrets
	// (contextValues, for the fold event's sharing), computed ahead by
	// Store.Prepare (nil: not computed).
	own *scrub.Known
}

// prepareContent derives t's preparedContent; with own set (and
// scrubbing on), its own values too: contextValues(sc, t), read from the
// findings of t's scrub rather than by our rules run over its texts once
// more. Safe for concurrent use.
func prepareContent(t Turn, sessionID string, sc *scrub.Scrubber, counter tokens.Counter, own bool) *preparedContent {
	c := &preparedContent{in: t, sessionID: sessionID, sc: sc, counter: counter.Name()}
	from := 0 // t's texts whose context values are t's: all but a defaulted session id
	if t.SessionID == "" {
		t.SessionID, from = sessionID, 1
	}
	// Secrets are redacted in memory: the original never reaches disk.
	if own && sc != nil {
		c.own = new(scrub.Known)
		c.t, c.redactions = scrubTurnKnown(sc, t, c.own, from)
	} else {
		c.t, c.redactions = scrubTurn(sc, t)
	}
	c.tokens = counter.Count(c.t.Payload())
	c.fields = projectFields(c.t)
	return c
}

// matches reports whether c was derived from t under the same default
// session, scrubber and token counter (every field of t compared, a nil
// list apart from an empty one: nil means "extract").
func (c *preparedContent) matches(t Turn, sessionID string, sc *scrub.Scrubber, counter tokens.Counter) bool {
	same := func(a, b []string) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }
	in := c.in
	return c.sc == sc && c.sessionID == sessionID && c.counter == counter.Name() &&
		in.StepID == t.StepID && in.SessionID == t.SessionID && in.Summary == t.Summary && in.RawContent == t.RawContent &&
		same(in.Files, t.Files) && same(in.Commands, t.Commands) && same(in.Errors, t.Errors)
}

// size is the bytes c holds, for the bound of Store.Prepare's memo.
func (c *preparedContent) size() int {
	n := len(c.in.Summary) + len(c.in.RawContent) + len(c.fields.NormalizedContent)
	if c.redactions > 0 {
		n += len(c.t.Summary) + len(c.t.RawContent)
	}
	return n
}

// prepMemo holds the turns Store.Prepare prepared ahead of their fold, by
// step, at most prepMemoMax bytes; a fold takes (and removes) its turns'.
// Safe for concurrent use.
type prepMemo struct {
	mu    sync.Mutex
	m     map[int]*preparedContent
	bytes int
}

// prepMemoMax bounds the bytes Store.Prepare holds (a variable for tests).
var prepMemoMax = 16 << 20

// take removes and returns step's prepared content (nil: none).
func (pm *prepMemo) take(step int) *preparedContent {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	c := pm.m[step]
	if c != nil {
		delete(pm.m, step)
		pm.bytes -= c.size()
	}
	return c
}

// get returns step's prepared content when it matches t, else nil.
func (pm *prepMemo) get(t Turn, sessionID string, sc *scrub.Scrubber, counter tokens.Counter) *preparedContent {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if c := pm.m[t.StepID]; c != nil && c.matches(t, sessionID, sc, counter) {
		return c
	}
	return nil
}

// put keeps c (replacing its step's), unless that would pass prepMemoMax;
// it reports whether c is kept.
func (pm *prepMemo) put(c *preparedContent) bool {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	old := pm.m[c.in.StepID]
	n := pm.bytes + c.size()
	if old != nil {
		n -= old.size()
	}
	if n > prepMemoMax {
		return false
	}
	if pm.m == nil {
		pm.m = map[int]*preparedContent{}
	}
	pm.m[c.in.StepID], pm.bytes = c, n
	return true
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

// Prepare derives, ahead of their fold, what folding turns takes from
// their content alone: each turn scrubbed, its token estimate and its
// projection's fields (most of a fold's CPU time). A later FoldBatch (or
// Fold) of the very same turn under the same scrubber, token counter and
// session takes it from there instead of computing it again; the bytes it
// writes are the same either way. Turns already prepared are skipped; at
// most 16 MiB of prepared turns are held (the turns past it are not
// prepared), and a fold removes the ones it takes. It returns, by position
// in turns, each turn as its cold node will hold it (scrubbed, its session
// defaulted), or a zero Turn (StepID -1) for a turn not prepared: the
// caller may derive more from it ahead (the ranked index's analysis).
// Only for a directory store (a backend store prepares nothing). Errors
// reading the policy or the scrubber's settings make Prepare do nothing:
// the fold reports them. Safe for concurrent use, including with a fold of
// the same store (it waits for the fold's in-process lock only to read the
// settings).
func (s *Store) Prepare(turns []Turn) []Turn {
	out := make([]Turn, len(turns))
	for k := range out {
		out[k].StepID = -1
	}
	if s.be != nil || len(turns) == 0 {
		return out
	}
	s.mu.Lock()
	sessionID := s.opts.SessionID
	policy, err := s.Policy()
	var sc *scrub.Scrubber
	if err == nil {
		sc, err = s.scrubber()
	}
	var counter tokens.Counter
	if err == nil {
		counter, err = policy.Counter()
	}
	s.mu.Unlock()
	if err != nil {
		return out
	}
	for k, t := range turns {
		c := s.prep.get(t, sessionID, sc, counter)
		if c == nil {
			c = prepareContent(t, sessionID, sc, counter, true) // c.own as contextValues(sc, t)
			if !s.prep.put(c) {
				continue
			}
		}
		out[k] = c.t
	}
	return out
}
