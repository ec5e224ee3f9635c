package harness

import (
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/parallel"
)

// Defaults of the token-budget working set (Config.ContextBudget).
//
// DefaultContextBudget suits today's 200k-token-window models: a fifth of
// the window, which leaves the rest for the response, for tool definitions
// the proxy cannot see, and keeps the input cost of a long session low. A
// conversation under it is forwarded unchanged.
const (
	DefaultContextBudget  = 40_000 // tokens
	DefaultFoldTarget     = 50     // percent of the budget a fold event folds down to
	DefaultPageTableShare = 10     // percent of the budget the page-table block may take
	DefaultHydrationShare = 20     // percent of the budget one human turn may hydrate
)

// Defaults of the fold rule that counts its cost (Config.PaybackRequests,
// Config.CacheTTL; docs/proxy.md, "A fold event that pays for itself").
//
// A fold event rewrites the forwarded prompt from its first folded message
// on: the provider's prompt cache misses from there, so that part is paid at
// the cache-write price instead of the cache-read price once; every later
// request is smaller by what the event removed, paid at the cache-read
// price. FoldCacheRead and FoldCacheWrite are the prices the rule assumes,
// relative to uncached input: Anthropic's (a 5-minute cache write costs
// 1.25×, a read 0.1×), the dearest structure for a rewrite, so a fold event
// that pays there pays at OpenAI's (no write premium) too.
const (
	DefaultPaybackRequests = 1
	DefaultCacheTTL        = 5 * time.Minute
	FoldCacheRead          = 0.1
	FoldCacheWrite         = 1.25
)

// NoBudget as Config.ContextBudget selects the fixed message window
// (HotWindow, FoldBlock, MinFoldTokens) of earlier versions.
const NoBudget = -1

// PageTableOpen starts the page-table block: the one message that stands for
// the removed run of old steps, one line per step.
const PageTableOpen = "[contextfold page table: "

// budgeted reports whether the token budget rules (see the package doc).
func (c Config) budgeted() bool { return c.ContextBudget > 0 }

// workset is the state of the working set between two fold events. It only
// changes at a fold event, so the forwarded prefix stays byte-identical in
// between (prompt caches keep hitting).
type workset struct {
	folded  stepSet // shown as their folded-step record, in place
	removed stepSet // left the prompt: a line of the page table, or nothing
	omitted int     // the oldest page lines that left the prompt as well
	events  int     // fold events so far
	block   string  // the page-table text (derived from removed, omitted)
	lines   int
	// n is the conversation length at the last dispatch: a shorter one
	// resets the working set.
	n int
	// lastMs is when the last dispatch ran (Unix milliseconds; 0: none).
	lastMs int64
	// gen counts the changes of folded, removed and block; derived holds
	// what dispatches computed from them (incremental.go).
	gen     int
	derived wsDerived
}

func newWorkset() *workset { return &workset{} }

// stepSet is a set of message indexes, with its members in ascending order
// kept between changes (the working set changes only at fold events, and is
// read by every request).
type stepSet struct {
	in     []bool
	n      int
	sorted []int // nil: to be rebuilt
}

func (s *stepSet) has(i int) bool { return i >= 0 && i < len(s.in) && s.in[i] }

func (s *stepSet) add(i int) {
	if s.has(i) || i < 0 {
		return
	}
	if i >= len(s.in) {
		s.in = append(s.in, make([]bool, i+1-len(s.in))...)
	}
	s.in[i] = true
	s.n++
	s.sorted = nil
}

func (s *stepSet) del(i int) {
	if !s.has(i) {
		return
	}
	s.in[i] = false
	s.n--
	s.sorted = nil
}

func (s *stepSet) len() int { return s.n }

// list returns the members ascending; the slice is shared and read-only.
func (s *stepSet) list() []int {
	if s.sorted == nil {
		s.sorted = make([]int, 0, s.n)
		for i, v := range s.in {
			if v {
				s.sorted = append(s.sorted, i)
			}
		}
	}
	return s.sorted
}

