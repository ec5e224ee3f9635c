package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
)

// agentLoop drives an Anthropic tool-use loop the way Claude Code does: each
// response (signed thinking, then a Bash call) goes back as the assistant
// message exactly as returned, followed by the tool result; every request is
// a tool-use continuation. It returns the upstream's records of the requests
// and the proxy's.
type agentLoop struct {
	t        *testing.T
	up       *scripted.Server
	base     string
	msgs     []any
	recs     []RequestRecord
	statuses []int
	done     chan RequestRecord
}

func newAgentLoop(t *testing.T) *agentLoop {
	up := scripted.New(func(tu *scripted.Turn) scripted.Reply {
		return scripted.Reply{Calls: []scripted.Call{{Name: "Bash", Input: map[string]any{"command": "go test ./pkg" + itoa(len(tu.Results))}}}}
	})
	t.Cleanup(up.Close)
	return &agentLoop{t: t, up: up, done: make(chan RequestRecord, 1),
		msgs: []any{map[string]any{"role": "user", "content": "Fix the flaky retry in the billing webhook handler."}}}
}

// serve starts a proxy over dir (a second one over the same dir continues
// the sessions the first saved).
func (a *agentLoop) serve(dir string, cfg harness.Config) *Server {
	srv, err := New(Options{Dir: dir, Upstream: a.up.URL, Clock: fixedClock, Logger: discardLogger(), Harness: cfg,
		OnRequest: func(r RequestRecord) { a.done <- r }})
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	a.t.Cleanup(px.Close)
	a.base = px.URL
	return srv
}

// step sends the conversation with thinking on and appends the response and
// a large tool result to it.
func (a *agentLoop) step() {
	t := a.t
	body, _ := json.Marshal(map[string]any{"model": "claude-opus-5-5", "max_tokens": 4096,
		"thinking": map[string]any{"type": "adaptive"}, "system": "You are a coding agent.", "messages": a.msgs})
	hr, _ := http.NewRequest(http.MethodPost, a.base+PathAnthropic, bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(HeaderSession, "loop")
	hr.Header.Set(HeaderAnthropicBeta, "interleaved-thinking-2025-05-14")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.recs = append(a.recs, <-a.done)
	a.statuses = append(a.statuses, resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		return // a client that surfaces the error: its history stays as it was
	}
	var m struct {
		Content []any `json:"content"`
	}
	if err := json.Unmarshal(rb, &m); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, c := range m.Content {
		if cm := c.(map[string]any); cm["type"] == "tool_use" {
			id = cm["id"].(string)
		}
	}
	n := len(a.msgs)
	a.msgs = append(a.msgs, map[string]any{"role": "assistant", "content": m.Content},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
			"content": bigLog("webhookpkg"+itoa(n), 40)}}})
}

// upstream returns the upstream's record of request i (0-based).
func (a *agentLoop) upstream(i int) scripted.Request { return a.up.Requests()[i] }

// A tool-use loop with signed thinking across fold events: no request is
// rejected; at a fold event the continuation's thinking stays and every
// request from then on asks for drop_block with the beta header (the
// client's own beta kept), also after the session left memory and came back
// in a new proxy over the same directory; every other invalid block is left
// out; no block produced since the last fold event is ever invalid.
func TestReasoningToolLoopAcrossFoldEvents(t *testing.T) {
	a := newAgentLoop(t)
	dir := t.TempDir()
	cfg := harness.Config{ContextBudget: 5000}
	srv := a.serve(dir, cfg)
	for k := 0; k < 16; k++ {
		a.step()
	}
	// The session leaves memory (its state saved), a new proxy continues.
	srv.mu.Lock()
	for _, x := range srv.sessions {
		srv.dropSession(x)
	}
	srv.mu.Unlock()
	a.serve(dir, cfg)
	for k := 0; k < 16; k++ {
		a.step()
	}
	firstFold, folds := -1, 0
	var total ReasoningStats
	for i, r := range a.recs {
		total.Add(r.Reasoning)
		if a.statuses[i] != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, a.statuses[i], a.upstream(i).Body[:min(200, len(a.upstream(i).Body))])
		}
		up := a.upstream(i)
		if r.Reasoning.FoldEvents > 0 {
			folds++
			if firstFold < 0 {
				firstFold = i
			}
		}
		wantDrop := firstFold >= 0
		hasField := bytes.Contains(up.Body, []byte(`"prefix_mismatch_behavior":"drop_block"`))
		beta := up.Header.Get(HeaderAnthropicBeta)
		if hasField != wantDrop || strings.Contains(beta, BetaThinkingBinding) != wantDrop || !strings.Contains(beta, "interleaved-thinking-2025-05-14") {
			t.Fatalf("request %d (first fold event %d): drop_block field %v, anthropic-beta %q", i, firstFold, hasField, beta)
		}
		// Invalid blocks reach the model only under drop_block, and only
		// the ones kept for a continuation at a fold event.
		if n := len(up.Thinking.Invalid); n > 0 && (!wantDrop || n > folds) {
			t.Fatalf("request %d: %d invalid thinking blocks after %d fold events", i, n, folds)
		}
	}
	if folds < 2 || total.Invalidated == 0 || total.Removed == 0 || total.KeptDropBlock == 0 || total.DroppedByAPI == 0 {
		t.Fatalf("the loop must cross fold events that invalidate, leave out, keep and see dropped thinking: %d fold events, %+v", folds, total)
	}
	if total.Rejected != 0 {
		t.Fatalf("rejected: %+v", total)
	}
}

