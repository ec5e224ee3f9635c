package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/tokens"
)

// Defaults of Config. With them a conversation shorter than
// DefaultHotWindow+DefaultFoldBlock messages is left alone, and a long agent
// session keeps its last 8 to 15 messages verbatim while every older message
// of 256 tokens or more is folded into a record of about 100 tokens.
const (
	DefaultHotWindow     = 8   // messages
	DefaultFoldBlock     = 8   // messages
	DefaultMinFoldTokens = 256 // tokens
)

// Config tunes when turns are folded. The zero value selects the defaults.
type Config struct {
	// HotWindow is the number of most recent messages that are never folded.
	// 0 means DefaultHotWindow; a negative value means none.
	HotWindow int
	// FoldBlock is the step, in messages, by which the fold boundary moves
	// (hysteresis). 0 means DefaultFoldBlock; values below 1 mean 1.
	FoldBlock int
	// MinFoldTokens is the size threshold: a message whose foldable text has
	// fewer tokens (reference estimate, characters/4) stays in the prompt.
	// 0 means DefaultMinFoldTokens; a negative value means no threshold.
	MinFoldTokens int
	// SessionID is written into every cold node ("" means the store's).
	SessionID string

	// ContextBudget is the most tokens (the store's token_counter) a
	// forwarded request may take: system prompt, tool definitions and
	// messages. While the conversation fits, nothing is folded; past it, a
	// fold event folds oldest first down to FoldTarget percent of it (see
	// the package doc). 0 means DefaultContextBudget unless FoldBlock is set
	// (which selects the fixed message window); NoBudget (negative) always
	// selects the window.
	ContextBudget int
	// FoldTarget is the share of ContextBudget, in percent (1–95), that a
	// fold event folds down to. 0 means DefaultFoldTarget.
	FoldTarget int
	// PinMessages is the number of leading messages never folded (the
	// system prompt and the task statement). 0 means through the first
	// human message. Budget mode only.
	PinMessages int
	// PageTableShare is the share of ContextBudget, in percent, the
	// page-table block may take before its oldest lines leave the prompt.
	// 0 means DefaultPageTableShare.
	PageTableShare int
	// HydrationShare is the share of ContextBudget, in percent, that the
	// hydration of one human turn may take. 0 means DefaultHydrationShare.
	HydrationShare int
	// Match is the scan's matching mode (package match): match.Exact is the
	// reference's, match.Ranked weighs terms and hydrates large nodes by
	// windows around the matched lines. "" means what the store's settings
	// ask for, else match.Default (match.ServingModeOf): the same matching
	// as the proxy, the MCP server, the hooks and the command line.
	Match match.Mode
	// PaybackRequests is the fold rule that counts its cost (budget mode,
	// see foldTarget and docs/proxy.md): a fold event folds deep enough
	// that what it removes from the next PaybackRequests requests, at the
	// cache-read price, pays for what it rewrites at the cache-write
	// price. 0 means DefaultPaybackRequests; a negative value turns the
	// rule off (a fold event folds down to FoldTarget only).
	PaybackRequests int
	// CacheTTL is how long a provider keeps an idle prompt cache (budget
	// mode): a request that comes CacheTTL or more after the session's
	// previous one finds the cache expired, so a fold event costs nothing
	// extra then, and one is made once the conversation is past the middle
	// between the fold target and the budget. 0 means DefaultCacheTTL; a
	// negative value turns the rule off.
	CacheTTL time.Duration
	// Now tells the time of a request, for CacheTTL (nil: time.Now).
	Now func() time.Time
	// Earlier returns the stores of the conversation's earlier lives, newest
	// first: the stores a client's rewritten history (a /compact, an edited
	// or rewound conversation) left behind. When the session's own store
	// selects nothing for a human prompt, they are scanned in that order and
	// the first that selects something is hydrated from, read-only (CONF-08:
	// nothing is evicted or written there; HydratedNode.Source names it).
	// nil: no earlier stores. Called with the harness's lock held, at most
	// once a human turn; it must not call back into the harness.
	Earlier func() []EarlierStore
	// OverlapDurability, when set, lets a dispatch return once its fold
	// event's cold nodes and index are encoded, held in memory, their
	// writes, syncs and renames not begun
	// (contextfold.Store.FoldBatchEachHeld): the caller starts them
	// (Dispatch.StartDurable) once the rest of its path is done, sends the
	// request on and must call Dispatch.WaitDurable (which starts them too)
	// before it answers anything that relied on the fold event. Unset: a
	// dispatch returns with its fold event durable.
	OverlapDurability bool
}

