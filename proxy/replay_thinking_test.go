package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
)

// thinkingReplay counts what a replay with signed thinking did upstream.
type thinkingReplay struct {
	Requests int // requests of the session
	Rejected int // answered 400 over a thinking block
	// FoldEvents are the requests whose dispatch changed the working set.
	FoldEvents int
	// Blocks, Invalid and Dropped count thinking blocks over the requests
	// that reached the model: sent back, failing the prefix check, dropped
	// by the model (drop_block with the beta header) and reported.
	Blocks, Invalid, Dropped int
	// ClientBlocks counts the thinking blocks the client sent.
	ClientBlocks int
	// Stale counts the invalid blocks produced since the last fold event
	// (no fold event between the request that produced the block and the
	// one that sent it back invalid): a change outside a fold event.
	Stale int
	// Unflagged counts the requests whose forwarded conversation changed
	// before its end (compared with the request before, as the prefix check
	// compares) while the proxy reported no fold event.
	Unflagged int
	// FirstError is the model's first 400 message.
	FirstError string
}

func (r thinkingReplay) String() string {
	return fmt.Sprintf("%d requests, %d rejected, %d fold events (%d prefix changes without one); thinking blocks: client sent %d, reached the model %d, invalid %d (%d produced since the last fold event), dropped %d",
		r.Requests, r.Rejected, r.FoldEvents, r.Unflagged, r.ClientBlocks, r.Blocks, r.Invalid, r.Stale, r.Dropped)
}