// WorkingSet describes a budgeted dispatch: which messages are pinned,
// which left the prompt, what stands for them, and the budget.
type WorkingSet struct {
	Budget   int `json:"budget"`   // tokens
	Estimate int `json:"estimate"` // forwarded tokens the harness expects (its own count)
	// Pinned messages [0, Pinned) are never folded (system prompt, task).
	Pinned int `json:"pinned"`
	// TailStart: messages from here on are the hot tail, never folded.
	TailStart int `json:"tail_start"`
	// Removed lists the messages that left the prompt, ascending; the page
	// table message is inserted in place of the first of them.
	Removed []int `json:"removed"`
	// PageTable is the text of the inserted message ("" when none).
	PageTable       string `json:"-"`
	PageLines       int    `json:"page_lines"`
	PageOmitted     int    `json:"page_omitted"`
	PageTableTokens int    `json:"page_table_tokens"`
	// FoldEvent is true when this dispatch changed the working set (the
	// forwarded prefix differs from the previous request's from the first
	// changed message on).
	FoldEvent bool `json:"fold_event"`
	// FoldHeld is true when a fold event was due on this request and was
	// postponed because the request was held (Harness.DispatchHeld: a
	// tool-use continuation whose thinking is bound to the prefix); the
	// session's next request that is not held folds.
	FoldHeld bool `json:"fold_held,omitempty"`
	// FirstChanged is the first message whose forwarded form changed at this
	// fold event (-1 when none).
	FirstChanged int `json:"first_changed"`
	// FoldTarget is the estimate this request's fold event folded down to
	// (the fold rule's depth, foldTarget; 0 when no fold event). Estimate
	// ends above it when what cannot fold (pinned messages, the hot tail,
	// the page table, system messages) is larger.
	FoldTarget int `json:"fold_target,omitempty"`
	Events     int `json:"fold_events"`
	// The estimate by part, in tokens: the request outside its messages
	// (system prompt, tools), the pinned messages, the folded-step records,
	// the messages kept verbatim before the tail, the hot tail, the
	// hydration. With PageTableTokens they sum to Estimate.
	FixedTokens     int `json:"fixed_tokens"`
	PinnedTokens    int `json:"pinned_tokens"`
	RecordTokens    int `json:"record_tokens"`
	VerbatimTokens  int `json:"verbatim_tokens"`
	TailTokens      int `json:"tail_tokens"`
	HydrationTokens int `json:"hydration_tokens"`
	Records         int `json:"records"`
	// OverBudget is true when Estimate exceeds Budget even after the fold
	// event: what cannot fold (the pinned messages, the latest message and
	// its tool pair, the fixed part, the hydration) is larger than the
	// budget.
	OverBudget bool `json:"over_budget,omitempty"`
	// FloorTokens is what cannot fold on this request, in tokens (the
	// fixed part, the hydration, the pinned messages, the latest message
	// and the tool call it answers, the page table within its share;
	// floorEstimate): the lowest estimate a fold event can reach. Computed
	// only when the request is over the budget (0 otherwise).
	FloorTokens int `json:"floor_tokens,omitempty"`
	// FoldSkipped is true when the request was over the budget, its floor
	// too, and a fold event reaching only that floor would not pay for
	// itself within Config.PaybackRequests (docs/proxy.md, "When what
	// cannot fold is over the budget"): the request went out unfolded, its
	// prefix cache-stable.
	FoldSkipped bool `json:"fold_skipped,omitempty"`
}

// pinEnd returns the end of the pinned prefix: Config.PinMessages, or
// through the first human message (the task statement), and through the
// last message with Message.Pin.
func (h *Harness) pinEnd(conv []Message) int {
	k := h.pinStart(conv)
	// The pinned prefix reaches through the last message that must stay
	// (Message.Pin): it stands for the history before it.
	for i := len(conv) - 1; i >= k; i-- {
		if conv[i].Pin {
			return i + 1
		}
	}
	return k
}

// pinStart is the pinned prefix by position: Config.PinMessages, or the
// system messages and the leading messages through the first human one.
func (h *Harness) pinStart(conv []Message) int {
	if h.cfg.PinMessages > 0 {
		return min(h.cfg.PinMessages, len(conv))
	}
	for i, m := range conv {
		if m.Role == RoleUser && m.Human && !m.isObservation() {
			return i + 1
		}
	}
	k := 0
	for k < len(conv) && conv[k].Role == RoleSystem {
		k++
	}
	return k
}

// answersTool reports a message that must stay right after the one before
// it: it carries tool results.
func answersTool(m Message) bool {
	if m.AnswersTool || m.Role == RoleTool {
		return true
	}
	for _, p := range m.Parts {
		if p.ToolResult {
			return true
		}
	}
	return false
}

// cost returns the tokens message m takes in the forwarded request.
func (h *Harness) cost(m Message) int {
	if m.Tokens > 0 {
		return m.Tokens
	}
	n := 4
	for _, p := range m.Parts {
		n += h.partCost(p)
	}
	return n
}

func (h *Harness) partCost(p Part) int {
	if p.Tokens > 0 {
		return p.Tokens
	}
	return h.counter.Count(p.Text)
}

// wire estimates the tokens of text the harness writes, once JSON-encoded.
func (h *Harness) wire(s string) int {
	return h.counter.Count(s) + strings.Count(s, `"`)/4 + strings.Count(s, "\n")/4 + 2
}

// recordCost returns the tokens of message m shown as record text.
func (h *Harness) recordCost(m Message, text string, index int) int {
	c := h.cost(m)
	first := true
	for _, p := range m.Parts {
		if !p.Foldable {
			continue
		}
		c -= h.partCost(p)
		if first {
			c += h.wire(text)
			first = false
		} else {
			c += h.wire(PointerText(index))
		}
	}
	return max(c, 1)
}