func (c Config) withDefaults() Config {
	if c.ContextBudget == 0 && c.FoldBlock == 0 {
		c.ContextBudget = DefaultContextBudget
	}
	if c.HotWindow == 0 {
		c.HotWindow = DefaultHotWindow
	} else if c.HotWindow < 0 {
		c.HotWindow = 0
	}
	if c.FoldBlock == 0 {
		c.FoldBlock = DefaultFoldBlock
	} else if c.FoldBlock < 1 {
		c.FoldBlock = 1
	}
	if c.FoldTarget <= 0 || c.FoldTarget > 95 {
		c.FoldTarget = DefaultFoldTarget
	}
	if c.PageTableShare <= 0 || c.PageTableShare > 100 {
		c.PageTableShare = DefaultPageTableShare
	}
	if c.HydrationShare <= 0 || c.HydrationShare > 100 {
		c.HydrationShare = DefaultHydrationShare
	}
	if c.PaybackRequests == 0 {
		c.PaybackRequests = DefaultPaybackRequests
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = DefaultCacheTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MinFoldTokens == 0 {
		c.MinFoldTokens = DefaultMinFoldTokens
	} else if c.MinFoldTokens < 0 {
		c.MinFoldTokens = 0
	}
	return c
}

// ErrHistoryDiverged is matched (errors.Is) by the error PreTurnDispatch
// returns when the conversation no longer agrees with the store: a folded
// position now holds different content, or the history became shorter than
// the folded steps. The client rewrote its history (its own compaction); the
// caller should continue with a new store rather than mix two histories.
var ErrHistoryDiverged = errors.New("harness: conversation history diverged from the store")

// DivergedError reports the first step at which the history diverged.
type DivergedError struct {
	StepID int
	Reason string
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("harness: conversation history diverged from the store at step %d: %s", e.StepID, e.Reason)
}

// Is makes errors.Is(err, ErrHistoryDiverged) true.
func (e *DivergedError) Is(target error) bool { return target == ErrHistoryDiverged }

// FoldedMessage is a message that the dispatch replaces by its record.
type FoldedMessage struct {
	Index int        // position in the conversation (= step id)
	Step  FoldedStep // the hot projection
	// Text is what replaces the message's first foldable part
	// (Step.PromptText()); its other foldable parts become PointerText.
	Text string
	// Tokens is the estimate of the folded payload that leaves the prompt.
	Tokens int
}

// PointerText replaces the second and later foldable parts of a folded
// message (their content is in the same cold node as the first).
func PointerText(step int) string {
	return "[contextfold: folded into step " + strconv.Itoa(step) + ", see its record]"
}

// HydratedNode is a verified cold node placed in the prompt.
type HydratedNode struct {
	StepID         int
	Content        string // the verified content, capped per call
	Tokens         int    // tokens of Content (the cap when truncated)
	Truncated      bool
	ArtifactSHA256 string
	MatchedTerms   []string // the prompt terms it covered
	// Source names the earlier store the node was read from
	// (EarlierStore.Name; Config.Earlier), "" for the session's own store.
	// A node from an earlier store is never evicted: it was never marked
	// hydrated there.
	Source string `json:",omitempty"`
}

// EarlierStore is a store of one of the conversation's earlier lives
// (Config.Earlier), read-only to the harness. Name identifies it in the
// hydration block's from attribute and in the accounting (a session
// name and generation such as "s-1a2b3c4d5e6f7a8b/g1").
type EarlierStore struct {
	Name  string
	Store *contextfold.Store
}

// Refusal is a selected node that was not hydrated because it failed
// verification or could not be read (CONF-09/10). Err is the typed error of
// the store (errors.Is(err, contextfold.ErrIntegrityCheck), …).
type Refusal struct {
	StepID int
	Err    error
}

// Accounting is the token bookkeeping of one dispatch. Tokens are reference
// estimates (characters/4).
type Accounting struct {
	ClientTokens    int   `json:"client_tokens"`    // what the client sent
	ForwardedTokens int   `json:"forwarded_tokens"` // what goes to the model
	FoldedTokens    int   `json:"folded_tokens"`    // folded payloads taken out of the prompt
	HydratedTokens  int   `json:"hydrated_tokens"`  // verified content put in
	StepsFolded     int   `json:"steps_folded"`     // messages replaced by records
	StepsCollapsed  int   `json:"steps_collapsed"`  // messages that left the prompt for the page table
	StepsHydrated   []int `json:"steps_hydrated"`
	StepsDropped    []int `json:"steps_dropped"` // selected by the scan but over the per-turn budget
	StepsRefused    []int `json:"steps_refused"` // failed verification, never injected
	// StepsInPrompt were selected by the scan and not hydrated: the
	// forwarded prompt already holds them in full (an earlier human turn's
	// hydration still sent, or the message itself forwarded verbatim), so
	// their share of the per-turn cap went to the next pick.
	StepsInPrompt []int `json:"steps_in_prompt,omitempty"`
	// StepsHydratedEarlier are the nodes hydrated from an earlier store
	// (Config.Earlier), as "<store name>:<step_id>"; their tokens are in
	// HydratedTokens.
	StepsHydratedEarlier []string `json:"steps_hydrated_earlier,omitempty"`
}

// Dispatch is the outcome of PreTurnDispatch: what to change in the outgoing
// conversation, and the accounting. It is read-only for the caller.
type Dispatch struct {
	// Boundary is the fold boundary: messages before it may be folded.
	Boundary int
	// Folded lists the replaced messages in ascending order.
	Folded []FoldedMessage
	// PromptIndex is the message that carries the latest human prompt and
	// receives the hydration; -1 when there is none.
	PromptIndex int
	// Prompt is the text that was scanned.
	Prompt string
	// Hydrated lists the injected nodes in scan order.
	Hydrated []HydratedNode
	// HydrationText is the content to append to the prompt message, after
	// its tool results: one element per hydrated node. "" when none.
	HydrationText string
	// HydrationIndex is the message HydrationText is appended to: the
	// prompt message with the fixed window; under a budget, the latest user
	// or tool-result message when the human turn's hydration was first
	// placed, the same message for the rest of the turn unless it folded
	// (see hydrationHostFor); -1 when none.
	HydrationIndex int
	// WorkingSet describes the budgeted working set (nil with the fixed
	// window).
	WorkingSet *WorkingSet
	// NewTurn is true when the prompt was not seen before (the scan ran).
	NewTurn bool
	// Evicted lists the nodes of earlier dispatches that this dispatch
	// evicted before its scan: their responses had not ended
	// (PostTurnResponse not yet called) when it began. A node is evicted
	// once per dispatch that hydrated it, either by PostTurnResponse or by
	// the next dispatch, whichever comes first, so the eviction of one human
	// turn's hydration always precedes the next turn's scan (CONF-07).
	Evicted []contextfold.Eviction
	// seq identifies the dispatch for PostTurnResponse.
	seq uint64
	// Warnings explain anything that was refused or failed; the turn still
	// goes out.
	Warnings   []string
	Refused    []Refusal
	Accounting Accounting
	// FoldHeld is true when the dispatch was held (DispatchHeld) and so
	// postponed what it would have folded: a fold event under a budget
	// (WorkingSet.FoldHeld), a move of the fold boundary with the fixed
	// window (Boundary stays where the session's last request left it).
	FoldHeld bool
	// FoldFailed is true when a fold of the dispatch's fold event failed
	// (a store that cannot be written: Warnings names the error). Its
	// messages stay verbatim, and the dispatch makes no further fold
	// attempt: each would write the same nodes and fail the same way.
	FoldFailed bool
	// Committed is true when a fold of the dispatch wrote new nodes and
	// made them durable before the dispatch returned (durability not
	// overlapped: SetOverlapDurability, Config.OverlapDurability): the
	// store could be written.
	Committed bool
	// Durable is the durable part of the dispatch's fold event, held or
	// running (Config.OverlapDurability), nil when none: see StartDurable
	// and WaitDurable. A dispatch that made no fold event while an earlier
	// dispatch's was still committing (concurrent requests of one
	// session) holds that one: its working set relies on it.
	Durable *contextfold.FoldCommit
	// indexLater is the store whose ranked index the fold event left to
	// be refreshed (RefreshIndex), nil when none.
	indexLater *contextfold.Store
	indexMode  match.Mode
}

// StartDurable starts the durable part of the dispatch's fold event
// (Config.OverlapDurability), held until then so that its file system
// work does not compete with the caller's path (the rewrite of the
// request): a caller calls it once the request is ready to go on.
// Idempotent; nothing when the dispatch left nothing to make durable.
// Safe for concurrent use.
func (d *Dispatch) StartDurable() { d.Durable.Start() }

// WaitDurable starts the durable part of the dispatch's fold event
// (StartDurable), waits until it is durable (Config.OverlapDurability)
// and returns the commit's error: a
// *contextfold.StoreFileError when a sync or rename failed. The fold event
// is then not in the store (its nodes are at most orphans), so the request
// must not be answered as if it were: a caller answers an error and lets
// the session's state go (a new Harness on the store folds again). nil
// when the dispatch folded nothing or folded durably before returning.
func (d *Dispatch) WaitDurable() error { return d.Durable.Wait() }

// IndexLater reports whether the dispatch's fold event left the ranked
// index to be refreshed (Config.OverlapDurability, on a request whose
// dispatch scanned nothing after its fold): RefreshIndex does it, off the
// request's path.
func (d *Dispatch) IndexLater() bool { return d.indexLater != nil }

// RefreshIndex analyses the cold nodes of the dispatch's fold event and
// adds them to the store's ranked index (match.RefreshIndex), when the
// fold event left that to later (IndexLater); nothing otherwise. A caller
// runs it off the request's path, once the forwarded request is ready (the
// proxy: while the upstream works). The index answers the same whether or
// not it runs: any scan refreshes it first; it only spares the next scan
// that work. Safe for concurrent use, also with the Harness's calls.
func (d *Dispatch) RefreshIndex() {
	if d.indexLater != nil {
		match.RefreshIndex(d.indexLater, d.indexMode)
	}
}

// Harness runs the turn lifecycle over one store (one conversation). It is
// safe for concurrent use; calls are serialised.
type Harness struct {
	store *contextfold.Store
	cfg   Config
	seed  maphash.Seed
	// counter counts tokens as the store's policy says (token_counter), for
	// the size threshold and the accounting.
	counter tokens.Counter

	mu sync.Mutex
	// overlap: fold events' durable parts overlap the request
	// (Config.OverlapDurability, then SetOverlapDurability).
	overlap bool
	// held: the dispatch under way may not start a fold event
	// (DispatchHeld).
	held bool
	// inPrompt: what the request under way carries of earlier hydrations
	// (DispatchWith).
	inPrompt []PromptHydration
	// scanAfter: the dispatch under way may scan the ranked index after a
	// fold (its request ends with the human prompt, promptIsLatest), so a
	// fold refreshes the index at once rather than leaving it to later
	// (foldBatch, Dispatch.RefreshIndex).
	scanAfter bool
	// movedFrom is the first message whose fixed-window fold changed at the
	// dispatch under way (folded now and not at the last dispatch, or the
	// reverse), or -1; lastFolded lists the messages folded at the last one.
	movedFrom  int
	lastFolded []int
	// boundary is the fixed window's fold boundary at the last dispatch,
	// which a held dispatch keeps.
	boundary int
	verified map[int]uint64 // step → maphash of the payload checked against the index
	// observed memoizes the user messages found to be template
	// observations, by Message.PrefixKey (the message and its history:
	// once one, a message stays one as the conversation grows), so that a
	// long session of a scaffold no table knows is not classed again at
	// every request (promptIndex).
	observed map[uint64]struct{}
	turn     *turnState     // the hydration of the current human prompt
	pending  map[int]uint64 // hydrated and not yet evicted → the dispatch (seq) that last hydrated it
	seq      uint64         // dispatches so far
	// learned: the secrets of the messages the store held before this
	// harness's first fold were shown to it (learnIndexedSecrets).
	learned bool
	records map[int]cachedStep
	nodeOK  map[int]bool // step → its cold node verified (budget mode)
	ws      *workset
	keyOK   []uint64 // by step: Message.Key last verified against the store (0: none)
	// entries caches the recall index by step for entriesVer; entryList
	// holds the same entries in ascending step order.
	entries    map[int]*contextfold.Entry
	entryList  []*contextfold.Entry
	entriesVer string

	// The incremental state of the budgeted dispatch (incremental.go).
	prevKeys   []uint64 // Message.Key by position, as of the last dispatch
	prevPrefix []uint64 // Message.PrefixKey by position, likewise
	client     cumSum   // partCost of every part, by message
	checkedN   int      // the indexed steps below it held keyOK's keys at the last dispatch,
	checkedVer string   // for this index version
	recGen     int      // bumped when a record's text changes
	hydCount   countMemo
	hydWire    countMemo
	// recordsVer is the index version every entry has a record for.
	recordsVer string
	// ahead holds what PrepareAhead derived of turns not yet folded.
	ahead aheadState
}

type cachedStep struct {
	fast uint64 // maphash of the payload it was derived from
	key  uint64 // Message.Key of the message it was derived from (0: none)
	step FoldedStep
	text string // step.PromptText()
	cost int    // recordCost of the message shown as text (0: not yet)
}

func newCachedStep(fast uint64, st FoldedStep) cachedStep {
	return cachedStep{fast: fast, step: st, text: st.PromptText()}
}

type turnState struct {
	promptIndex int
	promptHash  [32]byte // SHA-256 of the prompt text (stable across processes: SessionState)
	hydrated    []HydratedNode
	refused     []Refusal
	dropped     []int
	inPrompt    []int // selected, not hydrated: the prompt holds them (Accounting.StepsInPrompt)
	text        string
	warnings    []string
	// indexed is the number of steps in the recall index when the scan
	// ran: an empty hydration is recomputed once the store holds more.
	indexed int
	// host is the message the budget mode placed the hydration in (-1:
	// not yet placed); see Harness.hydrationHostFor.
	host int
}

// New returns a harness over store.
func New(store *contextfold.Store, cfg Config) *Harness {
	return &Harness{store: store, cfg: cfg.withDefaults(), seed: maphash.MakeSeed(), counter: store.TokenCounter(), overlap: cfg.OverlapDurability,
		verified: map[int]uint64{}, pending: map[int]uint64{}, records: map[int]cachedStep{}, nodeOK: map[int]bool{}}
}

// matchMode returns the matching mode in force.
func (h *Harness) matchMode() match.Mode {
	if h.cfg.Match != "" {
		return h.cfg.Match
	}
	m, err := match.ServingModeOf(h.store)
	if err != nil { // a setting that names no mode: the reference's matching
		return match.Exact
	}
	return m
}

// CountTokens counts text with the store's token counter (policy key
// token_counter; the reference heuristic by default), in tokens.
func (h *Harness) CountTokens(text string) int { return h.counter.Count(text) }

// HeuristicCounter reports whether the store counts tokens with the
// reference heuristic (characters/4), so that a caller may count bytes
// without converting them to a string.
func (h *Harness) HeuristicCounter() bool { return h.counter.Name() == tokens.HeuristicName }

// CounterName returns the name of the store's token counter (policy key
// token_counter), so that a caller caching token counts knows what they
// were counted with.
func (h *Harness) CounterName() string { return h.counter.Name() }

// Store returns the store the harness folds into.
func (h *Harness) Store() *contextfold.Store { return h.store }

// Config returns the configuration in force (defaults applied), as given
// to New: SetOverlapDurability does not change it.
func (h *Harness) Config() Config { return h.cfg }

// SetOverlapDurability sets whether the next dispatches' fold events hold
// their durable parts for the caller to overlap with its request (as
// Config.OverlapDurability; off: a dispatch returns with its fold event
// durable). The proxy turns it off for a session whose fold event could
// not be made durable after its request went out, and on again once a
// fold event commits. Takes the harness's lock: it waits for a dispatch
// under way.
func (h *Harness) SetOverlapDurability(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.overlap = on
}

// Boundary returns the fold boundary for a conversation of n messages:
// ⌊(n − HotWindow) / FoldBlock⌋ × FoldBlock, at least 0.
func (h *Harness) Boundary(n int) int {
	k := n - h.cfg.HotWindow
	if k <= 0 {
		return 0
	}
	return k / h.cfg.FoldBlock * h.cfg.FoldBlock
}

// PromptIndex returns the index of the message carrying the latest human
// prompt: the last user message marked Human with text besides tool results
// and hydrated content, that is not a scaffold's observation (a command's
// output a scaffold sends as a user message: IsObservation, by the openings
// of known scaffolds, or a template observation, by the conversation's own
// shape: observation.go); -1 when there is none.
func PromptIndex(conv []Message) int {
	return promptIndexWith(conv, func(i int) bool { return templateObservation(conv, i) })
}

// promptIndex is PromptIndex with the template observations memoized
// (h.observed). h.mu is held.
func (h *Harness) promptIndex(conv []Message) int {
	if len(h.observed) > 1<<16 {
		h.observed = nil
	}
	return promptIndexWith(conv, func(i int) bool {
		k := conv[i].PrefixKey
		if _, ok := h.observed[k]; ok && k != 0 {
			return true
		}
		if !templateObservation(conv, i) {
			return false
		}
		if k != 0 {
			if h.observed == nil {
				h.observed = map[uint64]struct{}{}
			}
			h.observed[k] = struct{}{}
		}
		return true
	})
}

func promptIndexWith(conv []Message, templated func(i int) bool) int {
	for i := len(conv) - 1; i >= 0; i-- {
		m := conv[i]
		if m.Role == RoleUser && m.Human && !m.isObservation() && !templated(i) && m.promptText() != "" {
			return i
		}
	}
	return -1
}

// PreTurnDispatch prepares one model call (pre_turn_dispatch): it folds the
// cold messages of conv, derives their records, and hydrates the nodes the
// latest human prompt needs. Within one human turn (the same prompt message)
// the hydration is computed once and returned identical for every call.
// Apply produces the outgoing conversation; conv is not modified.
//
// Folding is deterministic and idempotent: a message already folded is not
// written again. A failed fold or a refused node is reported in Warnings
// and the turn still goes out (the message stays verbatim, the node is left
// out).
//
// Errors: a *DivergedError (ErrHistoryDiverged) when conv no longer agrees
// with the store; a store error when the recall index cannot be read.
func (h *Harness) PreTurnDispatch(conv []Message) (*Dispatch, error) {
	return h.DispatchRequest(conv, 0)
}

// DispatchRequest is PreTurnDispatch for a request that carries fixed
// tokens besides its messages (system prompt, tool definitions, framing),
// counted against Config.ContextBudget.
func (h *Harness) DispatchRequest(conv []Message, fixedTokens int) (*Dispatch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dispatch(conv, fixedTokens)
}

// DispatchHeld is DispatchRequest for a request on which no fold event may
// start: with a token budget the working set stays as the session's last
// request left it (records, page table, removed messages), the request goes
// over the budget if it must (WorkingSet.OverBudget) and the next
// DispatchRequest folds; the budget is soft. With the fixed message window
// (NoBudget) the fold boundary stays where the last dispatch left it:
// nothing new folds, the messages folded before stay folded. The scan and
// hydration run as usual. Dispatch.FoldHeld says whether anything was
// postponed.
// The proxy uses it for a tool-use continuation whose client asked the API
// to reject thinking bound to a changed prefix (docs/proxy.md).
func (h *Harness) DispatchHeld(conv []Message, fixedTokens int) (*Dispatch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = true
	defer func() { h.held = false }()
	return h.dispatch(conv, fixedTokens)
}

// PromptHydration is hydration text the forwarded request carries besides
// the dispatch's own: an earlier human turn's hydration that the proxy keeps
// in its host message, byte for byte, so the forwarded prefix stays
// append-only. Host is that message's position in the conversation; Text
// holds one or more HydrationBlock elements.
type PromptHydration struct {
	Host int
	Text string
}

// DispatchOptions are the inputs of DispatchWith besides the conversation.
type DispatchOptions struct {
	// FixedTokens as in DispatchRequest.
	FixedTokens int
	// Held as DispatchHeld: no fold event may start on this request.
	Held bool
	// InPrompt is what the forwarded request already carries of earlier
	// turns' hydration. A node the scan selects that one of them holds in
	// full (truncated="false", or the very content this turn would
	// hydrate) is not hydrated again; it is reported in
	// Accounting.StepsInPrompt and the per-turn cap goes to the next pick.
	// An entry whose host folds or leaves the prompt at this dispatch, or
	// comes at or after the fold event's first changed message, holds
	// nothing (the proxy drops that text with its host).
	InPrompt []PromptHydration
}

// DispatchWith is DispatchRequest (or DispatchHeld, o.Held) with what the
// request already carries of earlier hydrations (o.InPrompt).
func (h *Harness) DispatchWith(conv []Message, o DispatchOptions) (*Dispatch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.inPrompt = o.Held, o.InPrompt
	defer func() { h.held, h.inPrompt = false, nil }()
	return h.dispatch(conv, o.FixedTokens)
}

// Agrees reports whether conv agrees with the store's folded history:
// every folded step is a position of conv that still holds the content it
// was folded from (as PreTurnDispatch checks before a dispatch). It folds,
// hydrates and changes no working set. Errors: a *DivergedError
// (ErrHistoryDiverged) at the first step that disagrees; a store error when
// the recall index cannot be read. Safe for concurrent use.
func (h *Harness) Agrees(conv []Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	entries, err := h.entryMap()
	if err != nil {
		return err
	}
	steps := make([]int, 0, len(entries))
	for step := range entries {
		steps = append(steps, step)
	}
	sort.Ints(steps) // the first step that disagrees, whatever the map's order
	for _, step := range steps {
		if step < 0 || step >= len(conv) {
			return &DivergedError{StepID: step, Reason: fmt.Sprintf("the conversation has %d messages", len(conv))}
		}
		payload, ok := conv[step].storePayload()
		if !ok || !h.sameAsIndexed(conv, step, payload, entries[step]) {
			return &DivergedError{StepID: step, Reason: "the message differs from the folded content"}
		}
	}
	return nil
}

// foldedHost reports whether the message at host is among folded (ascending
// by Index): its record replaces it in the forwarded body, and an earlier
// hydration it carried goes with it.
func foldedHost(folded []FoldedMessage, host int) bool {
	k := sort.Search(len(folded), func(k int) bool { return folded[k].Index >= host })
	return k < len(folded) && folded[k].Index == host
}

// heldNode is a node the forwarded prompt already holds (promptHolds).
type heldNode struct {
	whole   bool   // all of it: the scan skips it unhydrated
	content string // the content held when not whole
}

// promptHolds returns the nodes the forwarded request of d holds already,
// by step id: the earlier hydrations of h.inPrompt whose host stays in the
// prompt as it is, and, under a budget, the messages forwarded verbatim
// (neither folded nor removed) before the prompt.
func (h *Harness) promptHolds(conv []Message, d *Dispatch) func(step int) (heldNode, bool) {
	var ws *workset
	if h.cfg.budgeted() {
		ws = h.ws
	}
	var from map[int]heldNode
	for _, ph := range h.inPrompt {
		if ph.Host < 0 || ph.Host >= len(conv) {
			continue
		}
		if ws != nil && (ws.folded.has(ph.Host) || ws.removed.has(ph.Host)) {
			continue
		}
		if foldedHost(d.Folded, ph.Host) {
			continue // the fixed window folded its host: the text went with it
		}
		if ws == nil && h.movedFrom >= 0 && ph.Host >= h.movedFrom {
			continue // the fixed window's change rewrites the prefix from there
		}
		if w := d.WorkingSet; w != nil && w.FoldEvent && w.FirstChanged >= 0 && ph.Host >= w.FirstChanged {
			continue
		}
		for _, b := range HydrationBlocks(ph.Text) {
			if b.Source != "" {
				continue // an earlier store's step, not this store's
			}
			if from == nil {
				from = map[int]heldNode{}
			}
			if old, ok := from[b.StepID]; ok && old.whole {
				continue
			}
			from[b.StepID] = heldNode{whole: !b.Truncated, content: b.Content}
		}
	}
	return func(step int) (heldNode, bool) {
		if n, ok := from[step]; ok {
			return n, true
		}
		if ws != nil && step >= 0 && step < len(conv) && step < d.PromptIndex && !ws.folded.has(step) && !ws.removed.has(step) {
			if _, ok := conv[step].storePayload(); ok {
				return heldNode{whole: true}, true
			}
		}
		return heldNode{}, false
	}
}

// dispatch is DispatchRequest's body; h.mu is held.
func (h *Harness) dispatch(conv []Message, fixedTokens int) (_ *Dispatch, err error) {
	h.ahead.gen.Add(1) // a preparation under way yields (PrepareAhead)
	d := &Dispatch{PromptIndex: h.promptIndex(conv), Boundary: h.Boundary(len(conv)), HydrationIndex: -1}
	h.scanAfter = promptIsLatest(conv, d.PromptIndex)
	defer func() {
		if err != nil {
			// The caller gets no Dispatch to start a fold event's held
			// durable part with: it starts here.
			d.StartDurable()
		}
	}()
	// A fold event of an earlier dispatch whose durable part still runs
	// (Config.OverlapDurability: a concurrent request of the session): the
	// store serves it as folded, so this dispatch relies on it and its
	// caller waits for it as for its own (a fold event of this dispatch
	// replaces it below: a fold waits for the commit before it).
	d.Durable = h.store.PendingCommit()
	entries, err := h.entryMap()
	if err != nil {
		return nil, err
	}
	// Divergence: every folded step must still hold the content it was
	// folded from.
	if l := h.entryList; len(entries) > 0 && l != nil && len(l) == len(entries) {
		if first, last := l[0].StepID, l[len(l)-1].StepID; first < 0 || last >= len(conv) {
			step := last
			if first < 0 {
				step = first
			}
			return nil, &DivergedError{StepID: step, Reason: fmt.Sprintf("the conversation has %d messages", len(conv))}
		}
	} else {
		for step := range entries {
			if step < 0 || step >= len(conv) {
				return nil, &DivergedError{StepID: step, Reason: fmt.Sprintf("the conversation has %d messages", len(conv))}
			}
		}
	}
	if h.cfg.budgeted() {
		d.Boundary = 0
		h.beginIncremental(conv)
		if len(h.keyOK) < len(conv) {
			h.keyOK = append(h.keyOK, make([]uint64, len(conv)-len(h.keyOK))...)
		}
		check := func(step int, e *contextfold.Entry) error {
			m := &conv[step]
			if m.Key != 0 && h.keyOK[step] == m.Key {
				return nil // the same bytes as when last verified
			}
			payload, ok := m.storePayload()
			if !ok || !h.sameAsIndexed(conv, step, payload, e) {
				return &DivergedError{StepID: step, Reason: "the message differs from the folded content"}
			}
			h.keyOK[step] = m.Key
			return nil
		}
		if l := h.entryList; l != nil && len(l) == len(entries) {
			// The steps below checkedN held the keys they were verified
			// with at the last dispatch, and still do (beginIncremental).
			from := 0
			if h.checkedVer == h.entriesVer {
				from = sort.Search(len(l), func(k int) bool { return l[k].StepID >= h.checkedN })
			}
			for _, e := range l[from:] {
				if err := check(e.StepID, e); err != nil {
					return nil, err
				}
			}
			h.checkedN, h.checkedVer = len(conv), h.entriesVer
		} else {
			h.checkedN, h.checkedVer = 0, ""
			for step, e := range entries {
				if err := check(step, e); err != nil {
					return nil, err
				}
			}
		}
		if err := h.budgetDispatch(conv, fixedTokens, d, entries); err != nil {
			return nil, err
		}
		h.account(conv, d)
		return d, nil
	}
	if h.held && d.Boundary > h.boundary {
		d.Boundary, d.FoldHeld = h.boundary, true // nothing new folds
	}
	h.boundary = d.Boundary
	d.HydrationIndex = d.PromptIndex
	type cand struct {
		i       int
		payload string
		tokens  int
	}
	var cands []cand
	var toFold []contextfold.Turn
	for i := 0; i < len(conv); i++ {
		m := conv[i]
		e, indexed := entries[i]
		if !indexed && (i >= d.Boundary || i == d.PromptIndex || m.Role == RoleSystem) {
			continue
		}
		payload, ok := m.payload()
		if indexed {
			if !ok || !h.sameAsIndexed(conv, i, payload, e) {
				return nil, &DivergedError{StepID: i, Reason: "the message differs from the folded content"}
			}
			if i == d.PromptIndex {
				continue
			}
		} else {
			if !ok {
				continue
			}
		}
		ntok := h.counter.Count(payload)
		if !indexed {
			if ntok < h.cfg.MinFoldTokens {
				continue
			}
			toFold = append(toFold, h.turnOf(conv, i, payload))
		}
		cands = append(cands, cand{i, payload, ntok})
	}
	if len(toFold) > 0 {
		h.learnIndexedSecrets(conv, entries, d)
		// h.foldBatch: the ranked scan takes these nodes' text from the
		// fold, not from disk, and no fold result is kept.
		if err := h.foldBatch(toFold, d); err != nil {
			d.Warnings = append(d.Warnings, "fold failed, those messages stay verbatim: "+err.Error())
		}
		if entries, err = h.entryMap(); err != nil {
			return nil, err
		}
	}
	justFolded := map[int]bool{}
	for _, t := range toFold {
		justFolded[t.StepID] = true
	}
	for _, c := range cands {
		e, ok := entries[c.i]
		if !ok {
			continue
		}
		if justFolded[c.i] {
			// Folded from this very payload (the store may have scrubbed
			// secrets out of what it keeps).
			h.verified[c.i] = maphash.String(h.seed, c.payload)
		} else if _, seen := h.verified[c.i]; !seen && !h.sameAsIndexed(conv, c.i, c.payload, e) {
			return nil, &DivergedError{StepID: c.i, Reason: "the store holds other content for this step"}
		}
		if !justFolded[c.i] && !h.intact(c.i) {
			// The node fails verification: the turn goes out as the client
			// wrote it, never as a record of content that cannot come back.
			d.Warnings = append(d.Warnings, fmt.Sprintf("step %d: cold node fails verification, forwarded verbatim", c.i))
			continue
		}
		if justFolded[c.i] {
			h.nodeOK[c.i] = true
		}
		fast := h.verified[c.i]
		st, ok := h.records[c.i]
		if !ok || st.fast != fast || st.step.Timestamp != e.FoldedAt {
			m := conv[c.i]
			m.Command = commandFor(conv, c.i)
			st = newCachedStep(fast, Project(m, e))
			h.setRecord(c.i, st)
		}
		d.Folded = append(d.Folded, FoldedMessage{Index: c.i, Step: st.step, Text: st.text, Tokens: c.tokens})
	}

	// Where the fixed window's folded messages changed since the last
	// dispatch: the proxy drops an earlier hydration hosted there or later
	// with the rest of the changed prefix (promptHolds).
	folded := make([]int, len(d.Folded))
	for k, f := range d.Folded {
		folded[k] = f.Index
	}
	h.movedFrom, h.lastFolded = firstChange(h.lastFolded, folded), folded
	h.hydrate(conv, d)
	h.account(conv, d)
	return d, nil
}

// firstChange returns the smallest index in exactly one of the ascending
// lists a and b, or -1 when they are equal.
func firstChange(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return min(a[i], b[i])
		}
	}
	switch {
	case len(a) > len(b):
		return a[len(b)]
	case len(b) > len(a):
		return b[len(a)]
	}
	return -1
}

