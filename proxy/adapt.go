package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/contextfold/contextfold/harness"
)

// API names the provider wire format of a request.
type API string

// The two APIs the proxy understands.
const (
	APIAnthropic API = "anthropic" // POST /v1/messages
	APIOpenAI    API = "openai"    // POST /v1/chat/completions
)

// request is a client body read into the neutral model, with the byte
// ranges needed to splice edits back into it.
type request struct {
	api    API
	body   []byte
	msgs   []harness.Message
	elems  []span   // per message: the element of the messages array
	spans  [][]span // per message, per part: the value replaced when folding
	events [][]toolEvent
	roles  []string      // per message: the role as written
	kinds  []string      // per message: the Responses item type ("" otherwise)
	cached []*cachedElem // per message from known on: its cached parse (nil: parsed now); see cachedAt
	// blocks are the hashes of body's whole blocks (bodyDigest); arrStart
	// is the offset of the conversation array in body; prefix is what the
	// parse took from the prefix cache (nil without a cache).
	blocks   []uint64
	arrStart int
	prefix   *prefixMatch
	// known is the number of leading messages taken whole from a prefix
	// state, their tokens counted by knownCounter.
	known        int
	knownCounter string
	// runes is the body's code points (runeCount) when measure counted it
	// with the heuristic, else 0: a whole-body count that cacheAccount
	// subtracts from instead of counting the shared prefix again.
	runes int
	// inPlace is true when the per-message slices extend the prefix
	// state's own arrays past its length (prefix.go: claimed); their first
	// known elements are the state's, read-only (unshare copies them).
	inPlace bool
	points  []appendAt // per message: where hydrated content goes
	stream  bool
	seed    []byte // the start of the conversation, for the derived session id
	// seedMsgs is how many messages seed holds: those up to and with the
	// first user message.
	seedMsgs int
	tools    []byte // the "tools" array as sent (lineage.go), nil without one
	// passReason, when set, says why the body is forwarded unchanged
	// without folding (see responses.go); chained marks a Responses request
	// continuing a provider-held conversation.
	passReason string
	chained    bool
	// thinking is the top-level "thinking" value (Anthropic); thinkingOn
	// is true when it is an object whose type is not "disabled", and
	// thinkingBinding when it sets block_binding itself, bindingDrop when
	// that block_binding's prefix_mismatch_behavior is "drop_block".
	thinking        span
	thinkingOn      bool
	thinkingBinding bool
	bindingDrop     bool
}

// appendAt says how to add text at the end of a message's content.
type appendAt struct {
	content span // the content value
	isArr   bool // array of blocks/parts; else a string
	empty   bool // empty array
	ok      bool
	text    string // the string content (isArr false)
	// partType is the type of an added text part ("" means "text"; the
	// Responses API's user content takes "input_text").
	partType string
}

// errBadRequest marks a body the proxy rejects with 400.
type errBadRequest struct{ msg string }

func (e *errBadRequest) Error() string { return e.msg }

func badRequest(msg string) error { return &errBadRequest{msg: msg} }

type toolRef struct{ name, command string }

// parseRequest reads an Anthropic Messages, OpenAI Chat Completions or
// OpenAI Responses body.
func parseRequest(api API, body []byte) (*request, error) { return parseRequestCached(api, body, nil) }

// parseRequestCached is parseRequest reusing, from c, the parse of the
// conversation's leading elements when the body repeats a recent request's
// (prefix.go), and of every other element seen before byte for byte (an
// agent resends its whole history each turn: only the new messages are read
// and validated). It hashes body's blocks itself; the proxy has them from
// the intake (parseDigested).
func parseRequestCached(api API, body []byte, c *parseCache) (*request, error) {
	var blocks []uint64
	if c != nil {
		d := newBodyDigest(c.seed)
		d.add(body)
		blocks = d.blocks
	}
	return parseDigested(api, body, blocks, c)
}

