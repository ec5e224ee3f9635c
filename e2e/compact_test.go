package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/scripted"
)

// codexCompact compacts a Codex thread the way Codex's own /compact does:
// it runs `codex app-server` (the JSON-RPC server on stdio that Codex's
// interactive client drives), resumes the thread and asks for
// thread/compact/start, and waits for the compaction turn to complete. It
// fails the test when Codex reports an error or the turn does not
// complete. `codex exec` has no /compact: a prompt "/compact" is sent to
// the model as text.
func codexCompact(t *testing.T, bin, work string, env []string, threadID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "app-server")
	cmd.Dir = work
	cmd.Env = agentEnv(env)
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	mark := outsideMark()
	defer noOutsideCalls(t, mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatalf("codex app-server: write: %v\nstderr: %s", err, tail(stderr.String(), 2000))
		}
	}
	// next reads messages until one satisfies done; a request from the
	// server (an approval) or an error response fails the test.
	type message struct {
		ID     *int            `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	var seen []string
	next := func(what string, done func(m message) bool) message {
		for lines.Scan() {
			var m message
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				continue
			}
			if m.Method != "" {
				seen = append(seen, m.Method)
			}
			switch {
			case len(m.Error) > 0:
				t.Fatalf("codex app-server answered an error waiting for %s: %s", what, m.Error)
			case m.ID != nil && m.Method != "":
				t.Fatalf("codex app-server asked %s (%s) waiting for %s", m.Method, m.Params, what)
			case done(m):
				return m
			}
		}
		t.Fatalf("codex app-server ended waiting for %s (%v; notifications %v)\nstderr: %s", what, lines.Err(), seen, tail(stderr.String(), 3000))
		return message{}
	}
	reply := func(id int) func(m message) bool {
		return func(m message) bool { return m.ID != nil && *m.ID == id && m.Method == "" }
	}
	start := time.Now()
	send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"clientInfo": map[string]any{"name": "contextfold-e2e", "title": nil, "version": "0"}, "capabilities": nil}})
	next("initialize", reply(1))
	send(map[string]any{"method": "initialized"})
	send(map[string]any{"id": 2, "method": "thread/resume", "params": map[string]any{"threadId": threadID}})
	next("thread/resume", reply(2))
	send(map[string]any{"id": 3, "method": "thread/compact/start", "params": map[string]any{"threadId": threadID}})
	next("thread/compact/start", reply(3))
	done := next("the compaction turn's end", func(m message) bool { return m.Method == "turn/completed" })
	var p struct {
		Turn struct {
			Status string          `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(done.Params, &p)
	if p.Turn.Status != "completed" {
		t.Fatalf("codex app-server: the compaction turn ended %q: %s (notifications %v)", p.Turn.Status, done.Params, seen)
	}
	t.Logf("codex app-server thread/compact/start %s: %s in %v", threadID, p.Turn.Status, time.Since(start).Round(time.Millisecond))
}

// codexThread is the Codex thread id of the model requests a scripted
// model received: the session-id header Codex sends with each (its thread
// id, the conversation id the proxy's lineage reads).
func codexThread(t *testing.T, up *scripted.Server) string {
	t.Helper()
	for _, r := range up.ModelRequests(scripted.Responses) {
		if id := r.Header.Get("Session-Id"); id != "" {
			return id
		}
	}
	t.Fatal("no model request carried Codex's session-id header")
	return ""
}

// codexOpenAISetup is codexSetup with Codex's built-in OpenAI provider
// pointed at baseURL (openai_base_url) instead of a provider of its own:
// Codex 0.171 then compacts remotely (a compaction_trigger input item, a
// compaction output item) and tries a WebSocket first (GET …/responses
// with an Upgrade: the proxy answers 426, the scripted model 404; Codex
// falls back to HTTP).
func codexOpenAISetup(t *testing.T, home, baseURL string) []string {
	t.Helper()
	env := codexSetup(t, home, baseURL)
	path := filepath.Join(home, ".codex", "config.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), `model_provider = "contextfold"`, fmt.Sprintf("model_provider = \"openai\"\nopenai_base_url = %q", baseURL), 1)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(env, "OPENAI_API_KEY=sk-dummy-e2e")
}

// compactKind is Codex's own label of a model request, request_kind in
// its X-Codex-Turn-Metadata header ("turn", "compaction", …).
func compactKind(r scripted.Request) string {
	var m struct {
		Kind string `json:"request_kind"`
	}
	_ = json.Unmarshal([]byte(r.Header.Get("X-Codex-Turn-Metadata")), &m)
	return m.Kind
}