// Project derives the folded-step record of message m from its recall-index
// entry (spec §8). It is a pure function of its arguments.
func Project(m Message, e *contextfold.Entry) FoldedStep { return project(m, e, nil) }

// project is Project; ahead, when not nil, is messageFiles(m) computed
// before (PrepareAhead).
func project(m Message, e *contextfold.Entry, ahead []string) FoldedStep {
	payload, _ := m.payload()
	// The harness's own reading of the turn (the index keeps the reference
	// extraction for matching); from the index alone, its plausible files.
	var files []string
	if payload != "" && payload != e.Summary {
		if files = ahead; files == nil {
			files = messageFiles(m.Command, payload)
		}
	} else {
		for _, f := range e.Files {
			if looksLikeFile(f) && len(files) < maxTargetFiles {
				files = append(files, f)
			}
		}
	}
	summary := e.Summary
	if summary == "" {
		summary = Summarize(m)
		if sc := scrubber(); sc != nil {
			summary = sc.Scrub(summary).Text // read from the message, not the store
		}
	}
	status := deriveStatus(m, summary, payload)
	shown := summary
	if status == StatusFailed {
		shown = failureSummary(summary, payload)
	}
	return FoldedStep{
		StepID:      e.StepID,
		Timestamp:   e.FoldedAt,
		TargetFiles: append([]string{}, files...),
		ActionType:  actionType(m, e, summary, payload),
		Summary:     cut(clean(shown), MaxSummary),
		Status:      status,
		Artifacts:   Artifacts{ColdNodeRef: e.FilePath},
	}
}

