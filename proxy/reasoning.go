package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/contextfold/contextfold/harness"
)

// Reasoning bound to its prefix (docs/proxy.md, "Thinking and reasoning at
// fold events").
//
// Both model vendors bind the reasoning a model returns to the exact
// conversation before it: Anthropic checks a thinking or redacted_thinking
// block sent back against the system prompt, tools and every message before
// it (a 400 by default, or the block dropped with
// thinking.block_binding.prefix_mismatch_behavior "drop_block"); the OpenAI
// Responses API drops the reasoning items that follow a prefix change. The
// proxy changes the conversation only at fold events (everything between two
// fold events is append-only, hydration included), so a fold event is the one
// place where reasoning becomes invalid: every block or item in a message
// from the fold event's first changed message on.
//
// What the proxy does with them, from then on in every request of the
// session, so that the wire stays append-only:
//   - it leaves them out (the vendors' own advice for an integration that
//     folds older turns and keeps the latest ones: remove the thinking of
//     the kept turns). A request without them is valid with and without the
//     check and costs no tokens for reasoning the model could not use;
//   - except in a tool-use continuation (the latest assistant message made
//     the tool calls the last message answers, thinking on): Anthropic
//     requires that message's thinking to come back with the tool result, so
//     the proxy keeps those blocks and asks the API to drop what fails the
//     check (drop_block and the beta header), in this request and every later
//     one of the session (the docs: the API does not keep the setting between
//     requests; the session state does, for every replica of a fleet).
//
// Reasoning left out stays in the client's history and goes into the store
// with its turn when the turn folds (harness.Part.Reasoning), verifiable and
// hydratable like any content.

// Anthropic's binding controls.
const (
	// HeaderAnthropicBeta is the header that turns on Anthropic beta
	// features, comma-separated.
	HeaderAnthropicBeta = "anthropic-beta"
	// BetaThinkingBinding is the beta that accepts
	// thinking.block_binding.prefix_mismatch_behavior.
	BetaThinkingBinding = "thinking-binding-controls-2026-08-01"
)

// dropBlockField is added to the request's thinking object when the session
// keeps invalid blocks.
const dropBlockField = `"block_binding":{"prefix_mismatch_behavior":"drop_block"}`

// ReasoningStats counts what fold events did to reasoning: Anthropic thinking
// and redacted_thinking blocks, OpenAI Responses reasoning items (fields:
// harness.ReasoningCounts). In a RequestRecord they count that request; in
// Stats and per session, the sums.
type ReasoningStats = harness.ReasoningCounts

// wireState is what the proxy remembers of a session's wire between
// requests; it travels with the harness state (exportState).
type wireState struct {
	mu      sync.Mutex
	removed map[string]bool // reasoning left out of every request from now on
	kept    map[string]bool // invalid, kept for a tool-use continuation
	// dropBlock: every request asks the API to drop invalid blocks.
	dropBlock bool
	// hyd are earlier human turns' hydrations, each kept in its host
	// message until a fold event changes the conversation at or before it;
	// cur is the latest request's.
	hyd    []stickyHydration
	cur    stickyHydration
	prompt int // the latest request's prompt message (harness.Dispatch.PromptIndex)
	// folded is the fixed window's folded messages at the last request.
	folded []int
	stats  ReasoningStats
	// keys memoizes reasoningKey by message (harness.Message.Key: the hash
	// of its bytes) and part; not saved (derived from the request).
	keys map[uint64][]string
}

// keyOf is req.reasoningKey(i, k), memoized by the message's bytes. w.mu is
// held.
func (w *wireState) keyOf(req *request, i, k int) string {
	mk := req.msgs[i].Key
	if mk == 0 {
		return req.reasoningKey(i, k)
	}
	ks := w.keys[mk]
	if len(ks) != len(req.msgs[i].Parts) {
		if w.keys == nil || len(w.keys) > 1<<14 {
			w.keys = map[uint64][]string{}
		}
		ks = make([]string, len(req.msgs[i].Parts))
		w.keys[mk] = ks
	}
	if ks[k] == "" {
		ks[k] = req.reasoningKey(i, k)
	}
	return ks[k]
}