// budgetDispatch is PreTurnDispatch under a token budget.
//
// Order: a fold event first (when the request is over the budget, counting
// the hydration the human turn already has), then the scan — so that a new
// turn's scan sees the steps this very request folded (a resumed session's
// first request) — then, if the hydration pushed the request over the
// budget, the fold event goes on. A fold event folds the messages before
// the hot tail down to FoldTarget percent of the budget: the room between
// the target and the budget is the hysteresis that keeps fold events rare
// and the forwarded prefix cache-stable. The hot tail stays verbatim unless
// the request is over the budget itself; it then shrinks to fit the budget
// (never below the latest message and the tool call it answers). With a
// large pinned part a fold event therefore ends above the target: pinned
// messages, hot tail and page table cannot fold.
func (h *Harness) budgetDispatch(conv []Message, fixed int, d *Dispatch, entries map[int]*contextfold.Entry) error {
	ws := h.ws
	if ws == nil || len(conv) < ws.n {
		ws = newWorkset()
		h.ws = ws
	}
	prevN := ws.n // the messages from here on are new since the previous request
	ws.n = len(conv)
	// The records of indexed steps, derived from the store and the request,
	// before anything is estimated: a harness that did not fold them itself
	// (a restarted proxy, another replica that imported the SessionState)
	// estimates with the same record texts as the one that did, so it takes
	// the same fold decisions.
	if h.entryList == nil || h.recordsVer != h.entriesVer || len(h.entryList) != len(entries) {
		for i, e := range entries {
			if i < len(conv) {
				if _, ok := h.records[i]; !ok {
					h.record(conv, i, e)
				}
			}
		}
		if h.entryList != nil && len(h.entryList) == len(entries) {
			h.recordsVer = h.entriesVer
		}
	}
	budget := h.cfg.ContextBudget
	target := budget * h.cfg.FoldTarget / 100
	// The cache is cold when the session's previous request is CacheTTL
	// old or more: a fold event then rewrites nothing the provider still
	// holds.
	now := h.cfg.Now().UnixMilli()
	cold := h.cfg.CacheTTL > 0 && ws.lastMs > 0 && now-ws.lastMs >= h.cfg.CacheTTL.Milliseconds()
	ws.lastMs = now
	pin := h.pinEnd(conv)
	tail := max(len(conv)-h.cfg.HotWindow, pin)
	minTail := max(lastGroupStart(conv), pin)
	w := &WorkingSet{Budget: budget, Pinned: pin, TailStart: tail, FirstChanged: -1}
	d.WorkingSet = w

	wireHyd := func(text string) int {
		if text == "" {
			return 0
		}
		return h.hydWire.get(text, h.wire) + 8
	}
	fold := func(est, hyd int) error {
		if h.held {
			w.FoldHeld, d.FoldHeld = true, true
			return nil // DispatchHeld: no fold event on this request
		}
		if d.FoldFailed {
			return nil // the store could not be written: no second attempt
		}
		// The floor over the budget: no fold event reaches the budget, so
		// one is made only when it pays for itself at the depth it can
		// reach (or the cache is idle and it costs nothing).
		floor := h.floorEstimate(conv, ws, pin, minTail, fixed, hyd, d.PromptIndex)
		w.FloorTokens = max(w.FloorTokens, floor)
		if floor > budget && !cold && h.cfg.PaybackRequests >= 0 && !h.foldPays(conv, ws, pin, fixed, est, floor, prevN) {
			w.FoldSkipped = true
			return nil
		}
		w.FoldEvent = true
		target = h.foldTarget(conv, ws, pin, fixed, est)
		w.FoldTarget = target
		// Fold before the hot tail, again while the estimate (the savings
		// are estimated ahead) stays over the target and something folds.
		// The hot tail is kept verbatim: only when the request
		// is still over the budget itself does it shrink, oldest first, to
		// fit the budget, down to the latest message and its pair. So a
		// fold event ends above the target when the pinned messages, the
		// hot tail and the page table (within its share) take more than
		// the target: nothing else is left to fold.
		for _, stage := range []struct{ end, limit int }{{tail, target}, {minTail, budget}} {
			if stage.end < tail {
				break // the last group starts before the hot tail: no shrink
			}
			for pass := 0; est > stage.limit && pass < 4; pass++ {
				first, es, err := h.foldEvent(conv, ws, entries, pin, stage.end, d.PromptIndex, est-stage.limit, d)
				if err != nil {
					return err
				}
				entries = es
				if first >= 0 {
					if w.FirstChanged < 0 || first < w.FirstChanged {
						w.FirstChanged = first
					}
					est = fixed + hyd + h.estimate(conv, ws)
				}
				if d.FoldFailed {
					return nil // the store could not be written: no second attempt
				}
				if first < 0 {
					break // nothing left to fold before end
				}
			}
		}
		return nil
	}
	hyd := wireHyd(h.turnHydration(conv, d.PromptIndex))
	if est := fixed + hyd + h.estimate(conv, ws); est > budget || cold && 2*est > budget+target {
		if err := fold(est, hyd); err != nil {
			return err
		}
	}
	// The scan runs on the store as this request left it.
	scanned := h.hydrate(conv, d)
	hyd = wireHyd(d.HydrationText)
	est := fixed + hyd + h.estimate(conv, ws)
	if est > budget {
		// The hydration takes the request over the budget: a fold event
		// after the scan. What it folds was verbatim when the scan ran,
		// so the turn is scanned once more on the store it leaves (the
		// answer may be among the messages it just folded), and folded
		// again only if the new hydration still does not fit.
		before := ws.gen
		if err := fold(est, hyd); err != nil {
			return err
		}
		if scanned && ws.gen != before {
			h.rescanTurn(conv, d)
			hyd = wireHyd(d.HydrationText)
		}
		est = fixed + hyd + h.estimate(conv, ws)
		if est > budget {
			if err := fold(est, hyd); err != nil {
				return err
			}
			est = fixed + hyd + h.estimate(conv, ws)
		}
	}
	if w.FoldEvent {
		ws.events++
	}
	d.HydrationIndex = h.hydrationHostFor(conv, ws, d)
	w.Estimate = est
	w.Events = ws.events
	if est > budget {
		w.OverBudget = true
	}
	// The dispatch: the records shown, the same list until the working set
	// or a record changes (a message they stand for changed: beginIncremental).
	c := &ws.derived
	if !c.folded.valid(ws, h.recGen) {
		h.foldedRecords(conv, ws, entries, pin)
	}
	d.Folded = c.foldedList
	w.Removed = ws.removed.list()
	w.PageTable, w.PageLines, w.PageOmitted = ws.block, ws.lines, ws.omitted
	if ws.block != "" {
		w.PageTableTokens, _ = h.blockCounts(ws)
	}
	// The hot tail starts after the last message that left it.
	for _, l := range [][]int{ws.folded.list(), ws.removed.list()} {
		if len(l) > 0 && l[len(l)-1] >= w.TailStart {
			w.TailStart = l[len(l)-1] + 1
		}
	}
	w.FixedTokens, w.HydrationTokens = fixed, hyd
	// The breakdown: the pinned messages and the hot tail are counted here,
	// the records come with their list, and the verbatim messages between
	// are what is left of the estimate (every folded or removed message is
	// before TailStart).
	pinEst := 0
	for i := 0; i < min(pin, len(conv)); i++ {
		m := conv[i]
		switch {
		case ws.removed.has(i):
		case ws.folded.has(i):
			w.PinnedTokens += h.cost(m)
			pinEst += h.recordCostOf(m, i)
		default:
			w.PinnedTokens += h.cost(m)
			pinEst += h.cost(m)
		}
	}
	for i := max(w.TailStart, pin); i < len(conv); i++ {
		w.TailTokens += h.cost(conv[i])
	}
	w.RecordTokens, w.Records = c.recordTokens, c.records
	w.VerbatimTokens = h.estimateMsgs(conv, ws) - pinEst - w.RecordTokens - w.TailTokens
	return nil
}