// messageFiles is the target files of a message read from its command and
// payload, scrubbed (Project).
func messageFiles(command, payload string) []string {
	return scrubTargetFiles(targetFiles(command, payload), command, payload)
}

// actionType classifies a turn from its tool and command, and when they say
// nothing, from its text and lists.
func actionType(m Message, e *contextfold.Entry, summary, payload string) string {
	if a := deriveActionType(m, payload); a != ActionOther {
		return a
	}
	return textActionType(summary, payload, e.Files, e.Commands)
}

// ProjectEntry derives the folded-step record of an indexed step from the
// store alone: its entry and its raw content (pass "" when the cold node
// cannot be read; the record is then derived from the entry). The role, tool
// and command are read back from the summary's head when it has the form
// Summarize writes ("tool Bash $ go test ./... [error]: …").
func ProjectEntry(e *contextfold.Entry, raw string) FoldedStep {
	m := Message{Parts: []Part{{Text: raw, Foldable: true}}}
	if raw == "" {
		m.Parts[0].Text = e.Summary
	}
	head, _, _ := strings.Cut(e.Summary, ": ")
	if h, ok := strings.CutSuffix(head, " "+errorMark); ok {
		head, m.IsError = h, true
	}
	if h, c, ok := strings.Cut(head, " $ "); ok {
		head, m.Command = h, c
	}
	// Only a head Summarize wrote names a role (and a tool): a summary
	// written by a person ("Final review: …") names neither.
	switch role, tool, _ := strings.Cut(head, " "); role {
	case "user", "assistant", "tool", "system":
		m.Role = role
		if tool != "" && !strings.Contains(tool, " ") {
			m.Tool = tool
		}
	}
	if m.Command == "" && len(e.Commands) > 0 {
		m.Command = e.Commands[0]
	}
	return Project(m, e)
}