// stickyHydration is hydration text and the message it was appended to.
// Key is that message's contentKey when it was (0: unknown; not saved): a
// message at Host with another content is not the host any more — the
// client rewrote it (an edited prompt sent again, another question asked
// at the end of the same history) — and the text goes with it. The same
// content sent in another encoding is the same host: Claude Code sends
// the latest prompt as a text block with cache_control and, one turn later,
// as a plain string; dropping the hydration then would change the
// conversation before the model's answer and invalidate its thinking.
//
// Blocks records that the host's content was an array of blocks when the
// text was appended (a block after its blocks): the Messages API reads a
// string content as one text block, so the same prompt sent later as a
// string must get its text block and the hydration's as separate blocks
// again, or the conversation before the answer changes.
type stickyHydration struct {
	Host   int    `json:"host"`
	Text   string `json:"text"`
	Blocks bool   `json:"blocks,omitempty"`
	Key    uint64 `json:"-"`
}

// rewritten reports whether h's host message in msgs is not the one the
// text was appended to (its key known, the content different).
func (h stickyHydration) rewritten(msgs []harness.Message) bool {
	return h.Key != 0 && h.Host >= 0 && h.Host < len(msgs) && contentKey(msgs[h.Host]) != h.Key
}

// contentKey identifies a message by what it says — its role and its
// parts' kinds and texts — whatever its encoding (a string or text blocks,
// cache_control, key order, whitespace). Never 0.
func contentKey(m harness.Message) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m.Role))
	for _, p := range m.Parts {
		var flags [1]byte
		if p.Foldable {
			flags[0] |= 1
		}
		if p.ToolResult {
			flags[0] |= 2
		}
		if p.Reasoning {
			flags[0] |= 4
		}
		h.Write(flags[:])
		h.Write([]byte(strconv.Itoa(len(p.Text))))
		h.Write([]byte{':'})
		h.Write([]byte(p.Text))
	}
	return h.Sum64() | 1
}

// wireJSON is wireState's encoding (sorted: equal states, equal bytes).
type wireJSON struct {
	Removed    []string          `json:"removed"`
	Kept       []string          `json:"kept"`
	DropBlock  bool              `json:"drop_block"`
	Hydrations []stickyHydration `json:"hydrations"`
	Current    stickyHydration   `json:"current"`
	Prompt     int               `json:"prompt"`
	Folded     []int             `json:"folded"`
	Stats      ReasoningStats    `json:"stats"`
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (w *wireState) export() ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return json.Marshal(wireJSON{Removed: sortedKeys(w.removed), Kept: sortedKeys(w.kept), DropBlock: w.dropBlock,
		Hydrations: append([]stickyHydration{}, w.hyd...), Current: w.cur, Prompt: w.prompt, Folded: append([]int{}, w.folded...), Stats: w.stats})
}

func (w *wireState) load(j *wireJSON) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removed, w.kept = map[string]bool{}, map[string]bool{}
	w.dropBlock, w.hyd, w.cur, w.prompt, w.folded, w.stats = false, nil, stickyHydration{Host: -1}, -1, nil, ReasoningStats{}
	if j == nil {
		return
	}
	for _, k := range j.Removed {
		w.removed[k] = true
	}
	for _, k := range j.Kept {
		w.kept[k] = true
	}
	w.dropBlock, w.hyd, w.cur, w.prompt, w.folded, w.stats = j.DropBlock, j.Hydrations, j.Current, j.Prompt, j.Folded, j.Stats
}

func (w *wireState) snapshot() ReasoningStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// exportState is the session's state: the harness's SessionState with the
// wire state under "wire" (harness.ImportState ignores the key).
func (sess *session) exportState() ([]byte, error) {
	data, err := sess.h.ExportState()
	if err != nil {
		return nil, err
	}
	w, err := sess.wire.export()
	if err != nil {
		return nil, err
	}
	if len(data) < 2 || data[len(data)-1] != '}' {
		return data, nil
	}
	out := make([]byte, 0, len(data)+len(w)+8)
	out = append(out, data[:len(data)-1]...)
	out = append(out, `,"wire":`...)
	out = append(out, w...)
	return append(out, '}'), nil
}