// foldTarget returns the estimate, in tokens, a fold event folds down to:
// the fold target (Config.FoldTarget percent of the budget), or deeper when
// the cost rule asks for it.
//
// The rule. Let F be the request's estimate before the event, P
// the part that stays cached (the fixed part and the pinned messages: the
// page table right after them changes at every event), T the estimate
// after it, r and w the cache-read and cache-write prices (FoldCacheRead,
// FoldCacheWrite). Against the same request without the event, the event
// costs (T − P)·(w − r) more (that part is written instead of read) and
// saves (F − T)·r (the removed part is not read); every later request saves
// (F − T)·r again. It pays for itself within n = Config.PaybackRequests
// requests after it when
//
//	(n + 1)·(F − T)·r ≥ (T − P)·(w − r),  that is  T ≤ (P·(w − r) + (n + 1)·F·r) / (w − r + (n + 1)·r).
//
// With F = 40,000, P = 2,500 and n = 2 that is T ≈ 10,300 tokens (a fourth
// of the budget), where the plain target (half of it) needs about ten
// requests to pay back at Anthropic's prices. A session that ends within n
// requests after a fold event can cost more than without the proxy, by at
// most the event's share not yet paid back; one that goes on gains every
// request. When the provider's cache is cold (Config.CacheTTL passed since
// the session's previous request) a fold event rewrites nothing cached and
// costs nothing extra: budgetDispatch then makes one as soon as the
// estimate is past the middle between the fold target and the budget, to
// the same depth.
func (h *Harness) foldTarget(conv []Message, ws *workset, pin, fixed, est int) int {
	t, _ := h.foldDepth(conv, ws, pin, fixed, est)
	return t
}

// foldDepth is foldTarget; it also returns P, the part that stays cached
// (the fixed part and the pinned messages as forwarded), in tokens.
func (h *Harness) foldDepth(conv []Message, ws *workset, pin, fixed, est int) (target, kept int) {
	target = h.cfg.ContextBudget * h.cfg.FoldTarget / 100
	if h.cfg.PaybackRequests < 0 {
		return target, fixed
	}
	kept = fixed
	for i := 0; i < min(pin, len(conv)); i++ {
		switch {
		case ws.removed.has(i):
		case ws.folded.has(i):
			kept += h.recordCostOf(conv[i], i)
		default:
			kept += h.cost(conv[i])
		}
	}
	r, w := FoldCacheRead, FoldCacheWrite
	n := float64(h.cfg.PaybackRequests + 1)
	pays := (float64(kept)*(w-r) + n*float64(est)*r) / (w - r + n*r)
	return min(target, max(int(pays), kept)), kept
}

// floorEstimate returns the smallest estimate, in tokens, a fold event can
// reach on this request: what cannot fold. That is the fixed part and the
// hydration, the pinned messages as they are forwarded, the latest group
// (from minTail: the latest message and the tool call it answers), the
// system messages and the human prompt between them, and the page table,
// which gains a line (about 20 tokens) for every message that would leave
// the prompt, within its share of the budget. It reads the conversation
// once and counts only the messages that cannot fold.
func (h *Harness) floorEstimate(conv []Message, ws *workset, pin, minTail, fixed, hyd, prompt int) int {
	floor := fixed + hyd
	for i := 0; i < min(pin, len(conv)); i++ {
		switch {
		case ws.removed.has(i):
		case ws.folded.has(i):
			floor += h.recordCostOf(conv[i], i)
		default:
			floor += h.cost(conv[i])
		}
	}
	page := 0
	if ws.block != "" {
		page, _ = h.blockCounts(ws)
	}
	for i := pin; i < min(minTail, len(conv)); i++ {
		switch {
		case ws.removed.has(i):
		case conv[i].Role == RoleSystem || i == prompt:
			floor += h.cost(conv[i])
		default:
			page += 20
		}
	}
	for i := max(minTail, pin); i < len(conv); i++ {
		floor += h.cost(conv[i])
	}
	return floor + min(page, h.cfg.ContextBudget*h.cfg.PageTableShare/100)
}