// entryMap returns the recall index by step, rebuilt only when the index
// changed (Store.IndexVersion). Callers must not modify it.
func (h *Harness) entryMap() (map[int]*contextfold.Entry, error) {
	ver, verr := h.store.IndexVersion()
	if verr == nil && h.entries != nil && ver == h.entriesVer {
		return h.entries, nil
	}
	es, err := h.store.EntriesShared() // read only (no copy of every entry)
	if err != nil {
		return nil, err
	}
	m := make(map[int]*contextfold.Entry, len(es))
	for _, e := range es {
		m[e.StepID] = e
	}
	if verr == nil {
		list := make([]*contextfold.Entry, 0, len(m))
		for _, e := range m {
			list = append(list, e)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].StepID < list[j].StepID })
		h.entries, h.entryList, h.entriesVer = m, list, ver
	} else {
		h.entryList = nil // m is not h.entries: the list does not describe it
	}
	return m, nil
}

// sameAsIndexed compares a payload with the entry's payload_sha256, caching
// a fast hash of payloads already checked.
func (h *Harness) sameAsIndexed(conv []Message, step int, payload string, e *contextfold.Entry) bool {
	fast := maphash.String(h.seed, payload)
	if v, ok := h.verified[step]; ok {
		return v == fast
	}
	sum := sha256.Sum256([]byte(payload))
	if hex.EncodeToString(sum[:]) != e.PayloadSHA256 {
		// The store scrubs secrets before writing (on by default): compare
		// with the payload scrubbed as the store scrubs, its allowlist
		// (store_settings.json scrub_allowlist) included.
		sc, err := h.store.AuditScrubber()
		if err != nil {
			sc = scrubber()
		}
		if sc == nil {
			return false
		}
		sum = sha256.Sum256([]byte(sc.Scrub(payload).Text))
		if hex.EncodeToString(sum[:]) != e.PayloadSHA256 {
			// The fold scrubs the turn's fields together: a secret its
			// summary (the tool call's command) reveals is redacted in
			// the payload too.
			t, _, err := h.store.ScrubbedTurn(h.turnOf(conv, step, payload))
			if err != nil {
				return false
			}
			sum = sha256.Sum256([]byte(t.Payload()))
			if hex.EncodeToString(sum[:]) != e.PayloadSHA256 && !h.sharedRedactions(step, t.Payload(), e) {
				return false
			}
		}
	}
	h.verified[step] = fast
	return true
}

