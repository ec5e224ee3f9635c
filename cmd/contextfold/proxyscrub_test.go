package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/proxy"
	"github.com/contextfold/contextfold/scrub"
)

// The two credentials of TestProxyScrubSettings: a test-fixture database
// URL that the settings allow, and a real-looking GitHub token.
const (
	fixturePassword = "Zx9Kq-Pw-8812ab"
	fixtureURL      = "postgres://app:" + fixturePassword + "@db.test:5432/app"
	realToken       = "ghp_Q7wErT9yUiOp3AsDfGh5JkLzXcVbNm1q2W8e"
)

// proxyConversation is an agent session of n tool calls (OpenAI Chat
// Completions) whose call 7 printed both credentials, ending with a
// question about it when ask is set.
func proxyConversation(n int, ask bool) []byte {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "run the tests of every package"}}
	for i := 1; i <= n; i++ {
		var log strings.Builder
		for k := 0; k < 40; k++ {
			fmt.Fprintf(&log, "=== RUN TestPkg%d_%d\n--- PASS: TestPkg%d_%d (0.0%ds) in pkg%d/file_%d.go\n", i, k, i, k, k%10, i, k)
		}
		if i == 7 {
			fmt.Fprintf(&log, "connecting to %s\nGITHUB_TOKEN=%s\n", fixtureURL, realToken)
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":"go test ./pkg%d"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": fmt.Sprintf("call_%d", i), "content": log.String()})
	}
	if ask {
		msgs = append(msgs, map[string]any{"role": "user", "content": "which database did the pkg7 tests connect to? show the pkg7 output"})
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs})
	return b
}

// TestProxyScrubSettings: through a real loopback proxy with
// --scrub-settings' allowlist, a fixture credential the settings allow is
// folded and hydrated unredacted, a real-looking token is still redacted,
// scrub-check on the session store reports what the allowlist let through,
// and a proxy started again on the same stores continues the session (its
// folded payloads compare with the store's allowlist, not without it).
func TestProxyScrubSettings(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	sc, _ := scrub.New()
	if len(sc.Find(fixtureURL)) == 0 || len(sc.Find(realToken)) == 0 {
		t.Fatal("the scrubber finds neither credential without the allowlist: the test proves nothing")
	}
	settings := filepath.Join(t.TempDir(), "scrub.json")
	os.WriteFile(settings, []byte(`{"scrub_allowlist": {"description": "test fixtures", "secrets": ["`+fixturePassword+`"]}}`), 0o644)
	allow, err := proxy.LoadScrubSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var forwarded [][]byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		forwarded = append(forwarded, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	var recs []proxy.RequestRecord
	start := func() *httptest.Server {
		srv, err := proxy.New(proxy.Options{Dir: dir, Upstream: up.URL, Harness: harness.Config{ContextBudget: 4000},
			ScrubAllowlist: allow, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnRequest: func(r proxy.RequestRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { hs.Close(); srv.Close() })
		return hs
	}
	send := func(hs *httptest.Server, body []byte) []byte {
		t.Helper()
		req, _ := http.NewRequest("POST", hs.URL+proxy.PathOpenAI, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.HeaderSession, "fixtures")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		mu.Lock()
		defer mu.Unlock()
		return forwarded[len(forwarded)-1]
	}
	hs := start()
	send(hs, proxyConversation(30, false))
	out := send(hs, proxyConversation(30, true))
	store := filepath.Join(dir, "fixtures", "g1")
	all := string(storeBytes(t, store))
	if !strings.Contains(all, fixtureURL) {
		t.Errorf("the allowed fixture credential was redacted in the store")
	}
	if strings.Contains(all, realToken) || !strings.Contains(all, "[REDACTED:github-pat]") {
		t.Errorf("the real-looking token was not redacted in the store")
	}
	if bytes.Contains(out, []byte(realToken)) {
		t.Errorf("the forwarded body holds the token: pkg7's output was not folded")
	}
	if !bytes.Contains(out, []byte("[REDACTED:github-pat]")) || !bytes.Contains(out, []byte(fixtureURL)) {
		t.Errorf("the hydrated pkg7 output should carry the fixture URL as is and the token redacted; forwarded:\n%.2000s", out)
	}
	stdout, errs, code := cli(t, "", "--dir", store, "scrub-check")
	if code != 0 || !strings.Contains(stdout, "(allowlist: secret)") || !strings.Contains(stdout, "0 contain secrets") {
		t.Errorf("scrub-check of the session store: exit %d\n%s%s", code, stdout, errs)
	}

	// The same session through a new proxy on the same stores: step 7's
	// payload (fixture kept, token redacted) matches the store's.
	hs.Close()
	hs = start()
	send(hs, proxyConversation(31, false))
	mu.Lock()
	last := recs[len(recs)-1]
	mu.Unlock()
	if last.Generation != 1 || strings.Contains(strings.Join(last.Warnings, " "), "diverged") {
		t.Errorf("after a restart the session went to generation %d: %v", last.Generation, last.Warnings)
	}
}

// A bad --scrub-settings file stops the proxy before it listens, naming the
// file and the problem.
func TestProxyScrubSettingsRefused(t *testing.T) {
	d := t.TempDir()
	cases := map[string]string{
		"missing.json": "",
		"array.json":   `[1]`,
		"key.json":     `{"scrub": false}`,
		"field.json":   `{"scrub_allowlist": {"paths": ["x"]}}`,
		"regex.json":   `{"scrub_allowlist": {"regexes": ["("]}}`,
		"target.json":  `{"scrub_allowlist": {"regexTarget": "file"}}`,
		"noallow.json": `{}`,
	}
	want := map[string]string{"missing.json": "no such file", "array.json": "not a JSON object", "key.json": `"scrub"`,
		"field.json": "paths", "regex.json": "regex", "target.json": "regexTarget", "noallow.json": "scrub_allowlist"}
	for name, content := range cases {
		p := filepath.Join(d, name)
		if content != "" {
			os.WriteFile(p, []byte(content), 0o644)
		}
		_, errs, code := cli(t, "", "proxy", "--scrub-settings", p, "--upstream", "http://127.0.0.1:9", "--dir", t.TempDir(), "--listen", "127.0.0.1:0")
		if code == 0 || !strings.Contains(errs, p) || !strings.Contains(errs, want[name]) {
			t.Errorf("%s: exit %d, stderr %q; want non-zero naming the file and %q", name, code, errs, want[name])
		}
	}
	out, _, _ := cli(t, "", "proxy", "--help")
	if !strings.Contains(out, "--scrub-settings") || !strings.Contains(out, "scrub_allowlist") {
		t.Errorf("proxy --help does not document --scrub-settings:\n%s", out)
	}
}
