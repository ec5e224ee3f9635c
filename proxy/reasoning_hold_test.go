package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
)

// A client that sets thinking.block_binding.prefix_mismatch_behavior to
// "error" itself (with the beta header) runs tool loops of three calls, each
// ended by a text answer and a new human prompt, through a budget that
// forces fold events. The proxy keeps the client's "error" and never starts
// a fold event on a tool-use continuation (its thinking must come back and
// would be bound to the changed prefix): no request is rejected, fold
// events happen only on human prompts, no invalid block reaches the model,
// and a request held over the budget is followed by a fold event at the
// next prompt.
//
// Every held request is counted: its record's Reasoning.Held and
// WorkingSet.FoldHeld, and the proxy's stats (Reasoning.Held).
func TestReasoningClientErrorBindingHoldsFolds(t *testing.T) {
	srv, folds, held := runErrorBinding(t, harness.Config{ContextBudget: 5000})
	if folds < 2 || held == 0 {
		t.Fatalf("%d fold events, %d held continuations: want both", folds, held)
	}
	if got := srv.Stats().Reasoning.Held; got != held {
		t.Fatalf("stats count %d held continuations, the records %d", got, held)
	}
}

// The same with the fixed message window (--context-budget -1): a fold
// boundary move is a change of the prefix too, and waits for the next
// request that is not a tool-use continuation. Before the fix the fixed
// window ignored the hold: the boundary moved on continuations and the API
// rejected them.
func TestFixedWindowErrorBindingHoldsFolds(t *testing.T) {
	srv, folds, held := runErrorBinding(t, harness.Config{ContextBudget: harness.NoBudget, FoldBlock: 4, HotWindow: 4})
	if folds < 2 || held == 0 {
		t.Fatalf("%d fold events, %d held continuations: want both", folds, held)
	}
	if got := srv.Stats().Reasoning.Held; got != held {
		t.Fatalf("stats count %d held continuations, the records %d", got, held)
	}
}

// runErrorBinding runs the session of TestReasoningClientErrorBindingHoldsFolds
// under cfg and returns the server, the fold events and the held requests
// (RequestRecord.Reasoning.Held), failing on a rejected request, a fold
// event on a continuation, or a held request that is no continuation.
func runErrorBinding(t *testing.T, cfg harness.Config) (*Server, int, int) {
	up := scripted.New(func(tu *scripted.Turn) scripted.Reply {
		if len(tu.Results) >= 3 {
			return scripted.Reply{Text: "Done: the retry now backs off."}
		}
		return scripted.Reply{Calls: []scripted.Call{{Name: "Bash", Input: map[string]any{"command": "go test ./pkg" + itoa(len(tu.Results))}}}}
	})
	defer up.Close()
	done := make(chan RequestRecord, 1)
	srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: discardLogger(),
		Harness: cfg, OnRequest: func(r RequestRecord) { done <- r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	msgs := []any{map[string]any{"role": "user", "content": "Fix the flaky retry in the billing webhook handler."}}
	folds, held, continuationFolds := 0, 0, 0
	for k := 0; k < 40; k++ {
		body, _ := json.Marshal(map[string]any{"model": "claude-opus-5-5", "max_tokens": 4096,
			"thinking": map[string]any{"type": "adaptive", "block_binding": map[string]any{"prefix_mismatch_behavior": "error"}},
			"system":   "You are a coding agent.", "messages": msgs})
		hr, _ := http.NewRequest(http.MethodPost, px.URL+PathAnthropic, bytes.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set(HeaderSession, "strict")
		hr.Header.Set(HeaderAnthropicBeta, BetaThinkingBinding)
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rec := <-done
		last := up.Requests()[len(up.Requests())-1]
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d (%d fold events so far): %s %s", k, folds, resp.Status, rb)
		}
		if bytes.Contains(last.Body, []byte(`"drop_block"`)) {
			t.Fatalf("request %d: the client's prefix_mismatch_behavior was changed", k)
		}
		if n := len(last.Thinking.Invalid); n > 0 {
			t.Fatalf("request %d: %d invalid thinking blocks reached the model", k, n)
		}
		var m struct {
			Content []any `json:"content"`
		}
		if err := json.Unmarshal(rb, &m); err != nil {
			t.Fatal(err)
		}
		cont := isToolResult(msgs[len(msgs)-1])
		if rec.Reasoning.FoldEvents > 0 {
			folds++
			if cont {
				continuationFolds++
			}
		}
		if rec.Reasoning.Held > 0 {
			held++
			if !cont {
				t.Fatalf("request %d: held, but it is no tool-use continuation", k)
			}
			if rec.WorkingSet != nil && !rec.WorkingSet.FoldHeld {
				t.Fatalf("request %d: held, but its working set does not say so", k)
			}
		}
		var id string
		for _, c := range m.Content {
			if cm := c.(map[string]any); cm["type"] == "tool_use" {
				id = cm["id"].(string)
			}
		}
		n := len(msgs)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": m.Content})
		if id != "" {
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": bigLog("webhookpkg"+itoa(n), 40)}}})
		} else {
			msgs = append(msgs, map[string]any{"role": "user", "content": "Now look at the invoice exporter " + itoa(n) + "."})
		}
	}
	if continuationFolds != 0 {
		t.Fatalf("fold events: %d (on tool-use continuations: %d); want none on a continuation", folds, continuationFolds)
	}
	t.Logf("40 requests: %d fold events, %d continuations held", folds, held)
	return srv, folds, held
}

func isToolResult(m any) bool {
	blocks, _ := m.(map[string]any)["content"].([]any)
	for _, b := range blocks {
		if bm, ok := b.(map[string]any); ok && bm["type"] == "tool_result" {
			return true
		}
	}
	return false
}
