package inspect

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/proxy"
)

// A real proxy session over a small budget, then its store in the
// inspector: the working-set page draws every request, stacked by part,
// with the budget, the cache-stable prefix and the fold events.
func TestWorkingSetPage(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	srv, err := proxy.New(proxy.Options{Dir: dir, Upstream: up.URL, Clock: testClock(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Harness: harness.Config{ContextBudget: 4000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	msgs := []any{map[string]any{"role": "user", "content": "Fix the retry in the webhook handler."}}
	const requests = 30
	for i := 0; i < requests; i++ {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + strconv.Itoa(i) + `"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat("ok  widget/pkg"+strconv.Itoa(i)+" line of output\n", 30)})
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		resp, err := http.Post(px.URL+proxy.PathOpenAI, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	sessions, _ := filepath.Glob(filepath.Join(dir, "*", "g1"))
	if len(sessions) != 1 {
		t.Fatalf("stores: %v", sessions)
	}
	// The proxy logs a request once its response is done: wait for the last
	// (a minute: only a hang reaches it, on any machine).
	logPath := filepath.Join(filepath.Dir(sessions[0]), harness.WorkingSetLogName)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(logPath); bytes.Count(b, []byte("\n")) >= requests {
			break
		}
	}
	// The proxy's work after its responses (spare node files) ends: the
	// store no longer changes but by the inspector.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, sessions[0])
	s := serve(t, sessions[0], Options{})
	resp, page := get(t, s, "/workset")
	if out := os.Getenv("CONTEXTFOLD_WORKSET_HTML"); out != "" {
		os.WriteFile(out, []byte(page), 0o644) // to look at it in a browser
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", resp.Status, page)
	}
	for _, want := range []string{"<svg", `class="ws-records"`, `class="ws-page"`, `class="ws-tail"`, `class="ws-pinned"`, "ws-budget", "▼", "cache-stable prefix"} {
		if !strings.Contains(page, want) {
			t.Errorf("the working-set page lacks %q", want)
		}
	}
	_, js := get(t, s, "/api/workset")
	var d struct {
		Requests []harness.WorkingSetRecord `json:"requests"`
		Events   int                        `json:"fold_events"`
		Billed   []billedRow                `json:"billed"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	// The cost as billed, under both price structures, from the log's
	// counts and cached prefixes (the client's too).
	if len(d.Billed) != 2 || d.Billed[0].Pricing != harness.AnthropicPricing || d.Billed[1].Pricing != harness.OpenAIPricing {
		t.Fatalf("billed: %+v", d.Billed)
	}
	for _, b := range d.Billed {
		if b.Forwarded <= 0 || b.Forwarded >= b.Client || b.Share <= 0 || b.Share >= 100 {
			t.Errorf("%s: client %.0f, forwarded %.0f (%.1f %%): the folded session should cost less", b.Pricing.Name, b.Client, b.Forwarded, b.Share)
		}
		if !strings.Contains(page, "<b>"+b.Pricing.Name+"</b>") {
			t.Errorf("the page does not show the %s cost", b.Pricing.Name)
		}
	}
	clientCached := 0
	for _, r := range d.Requests {
		clientCached += r.ClientStablePrefixTokens
	}
	if clientCached == 0 {
		t.Error("the log holds no client cached prefix")
	}
	if len(d.Requests) != requests || d.Events == 0 || d.Events > requests/2 {
		t.Fatalf("%d requests, %d fold events logged", len(d.Requests), d.Events)
	}
	for _, r := range d.Requests {
		parts := r.FixedTokens + r.PinnedTokens + r.PageTableTokens + r.RecordTokens + r.VerbatimTokens + r.TailTokens + r.HydrationTokens
		if parts != r.Estimate {
			t.Errorf("request %d: the parts add up to %d, the estimate is %d", r.Request, parts, r.Estimate)
		}
		if r.ForwardedTokens > r.Budget {
			t.Errorf("request %d: %d tokens forwarded over the budget %d", r.Request, r.ForwardedTokens, r.Budget)
		}
		if r.Request > 1 && !r.FoldEvent && r.StablePrefixTokens == 0 {
			t.Errorf("request %d: no cache-stable prefix without a fold event", r.Request)
		}
	}
	if hashTree(t, sessions[0]) != before {
		t.Fatal("the inspector changed the store")
	}
	// A store with no log beside it says so.
	_, page = get(t, serve(t, t.TempDir(), Options{}), "/workset")
	if !strings.Contains(page, "No working-set log") {
		t.Error("no explanation for a store without a working-set log")
	}
}

// A request's reasoning counts (what its fold event did to the thinking the
// client sent back) show in its row of the working-set page.
func TestWorkingSetPageReasoning(t *testing.T) {
	sess := filepath.Join(t.TempDir(), "s")
	store := filepath.Join(sess, "g1")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"request":1,"generation":1,"messages":9,"fold_event":true,"first_changed":3,"removed_ranges":[],` +
		`"reasoning":{"fold_events":1,"invalidated":2,"removed_by_proxy":2,"dropped_by_api":1,"drop_block":1}}` + "\n" +
		`{"request":2,"generation":1,"messages":11,"first_changed":-1,"removed_ranges":[]}` + "\n" +
		`{"request":3,"generation":1,"messages":13,"first_changed":-1,"fold_held":true,"removed_ranges":[],"reasoning":{"held_continuations":1}}` + "\n"
	if err := os.WriteFile(filepath.Join(sess, harness.WorkingSetLogName), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, store, Options{})
	resp, page := get(t, s, "/workset")
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", resp.Status, page)
	}
	if want := "reasoning: 2 invalidated, 2 left out, 1 dropped by the API (drop_block)"; !strings.Contains(page, want) || strings.Count(page, "reasoning: ") != 1 {
		t.Fatalf("the page lacks %q once:\n%s", want, page)
	}
	// A request on which a fold event was due and held for the client's
	// thinking binding says so, once.
	if want := "held (the client binds thinking to the prefix)"; strings.Count(page, want) != 1 {
		t.Fatalf("the page lacks %q once:\n%s", want, page)
	}
}