// The wire state travels with the harness state: drop_block, the reasoning
// left out and the earlier turns' hydration survive an export and import
// (a session dropped from memory, a replica of a fleet).
func TestReasoningWireStateRoundTrip(t *testing.T) {
	a := &session{}
	a.wire.load(&wireJSON{Removed: []string{"b", "a"}, Kept: []string{"k"}, DropBlock: true,
		Hydrations: []stickyHydration{{Host: 3, Text: "H"}}, Current: stickyHydration{Host: 7, Text: "C"}, Prompt: 6, Folded: []int{1, 2}})
	w1, err := a.wire.export()
	if err != nil {
		t.Fatal(err)
	}
	var j wireJSON
	if err := json.Unmarshal(w1, &j); err != nil {
		t.Fatal(err)
	}
	b := &session{}
	b.wire.load(&j)
	w2, _ := b.wire.export()
	if !bytes.Equal(w1, w2) || !b.wire.dropBlock || !b.wire.removed["a"] || !b.wire.kept["k"] || b.wire.cur.Text != "C" || len(b.wire.hyd) != 1 {
		t.Fatalf("round trip: %s vs %s", w1, w2)
	}
	if !strings.Contains(string(w1), `"removed":["a","b"]`) {
		t.Fatalf("not canonical: %s", w1)
	}
}