// replayThinking replays a session in the Anthropic API through a proxy in
// front of the scripted model, which signs the thinking block it returns
// with every reply and checks every request (the documented 400 by
// default). The client resends each thinking block first in the assistant
// message it belongs to, as Claude Code does, with the transcript's own
// content after it; a rejected request is not retried (the client goes on
// with its history, as an SDK loop that surfaces the error would stop).
// With dropBlock every request sets
// thinking.block_binding.prefix_mismatch_behavior "drop_block" and sends
// the beta header.
func replayThinking(t testing.TB, rs replaySession, cfg *harness.Config, dropBlock bool) thinkingReplay {
	t.Helper()
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	base, folds, wait := replayProxy(t, up, cfg)

	system, msgs := anthropicMessages(rs.turns)
	thinking := map[int]map[string]any{} // assistant message index → the thinking block the model returned before it
	producedBy := map[string]int{}       // thinking text → the request (0-based) that produced it
	var out thinkingReplay
	var prevFwd []byte
	for k := 1; k <= len(msgs); k++ {
		if k < len(msgs) && msgs[k]["role"] != "assistant" || msgs[k-1]["role"] == "assistant" {
			continue
		}
		hist := history(msgs, k, APIAnthropic)
		for i := range hist {
			if th, ok := thinking[i]; ok {
				blocks, _ := hist[i]["content"].([]any)
				hist[i] = map[string]any{"role": hist[i]["role"], "content": append([]any{th}, blocks...)}
				out.ClientBlocks++
			}
		}
		th := map[string]any{"type": "adaptive"}
		if dropBlock {
			th["block_binding"] = map[string]any{"prefix_mismatch_behavior": scripted.DropBlock}
		}
		req := map[string]any{"model": "claude-opus-5-5", "max_tokens": 4096, "thinking": th, "messages": hist}
		if system != "" {
			req["system"] = system
		}
		body, _ := json.Marshal(req)
		hr, _ := http.NewRequest(http.MethodPost, base+PathAnthropic, bytes.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		if dropBlock {
			hr.Header.Set("anthropic-beta", scripted.BetaThinkingBinding)
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wait()
		n := out.Requests
		out.Requests++
		rec := up.Requests()[len(up.Requests())-1]
		out.Unflagged += unflagged(t, scripted.Anthropic, prevFwd, rec.Body, (*folds)[n])
		prevFwd = rec.Body
		out.Blocks += rec.Thinking.Blocks
		out.Invalid += len(rec.Thinking.Invalid)
		out.Dropped += len(rec.Dropped)
		for _, ref := range rec.Thinking.Invalid {
			p, ok := producedBy[blockText(rec.Body, ref)]
			if !ok {
				continue // a redacted block, or not ours
			}
			fold := false
			for _, f := range (*folds)[p+1 : n+1] {
				fold = fold || f
			}
			if !fold {
				out.Stale++
			}
		}
		switch {
		case resp.StatusCode == http.StatusBadRequest:
			out.Rejected++
			if out.FirstError == "" {
				out.FirstError = string(rb)
			}
			continue
		case resp.StatusCode != http.StatusOK:
			t.Fatalf("%s: request %d: %s %s", rs.name, n, resp.Status, rb)
		}
		var m struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(rb, &m); err != nil || len(m.Content) == 0 {
			t.Fatalf("%s: request %d: response %s", rs.name, n, rb)
		}
		if typ := m.Content[0]["type"]; typ == "thinking" || typ == "redacted_thinking" {
			if k < len(msgs) {
				thinking[k] = m.Content[0]
			}
			if txt, ok := m.Content[0]["thinking"].(string); ok {
				producedBy[txt] = n
			}
		}
	}
	for _, f := range *folds {
		if f {
			out.FoldEvents++
		}
	}
	return out
}

// unflagged is 1 when the forwarded body next changed prev before its end
// and the proxy reported no fold event for it.
func unflagged(t testing.TB, api scripted.API, prev, next []byte, fold bool) int {
	if prev == nil || fold {
		return 0
	}
	first, err := scripted.FirstChange(api, prev, next)
	if err != nil {
		t.Fatal(err)
	}
	if first >= 0 {
		return 1
	}
	return 0
}

// replayProxy starts a proxy at cfg in front of up and returns its base URL,
// the fold events of its requests so far (one per request) and a wait that
// returns once the proxy has finished the last request. A nil cfg means no
// proxy: the base URL is up's and no request is a fold event.
func replayProxy(t testing.TB, up *scripted.Server, cfg *harness.Config) (string, *[]bool, func()) {
	t.Helper()
	folds := &[]bool{}
	if cfg == nil {
		return up.URL, folds, func() { *folds = append(*folds, false) }
	}
	done := make(chan struct{}, 1)
	srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: discardLogger(), Harness: *cfg,
		OnRequest: func(r RequestRecord) {
			*folds = append(*folds, r.WorkingSet != nil && r.WorkingSet.FoldEvent)
			done <- struct{}{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	t.Cleanup(px.Close)
	return px.URL, folds, func() { <-done }
}

// replayBudgets are the proxies of the thinking replays: none (the client
// straight at the model, which must see nothing invalid), the default
// budget and smallThinkingBudget.
var replayBudgets = []struct {
	label string
	cfg   *harness.Config
}{
	{"no proxy", nil},
	{"default budget", &harness.Config{}},
	{fmt.Sprintf("budget %d", smallThinkingBudget), &harness.Config{ContextBudget: smallThinkingBudget}},
}

// blockText is the thinking text of the block at ref in a request body.
func blockText(body []byte, ref scripted.BlockRef) string {
	var req struct {
		Messages []struct {
			Content []struct {
				Thinking string `json:"thinking"`
			} `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || ref.Message >= len(req.Messages) || ref.Block >= len(req.Messages[ref.Message].Content) {
		return ""
	}
	return req.Messages[ref.Message].Content[ref.Block].Thinking
}

// smallThinkingBudget is the second context budget of TestReplayThinking
// (tokens): small enough that every bundled session has fold events.
const smallThinkingBudget = 8000

// TestReplayThinking replays every bundled transcript in the Anthropic API
// with signed thinking through the proxy, at its default budget and at
// smallThinkingBudget (the long chained session with
// CONTEXTFOLD_REPLAY_FULL=1): the model signs the thinking it
// returns and checks every request. Target: no request rejected, and no
// block produced since the last fold event ever invalid; then the same with
// drop_block and the beta header, where nothing may be rejected and only
// blocks invalidated at fold events are dropped.
func TestReplayThinking(t *testing.T) {
	skipReplayUnderRace(t)
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	full := os.Getenv("CONTEXTFOLD_REPLAY_FULL") == "1"
	only := os.Getenv("CONTEXTFOLD_REPLAY_ONLY")
	seen := map[string]bool{}
	var total, totalDrop thinkingReplay
	for _, rs := range sessions(t) {
		name := strings.TrimSuffix(rs.name, " (anthropic)")
		if seen[name] || !full && strings.HasPrefix(name, "long/") || !strings.Contains(rs.name, only) {
			continue
		}
		seen[name] = true
		rs.api = APIAnthropic
		for _, b := range replayBudgets {
			r := replayThinking(t, rs, b.cfg, false)
			d := replayThinking(t, rs, b.cfg, true)
			t.Logf("%s (anthropic, signed thinking, %s): %v", name, b.label, r)
			t.Logf("%s (anthropic, signed thinking, %s, drop_block): %v", name, b.label, d)
			if r.Rejected > 0 {
				t.Errorf("%s, %s: %d of %d requests rejected over a thinking block; the first: %s", name, b.label, r.Rejected, r.Requests, r.FirstError)
			}
			if r.Unflagged > 0 || d.Unflagged > 0 {
				t.Errorf("%s, %s: %d (drop_block: %d) requests changed the forwarded conversation before its end without a fold event", name, b.label, r.Unflagged, d.Unflagged)
			}
			if r.Stale > 0 || d.Stale > 0 {
				t.Errorf("%s, %s: %d (drop_block: %d) thinking blocks invalid with no fold event since they were produced", name, b.label, r.Stale, d.Stale)
			}
			if d.Rejected > 0 {
				t.Errorf("%s, %s: with drop_block and the beta header, %d requests rejected; the first: %s", name, b.label, d.Rejected, d.FirstError)
			}
			if b.cfg == nil {
				continue // the totals are of the proxied replays
			}
			for _, p := range []struct {
				sum *thinkingReplay
				r   thinkingReplay
			}{{&total, r}, {&totalDrop, d}} {
				p.sum.Requests += p.r.Requests
				p.sum.Rejected += p.r.Rejected
				p.sum.FoldEvents += p.r.FoldEvents
				p.sum.ClientBlocks += p.r.ClientBlocks
				p.sum.Blocks += p.r.Blocks
				p.sum.Invalid += p.r.Invalid
				p.sum.Stale += p.r.Stale
				p.sum.Unflagged += p.r.Unflagged
				p.sum.Dropped += p.r.Dropped
			}
		}
	}
	t.Logf("all sessions: %v", total)
	t.Logf("all sessions, drop_block: %v", totalDrop)
}

// responsesItems renders a Chat Completions history as Responses API input
// items, as a stateless client (Codex) sends them: the first system message
// becomes the instructions; an assistant message becomes its text (when
// any) and a function_call per tool call, preceded by the reasoning item
// the model returned before it; a tool message a function_call_output.
func responsesItems(hist []map[string]any, reasoning map[int]map[string]any) (instructions string, items []any) {
	for i, m := range hist {
		content, _ := m["content"].(string)
		switch role := m["role"]; {
		case role == "system" && i == 0:
			instructions = content
		case role == "tool":
			items = append(items, map[string]any{"type": "function_call_output", "call_id": m["tool_call_id"], "output": content})
		case role == "assistant":
			if r, ok := reasoning[i]; ok {
				items = append(items, r)
			}
			if content != "" {
				items = append(items, map[string]any{"type": "message", "role": "assistant",
					"content": []any{map[string]any{"type": "output_text", "text": content}}})
			}
			calls, _ := m["tool_calls"].([]any)
			for _, c := range calls {
				cm := c.(map[string]any)
				fn := cm["function"].(map[string]any)
				items = append(items, map[string]any{"type": "function_call", "call_id": cm["id"], "name": fn["name"], "arguments": fn["arguments"]})
			}
		default:
			items = append(items, map[string]any{"type": "message", "role": role,
				"content": []any{map[string]any{"type": "input_text", "text": content}}})
		}
	}
	return instructions, items
}

// replayReasoning replays a session on the Responses API through a proxy in
// front of the scripted model, which returns a reasoning item with
// encrypted_content bound to its prefix with every reply and drops (and
// reports) the ones sent back after a prefix change. Blocks counts the
// reasoning items sent back, Dropped the ones dropped, Stale the ones
// dropped with no fold event since they were produced.
func replayReasoning(t testing.TB, rs replaySession, cfg *harness.Config) thinkingReplay {
	t.Helper()
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	base, folds, wait := replayProxy(t, up, cfg)
	msgs := chatMessages(rs.turns)
	reasoning := map[int]map[string]any{}
	producedBy := map[string]int{} // reasoning item id → the request that produced it
	var out thinkingReplay
	var prevFwd []byte
	for k := 1; k <= len(msgs); k++ {
		if k < len(msgs) && msgs[k]["role"] != "assistant" || msgs[k-1]["role"] == "assistant" {
			continue
		}
		hist := history(msgs, k, APIOpenAI)
		instructions, items := responsesItems(hist, reasoning)
		out.ClientBlocks += len(reasoning)
		req := map[string]any{"model": "gpt-5-codex", "store": false, "include": []string{"reasoning.encrypted_content"},
			"reasoning": map[string]any{"effort": "medium"}, "input": items}
		if instructions != "" {
			req["instructions"] = instructions
		}
		body, _ := json.Marshal(req)
		resp, err := http.Post(base+"/v1/responses", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wait()
		n := out.Requests
		out.Requests++
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: request %d: %s %s", rs.name, n, resp.Status, rb)
		}
		rec := up.Requests()[len(up.Requests())-1]
		out.Unflagged += unflagged(t, scripted.Responses, prevFwd, rec.Body, (*folds)[n])
		prevFwd = rec.Body
		out.Blocks += rec.Reasoning.Items
		out.Dropped += len(rec.Reasoning.Dropped)
		for _, d := range rec.Reasoning.Dropped {
			p, ok := producedBy[d.ID]
			if !ok {
				continue
			}
			fold := false
			for _, f := range (*folds)[p+1 : n+1] {
				fold = fold || f
			}
			if !fold {
				out.Stale++
			}
		}
		var r struct {
			Output []map[string]any `json:"output"`
		}
		if err := json.Unmarshal(rb, &r); err != nil || len(r.Output) == 0 {
			t.Fatalf("%s: request %d: response %s", rs.name, n, rb)
		}
		if r.Output[0]["type"] == "reasoning" {
			if k < len(msgs) {
				reasoning[k] = r.Output[0]
			}
			producedBy[r.Output[0]["id"].(string)] = n
		}
	}
	for _, f := range *folds {
		if f {
			out.FoldEvents++
		}
	}
	return out
}

// TestReplayReasoning replays every bundled transcript on the Responses API
// with reasoning items bound to their prefix, at the default budget and at
// smallThinkingBudget. Reasoning lost only at fold events: no item produced
// since the last fold event is ever dropped. The items dropped at fold
// events are counted.
func TestReplayReasoning(t *testing.T) {
	skipReplayUnderRace(t)
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	full := os.Getenv("CONTEXTFOLD_REPLAY_FULL") == "1"
	only := os.Getenv("CONTEXTFOLD_REPLAY_ONLY")
	var total thinkingReplay
	for _, rs := range sessions(t) {
		if rs.api != APIOpenAI || !full && strings.HasPrefix(rs.name, "long/") || !strings.Contains(rs.name, only) {
			continue
		}
		for _, b := range replayBudgets {
			r := replayReasoning(t, rs, b.cfg)
			t.Logf("%s (responses, reasoning items, %s): %d requests, %d fold events (%d prefix changes without one); reasoning items: client sent %d, reached the model %d, dropped %d (%d produced since the last fold event)",
				rs.name, b.label, r.Requests, r.FoldEvents, r.Unflagged, r.ClientBlocks, r.Blocks, r.Dropped, r.Stale)
			if r.Unflagged > 0 {
				t.Errorf("%s, %s: %d requests changed the forwarded conversation before its end without a fold event", rs.name, b.label, r.Unflagged)
			}
			if r.Stale > 0 {
				t.Errorf("%s, %s: %d reasoning items dropped with no fold event since they were produced", rs.name, b.label, r.Stale)
			}
			if b.cfg == nil {
				continue // the totals are of the proxied replays
			}
			total.Requests += r.Requests
			total.FoldEvents += r.FoldEvents
			total.ClientBlocks += r.ClientBlocks
			total.Blocks += r.Blocks
			total.Dropped += r.Dropped
			total.Stale += r.Stale
			total.Unflagged += r.Unflagged
		}
	}
	t.Logf("all sessions: %d requests, %d fold events (%d prefix changes without one); reasoning items: client sent %d, reached the model %d, dropped %d (%d produced since the last fold event)",
		total.Requests, total.FoldEvents, total.Unflagged, total.ClientBlocks, total.Blocks, total.Dropped, total.Stale)
}
