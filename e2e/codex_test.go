package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/scripted"
)

// codexSetup writes $HOME/.codex/config.toml pointing Codex at baseURL
// (…/v1) on the Responses API, with update checks, analytics, feedback and
// the features that call home off, and returns the environment to run it
// with. top are more top-level settings (TOML lines), e.g. an
// auto-compaction limit.
func codexSetup(t *testing.T, home, baseURL string, top ...string) []string {
	t.Helper()
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "contextfold"
check_for_update_on_startup = false
%s

[analytics]
enabled = false

[feedback]
enabled = false

# Features that reach out to github.com, api.github.com or chatgpt.com at
# start (plugin marketplace, apps, model discovery, update notices).
[features]
apps = false
plugins = false
remote_plugin = false
plugin_sharing = false
in_app_updates = false
api_key_model_discovery = false
tool_suggest = false

[model_providers.contextfold]
name = "contextfold"
base_url = %q
env_key = "CONTEXTFOLD_E2E_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
`, strings.Join(top, "\n"), baseURL)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"HOME=" + home, "CODEX_HOME=" + dir, "CONTEXTFOLD_E2E_KEY=sk-dummy-e2e", "RUST_LOG=error"}
}

func runCodex(t *testing.T, bin, work string, env []string, prompt string, resume bool) string {
	t.Helper()
	args := []string{"exec"}
	if resume {
		args = append(args, "resume", "--last")
	}
	args = append(args, "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt)
	r := runAgent(t, 4*time.Minute, work, env, bin, args...)
	if r.Err != nil {
		t.Fatalf("codex failed: %v\nstdout: %s\nstderr: %s", r.Err, tail(r.Stdout, 2000), tail(r.Stderr, 3000))
	}
	return strings.TrimSpace(r.Stdout)
}

// checkResponsesPairs fails unless every function_call of a forwarded
// Responses input has its *_call_output and every output answers an
// earlier call.
func checkResponsesPairs(t *testing.T, body []byte) (pairs int) {
	t.Helper()
	var req struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("forwarded body: %v", err)
	}
	open := map[string]bool{}
	for i, it := range req.Input {
		switch {
		case strings.HasSuffix(it.Type, "_call_output"):
			if !open[it.CallID] {
				t.Errorf("input[%d]: %s %s answers no earlier call", i, it.Type, it.CallID)
			}
			delete(open, it.CallID)
			pairs++
		case strings.HasSuffix(it.Type, "_call"):
			open[it.CallID] = true
		}
	}
	for id := range open {
		t.Errorf("call %s has no output", id)
	}
	return pairs
}

// TestCodexThroughProxy runs Codex CLI through the proxy on the Responses
// API: the 42-step session, then resumed questions.
func TestCodexThroughProxy(t *testing.T) {
	bin := agentBin(t, "codex")
	up := scripted.NewWith(sessionScript(nil), thinkingOptions)
	defer up.Close()
	px := newProxy(t, up)
	home, work := t.TempDir(), t.TempDir()
	env := codexSetup(t, home, px.http.URL+"/v1")

	start := time.Now()
	out := runCodex(t, bin, work, env, runPrompt, false)
	if !strings.Contains(out, "Build session done: ran 42 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	var answers []string
	var hyd []string
	for _, p := range probes {
		n := len(px.records())
		answers = append(answers, lastLine(runCodex(t, bin, work, env, askPrompt(p), true)))
		hyd = append(hyd, px.hydratedSince(n, p))
	}
	checkAnswers(t, answers, hyd, px.clientHad)
	t.Logf("Codex session through the proxy: %v", time.Since(start).Round(time.Millisecond))
	checkProxySession(t, px, up, scripted.Responses, checkResponsesPairs)
	if st := px.srv.Stats(); st.Chained != 0 || st.UnknownShape != 0 {
		t.Logf("stats: chained %d, unknown shape %d", st.Chained, st.UnknownShape)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