// The observer counts the reasoning the API reports dropping, streamed or
// not, and an upstream 400 that names a thinking block; the client gets the
// upstream's bytes.
func TestReasoningObserved(t *testing.T) {
	body := `{"id":"m","type":"message","content":[{"type":"text","text":"ok"}],"input_transformations":[{"type":"thinking_dropped","path":"messages.3.content.0"},{"type":"thinking_dropped","path":"messages.5.content.0"}]}`
	o := newObserver(APIAnthropic, false)
	o.Write([]byte(body))
	if got := o.result(); got.ReasoningDropped != 2 {
		t.Fatalf("non-streamed: %+v", got)
	}
	sse := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],\"input_transformations\":[{\"type\":\"thinking_dropped\",\"path\":\"messages.1.content.0\"}]}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	o = newObserver(APIAnthropic, true)
	o.Write([]byte(sse))
	if got := o.result(); got.ReasoningDropped != 1 {
		t.Fatalf("streamed: %+v", got)
	}
	rs := "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"input_transformations\":[{\"type\":\"reasoning\",\"action\":\"removed\",\"id\":\"rs_1\",\"reason\":\"prefix_mismatch\"}]}}\n\n"
	o = newObserver(APIResponses, true)
	o.Write([]byte(rs))
	if got := o.result(); got.ReasoningDropped != 1 || got.StopReason != "completed" {
		t.Fatalf("responses streamed: %+v", got)
	}
	msg := "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation."
	errBody := `{"type":"error","error":{"type":"invalid_request_error","message":` + string(encodeString(msg)) + `}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, errBody)
	}))
	defer up.Close()
	done := make(chan RequestRecord, 1)
	srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Logger: discardLogger(), OnRequest: func(r RequestRecord) { done <- r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	resp, err := http.Post(px.URL+PathAnthropic, "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rec := <-done
	if resp.StatusCode != 400 || string(got) != errBody || rec.Reasoning.Rejected != 1 || srv.Stats().Reasoning.Rejected != 1 {
		t.Fatalf("status %d body %s record %+v", resp.StatusCode, got, rec.Reasoning)
	}
}

// withoutCacheControl returns v with every "cache_control" member removed
// (the prefix check leaves the markers out of its comparison).
func withoutCacheControl(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k != "cache_control" {
				out[k] = withoutCacheControl(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutCacheControl(e)
		}
		return out
	}
	return v
}

// appendOnly checks the requests a model received from the proxy: each one
// that is not a fold event repeats the one before (system, tools, and its
// whole conversation, cache_control markers aside) and only adds at the
// end. It returns the requests that broke the rule.
func appendOnly(t *testing.T, reqs []scripted.Request, folds []bool, arr string) []int {
	t.Helper()
	var bad []int
	var prev map[string]any
	for i, r := range reqs {
		var cur map[string]any
		if err := json.Unmarshal(r.Body, &cur); err != nil {
			t.Fatal(err)
		}
		cur = withoutCacheControl(cur).(map[string]any)
		if prev != nil && !folds[i] {
			p, _ := prev[arr].([]any)
			c, _ := cur[arr].([]any)
			same := len(c) >= len(p)
			for k := 0; same && k < len(p); k++ {
				a, _ := json.Marshal(p[k])
				b, _ := json.Marshal(c[k])
				same = bytes.Equal(a, b)
			}
			for _, key := range []string{"system", "tools", "instructions"} {
				a, _ := json.Marshal(prev[key])
				b, _ := json.Marshal(cur[key])
				same = same && bytes.Equal(a, b)
			}
			if !same {
				bad = append(bad, i)
			}
		}
		prev = cur
	}
	return bad
}

// TestReplayAppendOnly replays the bundled transcripts with signed thinking
// (Anthropic) and reasoning items (Responses) through the proxy at
// smallThinkingBudget (every session has fold events), and checks what the model
// received: between two fold events every request extends the one before,
// hydration and its eviction included.
func TestReplayAppendOnly(t *testing.T) {
	skipReplayUnderRace(t)
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	seen := map[string]bool{}
	for _, rs := range sessions(t) {
		name := strings.TrimSuffix(rs.name, " (anthropic)")
		if seen[name] || strings.HasPrefix(name, "long/") {
			continue
		}
		seen[name] = true
		for _, cfg := range []harness.Config{{ContextBudget: smallThinkingBudget}} { // the default budget folds these rarely
			for _, api := range []API{APIAnthropic, APIResponses} {
				up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
				base, folds, wait := replayProxy(t, up, &cfg)
				msgs := chatMessages(rs.turns)
				system := ""
				if api == APIAnthropic {
					system, msgs = anthropicMessages(rs.turns)
				}
				reasoning := map[int]map[string]any{}
				for k := 1; k <= len(msgs); k++ {
					if k < len(msgs) && msgs[k]["role"] != "assistant" || msgs[k-1]["role"] == "assistant" {
						continue
					}
					var req map[string]any
					path := PathAnthropic
					if api == APIAnthropic {
						hist := history(msgs, k, APIAnthropic)
						for i := range hist {
							if th, ok := reasoning[i]; ok {
								blocks, _ := hist[i]["content"].([]any)
								hist[i] = map[string]any{"role": hist[i]["role"], "content": append([]any{th}, blocks...)}
							}
						}
						req = map[string]any{"model": "claude-opus-5-5", "max_tokens": 4096, "thinking": map[string]any{"type": "adaptive"}, "messages": hist}
						if system != "" {
							req["system"] = system
						}
					} else {
						path = PathResponses
						instructions, items := responsesItems(history(msgs, k, APIOpenAI), reasoning)
						req = map[string]any{"model": "gpt-5-codex", "store": false, "input": items}
						if instructions != "" {
							req["instructions"] = instructions
						}
					}
					body, _ := json.Marshal(req)
					resp, err := http.Post(base+path, "application/json", bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					rb, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					wait()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%s (%s, budget %d): request for message %d: %s %s", name, api, cfg.ContextBudget, k, resp.Status, rb)
					}
					var out struct {
						Content []map[string]any `json:"content"`
						Output  []map[string]any `json:"output"`
					}
					_ = json.Unmarshal(rb, &out)
					first := out.Content
					if api == APIResponses {
						first = out.Output
					}
					if len(first) > 0 && k < len(msgs) {
						if typ := first[0]["type"]; typ == "thinking" || typ == "redacted_thinking" || typ == "reasoning" {
							reasoning[k] = first[0]
						}
					}
				}
				arr := "messages"
				if api == APIResponses {
					arr = "input"
				}
				reqs := up.Requests()
				n := 0
				for _, f := range *folds {
					if f {
						n++
					}
				}
				if bad := appendOnly(t, reqs, *folds, arr); len(bad) > 0 {
					t.Errorf("%s (%s, budget %d): %d of %d requests changed the conversation outside a fold event: %v", name, api, cfg.ContextBudget, len(bad), len(reqs), bad)
				} else {
					t.Logf("%s (%s, budget %d): %d requests, %d fold events, every other request extends the one before", name, api, cfg.ContextBudget, len(reqs), n)
				}
				up.Close()
			}
		}
	}
}