// importState is exportState's inverse. A state without "wire" (an older
// build's) starts an empty wire state.
func (sess *session) importState(data []byte) error {
	if err := sess.h.ImportState(data); err != nil {
		return err
	}
	var x struct {
		Wire *wireJSON `json:"wire"`
	}
	_ = json.Unmarshal(data, &x) // ImportState read it already
	sess.wire.load(x.Wire)
	return nil
}

// reasoningPlan is what the wire rules decide for one request.
type reasoningPlan struct {
	// leave lists, by message, the reasoning parts left out (Anthropic
	// blocks; a Responses reasoning item is a whole element: leaveElem).
	leave     map[int][]int
	leaveElem []int
	// stripID are the Responses items whose "id" field the rewrite
	// leaves out: the output items that follow a reasoning item left out
	// (stripIDs).
	stripID []int
	// sticky are earlier turns' hydration texts by host message.
	sticky map[int][]string
	// stickyBlocks are the sticky hosts whose content was an array of
	// blocks when their hydration was appended (stickyHydration.Blocks).
	stickyBlocks map[int]bool
	dropBlock    bool
	stats        ReasoningStats
}

// reasoningKey identifies reasoning part k of message i across requests:
// the SHA-256 of its signature (thinking), data (redacted_thinking),
// encrypted_content or id (Responses), else of its bytes.
func (r *request) reasoningKey(i, k int) string {
	sp := r.spans[i][k]
	b := r.body
	var v string
	if kind(b, sp) == '{' {
		f := objectFields(b, sp)
		for _, name := range []string{"signature", "data", "encrypted_content", "id"} {
			if s := stringField(b, f, name); s != "" {
				v = stringField(b, f, "type") + "\x00" + name + "\x00" + s
				break
			}
		}
	}
	var sum [32]byte
	if v != "" {
		sum = sha256.Sum256([]byte(v))
	} else {
		sum = sha256.Sum256(b[sp.start:sp.end])
	}
	return hex.EncodeToString(sum[:12])
}

// continuation returns the message whose thinking a tool-use continuation
// must send back (the latest assistant message, when the last message
// answers its tool calls and thinking is on), or -1.
func (r *request) continuation() int {
	n := len(r.msgs)
	if r.api != APIAnthropic || !r.thinkingOn || n < 2 {
		return -1
	}
	if last := r.msgs[n-1]; last.Role != harness.RoleUser || !last.AnswersTool || r.msgs[n-2].Role != harness.RoleAssistant {
		return -1
	}
	return n - 2
}

// holdsFolds reports whether no fold event may start on this request: a
// tool-use continuation (its thinking must come back) whose client set
// thinking.block_binding itself without "drop_block" (explicitly "error",
// or the default, which rejects). A fold event there would change the
// conversation before the continuation's thinking, and the API would reject
// the request; the fold event waits for the session's next request that is
// not such a continuation (harness.Harness.DispatchHeld; the budget is
// soft).
func (r *request) holdsFolds() bool {
	return r.thinkingBinding && !r.bindingDrop && r.continuation() >= 0
}

// dispatchFor is sess's harness dispatch of req: DispatchHeld when the
// request holds fold events (holdsFolds), else DispatchRequest.
//
// The dispatch is told which earlier turns' hydration the forwarded request
// keeps (stickyFor): a node one of them holds in full is not hydrated again.
func dispatchFor(sess *session, req *request, fixed int) (*harness.Dispatch, error) {
	var in []harness.PromptHydration
	for _, h := range stickyFor(sess, req) {
		in = append(in, harness.PromptHydration{Host: h.Host, Text: h.Text})
	}
	return sess.h.DispatchWith(req.msgs, harness.DispatchOptions{FixedTokens: fixed, Held: req.holdsFolds(), InPrompt: in})
}

