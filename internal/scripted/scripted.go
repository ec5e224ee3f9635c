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
// A Server is safe for concurrent use.
package scripted

import (
	"bytes"
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

// Server is a scripted model on loopback.
type Server struct {
	URL    string // base URL, e.g. http://127.0.0.1:PORT (no trailing slash)
	srv    *httptest.Server
	script Script

	mu   sync.Mutex
	reqs []Request
	seq  int
}

// New starts a server playing script. Close it when done.
func New(script Script) *Server {
	s := &Server{script: script}
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
	rec.Reply = s.script(turn)
	s.record(rec)
	n := s.next()
	inTok := len(body) / 4
	switch rec.API {
	case Anthropic:
		writeAnthropic(w, turn, rec.Reply, n, inTok)
	case Chat:
		writeChat(w, turn, rec.Reply, n, inTok)
	case Responses:
		writeResponses(w, turn, rec.Reply, n, inTok)
	}
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
