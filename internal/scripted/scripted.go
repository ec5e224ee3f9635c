// Package scripted is a test stand-in for the model: a loopback HTTP server
// that speaks the Anthropic Messages API (POST /v1/messages), the OpenAI Chat
// Completions API (POST /v1/chat/completions) and the OpenAI Responses API
// (POST /v1/responses), streaming (server-sent events in the event shapes the
// real agents parse) and not, and plays a scripted agent session.
//
// The server reads each request into a neutral [Turn] (the latest human
// prompt, the tool results that followed it, the tools offered, the raw body)
// and asks the test's [Script] what the model says next: text, or tool calls.
// It records every request it receives ([Server.Requests]) so that a test can
// assert what reached the model. Everything else in such a test — the agent,
// the proxy, the hooks — is the real program.
//
// The model reasons, and binds its reasoning to the conversation the way the
// vendors document it (see [Binder]): on the Messages API every reply starts
// with a thinking block (or a redacted_thinking one) signed over its prefix,
// and every request's thinking blocks are checked — a 400 naming the first
// invalid block by default, the invalid blocks dropped and reported in
// input_transformations with drop_block and the beta header; on the
// Responses API every reply starts with a reasoning item whose
// encrypted_content is bound to its prefix, and reasoning items sent back
// after a prefix change are dropped and reported; on Chat Completions every
// reply carries reasoning_content. [Server.Binding] counts it all.
//
// On the Responses API a request whose last input item is a
// compaction_trigger (Codex's remote compaction) is answered with one
// opaque compaction item; a compaction item sent back must be one the
// server returned, byte for byte, or the request is answered 400.
//
// A Server is safe for concurrent use.
package scripted

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// API names a wire format.
type API string

// The wire formats the server speaks.
const (
	Anthropic API = "anthropic" // POST …/v1/messages
	Chat      API = "chat"      // POST …/v1/chat/completions
	Responses API = "responses" // POST …/v1/responses
)

// Request is one request the server received, as it arrived.
type Request struct {
	API    API // "" for a path the server does not model (answered 404)
	Method string
	Path   string
	Header http.Header
	Body   []byte
	Turn   *Turn // nil when the body could not be read as a conversation
	Reply  Reply // what the script answered
	// Status is the HTTP status answered (400 for a failed prefix check).
	Status int
	// Thinking is the prefix check of the request's thinking blocks
	// (Messages API).
	Thinking ThinkingCheck
	// Dropped are the paths of the thinking blocks dropped (drop_block with
	// the beta header, or Options.Mismatch MismatchDrop).
	Dropped []string
	// Reported is true when Dropped went back in input_transformations.
	Reported bool
	// Reasoning is the prefix check of the request's reasoning items
	// (Responses API); its Dropped items went back in input_transformations.
	Reasoning ReasoningCheck
}

// Turn is the neutral view of a model call that a Script decides on.
type Turn struct {
	API API
	// Prompt is the text of the latest human message (the agent's system
	// reminders included), without the content contextfold hydrated into
	// it.
	Prompt string
	// PromptIndex is the position of that message in the conversation
	// (-1 when there is none).
	PromptIndex int
	// Results are the outputs of the tool calls after the prompt, in order.
	Results []string
	// Tools are the names of the tools the request offers.
	Tools []string
	// ToolSchemas are the tools' parameter schemas by name (JSON).
	ToolSchemas map[string]json.RawMessage
	// Messages is the number of messages (or input items) in the request.
	Messages int
	// Body is the request body.
	Body []byte
	// Stream is true when the client asked for server-sent events.
	Stream bool
	// Model is the requested model name.
	Model string
	// Compact is true for a Responses request whose last input item is
	// {"type":"compaction_trigger"} (Codex's remote compaction): the
	// reply's Text is the summary, and the response's one output item is
	// a "compaction" item carrying it opaquely (Server.compaction).
	Compact bool
}

// HasTool reports whether the request offers the named tool.
func (t *Turn) HasTool(name string) bool {
	for _, n := range t.Tools {
		if n == name {
			return true
		}
	}
	return false
}