// planWire applies the wire rules to one request of sess after its
// dispatch d: it finds the fold event, invalidates the reasoning after its
// first changed message, and returns what the rewrite leaves out, re-adds
// (earlier turns' hydration) and asks of the API. It updates sess's wire
// state; the caller holds the session (its lease, for a shared session).
func planWire(sess *session, req *request, d *harness.Dispatch) *reasoningPlan {
	w := &sess.wire
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed == nil {
		w.removed, w.kept = map[string]bool{}, map[string]bool{}
	}
	p := &reasoningPlan{}
	n := len(req.msgs)
	// left: the message left the prompt; gone: it left or is folded (not
	// forwarded as it was). Both lists are ascending: binary search, no
	// per-request map over a long conversation (the proxy's added latency).
	var removed []int
	if ws := d.WorkingSet; ws != nil {
		removed = ws.Removed
	}
	left := func(i int) bool {
		k := sort.SearchInts(removed, i)
		return k < len(removed) && removed[k] == i
	}
	gone := func(i int) bool {
		k := sort.Search(len(d.Folded), func(k int) bool { return d.Folded[k].Index >= i })
		return left(i) || k < len(d.Folded) && d.Folded[k].Index == i
	}
	// An earlier turn's hydration whose host the client rewrote goes with
	// the message it was in (the new message at that place never carried
	// it); so does the latest one's, when the new prompt replaces its host.
	keep := w.hyd[:0]
	for _, h := range w.hyd {
		if !h.rewritten(req.msgs) {
			keep = append(keep, h)
		}
	}
	w.hyd = keep
	if w.cur.rewritten(req.msgs) {
		w.cur = stickyHydration{Host: -1}
	}
	// The fold event and its first changed message.
	first := -1
	if ws := d.WorkingSet; ws != nil {
		if ws.FoldEvent {
			first = ws.FirstChanged
		}
	} else {
		folded := make([]int, 0, len(d.Folded))
		for _, f := range d.Folded {
			folded = append(folded, f.Index)
		}
		sort.Ints(folded)
		first = firstDifference(w.folded, folded)
		w.folded = folded
	}
	// An earlier turn's hydration whose host is gone went with a change
	// there (a fold event, or a client that rewrote its history).
	for _, h := range w.hyd {
		if h.Host >= n || gone(h.Host) {
			if first < 0 || h.Host < first {
				first = min(h.Host, n)
			}
		}
	}
	// The current turn's hydration: a new turn leaves the last one in its
	// host (CONF-07 evicts the node; the text the model read stays where it
	// was until a fold event).
	cur := stickyHydration{Host: -1}
	if d.HydrationText != "" && d.HydrationIndex >= 0 {
		cur = stickyHydration{Host: d.HydrationIndex, Text: d.HydrationText}
		if d.HydrationIndex < n {
			cur.Key = contentKey(req.msgs[d.HydrationIndex])
		}
		if d.HydrationIndex < len(req.points) {
			cur.Blocks = req.points[d.HydrationIndex].isArr
		}
	}
	if w.cur.Text != "" && w.cur != cur && w.cur.Host != cur.Host && w.cur.Host < n && !gone(w.cur.Host) {
		w.hyd = append(w.hyd, w.cur)
	}
	w.cur, w.prompt = cur, d.PromptIndex
	if first >= 0 {
		p.stats.FoldEvents = 1
		keep := w.hyd[:0]
		for _, h := range w.hyd {
			if h.Host < first && !gone(h.Host) {
				keep = append(keep, h)
			}
		}
		w.hyd = keep
		cont := req.continuation()
		for i := max(first, 0); i < n; i++ {
			if left(i) {
				continue
			}
			for k, part := range req.msgs[i].Parts {
				if !part.Reasoning {
					continue
				}
				key := w.keyOf(req, i, k)
				if w.kept[key] && i != cont {
					// Kept for an earlier continuation, invalid since:
					// this fold event changes the conversation before it
					// anyway, so it can go now at no cost.
					delete(w.kept, key)
					w.removed[key] = true
					continue
				}
				if w.removed[key] || w.kept[key] {
					continue
				}
				p.stats.Invalidated++
				p.stats.InvalidatedTokens += part.Tokens
				if i == cont && req.kinds[i] == "" {
					w.kept[key], w.dropBlock = true, true
					p.stats.KeptDropBlock++
				} else {
					w.removed[key] = true
				}
			}
		}
	}
	if len(w.hyd) > 0 {
		p.sticky = map[int][]string{}
		for _, h := range w.hyd {
			p.sticky[h.Host] = append(p.sticky[h.Host], h.Text)
			if h.Blocks {
				if p.stickyBlocks == nil {
					p.stickyBlocks = map[int]bool{}
				}
				p.stickyBlocks[h.Host] = true
			}
		}
	}
	if len(w.removed) > 0 {
		for i := 0; i < n; i++ {
			if left(i) {
				continue
			}
			for k, part := range req.msgs[i].Parts {
				if !part.Reasoning || !w.removed[w.keyOf(req, i, k)] {
					continue
				}
				if req.kinds[i] == "reasoning" {
					if i == n-1 {
						continue // the last item stays (a request ends with its input)
					}
					p.leaveElem = append(p.leaveElem, i)
				} else {
					if p.leave == nil {
						p.leave = map[int][]int{}
					}
					p.leave[i] = append(p.leave[i], k)
				}
				p.stats.Removed++
				p.stats.RemovedTokens += part.Tokens
			}
		}
	}
	if req.api == APIResponses {
		var gone []int // reasoning items that left the prompt
		for _, i := range removed {
			if i < n && req.kinds[i] == "reasoning" {
				gone = append(gone, i)
			}
		}
		p.stripID = stripIDs(req, mergeSorted(p.leaveElem, gone), left)
	}
	if w.dropBlock && req.api == APIAnthropic && req.thinkingOn {
		p.dropBlock = true
		p.stats.DropBlock = 1
	}
	if d.FoldHeld {
		p.stats.Held = 1
	}
	w.stats.Add(p.stats)
	return p
}