// invalidJSON is the 400 of a body that is not valid JSON, saying what is
// wrong and at which byte of the body (b starts at byte base), so that the
// client can find it: encoding/json's syntax error, or nesting past its
// limit of 10000 levels (valid JSON that no JSON decoder here reads).
func invalidJSON(b []byte, base int) error {
	var v json.RawMessage
	var se *json.SyntaxError
	if err := json.Unmarshal(b, &v); errors.As(err, &se) {
		if strings.Contains(se.Error(), "max depth") {
			return badRequest(fmt.Sprintf("request body is not valid JSON: nested deeper than 10000 levels (at byte offset %d)", base+int(se.Offset)-1))
		}
		return badRequest(fmt.Sprintf("request body is not valid JSON: %s at byte offset %d", se.Error(), base+int(se.Offset)-1))
	}
	return badRequest("request body is not valid JSON")
}

// parseDigested is parseRequestCached with body's block hashes, computed
// under c's seed while the body arrived (intake.go: bodyDigest); nil
// blocks compare the conversation with the prefix states element by
// element.
func parseDigested(api API, body []byte, blocks []uint64, c *parseCache) (*request, error) {
	arrKey := "messages"
	if api == APIResponses {
		arrKey = "input"
	}
	if c != nil && c.byElement {
		blocks = nil
	}
	top, arrAt, elems, match, ok := skeleton(api, body, blocks, arrKey, c)
	if !ok {
		if !json.Valid(body) {
			return nil, invalidJSON(body, 0)
		}
		start := skipWS(body, 0)
		if kind(body, span{start, len(body)}) != '{' {
			return nil, badRequest("request body must be a JSON object")
		}
		top = objectFields(body, span{start, valueEnd(body, start)})
		match = nil
		if sp, has := get(top, arrKey); has && kind(body, sp) == '[' {
			arrAt, elems = sp.start, arrayElems(body, sp)
		}
	}
	// Validity: every value outside the array, and every element not taken
	// from a cache (the skeleton between them is checked by skeleton).
	if ok {
		for _, f := range top {
			if f.val.start != arrAt && !json.Valid(body[f.val.start:f.val.end]) {
				return nil, invalidJSON(body[f.val.start:f.val.end], f.val.start)
			}
		}
	}
	r := &request{api: api, body: body, blocks: blocks, arrStart: arrAt}
	if sp, ok := get(top, "stream"); ok {
		r.stream = string(body[sp.start:sp.end]) == "true"
	}
	if sp, ok := get(top, "thinking"); ok && api == APIAnthropic && kind(body, sp) == '{' {
		tf := objectFields(body, sp)
		r.thinking = sp
		r.thinkingOn = stringField(body, tf, "type") != "disabled"
		var bb span
		if bb, r.thinkingBinding = get(tf, "block_binding"); r.thinkingBinding && kind(body, bb) == '{' {
			r.bindingDrop = stringField(body, objectFields(body, bb), "prefix_mismatch_behavior") == "drop_block"
		}
	}
	seedKey := "system"
	if api == APIResponses {
		seedKey = "instructions"
		if sp, ok := get(top, "previous_response_id"); ok && kind(body, sp) == '"' && decodeString(body, sp) != "" {
			r.passReason, r.chained = warnChained, true
			return r, nil
		}
		in, has := get(top, "input")
		if !has || (kind(body, in) != '[' && kind(body, in) != '"') {
			r.passReason = warnUnknown + `a Responses request without an "input" string or array`
			return r, nil
		}
		if kind(body, in) == '"' {
			return responsesString(r, top, in), nil
		}
	} else {
		msgsSp, has := get(top, "messages")
		if !has || kind(body, msgsSp) != '[' {
			return nil, badRequest(`request body has no "messages" array`)
		}
	}
	r.elems = elems
	n := len(elems)
	if c != nil && match == nil {
		match = &prefixMatch{}
	}
	r.prefix = match
	if match != nil && match.known > 0 {
		r.fromPrefix(match, arrAt, n)
		r.known, r.knownCounter = match.known, match.parent.counter
	} else {
		r.msgs = make([]harness.Message, n)
		r.spans = make([][]span, n)
		r.points = make([]appendAt, n)
		r.events = make([][]toolEvent, n)
		r.roles = make([]string, n)
		r.kinds = make([]string, n)
	}
	for i := r.known; i < n; i++ {
		el := elems[i]
		raw := body[el.start:el.end]
		var key uint64
		if c != nil {
			key = c.key(api, raw)
			if e := c.get(key, len(raw)); e != nil {
				r.fromCache(i, e, el.start)
				continue
			}
		}
		if ok && !json.Valid(raw) {
			return nil, invalidJSON(raw, el.start)
		}
		if err := r.parseElem(i, el); err != nil {
			return nil, err
		}
		if c != nil {
			c.put(key, r.toCache(i, el.start, len(raw), key))
			r.msgs[i].Key = key
		}
	}
	if c != nil {
		c.prefixKeys(r.msgs, r.known)
	}
	if api == APIResponses {
		for i := max(r.known, 1); i < n; i++ {
			if r.kinds[i-1] == "reasoning" {
				// A reasoning item and the item it leads to leave the
				// prompt together or not at all.
				r.msgs[i].AnswersTool = true
			}
		}
	}
	if sp, ok := get(top, seedKey); ok {
		r.seed = append(r.seed, body[sp.start:sp.end]...)
	}
	if sp, ok := get(top, "tools"); ok && kind(body, sp) == '[' {
		r.tools = body[sp.start:sp.end]
	}
	for i := 0; i < n; i++ {
		r.seed = append(r.seed, '\n')
		r.seed = append(r.seed, body[elems[i].start:elems[i].end]...)
		r.seedMsgs = i + 1
		if r.roles[i] == "user" {
			break
		}
	}
	r.resolveTools(r.known)
	return r, nil
}