// codexCompactScript is the lifecycle model with a summary for a remote
// compaction (a local one is a turn like another: its prompt is Codex's
// compaction prompt, answered "OK.").
func codexCompactScript() scripted.Script {
	life := lifecycleScript()
	return func(t *scripted.Turn) scripted.Reply {
		if t.Compact {
			return scripted.Reply{Text: "Summary: the build session ran its shell steps."}
		}
		return life(t)
	}
}

// codexCompactAfterFoldEvent plays, once straight at the model and once
// through the proxy: the 13-step build session (fold events through the
// proxy), Codex's /compact (codexCompact), then a question about step 0.
// Through the proxy the compacted conversation is a new proxy session (its
// items carry new ids); the question must be answered from the store
// folded before the compaction, through the lineage (Codex's session-id
// header and the same tools). No request through the proxy may fail, and
// the proxy may add no rejected request to what Codex meets on its own.
func codexCompactAfterFoldEvent(t *testing.T, setup func(t *testing.T, home, baseURL string) []string, remote bool) {
	bin := agentBin(t, "codex")
	type run struct {
		b      scripted.BindingStats
		kinds  map[string]int
		answer string
		socket int // WebSocket upgrades the model received
	}
	play := func(base func(up *scripted.Server) string) (r run) {
		up := scripted.NewWith(codexCompactScript(), thinkingOptions)
		defer up.Close()
		t.Cleanup(func() { dump(t, up) })
		home, work := t.TempDir(), t.TempDir()
		env := setup(t, home, base(up)+"/v1")
		if out := runCodex(t, bin, work, env, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
			t.Fatalf("the session did not finish: %q", tail(out, 500))
		}
		codexCompact(t, bin, work, env, codexThread(t, up))
		r.answer = lastLine(runCodex(t, bin, work, env, askPrompt(probes[0]), true))
		r.b = up.Binding()
		for _, q := range up.Requests() {
			if strings.EqualFold(q.Header.Get("Upgrade"), "websocket") {
				r.socket++
			}
		}
		r.kinds = map[string]int{}
		for _, q := range up.ModelRequests(scripted.Responses) {
			k := compactKind(q)
			r.kinds[k]++
			if k != "compaction" {
				continue
			}
			// The compaction request (folded through the proxy) keeps
			// every call with its output, and a remote one still ends
			// with its compaction_trigger.
			checkResponsesPairs(t, q.Body)
			if q.Turn.Compact != remote {
				t.Errorf("the compaction request ends with a compaction_trigger: %v, want %v", q.Turn.Compact, remote)
			}
		}
		t.Logf("model requests by Codex's request_kind %v; %v; compaction items %d returned, %d sent back, %d rejected",
			r.kinds, r.b, r.b.Compactions, r.b.CompactionsBack, r.b.CompactionRejected)
		return r
	}
	direct := play(func(up *scripted.Server) string { return up.URL })
	var px *proxyUnder
	proxied := play(func(up *scripted.Server) string {
		px = newProxyBudget(t, up, codexThinkingBudget)
		return px.http.URL
	})
	for name, r := range map[string]run{"straight at the model": direct, "through the proxy": proxied} {
		if r.kinds["compaction"] == 0 {
			t.Errorf("%s: no model request of request_kind compaction: Codex did not compact", name)
		}
		if remote && (r.b.Compactions == 0 || r.b.CompactionsBack == 0) {
			t.Errorf("%s: %d compaction items returned, %d sent back: not a remote compaction", name, r.b.Compactions, r.b.CompactionsBack)
		}
	}
	// The built-in OpenAI provider tries a WebSocket first: the proxy
	// answers it 426, so Codex's requests come over HTTP, through it.
	t.Logf("WebSocket upgrades the model received: straight %d, through the proxy %d", direct.socket, proxied.socket)
	if proxied.socket != 0 {
		t.Errorf("through the proxy the model received %d WebSocket upgrades: the session could bypass the proxy", proxied.socket)
	}
	rejected := func(b scripted.BindingStats) int { return b.Rejected + b.ReasoningRejected + b.CompactionRejected }
	if rejected(proxied.b) > rejected(direct.b) {
		t.Errorf("through the proxy the model rejected %d requests, straight at it %d", rejected(proxied.b), rejected(direct.b))
	}
	sessions := map[string]bool{}
	folds, fromEarlier := 0, 0
	for i, r := range px.records() {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
		for _, h := range r.Hydrated {
			if h.From != "" {
				fromEarlier++
			}
		}
		sessions[r.Session+"/g"+strconv.Itoa(r.Generation)] = true
		if r.WorkingSet != nil && r.WorkingSet.FoldEvent {
			folds++
		}
	}
	t.Logf("proxy stores %v, %d fold events, %d nodes hydrated from an earlier store; answers: straight %q, through the proxy %q", sessions, folds, fromEarlier, direct.answer, proxied.answer)
	if folds == 0 {
		t.Errorf("no fold event before the compaction")
	}
	if len(sessions) < 2 {
		t.Errorf("the compacted conversation is the proxy session it was before (%v): the test does not cover the lineage", sessions)
	}
	if fromEarlier == 0 || !strings.HasPrefix(proxied.answer, "SEEN "+probes[0].Name) {
		t.Errorf("after the compaction the question about step 0 got %q, %d nodes hydrated from the earlier store: the node folded before it holds the answer line", proxied.answer, fromEarlier)
	}
}

