package harness

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// SessionStateVersion is the version of the SessionState encoding.
const SessionStateVersion = 1

// SessionState is the part of a harness's state that is not derivable from
// the request and the store: what one conversation's earlier dispatches
// decided. With it, a harness in another process (a proxy replica) over the
// same store continues the conversation exactly as this one would — the
// same fold events, the same working set and page-table block, the same
// hydration for the rest of a human turn, the same evictions.
//
// What it holds:
//   - the working set (budget mode): the steps shown as records and the
//     steps that left the prompt, the page-table block's bytes, its omitted
//     lines, the fold-event count and the conversation length at the last
//     dispatch. These follow from the history of fold events (hysteresis),
//     not from the latest request alone;
//   - the current human turn's hydration (computed once per turn, so the
//     forwarded prefix stays byte-identical within the turn even when the
//     store gained steps meanwhile), keyed by the prompt's SHA-256;
//   - the hydrated nodes not yet evicted and the dispatch counter, so a
//     response that ends on one replica evicts what another hydrated
//     (CONF-07), exactly once.
//
// Everything else a harness keeps is a cache of the store and the request
// (records, payload checks, node verification, the recall index by step) and
// is rebuilt from them. The encoding (ExportState) is canonical JSON-like:
// slices ascending, so equal states give equal bytes.
type SessionState struct {
	Version int `json:"version"`
	// Seq counts the dispatches of the conversation so far.
	Seq uint64 `json:"seq"`
	// Pending lists the hydrated, not yet evicted steps with the dispatch
	// (Seq) that last hydrated each, ascending by step.
	Pending []PendingEviction `json:"pending"`
	// Turn is the current human turn's hydration (nil before the first
	// prompt).
	Turn *TurnState `json:"turn,omitempty"`
	// WorkingSet is the budget mode's working set (nil before the first
	// budgeted dispatch, and with the fixed window).
	WorkingSet *WorkingSetState `json:"working_set,omitempty"`
}

// PendingEviction is a hydrated step awaiting its eviction, and the dispatch
// that hydrated it.
type PendingEviction struct {
	Step int    `json:"step"`
	Seq  uint64 `json:"seq"`
}

// TurnState is one human turn's hydration as SessionState keeps it.
type TurnState struct {
	PromptIndex  int            `json:"prompt_index"`
	PromptSHA256 string         `json:"prompt_sha256"` // hex SHA-256 of the scanned prompt text
	Hydrated     []HydratedNode `json:"hydrated"`
	// Refused keeps each refusal's step and message (the typed error does
	// not survive the encoding; errors.Is on it no longer matches).
	Refused  []RefusalState `json:"refused"`
	Dropped  []int          `json:"dropped"`
	Text     string         `json:"text"`
	Warnings []string       `json:"warnings"`
	Indexed  int            `json:"indexed"` // steps in the recall index when the scan ran
	// HydrationHost is the message the hydration was placed in under the
	// budget (absent: not placed yet), so that a replica keeps it there.
	HydrationHost *int `json:"hydration_host,omitempty"`
}

// RefusalState is a Refusal with its error as text.
type RefusalState struct {
	StepID int    `json:"step_id"`
	Error  string `json:"error"`
}

// WorkingSetState is the budget mode's working set between two fold events.
type WorkingSetState struct {
	Folded  []int  `json:"folded"`  // shown as their folded-step record, ascending
	Removed []int  `json:"removed"` // left the prompt, ascending
	Omitted int    `json:"omitted"` // oldest page lines that left the block
	Events  int    `json:"events"`  // fold events so far
	Block   string `json:"block"`   // the page-table block's text
	Lines   int    `json:"lines"`   // its page lines
	N       int    `json:"n"`       // conversation length at the last dispatch
	// LastRequestMs is when the previous request was dispatched (Unix
	// milliseconds; Config.CacheTTL), absent before the first.
	LastRequestMs int64 `json:"last_request_ms,omitempty"`
}

// State returns the harness's SessionState. Safe for concurrent use (it
// waits for a dispatch in progress).
func (h *Harness) State() SessionState {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := SessionState{Version: SessionStateVersion, Seq: h.seq, Pending: []PendingEviction{}}
	for step, seq := range h.pending {
		st.Pending = append(st.Pending, PendingEviction{step, seq})
	}
	sort.Slice(st.Pending, func(i, j int) bool { return st.Pending[i].Step < st.Pending[j].Step })
	if t := h.turn; t != nil {
		ts := &TurnState{PromptIndex: t.promptIndex, PromptSHA256: hex.EncodeToString(t.promptHash[:]),
			Hydrated: t.hydrated, Dropped: t.dropped, Text: t.text, Warnings: t.warnings, Indexed: t.indexed}
		if t.host >= 0 {
			host := t.host
			ts.HydrationHost = &host
		}
		for _, r := range t.refused {
			ts.Refused = append(ts.Refused, RefusalState{r.StepID, r.Err.Error()})
		}
		st.Turn = ts
	}
	if ws := h.ws; ws != nil {
		st.WorkingSet = &WorkingSetState{Folded: append([]int{}, ws.folded.list()...), Removed: append([]int{}, ws.removed.list()...),
			Omitted: ws.omitted, Events: ws.events, Block: ws.block, Lines: ws.lines, N: ws.n, LastRequestMs: ws.lastMs}
	}
	return st
}

// ExportState encodes State as JSON (equal states give equal bytes).
func (h *Harness) ExportState() ([]byte, error) {
	return json.Marshal(h.State())
}

// ImportState replaces the harness's SessionState by one that ExportState
// wrote (in this or another process, over the same store), so the next
// dispatch continues from it. Caches of the store are kept. Safe for
// concurrent use.
//
// Errors: data that is not a SessionState of this version (nothing is
// changed then).
func (h *Harness) ImportState(data []byte) error {
	var st SessionState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("harness: session state: %v", err)
	}
	if st.Version != SessionStateVersion {
		return fmt.Errorf("harness: session state version %d, this build reads version %d; run the same contextfold version on every replica", st.Version, SessionStateVersion)
	}
	var turn *turnState
	if t := st.Turn; t != nil {
		sum, err := hex.DecodeString(t.PromptSHA256)
		if err != nil || len(sum) != 32 {
			return errors.New("harness: session state: prompt_sha256 is not a hex SHA-256")
		}
		turn = &turnState{promptIndex: t.PromptIndex, hydrated: t.Hydrated, dropped: t.Dropped, text: t.Text,
			warnings: t.Warnings, indexed: t.Indexed, host: -1}
		if t.HydrationHost != nil {
			turn.host = *t.HydrationHost
		}
		copy(turn.promptHash[:], sum)
		for _, r := range t.Refused {
			turn.refused = append(turn.refused, Refusal{StepID: r.StepID, Err: errors.New(r.Error)})
		}
	}
	var ws *workset
	if w := st.WorkingSet; w != nil {
		ws = newWorkset()
		for _, i := range w.Folded {
			ws.folded.add(i)
		}
		for _, i := range w.Removed {
			ws.removed.add(i)
		}
		ws.omitted, ws.events, ws.block, ws.lines, ws.n, ws.lastMs = w.Omitted, w.Events, w.Block, w.Lines, w.N, w.LastRequestMs
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq = st.Seq
	h.pending = make(map[int]uint64, len(st.Pending))
	for _, p := range st.Pending {
		h.pending[p.Step] = p.Seq
	}
	h.turn, h.ws = turn, ws
	return nil
}