// knownBytes returns the span of the body that the prefix state r took its
// first messages from holds byte for byte (nil when none).
func (r *request) knownBytes() *span {
	if r.prefix == nil || r.known == 0 || r.known > len(r.elems) {
		return nil
	}
	return &span{r.arrStart, r.elems[r.known-1].end}
}

// unshare gives r its own copy of the per-message slices it extends in
// place, before it writes a message taken from the prefix state.
func (r *request) unshare() {
	if !r.inPlace {
		return
	}
	r.inPlace = false
	r.msgs = append([]harness.Message(nil), r.msgs...)
	r.spans = append([][]span(nil), r.spans...)
	r.points = append([]appendAt(nil), r.points...)
	r.events = append([][]toolEvent(nil), r.events...)
	r.roles = append([]string(nil), r.roles...)
	r.kinds = append([]string(nil), r.kinds...)
}

// parseElem reads element i of the conversation array.
func (r *request) parseElem(i int, el span) error {
	if r.api == APIResponses {
		return r.responsesElem(i, el)
	}
	return r.parseMessage(i, el)
}

// parseMessage reads messages[i].
func (r *request) parseMessage(i int, el span) error {
	body := r.body
	if kind(body, el) != '{' {
		return badRequest("messages[" + itoa(i) + "] is not an object")
	}
	mf := objectFields(body, el)
	role := stringField(body, mf, "role")
	if role == "" {
		return badRequest("messages[" + itoa(i) + "] has no role")
	}
	r.roles[i] = role
	if r.api == APIAnthropic {
		r.anthropicMessage(i, role, mf)
	} else {
		r.openaiMessage(i, role, mf)
	}
	return nil
}

// Tool events of a message, replayed in order by resolveTools: a call
// declares its id (and names the message's tool when it has none yet); a
// result (Anthropic) takes the tool of the call it answers when the message
// has none yet; an answer (OpenAI tool message) takes it, or its own name.
const (
	evCall = iota + 1
	evResult
	evAnswer
)

type toolEvent struct {
	kind int
	id   string
	ref  toolRef
}

func (r *request) event(i int, e toolEvent) {
	if r.events != nil {
		r.events[i] = append(r.events[i], e)
	}
}