// foldPays reports whether a fold event from estimate est, which can reach
// no lower than floor, pays for itself within Config.PaybackRequests
// requests after it: the cost rule of foldTarget at the depth the event can
// actually reach, T = max(foldTarget, floor), with one refinement: the
// messages new since the session's previous request (from message prevN
// on; N tokens) are written to the cache at the same price with or without
// the event, so only T − P − N is rewritten because of it:
//
//	(n + 1)·(F − T)·r ≥ (T − P − N)·(w − r).
func (h *Harness) foldPays(conv []Message, ws *workset, pin, fixed, est, floor, prevN int) bool {
	t, kept := h.foldDepth(conv, ws, pin, fixed, est)
	t = max(t, floor)
	fresh := 0
	if prevN > 0 {
		for i := prevN; i < len(conv); i++ {
			fresh += h.cost(conv[i])
		}
	}
	r, w := FoldCacheRead, FoldCacheWrite
	n := float64(h.cfg.PaybackRequests + 1)
	return n*float64(est-t)*r >= float64(max(t-kept-fresh, 0))*(w-r)
}

// foldedRecords lists the records the dispatch shows (every folded step
// still in the prompt, ascending) with their sums, into ws's cache.
func (h *Harness) foldedRecords(conv []Message, ws *workset, entries map[int]*contextfold.Entry, pin int) {
	c := &ws.derived
	c.foldedList = nil
	c.recordTokens, c.records, c.foldedTokens, c.foldedText = 0, 0, 0, 0
	last := 0
	var list []int
	for _, i := range ws.folded.list() {
		if !ws.removed.has(i) {
			list = append(list, i)
		}
	}
	h.projectRecords(conv, list, entries)
	for _, i := range list {
		if i >= len(conv) {
			continue
		}
		last = i + 1
		e := entries[i]
		var st FoldedStep
		if e != nil {
			st = h.record(conv, i, e)
		}
		if i >= pin {
			c.recordTokens += h.recordCostOf(conv[i], i)
			c.records++
		}
		if e == nil {
			continue
		}
		n := 0
		for _, p := range conv[i].Parts {
			if p.Foldable {
				n += h.partCost(p)
			}
		}
		text := h.records[i].text
		c.foldedList = append(c.foldedList, FoldedMessage{Index: i, Step: st, Text: text, Tokens: n})
		c.foldedTokens += n
		c.foldedText += h.counter.Count(text)
	}
	c.folded.set(ws, h.recGen, last)
}

// lastGroupStart is where the latest group of conv starts: its last message
// and, when that message answers tool calls, the message holding them (a
// tool_use / tool_result pair is never split). The hot tail never shrinks
// below it.
func lastGroupStart(conv []Message) int {
	i := len(conv) - 1
	for i > 0 && answersTool(conv[i]) {
		i--
	}
	return max(i, 0)
}

// hydrationHost is the latest user (or tool-result) message: hydration goes
// there only, after its tool results, so that the prefix before it is never
// touched by hydration.
func hydrationHost(conv []Message) int {
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == RoleUser || conv[i].Role == RoleTool {
			return i
		}
	}
	return -1
}

// hydrationHostFor returns the message that receives the hydration of d
// under the budget: the message the human turn's hydration was first
// placed in, for as long as it is still forwarded verbatim, else the latest
// user or tool-result message (hydrationHost), which becomes the turn's
// host.
//
// Why (cache-friendly by design): an agent's requests within one
// human turn each append a tool call and its result. Hydration that
// followed the latest message would leave the message it was in the
// request before, so the forwarded bytes would change there and a
// provider's prefix cache would miss the hydration and everything after
// it on every request of the turn. Kept in one message, the hydration is
// part of a prefix that each request of the turn repeats byte for byte; it
// moves only when its host is folded or leaves the prompt, which is a fold
// event, and a fold event rewrites the prefix from its first fold anyway.
// A new human turn starts with a new host.
func (h *Harness) hydrationHostFor(conv []Message, ws *workset, d *Dispatch) int {
	latest := hydrationHost(conv)
	t := h.turn
	if t == nil || d.HydrationText == "" || d.PromptIndex != t.promptIndex {
		return latest
	}
	if i := t.host; i >= d.PromptIndex && i < len(conv) && (conv[i].Role == RoleUser || conv[i].Role == RoleTool) &&
		!ws.folded.has(i) && !ws.removed.has(i) {
		return i
	}
	t.host = latest
	return latest
}

// estimate returns the forwarded tokens of the messages under ws.
func (h *Harness) estimate(conv []Message, ws *workset) int {
	blk, _ := h.blockCounts(ws)
	return h.estimateMsgs(conv, ws) + blk
}

