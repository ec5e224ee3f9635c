package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// TestResponsesStringInputCountedOnce sends a Responses request whose input
// is one string (a user message) a little over the context budget. The
// string is the request's one message: it must count once, as a pinned
// message, not also as "system prompt and tools". Before: the request's
// measure counted it in the fixed tokens too, so the over-budget warning
// said the system prompt and tools took the whole request and told the user
// to raise --context-budget above twice the request's size.
func TestResponsesStringInputCountedOnce(t *testing.T) {
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","output":[]}`)
	}
	const budget = 2000
	tp := newProxy(t, up, harness.Config{ContextBudget: budget})
	body, _ := json.Marshal(map[string]any{"model": "gpt-5", "input": strings.Repeat("hello there ", 700)})
	resp, _ := post(t, tp.http.URL+PathResponses, body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	rec := tp.record(t, 1)
	ws := rec.WorkingSet
	if ws == nil {
		t.Fatal("no working set")
	}
	if !rec.OverBudget {
		t.Fatalf("forwarded %d tokens, budget %d: want over budget", rec.ForwardedTokens, budget)
	}
	if ws.FixedTokens > rec.ForwardedTokens/10 {
		t.Errorf("fixed (system prompt and tools) %d tokens of %d forwarded: the input string counted as fixed", ws.FixedTokens, rec.ForwardedTokens)
	}
	if ws.FixedTokens+ws.PinnedTokens > rec.ForwardedTokens+8 {
		t.Errorf("fixed %d + pinned %d tokens > %d forwarded: the input string counted twice", ws.FixedTokens, ws.PinnedTokens, rec.ForwardedTokens)
	}
	if ws.FloorTokens > rec.ForwardedTokens+8 {
		t.Errorf("floor %d tokens > %d forwarded: the remedy names a budget twice too large", ws.FloorTokens, rec.ForwardedTokens)
	}
}