// resolveTools names the tool and command of every message from index
// from on, from its own calls and the calls its results answer (the latest
// earlier call with the result's id, found by looking back: usually the
// message before).
func (r *request) resolveTools(from int) {
	// Many new events (a first request, or one message holding many tool
	// calls and results): one map of the calls so far. Counted in events,
	// not messages: callBefore scans back over every event, so 10^5 calls
	// and their results in two messages were 10^10 comparisons.
	var tools map[string]toolRef
	n := 0
	for _, evs := range r.events[from:] {
		n += len(evs)
	}
	if n > 64 {
		tools = map[string]toolRef{}
		for _, evs := range r.events[:from] {
			for _, e := range evs {
				if e.kind == evCall {
					tools[e.id] = e.ref
				}
			}
		}
	}
	lookup := func(i, k int, id string) (toolRef, bool) {
		if tools != nil {
			ref, ok := tools[id]
			return ref, ok
		}
		return r.callBefore(i, k, id)
	}
	for i := from; i < len(r.events); i++ {
		m := &r.msgs[i]
		for k, e := range r.events[i] {
			switch e.kind {
			case evCall:
				if tools != nil {
					tools[e.id] = e.ref
				}
				if m.Tool == "" {
					m.Tool, m.Command = e.ref.name, e.ref.command
				}
				if k == 0 && r.api == APIResponses {
					r.callNote(i, from, e.ref)
				}
			case evResult:
				if ref, ok := lookup(i, k, e.id); ok && m.Tool == "" {
					m.Tool, m.Command = ref.name, ref.command
				}
			case evAnswer:
				if ref, ok := lookup(i, k, e.id); ok {
					m.Tool, m.Command = ref.name, ref.command
				} else if e.ref.name != "" {
					m.Tool = e.ref.name
				}
			}
		}
	}
}

// callNote gives the assistant's message item right before the Responses
// call item i (the sentence the model wrote before the call: "I'll run
// the reproduction script") the call's tool and command, as a Chat
// Completions or Anthropic assistant message holding its text and its
// calls is named: the folded note then reads "assistant shell $ python
// repro.py: I'll run …" and the matcher pairs it with the output that
// follows (rule "a call brings its output"). Only a message item of this
// request's new elements (from on), naming no tool and making no call of
// its own, and only the first call after it.
func (r *request) callNote(i, from int, ref toolRef) {
	j := i - 1
	if j < from || r.kinds[j] != "message" && r.kinds[j] != "" {
		return
	}
	if m := &r.msgs[j]; m.Role == harness.RoleAssistant && m.Tool == "" && m.Command == "" && len(r.events[j]) == 0 {
		m.Tool, m.Command = ref.name, ref.command
	}
}