// recordTextGuess returns the cached record text of step i, or a
// representative one before the step is folded.
func (h *Harness) recordTextGuess(i int) string {
	if st, ok := h.records[i]; ok {
		return st.text
	}
	return FoldedStep{StepID: i, Timestamp: "2006-01-02T15:04:05Z", ActionType: ActionCommandExecution, Status: StatusSuccess,
		Summary: strings.Repeat("x", 160), TargetFiles: []string{"path/to/file.go"}, Artifacts: Artifacts{ColdNodeRef: "cold_nodes/step_000000.json"}}.PromptText()
}

// recordCostOf returns the tokens of message i shown as its record (the
// cached record's, computed once per record).
func (h *Harness) recordCostOf(m Message, i int) int {
	st, ok := h.records[i]
	if !ok {
		return h.recordCost(m, h.recordTextGuess(i), i)
	}
	if st.cost == 0 {
		st.cost = h.recordCost(m, st.text, i)
		h.records[i] = st
	}
	return st.cost
}

// record returns the folded-step record of message i (cached: a message
// with the Key it had when its record was made is not hashed again).
func (h *Harness) record(conv []Message, i int, e *contextfold.Entry) FoldedStep {
	st, ok := h.records[i]
	if ok && conv[i].Key != 0 && st.key == conv[i].Key && st.step.Timestamp == e.FoldedAt {
		return st.step
	}
	fast, stale := h.recordStale(conv, i, e)
	if stale {
		st = h.projectRecord(conv, i, e, fast)
	}
	st.key = conv[i].Key
	h.setRecord(i, st)
	return st.step
}

// recordStale reports whether message i's record (folded as e) must be
// projected anew by record (none cached, or one of another payload or
// fold), with the hash of its payload.
func (h *Harness) recordStale(conv []Message, i int, e *contextfold.Entry) (fast uint64, stale bool) {
	st, ok := h.records[i]
	payload, _ := conv[i].storePayload()
	fast = maphash.String(h.seed, payload)
	return fast, !ok || st.fast != fast || st.step.Timestamp != e.FoldedAt
}

// projectRecord projects message i, folded as e, into its record (project:
// its target files read from its text unless prepared ahead). Safe for
// concurrent use with itself: it reads conv and e and takes the files
// prepared ahead under their lock.
func (h *Harness) projectRecord(conv []Message, i int, e *contextfold.Entry, fast uint64) cachedStep {
	m := conv[i]
	m.Command = commandFor(conv, i)
	return newCachedStep(fast, project(m, e, h.ahead.files(i, m)))
}

// projectRecords projects, in parallel, the records of the messages at
// positions list (folded as entries) that record would project anew, and
// caches them for record: a cold fold event's fifty new records are read
// from their texts on every CPU rather than one after the other. The
// records are the same (each is a function of its own message).
func (h *Harness) projectRecords(conv []Message, list []int, entries map[int]*contextfold.Entry) {
	type job struct {
		i    int
		e    *contextfold.Entry
		fast uint64
		st   cachedStep
	}
	var jobs []job
	for _, i := range list {
		e := entries[i]
		if e == nil || i >= len(conv) {
			continue
		}
		if st, ok := h.records[i]; ok && conv[i].Key != 0 && st.key == conv[i].Key && st.step.Timestamp == e.FoldedAt {
			continue
		}
		if fast, stale := h.recordStale(conv, i, e); stale {
			jobs = append(jobs, job{i: i, e: e, fast: fast})
		}
	}
	if len(jobs) < 2 {
		return // record projects it
	}
	parallel.Each(len(jobs), func(k int) {
		jobs[k].st = h.projectRecord(conv, jobs[k].i, jobs[k].e, jobs[k].fast)
	})
	for _, j := range jobs {
		j.st.key = conv[j.i].Key
		h.setRecord(j.i, j.st)
	}
}

// setRecord stores step i's record; a new text bumps recGen (what was
// estimated with the old one, or with a representative one, is stale).
func (h *Harness) setRecord(i int, st cachedStep) {
	if old, ok := h.records[i]; !ok || old.text != st.text {
		h.recGen++
	}
	h.records[i] = st
}

// intact reports whether step i's cold node verifies (read-only, cached for
// the harness's lifetime): a record or page line only stands for a turn
// whose verbatim text can be hydrated back.
func (h *Harness) intact(i int) bool {
	if ok, seen := h.nodeOK[i]; seen {
		return ok
	}
	_, err := h.store.Hydrate(i)
	h.nodeOK[i] = err == nil
	return err == nil
}