// sharedRedactions reports whether the cold node of step holds scrubbed
// (the message's payload as its own scrub leaves it) with values that
// other turns of the session revealed redacted too
// (contextfold.MatchesSharedRedactions): the fold event shared them, and a
// proxy that restarted, or a session that left memory, no longer knows
// them. Reads the node (a mismatch path only).
func (h *Harness) sharedRedactions(step int, scrubbed string, e *contextfold.Entry) bool {
	n, err := h.store.ReadColdNode(step)
	if err != nil {
		return false
	}
	stored := n.RawContent
	if stored == "" {
		stored = n.Summary
	}
	sum := sha256.Sum256([]byte(stored))
	return hex.EncodeToString(sum[:]) == e.PayloadSHA256 && contextfold.MatchesSharedRedactions(stored, scrubbed)
}

// scrubTargetFiles redacts secrets from the target files a record reads
// from the message itself (the store holds the scrubbed payload; the
// record, the page table and the saved session state must not hold more).
// A file name rarely holds one, and a secret found only in its context
// ("twitter_key = …" in the output, the bare value in a path) needs that
// context. The files are scrubbed together with the command (a vendor token
// is found on its own), and, when a file has a segment that could be a
// token (8 or more letters and digits, both), with the payload's first 16
// KiB too (scrub.ScrubSet), so that the common case costs little.
func scrubTargetFiles(files []string, command, payload string) []string {
	suspect := false
	for _, f := range files {
		if hasTokenLikeRun(f) {
			suspect = true
			break
		}
	}
	sc := scrubber()
	if sc == nil || len(files) == 0 {
		return files
	}
	set := append(append([]string{}, files...), command)
	if suspect {
		head := payload
		if len(head) > 16<<10 {
			head = strings.ToValidUTF8(head[:16<<10], "")
		}
		set = append(set, head)
	}
	rs := sc.ScrubSet(set)
	out := make([]string, len(files))
	for i := range files {
		out[i] = rs[i].Text
	}
	return out
}

// hasTokenLikeRun reports whether s has 8 or more consecutive ASCII
// letters and digits, at least one of each.
func hasTokenLikeRun(s string) bool {
	n, letter, digit := 0, false, false
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
		}
		switch {
		case c >= '0' && c <= '9':
			n, digit = n+1, true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			n, letter = n+1, true
		default:
			if n >= 8 && letter && digit {
				return true
			}
			n, letter, digit = 0, false, false
		}
	}
	return false
}

var scrubber = sync.OnceValue(func() *scrub.Scrubber {
	sc, err := scrub.New()
	if err != nil {
		return nil
	}
	return sc
})

// hydrate fills in the hydration of the prompt, computing it once per human
// turn. First it evicts what earlier dispatches hydrated and whose
// responses have not ended yet (a client that sends its next request before
// the proxy read the end of the previous response), so that the eviction of
// a turn's hydration deterministically precedes the next scan.
//
// The scan of a turn is recomputed for a later request of the same turn
// only when it found nothing and the store has gained steps since (the
// request that first carried the prompt had not yet folded what the prompt
// asks about): a non-empty hydration stays byte-identical for the turn.
func (h *Harness) hydrate(conv []Message, d *Dispatch) (scanned bool) {
	h.seq++
	d.seq = h.seq
	steps := make([]int, 0, len(h.pending))
	for step := range h.pending {
		steps = append(steps, step)
	}
	sort.Ints(steps)
	for _, step := range steps {
		ev, err := h.store.Evict(step)
		if err != nil {
			d.Warnings = append(d.Warnings, "evict failed: "+err.Error())
		} else {
			d.Evicted = append(d.Evicted, *ev)
		}
		delete(h.pending, step)
	}
	if d.PromptIndex < 0 {
		return false
	}
	prompt := conv[d.PromptIndex].promptText()
	key := sha256.Sum256([]byte(prompt))
	t := h.turn
	indexed := h.indexedSteps()
	newTurn := t == nil || t.promptIndex != d.PromptIndex || t.promptHash != key
	if newTurn || (len(t.hydrated) == 0 && len(t.refused) == 0 && indexed > t.indexed) {
		d.NewTurn = newTurn
		t = &turnState{promptIndex: d.PromptIndex, promptHash: key, indexed: indexed, host: -1}
		// The scan answers a question: only a request whose latest
		// message is the human prompt is scanned. Later requests of the
		// turn (tool results, a scaffold's observations after it) keep the
		// hydration the turn has, or none.
		if promptIsLatest(conv, d.PromptIndex) {
			h.scanAndHydrate(prompt, t, h.promptHolds(conv, d))
			scanned = true
		}
		h.turn = t
	}
	d.Prompt = prompt
	h.takeTurn(d, t)
	return scanned
}

// promptIsLatest reports whether the human prompt at index p is the
// conversation's latest message, but for system messages after it and an
// assistant prefill: a client may append its own instructions after the
// prompt (Claude Code's announcement of deferred tools after /compact),
// which answer nothing and make the request no less the prompt's first;
// and a request may end with the start of the answer it wants continued
// (an assistant message without tool calls or reasoning, the last one but
// for system messages), which the model has not answered yet either.
func promptIsLatest(conv []Message, p int) bool {
	if p < 0 {
		return false
	}
	prefill := false
	for _, m := range conv[p+1:] {
		switch {
		case m.Role == RoleSystem:
		case m.Role == RoleAssistant && !prefill && isPrefill(m):
			prefill = true
		default:
			return false
		}
	}
	return true
}