// callBefore returns the latest call with id among the events before event
// k of message i.
func (r *request) callBefore(i, k int, id string) (toolRef, bool) {
	for j := i; j >= 0; j-- {
		evs := r.events[j]
		if j == i {
			evs = evs[:k]
		}
		for q := len(evs) - 1; q >= 0; q-- {
			if evs[q].kind == evCall && evs[q].id == id {
				return evs[q].ref, true
			}
		}
	}
	return toolRef{}, false
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func (r *request) addPart(i int, p harness.Part, sp span) {
	r.msgs[i].Parts = append(r.msgs[i].Parts, p)
	r.spans[i] = append(r.spans[i], sp)
}

func (r *request) contentPoint(i int, content span) {
	b := r.body
	switch kind(b, content) {
	case '"':
		r.points[i] = appendAt{content: content, ok: true, text: decodeString(b, content)}
	case '[':
		r.points[i] = appendAt{content: content, isArr: true, ok: true, empty: len(arrayElems(b, content)) == 0}
	}
}

// contentText decodes the string content at content, reusing the text
// contentPoint decoded for message i (one decoded copy of each
// message).
func (r *request) contentText(i int, content span) string {
	if pt := r.points[i]; pt.ok && !pt.isArr && pt.content == content {
		return pt.text
	}
	return decodeString(r.body, content)
}

func (r *request) anthropicMessage(i int, role string, mf []field) {
	b := r.body
	m := &r.msgs[i]
	m.Role = role
	content, ok := get(mf, "content")
	if !ok {
		return
	}
	r.contentPoint(i, content)
	switch kind(b, content) {
	case '"':
		t := r.contentText(i, content)
		r.addPart(i, harness.Part{Text: t, Foldable: true}, content)
		m.Human = role == "user"
	case '[':
		for _, blk := range arrayElems(b, content) {
			bf := objectFields(b, blk)
			switch stringField(b, bf, "type") {
			case "text":
				sp, ok := get(bf, "text")
				if !ok || kind(b, sp) != '"' {
					continue
				}
				t := decodeString(b, sp)
				r.addPart(i, harness.Part{Text: t, Foldable: true}, sp)
				if role == "user" && strings.TrimSpace(harness.StripHydration(t)) != "" {
					m.Human = true
				}
			case "tool_result":
				m.AnswersTool = true
				if sp, ok := get(bf, "is_error"); ok && string(b[sp.start:sp.end]) == "true" {
					m.IsError = true
				}
				r.event(i, toolEvent{kind: evResult, id: stringField(b, bf, "tool_use_id")})
				sp, ok := get(bf, "content")
				if !ok {
					continue
				}
				switch kind(b, sp) {
				case '"':
					r.addPart(i, harness.Part{Text: decodeString(b, sp), Foldable: true, ToolResult: true}, sp)
				case '[':
					text, onlyText := textBlocks(b, sp)
					r.addPart(i, harness.Part{Text: text, Foldable: onlyText, ToolResult: true}, sp)
				}
			case "thinking", "redacted_thinking":
				// Bound to the conversation before it: never rewritten;
				// left out of the request once a fold event changed that
				// (reasoning.go), stored with the turn when it folds.
				typ := stringField(b, bf, "type")
				text := stringField(b, bf, "thinking")
				if typ == "redacted_thinking" {
					text = stringField(b, bf, "data")
				}
				r.addPart(i, harness.Part{Text: "[" + typ + "]\n" + text, Reasoning: true}, blk)
			case "tool_use", "server_tool_use":
				id := stringField(b, bf, "id")
				name := stringField(b, bf, "name")
				cmd := ""
				if sp, ok := get(bf, "input"); ok {
					cmd = commandOf(b[sp.start:sp.end])
					// The call itself: never rewritten, but stored with
					// its message when the message leaves the prompt.
					r.addPart(i, harness.Part{Text: name + " " + string(b[sp.start:sp.end])}, sp)
				}
				r.event(i, toolEvent{kind: evCall, id: id, ref: toolRef{name, cmd}})
			}
		}
	}
}

// textBlocks joins the text of an array of content blocks; onlyText is false
// when the array holds anything else (an image), which then stays as is.
func textBlocks(b []byte, sp span) (text string, onlyText bool) {
	var parts []string
	onlyText = true
	for _, blk := range arrayElems(b, sp) {
		bf := objectFields(b, blk)
		if stringField(b, bf, "type") != "text" {
			onlyText = false
			continue
		}
		parts = append(parts, stringField(b, bf, "text"))
	}
	return strings.Join(parts, "\n"), onlyText && len(parts) > 0
}

func (r *request) openaiMessage(i int, role string, mf []field) {
	b := r.body
	m := &r.msgs[i]
	switch role {
	case "system", "developer":
		m.Role = harness.RoleSystem
	case "tool", "function":
		m.Role = harness.RoleTool
		m.AnswersTool = true
		r.event(i, toolEvent{kind: evAnswer, id: stringField(b, mf, "tool_call_id"), ref: toolRef{name: stringField(b, mf, "name")}})
	default:
		m.Role = role
	}
	if sp, ok := get(mf, "tool_calls"); ok && kind(b, sp) == '[' {
		for _, tc := range arrayElems(b, sp) {
			tf := objectFields(b, tc)
			fsp, _ := get(tf, "function")
			ff := objectFields(b, fsp)
			name := stringField(b, ff, "name")
			args := stringField(b, ff, "arguments")
			cmd := commandOf([]byte(args))
			r.addPart(i, harness.Part{Text: name + " " + args}, tc)
			r.event(i, toolEvent{kind: evCall, id: stringField(b, tf, "id"), ref: toolRef{name, cmd}})
		}
	}
	content, ok := get(mf, "content")
	if !ok {
		return
	}
	foldable := m.Role != harness.RoleSystem
	r.contentPoint(i, content)
	switch kind(b, content) {
	case '"':
		t := r.contentText(i, content)
		r.addPart(i, harness.Part{Text: t, Foldable: foldable, ToolResult: m.Role == harness.RoleTool}, content)
		m.Human = role == "user" && strings.TrimSpace(harness.StripHydration(t)) != ""
	case '[':
		for _, p := range arrayElems(b, content) {
			pf := objectFields(b, p)
			if stringField(b, pf, "type") != "text" {
				continue
			}
			sp, ok := get(pf, "text")
			if !ok || kind(b, sp) != '"' {
				continue
			}
			t := decodeString(b, sp)
			r.addPart(i, harness.Part{Text: t, Foldable: foldable, ToolResult: m.Role == harness.RoleTool}, sp)
			if role == "user" && strings.TrimSpace(harness.StripHydration(t)) != "" {
				m.Human = true
			}
		}
	}
	if m.Role != harness.RoleUser && m.Role != harness.RoleTool {
		r.points[i] = appendAt{}
	}
}

// commandOf extracts a shell command or a path from tool-call arguments.
func commandOf(args []byte) string {
	var in map[string]any
	if json.Unmarshal(args, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd", "file_path", "path", "query", "pattern", "url"} {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
		if argv, ok := in[k].([]any); ok && len(argv) > 0 {
			if s := argvCommand(argv); s != "" {
				return s
			}
		}
	}
	return ""
}

// argvCommand is the command line of an argument vector (Codex's shell
// tool: {"command": ["bash", "-lc", "pytest -q"]}): the script a shell is
// asked to run with -c / -lc, else the arguments joined by spaces; "" when
// an argument is not a string.
func argvCommand(argv []any) string {
	args := make([]string, 0, len(argv))
	for _, a := range argv {
		s, ok := a.(string)
		if !ok {
			return ""
		}
		args = append(args, s)
	}
	if len(args) == 3 && (args[1] == "-c" || args[1] == "-lc") {
		switch filepath.Base(args[0]) {
		case "bash", "sh", "zsh", "dash", "ksh", "fish":
			return args[2]
		}
	}
	return strings.Join(args, " ")
}

// sessionID derives a session id from the start of the conversation: the
// system prompt and the messages up to the first user message.
func (r *request) sessionID() string {
	sum := sha256.Sum256(append([]byte(string(r.api)+"\n"), r.seed...))
	return "s-" + hex.EncodeToString(sum[:8])
}

// measure sets the wire tokens of every message and part (their encoded
// bytes, counted) and returns the tokens of the whole body and of the rest
// of it (system prompt, tool definitions, framing). heuristic says that
// count is the reference estimate, which the parse cache holds already;
// counter names count: the messages taken from a prefix state counted by
// the same counter are not counted again.
func (r *request) measure(count func(string) int, heuristic bool, counter string) (total, fixed int) {
	b := r.body
	cnt := func(x []byte) int {
		if heuristic {
			return heuristicTokens(x)
		}
		return max(count(bytesString(x)), 1)
	}
	msgs := 0
	runes, pos := 0, 0 // the heuristic total, summed from the pieces
	from := 0
	if r.known > 0 && r.knownCounter != counter {
		r.unshare() // the known messages are counted again below
	}
	if r.known > 0 && r.knownCounter == counter {
		from = r.known
		msgs = r.prefix.parent.tokens[from-1]
		if heuristic {
			runes, pos = runeCount(b[:r.arrStart])+r.prefix.parent.cum[from-1], r.elems[from-1].end
		}
	}
	for i := from; i < len(r.elems); i++ {
		el := r.elems[i]
		m := &r.msgs[i]
		if heuristic {
			runes += runeCount(b[pos:el.start])
			pos = el.end
		}
		ce := r.cachedAt(i)
		cached := ce != nil
		if heuristic && cached {
			runes += ce.runes // Tokens are in the cached parse
		} else {
			if cached || i < r.known {
				m.Parts = append([]harness.Part(nil), m.Parts...) // shared with a cache
			}
			if heuristic {
				n := runeCount(b[el.start:el.end])
				runes += n
				m.Tokens = max(1, n/4)
			} else {
				m.Tokens = cnt(b[el.start:el.end])
			}
			for k, sp := range r.spans[i] {
				m.Parts[k].Tokens = cnt(b[sp.start:sp.end])
			}
		}
		msgs += m.Tokens
	}
	if len(r.elems) == 0 && len(r.msgs) == 1 && len(r.spans) == 1 && len(r.spans[0]) == 1 {
		// A Responses input string (responsesString): the request's one
		// message is the string, so it counts as the message, not also in
		// the fixed tokens.
		m, sp := &r.msgs[0], r.spans[0][0]
		if heuristic {
			m.Tokens = max(1, runeCount(b[sp.start:sp.end])/4)
		} else {
			m.Tokens = cnt(b[sp.start:sp.end])
		}
		m.Parts = append([]harness.Part(nil), m.Parts...) // never write into a parse shared with a cache
		m.Parts[0].Tokens = m.Tokens
		msgs += m.Tokens
	}
	if heuristic {
		r.runes = runes + runeCount(b[pos:])
		total = max(1, r.runes/4)
	} else {
		total = cnt(b)
	}
	return total, max(total-msgs, 0)
}

// rewrite splices the dispatch into the body: folded parts replaced by their
// records, the messages that left the prompt removed and the page table put
// in place of the first of them, the hydration appended to its message after
// its tool results. Every other byte is the client's.
func (r *request) rewrite(d *harness.Dispatch) ([]byte, error) { return r.rewriteWire(d, nil) }

// rewriteWire is rewrite with the wire rules' plan p (reasoning.go; nil:
// none): the reasoning it leaves out removed, earlier turns' hydration kept
// in its hosts, the API asked to drop invalid blocks.
func (r *request) rewriteWire(d *harness.Dispatch, p *reasoningPlan) ([]byte, error) {
	var edits []edit
	var removed []bool // by message
	var drop []int     // messages that leave the request, ascending
	if w := d.WorkingSet; w != nil {
		drop = w.Removed
	}
	if p != nil && len(p.leaveElem) > 0 {
		drop = mergeSorted(drop, p.leaveElem)
	}
	if len(drop) > 0 {
		if len(r.elems) != len(r.msgs) {
			return nil, errors.New("this request shape cannot drop messages")
		}
		if w := d.WorkingSet; w != nil && w.PageTable != "" && len(w.Removed) > 0 {
			msg := append([]byte(`{"role":"user","content":`), encodeString(w.PageTable)...)
			msg = append(msg, "},"...)
			at := r.elems[w.Removed[0]].start
			edits = append(edits, edit{at, at, msg})
		}
		removed = make([]bool, len(r.elems))
		ptAt := -1 // the page table goes before this message: a run starts there
		if w := d.WorkingSet; w != nil && w.PageTable != "" && len(w.Removed) > 0 {
			ptAt = w.Removed[0]
		}
		// One edit per run of consecutive removed messages (with their
		// commas).
		for k := 0; k < len(drop); {
			a := drop[k]
			b := a
			for k++; k < len(drop) && drop[k] == b+1 && drop[k] != ptAt; k++ {
				b++
			}
			if b+1 >= len(r.elems) || a < 0 {
				return nil, errors.New("the last message cannot leave the prompt")
			}
			for i := a; i <= b; i++ {
				removed[i] = true
			}
			edits = append(edits, edit{r.elems[a].start, r.elems[b+1].start, nil})
		}
	}
	isRemoved := func(i int) bool { return removed != nil && removed[i] }
	if p != nil {
		edits = append(edits, r.reasoningEdits(p)...)
		edits = append(edits, r.idEdits(p)...)
		if p.dropBlock {
			if e, ok := r.dropBlockEdit(); ok {
				edits = append(edits, e)
			}
		}
	}
	isFolded := func(i int) bool {
		k := sort.Search(len(d.Folded), func(k int) bool { return d.Folded[k].Index >= i })
		return k < len(d.Folded) && d.Folded[k].Index == i
	}
	var hyd map[int][]string // by host: the texts appended, in order
	var asBlocks map[int]bool
	if p != nil {
		asBlocks = p.stickyBlocks
		for host, texts := range p.sticky {
			if host < len(r.msgs) && !isRemoved(host) && !isFolded(host) {
				if hyd == nil {
					hyd = map[int][]string{}
				}
				hyd[host] = append(hyd[host], texts...)
			}
		}
	}
	if d.HydrationText != "" && d.HydrationIndex >= 0 && !isRemoved(d.HydrationIndex) {
		if hyd == nil {
			hyd = map[int][]string{}
		}
		hyd[d.HydrationIndex] = append(hyd[d.HydrationIndex], d.HydrationText)
	}
	for _, f := range d.Folded {
		if isRemoved(f.Index) {
			continue
		}
		first := true
		for k, p := range r.msgs[f.Index].Parts {
			if !p.Foldable {
				continue
			}
			text := harness.PointerText(f.Index)
			if first {
				text, first = f.Text, false
			}
			sp := r.spans[f.Index][k]
			edits = append(edits, edit{sp.start, sp.end, encodeString(text)})
		}
	}
	hosts := make([]int, 0, len(hyd))
	for host := range hyd {
		hosts = append(hosts, host)
	}
	sort.Ints(hosts)
	for _, host := range hosts {
		pt := r.points[host]
		texts := hyd[host]
		switch {
		case !pt.ok:
			if host != d.HydrationIndex {
				continue // an earlier turn's host the client rewrote
			}
			return nil, errors.New("the prompt message has no content to extend")
		case pt.isArr:
			typ := pt.partType
			if typ == "" {
				typ = "text"
			}
			var blks []byte
			for k, text := range texts {
				if k > 0 || !pt.empty {
					blks = append(blks, ',')
				}
				blks = append(blks, `{"type":"`+typ+`","text":`...)
				blks = append(append(blks, encodeString(text)...), '}')
			}
			// Insert before the closing bracket, after every existing block.
			end := pt.content.end - 1
			edits = append(edits, edit{end, end, blks})
		case r.api == APIAnthropic && asBlocks[host]:
			// An earlier prompt hydrated as an array of blocks, now sent as
			// a string (Claude Code: the latest prompt is a text block with
			// cache_control, the earlier ones strings): the Messages API
			// reads a string as one text block, so the string becomes its
			// text block followed by the hydration's, as it was forwarded
			// when the model answered it.
			blks := append([]byte(`[{"type":"text","text":`), encodeString(pt.text)...)
			for _, text := range texts {
				blks = append(blks, `},{"type":"text","text":`...)
				blks = append(blks, encodeString(text)...)
			}
			blks = append(blks, "}]"...)
			edits = append(edits, edit{pt.content.start, pt.content.end, blks})
		default:
			edits = append(edits, edit{pt.content.start, pt.content.end, encodeString(pt.text + "\n\n" + strings.Join(texts, "\n\n"))})
		}
	}
	// Valid by construction: whole JSON values replaced by encoded strings,
	// whole elements (with their commas) removed, complete elements and
	// blocks inserted before a closing bracket or an element.
	return splice(r.body, edits), nil
}

// mergeSorted returns the union of the ascending lists a and b, ascending.
func mergeSorted(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}