// foldEvent folds oldest first until the estimate has dropped by need
// tokens: first in place (records), then whole groups of messages leave the
// prompt for the page table. It returns the first changed message.
func (h *Harness) foldEvent(conv []Message, ws *workset, entries map[int]*contextfold.Entry, pin, tail, prompt, need int, d *Dispatch) (first int, _ map[int]*contextfold.Entry, _ error) {
	first = -1
	ws.changed()
	mark := func(i int) {
		if first < 0 || i < first {
			first = i
		}
	}
	usable := func(i int) bool {
		if e := entries[i]; e != nil {
			return h.intact(i)
		}
		return true
	}
	// Phase 1: records in place, oldest first.
	// The turns to fold, by message: built after the choice, on every
	// CPU (turnOf summarises each; its summary is a pure function of the
	// message), in this order.
	type foldIn struct {
		i       int
		payload string
	}
	var folds []foldIn
	pending := map[int]bool{}
	for i := pin; i < tail && need > 0; i++ {
		m := conv[i]
		if ws.folded.has(i) || ws.removed.has(i) || m.Role == RoleSystem || i == prompt {
			continue
		}
		payload, ok := m.payload()
		if !ok || h.counter.Count(payload) < h.cfg.MinFoldTokens || !usable(i) {
			continue
		}
		save := h.cost(m) - h.recordCost(m, h.recordTextGuess(i), i)
		if save <= 0 {
			continue
		}
		if entries[i] == nil {
			folds = append(folds, foldIn{i, payload})
			pending[i] = true
		}
		ws.folded.add(i)
		need -= save
		mark(i)
	}
	// Phase 2: groups leave the prompt (a group is a message and the tool
	// results that answer it), oldest first.
	type group struct{ a, b int }
	var groups []group
	if need > 0 {
		for i := pin; i < tail; {
			j := i + 1
			for j < len(conv) && answersTool(conv[j]) {
				j++
			}
			if j > tail {
				break
			}
			groups = append(groups, group{i, j})
			i = j
		}
	}
	var removedNow []int
	for _, g := range groups {
		if need <= 0 {
			break
		}
		ok := !answersTool(conv[g.a])
		save := 0
		for i := g.a; i < g.b && ok; i++ {
			m := conv[i]
			if ws.removed.has(i) {
				ok = false // already gone (a group is removed whole)
				break
			}
			if m.Role == RoleSystem || i == prompt || !usable(i) {
				ok = false
				break
			}
			if ws.folded.has(i) {
				save += h.recordCostOf(m, i)
			} else {
				save += h.cost(m)
			}
			save -= 20 // its page line
		}
		if !ok {
			continue
		}
		for i := g.a; i < g.b; i++ {
			if entries[i] == nil && !pending[i] {
				if payload, ok := conv[i].storePayload(); ok {
					folds = append(folds, foldIn{i, payload})
					pending[i] = true
				}
			}
			ws.removed.add(i)
			removedNow = append(removedNow, i)
			mark(i)
		}
		need -= save
	}
	toFold := make([]contextfold.Turn, len(folds))
	parallel.Each(len(folds), func(k int) { toFold[k] = h.turnOf(conv, folds[k].i, folds[k].payload) })
	if len(toFold) > 0 {
		h.learnIndexedSecrets(conv, entries, d)
		// h.foldBatch: the ranked scan takes these nodes' text from the
		// fold, not from disk, and no fold result is kept.
		if err := h.foldBatch(toFold, d); err != nil {
			d.Warnings = append(d.Warnings, "fold failed, those messages stay verbatim: "+err.Error())
			d.FoldFailed = true
		}
		es, err := h.entryMap()
		if err != nil {
			return first, entries, err
		}
		entries = es
		for _, t := range toFold {
			if entries[t.StepID] == nil {
				// Not stored: the message stays verbatim.
				ws.folded.del(t.StepID)
				continue
			}
			h.verified[t.StepID] = maphash.String(h.seed, t.RawContent)
			h.nodeOK[t.StepID] = true
		}
		// A removed group with a message that is not in the store comes back
		// whole.
		for _, i := range removedNow {
			if _, ok := conv[i].storePayload(); ok && entries[i] == nil {
				a, b := i, i+1
				for a > 0 && answersTool(conv[a]) {
					a--
				}
				for b < len(conv) && answersTool(conv[b]) {
					b++
				}
				for k := a; k < b; k++ {
					ws.removed.del(k)
				}
			}
		}
	}
	h.buildPageTable(conv, ws, entries)
	return first, entries, nil
}

// turnOf is the store turn of message i. It only reads h (the prepared
// summaries under their own lock): safe to call from several goroutines
// at once under h.mu.
func (h *Harness) turnOf(conv []Message, i int, payload string) contextfold.Turn {
	m := conv[i]
	m.Command = commandFor(conv, i)
	text := summaryText(m)
	sum, ok := h.ahead.summary(i, m, text)
	if !ok {
		sum = summarizeText(m, text)
	}
	return contextfold.Turn{StepID: i, Summary: sum, RawContent: payload, SessionID: h.cfg.SessionID, OutputOf: m.Command}
}

// buildPageTable renders the page-table block: one line per removed step
// that is in the store, ascending; the oldest lines leave it when it grows
// past its share of the budget.
func (h *Harness) buildPageTable(conv []Message, ws *workset, entries map[int]*contextfold.Entry) {
	ws.changed()
	var steps []int
	for _, i := range ws.removed.list() {
		if entries[i] != nil {
			steps = append(steps, i)
		}
	}
	recs := make([]FoldedStep, len(steps))
	for k, i := range steps {
		recs[k] = h.record(conv, i, entries[i])
	}
	if len(steps) == 0 {
		ws.block, ws.lines = "", 0
		return
	}
	head := fmt.Sprintf("%s%d earlier steps are folded into verified cold storage and left the prompt; mention a step's files, commands or errors to recall it]", PageTableOpen, len(steps))
	ws.block, ws.omitted = PageTable(head, recs, h.cfg.ContextBudget*h.cfg.PageTableShare/100, ws.omitted, h.wire,
		func(n, first, last int) string {
			return fmt.Sprintf("(%d older steps, %d–%d, are listed in the recall index only)", n, first, last)
		})
	ws.lines = len(steps) - ws.omitted
}