// isPrefill reports whether an assistant message can be a prefill: it
// makes no tool call and carries no reasoning, only text.
func isPrefill(m Message) bool {
	if m.Tool != "" || m.Command != "" {
		return false
	}
	for _, pt := range m.Parts {
		if pt.Reasoning || !pt.Foldable {
			return false
		}
	}
	return true
}

// indexedSteps is the number of steps in the recall index (the entries
// last read when the index cannot be read now).
func (h *Harness) indexedSteps() int {
	if es, err := h.entryMap(); err == nil {
		return len(es)
	}
	return len(h.entries)
}

// takeTurn puts the turn's hydration into the dispatch and makes its
// nodes pending eviction after the response.
func (h *Harness) takeTurn(d *Dispatch, t *turnState) {
	d.Hydrated = t.hydrated
	d.Refused = t.refused
	d.HydrationText = t.text
	d.Warnings = append(d.Warnings, t.warnings...)
	d.Accounting.StepsDropped = t.dropped
	d.Accounting.StepsInPrompt = t.inPrompt
	for _, n := range t.hydrated {
		if n.Source == "" {
			h.pending[n.StepID] = d.seq
		}
	}
}

// rescanTurn scans the current turn's prompt again, on the store as a fold
// event that ran after this request's scan left it: that fold event folded
// messages that were verbatim in the prompt when the scan ran, so the scan
// could not pick them, and they are now out of the prompt. The first
// scan's picks were never sent; they leave the pending evictions (hydrating
// reads the store and writes nothing, so there is nothing else to undo).
func (h *Harness) rescanTurn(conv []Message, d *Dispatch) {
	t := h.turn
	if t == nil {
		return
	}
	for _, n := range t.hydrated {
		if n.Source == "" && h.pending[n.StepID] == d.seq {
			delete(h.pending, n.StepID)
		}
	}
	indexed := h.indexedSteps()
	nt := &turnState{promptIndex: t.promptIndex, promptHash: t.promptHash, indexed: indexed, host: -1}
	h.scanAndHydrate(d.Prompt, nt, h.promptHolds(conv, d))
	h.turn = nt
	h.takeTurn(d, nt)
}

// turnHydration returns the hydration text the current human turn already
// has when conv's latest prompt is that turn's ("" for a new turn), without
// scanning.
func (h *Harness) turnHydration(conv []Message, prompt int) string {
	t := h.turn
	if t == nil || prompt < 0 || t.promptIndex != prompt || t.promptHash != sha256.Sum256([]byte(conv[prompt].promptText())) {
		return ""
	}
	return t.text
}

func (h *Harness) scanAndHydrate(prompt string, t *turnState, holds func(step int) (heldNode, bool)) {
	// Step ids are message positions: the nodes at or after the prompt's
	// own position are this human turn's calls and outputs, which the
	// prompt cannot be asking about (ranked; exact is the reference).
	res, err := match.ScanBefore(h.store, prompt, h.matchMode(), t.promptIndex)
	if err != nil {
		t.warnings = append(t.warnings, "scan failed, nothing hydrated: "+err.Error())
		return
	}
	for _, p := range res.Dropped {
		t.dropped = append(t.dropped, p.StepID)
	}
	capTokens := 0 // the budget's share for one human turn (0: none)
	if h.cfg.budgeted() {
		capTokens = h.cfg.ContextBudget * h.cfg.HydrationShare / 100
	}
	used := h.hydratePicks(h.store, "", res.Selected, prompt, capTokens, 0, t, holds)
	if len(res.Selected) == 0 && h.cfg.Earlier != nil {
		h.hydrateEarlier(prompt, capTokens, used, t)
	}
}

// hydrateEarlier is the scan's last resort (Config.Earlier): the session's
// own store selected nothing for the prompt, so the stores of the
// conversation's earlier lives are scanned, newest first, and the first
// that selects something is hydrated from, read-only, within what is left
// of the turn's cap. A store that cannot be scanned is a warning.
func (h *Harness) hydrateEarlier(prompt string, capTokens, used int, t *turnState) {
	none := func(int) (heldNode, bool) { return heldNode{}, false }
	for _, e := range h.cfg.Earlier() {
		if e.Store == nil {
			continue
		}
		res, err := match.ScanBefore(e.Store, prompt, h.matchMode(), -1)
		if err != nil {
			t.warnings = append(t.warnings, "scan of earlier store "+e.Name+" failed: "+err.Error())
			continue
		}
		if len(res.Selected) == 0 {
			continue
		}
		h.hydratePicks(e.Store, e.Name, res.Selected, prompt, capTokens, used, t, none)
		return
	}
}

// hydratePicks hydrates the scan's picks from store in order into t, within
// capTokens for the turn (0: no cap) of which used are spent, and returns
// the tokens spent then. source names an earlier store ("" for the
// session's own): its nodes are never held by the prompt and their
// refusals are warnings only (t.refused names the session's own steps).
func (h *Harness) hydratePicks(store *contextfold.Store, source string, picks []contextfold.ScanPick, prompt string, capTokens, used int, t *turnState, holds func(step int) (heldNode, bool)) int {
	for _, p := range picks {
		// A node the prompt holds in full already is not sent again; its
		// share of the cap goes to the next pick.
		held, isHeld := holds(p.StepID)
		if isHeld && held.whole {
			t.inPrompt = append(t.inPrompt, p.StepID)
			continue
		}
		if capTokens > 0 && used >= capTokens {
			if source == "" {
				t.dropped = append(t.dropped, p.StepID)
			}
			continue
		}
		// The cap actually applied: what is left of this turn's share of
		// the budget, when it is below the policy's per-call cap, so that a
		// node is focused on its matched lines rather than cut at its head.
		limit := 0
		if capTokens > 0 {
			limit = capTokens - used
		}
		hy, err := match.HydrateWithin(store, p.StepID, prompt, h.matchMode(), limit)
		if err != nil {
			if source == "" {
				t.refused = append(t.refused, Refusal{StepID: p.StepID, Err: err})
				t.warnings = append(t.warnings, fmt.Sprintf("step %d refused: %v", p.StepID, err))
			} else {
				t.warnings = append(t.warnings, fmt.Sprintf("step %d of earlier store %s refused: %v", p.StepID, source, err))
			}
			continue
		}
		n := HydratedNode{StepID: hy.StepID, Content: hy.Content, Tokens: hy.TokenEstimate,
			Truncated: hy.Truncated, ArtifactSHA256: hy.ArtifactSHA256, MatchedTerms: p.MatchedTerms, Source: source}
		if capTokens > 0 && used+n.Tokens > capTokens {
			if used > 0 {
				if source == "" {
					t.dropped = append(t.dropped, p.StepID)
				}
				continue
			}
			n.Content, n.Tokens, n.Truncated = cutTokens(n.Content, capTokens), capTokens, true
		}
		if isHeld && held.content == n.Content {
			// The same part an earlier turn hydrated, still in the prompt.
			t.inPrompt = append(t.inPrompt, p.StepID)
			continue
		}
		used += n.Tokens
		t.hydrated = append(t.hydrated, n)
		if t.text != "" {
			t.text += "\n\n"
		}
		t.text += HydrationBlock(n)
	}
	return used
}