// Call is one tool call the model makes.
type Call struct {
	Name  string
	Input any // marshalled to the call's JSON arguments
}

// Reply is what the model says: Calls (when any) or else Text.
type Reply struct {
	Text  string
	Calls []Call
}

// Script decides the model's reply to a turn. It is called concurrently
// when the agent sends concurrent requests.
type Script func(*Turn) Reply

// Options are how the scripted model reasons and checks reasoning.
type Options struct {
	// NoThinking turns reasoning off: no thinking blocks, reasoning items
	// or reasoning_content in replies (the checks still run).
	NoThinking bool
	// Mismatch is what the Messages API does with an invalid thinking block
	// when the request does not ask for drop_block: 400 (the default,
	// MismatchReject), drop silently, or no check.
	Mismatch Mismatch
	// RedactEvery makes every RedactEvery-th Messages API reply's thinking
	// a redacted_thinking block (0: never).
	RedactEvery int
	// Secret keys the signatures ("" is a fixed key).
	Secret string
}

// Server is a scripted model on loopback.
type Server struct {
	URL    string // base URL, e.g. http://127.0.0.1:PORT (no trailing slash)
	srv    *httptest.Server
	script Script
	opts   Options
	binder *Binder

	mu    sync.Mutex
	reqs  []Request
	seq   int
	stats BindingStats
	// compacted holds the encrypted_content of every compaction item
	// returned.
	compacted map[string]bool
	// needs maps the id of each output item of a Responses reply stored
	// (store on) with a reasoning item to that reasoning item's id.
	needs map[string]string
}

// New starts a server playing script, reasoning and checking reasoning at
// the default Options (thinking on, invalid thinking answered 400). Close it
// when done.
func New(script Script) *Server { return NewWith(script, Options{}) }

// NewWith starts a server playing script with opts. Close it when done.
func NewWith(script Script, opts Options) *Server {
	s := &Server{script: script, opts: opts, binder: NewBinder(opts.Secret)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns a copy of the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// ModelRequests returns the recorded requests of api whose turn was read.
func (s *Server) ModelRequests(api API) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.API == api && r.Turn != nil {
			out = append(out, r)
		}
	}
	return out
}

// Binder returns the server's signer and checker (to check a body the way
// the server does).
func (s *Server) Binder() *Binder { return s.binder }

// BindingStats counts what the prefix checks saw across the requests so far.
type BindingStats struct {
	Requests int // model requests read (every API)
	Rejected int // answered 400 over an invalid thinking block
	// Messages API thinking and redacted_thinking blocks.
	Signed   int // returned by the model
	Blocks   int // sent back in requests (a block resent N times counts N times)
	Invalid  int // sent back and failing the check (in rejected requests too)
	Dropped  int // dropped (drop_block, or a model that drops silently)
	Reported int // dropped and listed in input_transformations
	// Responses API reasoning items with encrypted_content.
	ReasoningSigned  int // returned by the model
	ReasoningItems   int // sent back in requests
	ReasoningDropped int // dropped after a prefix change (always reported)
	// Compactions counts the compaction items returned (remote
	// compaction, Turn.Compact); CompactionsBack the compaction items sent
	// back in requests, each verified byte for byte; CompactionRejected
	// the requests answered 400 for a compaction item the server never
	// returned (or returned otherwise), as the API answers 400 for
	// encrypted content it cannot read.
	Compactions, CompactionsBack, CompactionRejected int
	// ReasoningRejected counts requests answered 400 because an input item
	// with the id of an output item (store on) came without the reasoning
	// item its response produced with it (Server.missingReasoning).
	ReasoningRejected int
	// Chat Completions: assistant messages sent back with reasoning_content.
	ChatReasoning int
}