// TestCodexCompactAfterFoldEvent: Codex (a provider of its own, so a local
// compaction: a Responses request with no tools whose last message is
// Codex's compaction prompt, its answer the summary Codex keeps) compacts
// after fold events; the question after it hydrates the node folded
// before it, from the pre-compaction store.
func TestCodexCompactAfterFoldEvent(t *testing.T) {
	codexCompactAfterFoldEvent(t, func(t *testing.T, home, baseURL string) []string { return codexSetup(t, home, baseURL) }, false)
}

// TestCodexRemoteCompactAfterFoldEvent is the same with Codex's OpenAI
// provider: a remote compaction (the history and a compaction_trigger
// item; the model returns an opaque compaction item, which Codex sends
// back in place of the history and the proxy keeps byte for byte, pinned).
func TestCodexRemoteCompactAfterFoldEvent(t *testing.T) {
	codexCompactAfterFoldEvent(t, codexOpenAISetup, true)
}

// TestQwenCodeCompressAfterFoldEvent runs Qwen Code's /compress (0.24.4
// runs it in `qwen -p`) after fold events, then a question about step 0.
// Qwen Code compresses with the model: the history and its compression
// prompt, then a request under a summarizer's system prompt with the whole
// history and no tools; the conversation after it starts with the summary
// appended to its first user message, so a new proxy session. Every
// request must pass (status 200, every tool call answered). Qwen Code
// sends no conversation id (no header, no "user" or "metadata" field, no
// id in the messages), so the new session has no lineage and the question
// cannot reach the nodes folded before /compress: that is logged, not
// failed (docs/proxy.md).
func TestQwenCodeCompressAfterFoldEvent(t *testing.T) {
	bin := agentBin(t, "qwen")
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	px := newProxyBudget(t, up, qwenLifecycleBudget)
	home, work := t.TempDir(), t.TempDir()
	env := qwenSetup(t, home, px.http.URL+"/v1")
	if out := runQwen(t, bin, work, env, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	n := len(px.records())
	out := runQwen(t, bin, work, env, "/compress", true)
	t.Logf("/compress: %q", tail(out, 300))
	m := len(px.records())
	answer := lastLine(runQwen(t, bin, work, env, askPrompt(probes[0]), true))
	recs := px.records()
	if m == n {
		t.Fatalf("/compress sent no request: %q", out)
	}
	sessions := map[string]bool{}
	folds, fromEarlier := 0, 0
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
		sessions[r.Session+"/g"+strconv.Itoa(r.Generation)] = true
		if r.WorkingSet != nil && r.WorkingSet.FoldEvent && i < n {
			folds++
		}
		for _, h := range r.Hydrated {
			if h.From != "" {
				fromEarlier++
			}
		}
	}
	for _, q := range up.ModelRequests(scripted.Chat) {
		checkChatPairs(t, q.Body)
	}
	if b := checkBinding(t, up); b.Rejected != 0 {
		t.Errorf("the model rejected %d requests", b.Rejected)
	}
	if folds == 0 {
		t.Errorf("no fold event before /compress")
	}
	t.Logf("%d requests (%d for /compress), stores %v, %d fold events before /compress, %d nodes hydrated from an earlier store; the question got %q",
		len(recs), m-n, sessions, folds, fromEarlier, answer)
	if !strings.HasPrefix(answer, "SEEN "+probes[0].Name) {
		t.Logf("KNOWN GAP: Qwen Code sends no conversation id, so the conversation after /compress has no lineage and the node folded before it is out of reach")
	}
}