// stripIDs returns the items of a Responses request whose "id" the rewrite
// leaves out: after each reasoning item not forwarded (leave, ascending:
// left out by the wire rules, or gone with the messages that left the
// prompt while an item after it stays), the items the same response
// produced with it (every following item up to the
// next reasoning item, the next *_output item or the next message not from
// the assistant) that carry an id and did not leave the prompt. The API
// looks an item sent by its id up in the responses it stored (store on, its
// default) and answers 400 "Item 'fc_…' of type 'function_call' was
// provided without its required 'reasoning' item" when the reasoning item
// stored with it is not in the input; sent without an id (optional on input
// items) the item is taken as it stands. The list is derived from the
// session's removed reasoning, so every later request leaves the same ids
// out and the wire stays append-only between fold events.
func stripIDs(req *request, leave []int, left func(int) bool) []int {
	if req.api != APIResponses || len(leave) == 0 {
		return nil
	}
	var out []int
	for _, i := range leave {
		for j := i + 1; j < len(req.msgs); j++ {
			k := req.kinds[j]
			if k == "reasoning" || strings.HasSuffix(k, "_output") || req.roles[j] != "" && req.roles[j] != "assistant" {
				break
			}
			if left(j) || len(out) > 0 && out[len(out)-1] == j {
				continue
			}
			if _, ok := get(objectFields(req.body, req.elems[j]), "id"); ok {
				out = append(out, j)
			}
		}
	}
	return out
}

// idEdits returns the edits that leave the "id" field (with its comma) out
// of the items p.stripID.
func (r *request) idEdits(p *reasoningPlan) []edit {
	var edits []edit
	b := r.body
	for _, i := range p.stripID {
		el := r.elems[i]
		fs := objectFields(b, el)
		for k, f := range fs {
			if f.key != "id" {
				continue
			}
			keyAt := func(k int) int { // where field k's key starts
				if k == 0 {
					return skipWS(b, el.start+1)
				}
				at := skipWS(b, fs[k-1].val.end)
				return skipWS(b, at+1) // past ','
			}
			switch {
			case k+1 < len(fs):
				edits = append(edits, edit{keyAt(k), keyAt(k + 1), nil})
			case k > 0:
				edits = append(edits, edit{fs[k-1].val.end, f.val.end, nil})
			default:
				edits = append(edits, edit{keyAt(k), f.val.end, nil})
			}
			break
		}
	}
	return edits
}