// String is a one-line summary.
func (b BindingStats) String() string {
	return fmt.Sprintf("%d model requests, %d rejected (400); thinking blocks: %d signed, %d sent back, %d invalid, %d dropped (%d reported); "+
		"reasoning items: %d signed, %d sent back, %d dropped, %d requests rejected for a missing one; chat reasoning_content sent back %d",
		b.Requests, b.Rejected, b.Signed, b.Blocks, b.Invalid, b.Dropped, b.Reported,
		b.ReasoningSigned, b.ReasoningItems, b.ReasoningDropped, b.ReasoningRejected, b.ChatReasoning)
}

// Binding returns the prefix-check counts so far.
func (s *Server) Binding() BindingStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.stats
	return b
}

func (s *Server) count(f func(*BindingStats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *Server) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func apiOf(path string) API {
	switch {
	case strings.HasSuffix(path, "/messages"):
		return Anthropic
	case strings.HasSuffix(path, "/chat/completions"):
		return Chat
	case strings.HasSuffix(path, "/responses"):
		return Responses
	}
	return ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens") {
		s.record(rec)
		writeJSON(w, map[string]any{"input_tokens": len(body) / 4})
		return
	}
	rec.API = apiOf(r.URL.Path)
	if r.Method != http.MethodPost || rec.API == "" {
		s.record(rec)
		if strings.HasSuffix(r.URL.Path, "/models") {
			writeJSON(w, map[string]any{"object": "list", "data": []any{}})
			return
		}
		http.Error(w, `{"error":{"message":"scripted upstream: no such endpoint","type":"not_found"}}`, http.StatusNotFound)
		return
	}
	turn, err := parseTurn(rec.API, body)
	if err != nil {
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "scripted upstream: " + err.Error()}})
		return
	}
	rec.Turn = turn
	rec.Status = http.StatusOK
	s.count(func(b *BindingStats) { b.Requests++ })
	var out reasoningOut
	switch rec.API {
	case Anthropic:
		j := s.binder.Judge(r.Header, body, s.opts.Mismatch)
		rec.Thinking, rec.Dropped, rec.Reported = j.Check, j.Dropped, j.Report
		s.count(func(b *BindingStats) {
			b.Blocks += j.Check.Blocks
			b.Invalid += len(j.Check.Invalid)
			if j.Status != http.StatusOK {
				b.Rejected++
				return
			}
			b.Dropped += len(j.Dropped)
			if j.Report {
				b.Reported += len(j.Dropped)
			}
		})
		if j.Status != http.StatusOK {
			rec.Status = j.Status
			s.record(rec)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(j.Status)
			_, _ = w.Write(j.ErrorBody)
			return
		}
		if j.Report {
			out.transformations = j.Check.Transformations()
		}
	case Responses:
		if msg := s.badCompaction(body); msg != "" {
			s.count(func(b *BindingStats) { b.CompactionRejected++ })
			rec.Status = http.StatusBadRequest
			s.record(rec)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": "input", "code": "invalid_encrypted_content"}})
			return
		}
		if msg := s.missingReasoning(body); msg != "" {
			s.count(func(b *BindingStats) { b.ReasoningRejected++ })
			rec.Status = http.StatusBadRequest
			s.record(rec)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": "input", "code": nil}})
			return
		}
		rc, _ := s.binder.CheckResponses(body)
		rec.Reasoning = rc
		s.count(func(b *BindingStats) { b.ReasoningItems += rc.Items; b.ReasoningDropped += len(rc.Dropped) })
		if len(rc.Dropped) > 0 {
			out.transformations = rc.Transformations()
		}
	case Chat:
		if n := chatReasoning(body); n > 0 {
			s.count(func(b *BindingStats) { b.ChatReasoning += n })
		}
	}
	rec.Reply = s.script(turn)
	n := s.next()
	if !s.opts.NoThinking && !turn.Compact && wantsReasoning(rec.API, body) {
		out.text = thinkingText(turn, rec.Reply, n)
		var err error
		switch rec.API {
		case Anthropic:
			if s.opts.RedactEvery > 0 && n%s.opts.RedactEvery == 0 {
				out.redacted = true
				out.sig, err = s.binder.SignRedacted(body)
			} else {
				out.sig, err = s.binder.SignThinking(body, out.text)
			}
			s.count(func(b *BindingStats) { b.Signed++ })
		case Responses:
			out.id = fmt.Sprintf("rs_scripted_%06d", n)
			s.rememberOutputs(body, n, rec.Reply, out.id)
			if includesEncrypted(body) {
				out.sig, err = s.binder.SignReasoning(body, out.id)
				s.count(func(b *BindingStats) { b.ReasoningSigned++ })
			}
		}
		if err != nil {
			out = reasoningOut{transformations: out.transformations}
		}
	}
	if turn.Compact {
		out = reasoningOut{transformations: out.transformations, compaction: s.compaction(n, rec.Reply.Text)}
	}
	s.record(rec)
	inTok := len(body) / 4
	switch rec.API {
	case Anthropic:
		writeAnthropic(w, turn, rec.Reply, n, inTok, out)
	case Chat:
		writeChat(w, turn, rec.Reply, n, inTok, out)
	case Responses:
		writeResponses(w, turn, rec.Reply, n, inTok, out)
	}
}

