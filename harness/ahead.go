package harness

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// Preparing turns ahead of their fold. In a session the turns a fold event
// folds arrived many requests earlier; what the fold derives from each of
// them alone (its summary, its record's target files, and in the store its
// scrubbed form, token estimate and projection fields: Store.Prepare) can
// be derived off the request's path, after the response of the request
// that brought them, so that the fold event is mostly writes. What is
// prepared is used only for the very message it was derived from (every
// input compared), so records, summaries and cold nodes are the same bytes
// whether a turn was prepared or not.

// aheadState is the harness's part of what PrepareAhead derived. seen is
// guarded by Harness.mu; the rest by its own mu (the preparation runs on
// another goroutine).
type aheadState struct {
	seen map[int]uint64 // step → Message.Key handed to a preparation
	gen  atomic.Uint64  // dispatches begun
	// compact: a fold left the ranked index's snapshot to the work after
	// the response (foldBatch, match.CompactSnapshot).
	compact atomic.Bool

	mu    sync.Mutex
	turns map[int]*aheadTurn
	bytes int
	// summaryHits and filesHits count the prepared summaries and files
	// used (for tests).
	summaryHits, filesHits int
	// turnsDone, when not nil, is called by a preparation once its turns
	// are prepared, before it makes spare files (for tests).
	turnsDone func()
}

// aheadMax bounds the bytes of message text the prepared turns hold (a
// variable for tests); turns past it are not prepared.
var aheadMax = 16 << 20

// aheadTurn is what was derived of one message: its Summarize and its
// messageFiles, with every input they read.
type aheadTurn struct {
	role, tool, command string
	isError             bool
	text                string // summaryText
	summary             string
	payload             string   // Message.payload, which messageFiles read ("": none)
	files               []string // messageFiles(command, payload)
}

func (t *aheadTurn) of(m Message) bool {
	return t.role == m.Role && t.tool == m.Tool && t.command == m.Command && t.isError == m.IsError
}

// summary returns Summarize of message i (m, whose summaryText is text)
// when it was prepared from the same inputs.
func (a *aheadState) summary(i int, m Message, text string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.turns[i]
	if t == nil || !t.of(m) || t.text != text {
		return "", false
	}
	a.summaryHits++
	return t.summary, true
}

// files returns messageFiles of message i (m, its command set) when it was
// prepared from the same inputs, else nil; the prepared turn is dropped
// either way (its record is being made).
func (a *aheadState) files(i int, m Message) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.turns[i]
	if t == nil {
		return nil
	}
	delete(a.turns, i)
	a.bytes -= len(t.text) + len(t.payload)
	if payload, _ := m.payload(); !t.of(m) || t.payload == "" || t.payload != payload {
		return nil
	}
	a.filesHits++
	return slices.Clone(t.files)
}

// put keeps t as message i's, unless that passes aheadMax.
func (a *aheadState) put(i int, t *aheadTurn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.bytes + len(t.text) + len(t.payload)
	if old := a.turns[i]; old != nil {
		n -= len(old.text) + len(old.payload)
	}
	if n > aheadMax {
		return
	}
	if a.turns == nil {
		a.turns = map[int]*aheadTurn{}
	}
	a.turns[i], a.bytes = t, n
}

// aheadIn is a message handed to a preparation.
type aheadIn struct {
	i       int
	m       Message // its command set (commandFor)
	text    string  // summaryText(m)
	payload string  // m.payload() ("": none)
	store   string  // m.storePayload(), the turn's raw content
}