// stickyTokens returns the tokens of sess's earlier turns' hydration, which
// the forwarded request carries beside the harness's own estimate.
func stickyTokens(sess *session, req *request, count func(string) int) int {
	n := 0
	for _, h := range stickyFor(sess, req) {
		// As the harness estimates its own hydration: the text encoded
		// (escaped quotes and line ends) in a block of its own.
		n += count(h.Text) + strings.Count(h.Text, `"`)/4 + strings.Count(h.Text, "\n")/4 + 10
	}
	return n
}

// stickyFor returns sess's earlier turns' hydrations that req's forwarded
// form carries (before its dispatch: a fold event of req may still drop
// some with their hosts).
func stickyFor(sess *session, req *request) []stickyHydration {
	w := &sess.wire
	w.mu.Lock()
	defer w.mu.Unlock()
	var hyd []stickyHydration
	for _, h := range w.hyd {
		if !h.rewritten(req.msgs) {
			hyd = append(hyd, h)
		}
	}
	if w.cur.Text != "" && !w.cur.rewritten(req.msgs) {
		// A new human turn (a later human message than the last
		// request's prompt) leaves the last turn's hydration behind too.
		for i := len(req.msgs) - 1; i > w.prompt && i >= 0; i-- {
			if req.msgs[i].Human {
				hyd = append(hyd[:len(hyd):len(hyd)], w.cur)
				break
			}
		}
	}
	return hyd
}

// firstDifference returns the smallest element in exactly one of the sorted
// lists a and b, or -1.
func firstDifference(a, b []int) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			i++
			j++
		case a[i] < b[j]:
			return a[i]
		default:
			return b[j]
		}
	}
	if i < len(a) {
		return a[i]
	}
	if j < len(b) {
		return b[j]
	}
	return -1
}

// reasoningEdits returns the edits that leave the planned reasoning blocks
// out of their messages (Anthropic), commas included. A message left with
// no block gets a text block saying where its reasoning went.
func (r *request) reasoningEdits(p *reasoningPlan) []edit {
	var edits []edit
	b := r.body
	for i, ks := range p.leave {
		el := r.elems[i]
		content, ok := get(objectFields(b, el), "content")
		if !ok || kind(b, content) != '[' {
			continue
		}
		blocks := arrayElems(b, content)
		drop := make([]bool, len(blocks))
		for _, k := range ks {
			sp := r.spans[i][k]
			for j, blk := range blocks {
				if blk == sp {
					drop[j] = true
				}
			}
		}
		left := 0
		for _, d := range drop {
			if !d {
				left++
			}
		}
		if left == 0 {
			edits = append(edits, edit{blocks[0].start, blocks[len(blocks)-1].end,
				append(append([]byte(`{"type":"text","text":`), encodeString(reasoningLeftOut)...), '}')})
			continue
		}
		for j := 0; j < len(blocks); {
			if !drop[j] {
				j++
				continue
			}
			a := j
			for j < len(blocks) && drop[j] {
				j++
			}
			if j < len(blocks) {
				edits = append(edits, edit{blocks[a].start, blocks[j].start, nil})
			} else {
				edits = append(edits, edit{blocks[a-1].end, blocks[j-1].end, nil})
			}
		}
	}
	return edits
}

// reasoningLeftOut stands in a message whose every block was reasoning the
// proxy left out (a message must not be empty).
const reasoningLeftOut = "[contextfold: this turn's reasoning was bound to a conversation prefix a fold event changed; it is kept with the turn in the store]"

// dropBlockEdit asks the API to drop invalid thinking blocks: the
// block_binding field added to the request's thinking object, unless the
// client set one.
func (r *request) dropBlockEdit() (edit, bool) {
	sp := r.thinking
	if !r.thinkingOn || r.thinkingBinding || kind(r.body, sp) != '{' {
		return edit{}, false
	}
	at := sp.start + 1
	data := []byte(dropBlockField)
	if len(objectFields(r.body, sp)) > 0 {
		data = append(data, ',')
	}
	return edit{at, at, data}, true
}

// withBeta returns the anthropic-beta header value v with the binding beta
// added (once).
func withBeta(v string) string {
	for _, x := range strings.Split(v, ",") {
		if strings.TrimSpace(x) == BetaThinkingBinding {
			return v
		}
	}
	if strings.TrimSpace(v) == "" {
		return BetaThinkingBinding
	}
	return v + "," + BetaThinkingBinding
}