// reasoningOut is the reasoning a reply carries.
type reasoningOut struct {
	text     string // "" for none
	sig      string // thinking signature, redacted_thinking data, or encrypted_content
	redacted bool   // a redacted_thinking block instead of thinking
	id       string // reasoning item id (Responses API)
	// transformations are the response's input_transformations (none: nil).
	transformations []map[string]any
	// compaction is the encrypted_content of the reply's one compaction
	// item (Responses API, Turn.Compact; "" for none).
	compaction string
}

// compaction returns the encrypted_content of the n-th reply's compaction
// item, holding summary, and remembers it: a request that sends it back
// must send it byte for byte (badCompaction).
func (s *Server) compaction(n int, summary string) string {
	c := fmt.Sprintf("cfcompact.%06d.%s", n, base64.RawURLEncoding.EncodeToString([]byte(summary)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compacted == nil {
		s.compacted = map[string]bool{}
	}
	s.compacted[c] = true
	s.stats.Compactions++
	return c
}

// badCompaction is the Responses API's check of the compaction items a
// request sends back: each must carry encrypted_content the server
// returned. It returns the 400 message for the first that does not, or
// "", and counts the items sent back.
func (s *Server) badCompaction(body []byte) string {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	var items []map[string]json.RawMessage
	if json.Unmarshal(req.Input, &items) != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, it := range items {
		if str(it["type"]) != "compaction" {
			continue
		}
		if !s.compacted[str(it["encrypted_content"])] {
			return fmt.Sprintf("The encrypted content of input[%d] (compaction) could not be verified.", i)
		}
		s.stats.CompactionsBack++
	}
	return ""
}

// thinkingText is the model's reasoning for a reply: deterministic for the
// turn and the reply.
func thinkingText(t *Turn, r Reply, n int) string {
	what := "answer in text"
	if len(r.Calls) > 0 {
		what = fmt.Sprintf("call %s", r.Calls[0].Name)
	}
	p := t.Prompt
	if len(p) > 80 {
		p = p[:80]
	}
	return fmt.Sprintf("Reasoning %d: the request has %d messages and %d tool results since the prompt %q; next I %s.",
		n, t.Messages, len(t.Results), p, what)
}

// wantsReasoning reports whether the request lets the model reason: on the
// Messages API unless thinking.type is "disabled" (models with preserved
// thinking think adaptively by default); on the Responses API unless
// reasoning.effort is "none"; on Chat Completions unless reasoning_effort is
// "none".
func wantsReasoning(api API, body []byte) bool {
	var req struct {
		Thinking struct {
			Type string `json:"type"`
		} `json:"thinking"`
		Reasoning struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
		ReasoningEffort string `json:"reasoning_effort"`
	}
	_ = json.Unmarshal(body, &req)
	switch api {
	case Anthropic:
		return req.Thinking.Type != "disabled"
	case Responses:
		return req.Reasoning.Effort != "none"
	}
	return req.ReasoningEffort != "none"
}

// includesEncrypted reports whether a Responses API request asks for
// reasoning.encrypted_content (a stateless client resends it).
func includesEncrypted(body []byte) bool {
	var req struct {
		Include []string `json:"include"`
	}
	_ = json.Unmarshal(body, &req)
	for _, i := range req.Include {
		if i == "reasoning.encrypted_content" {
			return true
		}
	}
	return false
}

// chatReasoning counts the assistant messages of a Chat Completions request
// that carry reasoning_content.
func chatReasoning(body []byte) int {
	var req struct {
		Messages []struct {
			Role             string `json:"role"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" && m.ReasoningContent != "" {
			n++
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	_ = json.NewEncoder(w).Encode(v)
}

func marshal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimRight(b.String(), "\n")
}

func args(c Call) string {
	if c.Input == nil {
		return "{}"
	}
	if s, ok := c.Input.(string); ok {
		return s
	}
	return marshal(c.Input)
}

// sse writes server-sent events and flushes each one.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) event(name string, v any) {
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", marshal(v))
	if e.f != nil {
		e.f.Flush()
	}
}

func (e *sse) raw(data string) {
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	if e.f != nil {
		e.f.Flush()
	}
}

// chunks splits s into pieces of about n bytes on rune boundaries, so that
// the stream carries several deltas per block as a real one does.
func chunks(s string, n int) []string {
	if s == "" {
		return nil
	}
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := n
		if k > len(r) {
			k = len(r)
		}
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// storeOn reports whether a Responses API request stores its response:
// "store" true or absent (the API's default).
func storeOn(body []byte) bool {
	var req struct {
		Store *bool `json:"store"`
	}
	_ = json.Unmarshal(body, &req)
	return req.Store == nil || *req.Store
}

// rememberOutputs records, for a stored Responses reply n with reasoning
// item rs, that its function_call items (or its message) were produced with
// rs: a later request that sends one of them back by its id must send rs
// too (missingReasoning).
func (s *Server) rememberOutputs(body []byte, n int, r Reply, rs string) {
	if !storeOn(body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.needs == nil {
		s.needs = map[string]string{}
	}
	if len(r.Calls) == 0 {
		s.needs[fmt.Sprintf("msg_scripted_%06d", n)] = rs
	}
	for i := range r.Calls {
		s.needs[fmt.Sprintf("fc_scripted_%06d_%d", n, i)] = rs
	}
}

// missingReasoning is the OpenAI Responses API's check of items sent back by
// id with store on: an input item whose id names an output item that a
// stored response produced together with a reasoning item is accepted only
// when that reasoning item is in the input too (by its id, or by the id its
// encrypted_content carries). It returns the documented 400 message for the
// first item that fails ("Item 'fc_…' of type 'function_call' was provided
// without its required 'reasoning' item: 'rs_…'."), or "". An item sent
// without an id is not looked up and always passes; so is every item of a
// request with store false.
func (s *Server) missingReasoning(body []byte) string {
	if !storeOn(body) {
		return ""
	}
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	var items []map[string]json.RawMessage
	if json.Unmarshal(req.Input, &items) != nil {
		return ""
	}
	have := map[string]bool{}
	for _, it := range items {
		if str(it["type"]) != "reasoning" {
			continue
		}
		have[str(it["id"])] = true
		if head, _, ok := strings.Cut(str(it["encrypted_content"]), "."); ok {
			if raw, err := base64.RawURLEncoding.DecodeString(head); err == nil {
				have[string(raw)] = true
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		id := str(it["id"])
		if rs, ok := s.needs[id]; ok && id != "" && !have[rs] {
			typ := str(it["type"])
			if typ == "" {
				typ = "message"
			}
			return fmt.Sprintf("Item '%s' of type '%s' was provided without its required 'reasoning' item: '%s'.", id, typ, rs)
		}
	}
	return ""
}