// PrepareAhead returns the work that prepares, off the request's path,
// the messages of conv that a later fold event may fold: every message
// that is not a system message, not folded, not left the prompt and not in
// the store, and that was not handed to a preparation before with the same
// Message.Key (messages without a Key are not prepared). It returns nil
// when there is nothing to do. Call it after the request's dispatch; run the work
// on any goroutine, once (the proxy runs it after the response): it reads
// only its own copies of the messages, and writes only the harness's
// prepared turns (own lock), the store's (Store.Prepare) and the ranked
// index's prepared analyses (match.Prepare). The work yields to a later
// dispatch of the harness: once one has begun it stops after its current
// few messages and hands the rest back (a later PrepareAhead prepares
// them), so that it never competes with a fold event for the CPU. The work
// then makes the store's spare files for the cold nodes of a next fold
// event (Store.FillSpares: as many as the messages a fold may fold, or the
// last fold event's nodes), yielding the same way, and last the ranked
// index's snapshot a fold left due. Cost on the caller's path: one pass
// over conv, no hashing.
func (h *Harness) PrepareAhead(conv []Message) func() {
	h.mu.Lock()
	var in []aheadIn
	ws := h.ws
	if h.ahead.seen == nil {
		h.ahead.seen = map[int]uint64{}
	}
	foldable := 0 // messages a later fold event may fold
	for i, m := range conv {
		if m.Role == RoleSystem || h.entries[i] != nil || ws != nil && (ws.folded.has(i) || ws.removed.has(i)) {
			continue
		}
		store, ok := m.storePayload()
		if !ok {
			continue
		}
		foldable++
		if m.Key == 0 || h.ahead.seen[i] == m.Key {
			continue
		}
		h.ahead.seen[i] = m.Key
		m.Command = commandFor(conv, i)
		payload, _ := m.payload()
		in = append(in, aheadIn{i: i, m: m, text: summaryText(m), payload: payload, store: store})
	}
	compact := h.ahead.compact.Swap(false)
	var mode match.Mode
	if len(in) > 0 || compact {
		mode = h.matchMode()
	}
	gen := h.ahead.gen.Load()
	h.mu.Unlock()
	spares := h.store.NeedsSpares(foldable)
	if len(in) == 0 && !spares && !compact {
		return nil
	}
	later := func() bool { return h.ahead.gen.Load() != gen }
	return func() {
		// The turns first: what is prepared is off the next fold event's
		// path (its scrub, projection and analysis), while the spare files
		// only spare its durable part, which runs after the request is
		// forwarded (Dispatch.StartDurable), so that an agent whose next
		// request comes quickly finds its turns prepared rather than its
		// files made.
		for k := 0; k < len(in); k += aheadChunk {
			if later() {
				// A later request is being dispatched: the CPU is its; the
				// messages not prepared are handed over again later.
				h.mu.Lock()
				for _, c := range in[k:] {
					if h.ahead.seen[c.i] == c.m.Key {
						delete(h.ahead.seen, c.i)
					}
				}
				h.mu.Unlock()
				if compact {
					h.ahead.compact.Store(true)
				}
				return
			}
			chunk := in[k:min(len(in), k+aheadChunk)]
			turns := make([]contextfold.Turn, 0, len(chunk))
			for _, c := range chunk {
				t := &aheadTurn{role: c.m.Role, tool: c.m.Tool, command: c.m.Command, isError: c.m.IsError,
					text: c.text, summary: summarizeText(c.m, c.text), payload: c.payload}
				if c.payload != "" {
					t.files = messageFiles(c.m.Command, c.payload)
				}
				h.ahead.put(c.i, t)
				turns = append(turns, contextfold.Turn{StepID: c.i, Summary: t.summary, RawContent: c.store, SessionID: h.cfg.SessionID})
			}
			match.Prepare(h.store, mode, turns)
		}
		if h.ahead.turnsDone != nil {
			h.ahead.turnsDone()
		}
		if spares {
			// The files a fold event's durable part writes its cold nodes
			// into. Like the preparation they yield to a later dispatch,
			// which they would slow down (the kernel's inode allocation is
			// CPU work): a fold that finds too few creates its own files,
			// and the next response's work makes the rest. An error leaves
			// the fold to create its files.
			_ = h.store.FillSpares(foldable, later)
		}
		if compact {
			if later() {
				h.ahead.compact.Store(true) // the next response's work writes it
				return
			}
			match.CompactSnapshot(h.store, mode)
		}
	}
}

// foldBatch folds turns as match.FoldBatch does, the ranked index's
// snapshot (a file create, a write of the whole index and its syncs, in
// the per-user cache) left to the work after the response (PrepareAhead):
// a fold event's path writes the cold nodes and the recall index, and the
// snapshot's delta only. With overlapping durability (h.overlap) the batch's writes,
// syncs and renames are held and d.Durable holds them (StartDurable).
// Callers hold h.mu.
func (h *Harness) foldBatch(turns []contextfold.Turn, d *Dispatch) error {
	mode := h.matchMode()
	match.DeferSnapshotSaves(h.store, mode)
	var err error
	if h.overlap {
		var c *contextfold.FoldCommit
		if mode == match.Ranked && !h.scanAfter {
			// Nothing on this request's path reads the ranked index after
			// the fold: its refresh (the new nodes' analyses) is left to
			// Dispatch.RefreshIndex or the next scan.
			c, err = match.FoldBatchHeldIndexLater(h.store, mode, turns)
			d.indexLater, d.indexMode = h.store, mode
		} else {
			c, err = match.FoldBatchHeld(h.store, mode, turns)
		}
		if c != nil {
			d.Durable = c
		}
	} else {
		err = match.FoldBatch(h.store, mode, turns)
		d.Committed = d.Committed || err == nil && len(turns) > 0
	}
	if mode == match.Ranked {
		h.ahead.compact.Store(true)
	}
	return err
}

// aheadChunk is the messages prepared between two checks for a later
// dispatch.
const aheadChunk = 4