func (h *Harness) account(conv []Message, d *Dispatch) {
	a := &d.Accounting
	ws := h.ws
	if !h.cfg.budgeted() || ws == nil || d.WorkingSet == nil {
		ws = nil
	}
	if ws != nil {
		a.ClientTokens = h.clientTokens(conv)
	} else {
		for _, m := range conv {
			for _, p := range m.Parts {
				a.ClientTokens += h.partCost(p)
			}
		}
	}
	a.ForwardedTokens = a.ClientTokens
	var c *wsDerived
	if ws != nil {
		c = &ws.derived
	}
	if c != nil && c.folded.valid(ws, h.recGen) {
		// d.Folded is the working set's cached list (budgetDispatch).
		a.FoldedTokens += c.foldedTokens
		a.ForwardedTokens += c.foldedText - c.foldedTokens
	} else {
		for _, f := range d.Folded {
			a.FoldedTokens += f.Tokens
			a.ForwardedTokens += h.counter.Count(f.Text) - f.Tokens
		}
	}
	a.StepsFolded = len(d.Folded)
	if w := d.WorkingSet; w != nil {
		n := 0
		if c != nil && c.removed.valid(ws, h.recGen) {
			n = c.removedTokens
		} else {
			last := 0
			for _, i := range w.Removed {
				for _, p := range conv[i].Parts {
					n += h.partCost(p)
				}
				last = i + 1
			}
			if c != nil {
				c.removed.set(ws, h.recGen, last)
				c.removedTokens = n
			}
		}
		a.FoldedTokens += n
		a.ForwardedTokens -= n
		a.StepsCollapsed = len(w.Removed)
		if w.PageTable != "" {
			if ws != nil && w.PageTable == ws.block {
				_, cnt := h.blockCounts(ws)
				a.ForwardedTokens += cnt
			} else {
				a.ForwardedTokens += h.counter.Count(w.PageTable)
			}
		}
	}
	for _, n := range d.Hydrated {
		a.HydratedTokens += n.Tokens
		if n.Source != "" {
			a.StepsHydratedEarlier = append(a.StepsHydratedEarlier, n.Source+":"+strconv.Itoa(n.StepID))
			continue
		}
		a.StepsHydrated = append(a.StepsHydrated, n.StepID)
	}
	if d.HydrationText != "" {
		a.ForwardedTokens += h.hydCount.get(d.HydrationText, h.counter.Count)
	}
	for _, r := range d.Refused {
		a.StepsRefused = append(a.StepsRefused, r.StepID)
	}
	sort.Ints(a.StepsDropped)
	for _, l := range []*[]int{&a.StepsHydrated, &a.StepsDropped, &a.StepsRefused} {
		if *l == nil {
			*l = []int{} // JSON [] rather than null
		}
	}
}

// Apply returns the outgoing conversation: every folded message with its
// first foldable part replaced by the record and its other foldable parts by
// a pointer, and the hydration appended as the last part of the prompt
// message. Parts that are not foldable are kept as they are. conv is not
// modified.
//
// Under a budget, the messages of WorkingSet.Removed leave the conversation
// and one user message holding the page table takes the place of the first
// of them; the hydration goes to HydrationIndex.
func (d *Dispatch) Apply(conv []Message) []Message {
	out := d.apply(conv)
	w := d.WorkingSet
	if w == nil || len(w.Removed) == 0 {
		return out
	}
	gone := make(map[int]bool, len(w.Removed))
	for _, i := range w.Removed {
		gone[i] = true
	}
	kept := make([]Message, 0, len(out)-len(w.Removed)+1)
	for i, m := range out {
		if i == w.Removed[0] && w.PageTable != "" {
			kept = append(kept, Message{Role: RoleUser, Parts: []Part{{Text: w.PageTable}}})
		}
		if !gone[i] {
			kept = append(kept, m)
		}
	}
	return kept
}

func (d *Dispatch) apply(conv []Message) []Message {
	out := make([]Message, len(conv))
	copy(out, conv)
	for _, f := range d.Folded {
		m := out[f.Index]
		parts := make([]Part, len(m.Parts))
		copy(parts, m.Parts)
		first := true
		for k := range parts {
			if !parts[k].Foldable {
				continue
			}
			if first {
				parts[k].Text = f.Text
				first = false
			} else {
				parts[k].Text = PointerText(f.Index)
			}
		}
		m.Parts = parts
		out[f.Index] = m
	}
	if d.HydrationText != "" && d.HydrationIndex >= 0 && d.HydrationIndex < len(out) {
		m := out[d.HydrationIndex]
		m.Parts = append(append([]Part{}, m.Parts...), Part{Text: d.HydrationText})
		out[d.HydrationIndex] = m
	}
	return out
}

// PostTurnResponse ends a model call (post_turn_response): it evicts every
// node the dispatch hydrated, and the store appends each eviction to its log
// (CONF-07). A later call of the same human turn hydrates the same content
// again; the next human prompt does not. A node that a later dispatch has
// already evicted (its request began before this response ended: see
// Dispatch.Evicted) is not evicted again, so a late call never evicts the
// hydration of a newer request.
//
// Errors: the store's, joined; the other nodes are still evicted.
func (h *Harness) PostTurnResponse(d *Dispatch) ([]contextfold.Eviction, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var evs []contextfold.Eviction
	var errs []error
	for _, n := range d.Hydrated {
		if n.Source != "" {
			continue // read from an earlier store, never marked there
		}
		if seq, ok := h.pending[n.StepID]; !ok || seq != d.seq {
			continue // evicted already, by a later dispatch
		}
		ev, err := h.store.Evict(n.StepID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		delete(h.pending, n.StepID)
		evs = append(evs, *ev)
	}
	return evs, errors.Join(errs...)
}

// cutTokens shortens s to about n tokens of the reference estimate
// (characters/4), on a character boundary.
func cutTokens(s string, n int) string {
	k := 0
	for i := range s {
		if k == n*4 {
			return s[:i]
		}
		k++
	}
	return s
}

// learnIndexedSecrets shows the store, before this harness's first fold,
// the secrets that the context of the conversation's messages it already
// indexes reveals (contextfold.Store.LearnSecrets), so that a value an
// earlier process folded with its context (API_KEY=… in a tool output) is
// redacted where a message folded now shows it bare. A store's session
// secrets live in memory only (they are never written to disk), so
// without it a proxy restarted between two fold events, or a harness
// opened over a store another process filled, would fold such a value as
// it stands. The messages are the client's, resent whole with every
// request; a store holding none of them costs nothing. A failure is a
// warning on d: the fold still scrubs each turn with its own context.
func (h *Harness) learnIndexedSecrets(conv []Message, entries map[int]*contextfold.Entry, d *Dispatch) {
	if h.learned {
		return
	}
	h.learned = true
	var turns []contextfold.Turn
	for i := range conv {
		if entries[i] == nil {
			continue
		}
		if payload, ok := conv[i].payload(); ok {
			turns = append(turns, contextfold.Turn{StepID: i, RawContent: payload, SessionID: h.cfg.SessionID})
		}
	}
	if len(turns) == 0 {
		return
	}
	if err := h.store.LearnSecrets(turns); err != nil {
		d.Warnings = append(d.Warnings, "the secrets of the messages folded before were not learned: "+err.Error())
	}
	h.resumeIndexedOpenKey(conv, entries)
}

// resumeIndexedOpenKey tells the store, when it knows no private key left
// open, the key the conversation's indexed messages leave open (a PEM
// BEGIN line without its END line, a PuTTY key short of its private
// lines), read from their payloads in step order (contextfold.OpenKeyAfter,
// the state machine of the store's own fold events): the rest of that key
// in the messages folded now is redacted (contextfold.Store.ResumeOpenKey).
// The store keeps the open key in memory only, and a fold event's batch
// here holds the new messages alone, so a proxy restarted between the
// turn that showed a key's BEGIN line and the one showing its middle lines
// (plain base64, no secret by themselves) stored those in clear. Only the
// step and kind of the key are kept, never a part of it.
func (h *Harness) resumeIndexedOpenKey(conv []Message, entries map[int]*contextfold.Entry) {
	if _, ok := h.store.OpenKey(); ok {
		return
	}
	var open *contextfold.OpenKey
	for i := range conv {
		if entries[i] == nil {
			continue
		}
		if payload, ok := conv[i].storePayload(); ok {
			open = contextfold.OpenKeyAfter(open, contextfold.Turn{StepID: i, RawContent: payload})
		}
	}
	if open != nil {
		h.store.ResumeOpenKey(*open)
	}
}