// PageTable renders a page-table block: head, an omission note when lines
// left, then one PageLine per step in the order given (ascending step ids).
// When the lines take more than maxUnits (as count measures them: tokens,
// characters), the oldest leave the block first, at least minOmit of them;
// note names how many left and their first and last step ids. It returns
// the block (lines joined by "\n", no trailing newline) and the number of
// lines left out. It is a pure function of its arguments; the harness's
// working set and the hooks' SessionStart page table both use it.
func PageTable(head string, steps []FoldedStep, maxUnits, minOmit int, count func(string) int, note func(n, first, last int) string) (string, int) {
	lines := make([]string, len(steps))
	total := 0
	for k, st := range steps {
		lines[k] = PageLine(st)
		total += count(lines[k]) + 1
	}
	omit := min(max(minOmit, 0), len(lines))
	for k := 0; k < omit; k++ {
		total -= count(lines[k]) + 1
	}
	for omit < len(lines) && total > maxUnits {
		total -= count(lines[omit]) + 1
		omit++
	}
	var b strings.Builder
	b.WriteString(head)
	if omit > 0 {
		b.WriteByte('\n')
		b.WriteString(note(omit, steps[0].StepID, steps[omit-1].StepID))
	}
	for _, l := range lines[omit:] {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	return b.String(), omit
}

// MaxPageLine bounds a page-table line, in characters (code points).
const MaxPageLine = 120

// PageLine renders one folded step as a page-table line:
// "#<step_id> <status> <summary> [files]" (status "ok" for SUCCESS; up to two
// target files the summary does not name), at most MaxPageLine characters.
func PageLine(s FoldedStep) string {
	status := s.Status
	if status == StatusSuccess {
		status = "ok"
	}
	var files []string
	for _, f := range s.TargetFiles {
		if len(files) < 2 && !strings.Contains(s.Summary, f) {
			files = append(files, f)
		}
	}
	tail := ""
	if len(files) > 0 {
		tail = " [" + cut(strings.Join(files, " "), 48) + "]"
	}
	head := "#" + strconv.Itoa(s.StepID) + " " + status + " "
	return cut(head+s.Summary, MaxPageLine-len([]rune(tail))) + tail
}

// WorkingSetLogName is the file, beside a proxy session's store generations
// (Dir/<session>/), where the proxy appends one WorkingSetRecord per request
// as a JSON line. It is not part of the store (nothing in it reaches a
// model); the inspector draws it.
const WorkingSetLogName = "workset.jsonl"

// WorkingSetRecord is one request's working set as the proxy logs it.
type WorkingSetRecord struct {
	Request    int `json:"request"` // 1-based, per proxy process and session
	Generation int `json:"generation"`
	Messages   int `json:"messages"`
	// ClientTokens and ForwardedTokens count the whole request bodies;
	// StablePrefixTokens is the longest common prefix of this forwarded body
	// with the session's previous one (what a prefix cache reuses).
	ClientTokens       int `json:"client_tokens"`
	ForwardedTokens    int `json:"forwarded_tokens"`
	StablePrefixTokens int `json:"stable_prefix_tokens"`
	// ClientStablePrefixTokens is the longest common prefix of the client's
	// body with its previous one: what the provider's cache would have
	// reused without the proxy (BilledCosts).
	ClientStablePrefixTokens int   `json:"client_stable_prefix_tokens"`
	HydratedSteps            []int `json:"hydrated_steps"`
	WorkingSet
	// RemovedRanges is WorkingSet.Removed as ascending runs [first, last]
	// of message positions, inclusive: the messages that left the prompt
	// are mostly one run from the first fold on, so a request's line stays
	// a few hundred bytes however long the conversation (the list of every
	// position grew each line, and the log with the square of the
	// session's length).
	RemovedRanges [][2]int `json:"removed_ranges"`
	// Removed shadows WorkingSet.Removed in the JSON line: a log written
	// before RemovedRanges holds the list here; a new line leaves it out.
	Removed []int `json:"removed,omitempty"`
	// Reasoning is what the request did to the reasoning the client sent
	// back (nil: nothing to count).
	Reasoning *ReasoningCounts `json:"reasoning,omitempty"`
}

// RangesOf returns the ascending positions in list (sorted ascending, no
// repeats) as runs [first, last], inclusive; an empty list gives an empty,
// non-nil slice.
func RangesOf(list []int) [][2]int {
	out := [][2]int{}
	for _, i := range list {
		if n := len(out); n > 0 && out[n-1][1] == i-1 {
			out[n-1][1] = i
			continue
		}
		out = append(out, [2]int{i, i})
	}
	return out
}

// RemovedSteps returns the positions of the messages that left the prompt
// at this request, from RemovedRanges or, in a line an older proxy wrote,
// from Removed.
func (r *WorkingSetRecord) RemovedSteps() []int {
	if r.RemovedRanges == nil {
		return r.Removed
	}
	var out []int
	for _, rg := range r.RemovedRanges {
		for i := rg[0]; i <= rg[1]; i++ {
			out = append(out, i)
		}
	}
	return out
}
