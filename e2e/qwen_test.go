package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/scripted"
)

// qwenSetup writes $HOME/.qwen/settings.json (update checks, usage
// statistics, telemetry and managed auto-memory off; tools approved) and
// returns the environment pointing Qwen Code at baseURL (…/v1) on the Chat
// Completions API.
func qwenSetup(t *testing.T, home, baseURL string) []string {
	t.Helper()
	dir := filepath.Join(home, ".qwen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"memory":    map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
		"tools":     map[string]any{"approvalMode": "yolo"},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"HOME=" + home, "OPENAI_BASE_URL=" + baseURL, "OPENAI_API_KEY=sk-dummy-e2e", "OPENAI_MODEL=qwen3-coder-plus",
		"QWEN_TELEMETRY_ENABLED=false", "QWEN_USAGE_STATISTICS_ENABLED=false"}
}

func runQwen(t *testing.T, bin, work string, env []string, prompt string, resume bool) string {
	t.Helper()
	args := []string{"-p", prompt, "--yolo", "--output-format", "text"}
	if resume {
		args = append(args, "--continue")
	}
	r := runAgent(t, 4*time.Minute, work, env, bin, args...)
	if r.Err != nil {
		t.Fatalf("qwen failed: %v\nstdout: %s\nstderr: %s", r.Err, tail(r.Stdout, 2000), tail(r.Stderr, 3000))
	}
	return strings.TrimSpace(r.Stdout)
}

// checkChatPairs fails unless every tool call of an assistant message is
// answered by a tool message before the next assistant message, and every
// tool message answers a call.
func checkChatPairs(t *testing.T, body []byte) (pairs int) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("forwarded body: %v", err)
	}
	open := map[string]bool{}
	for i, m := range req.Messages {
		switch m.Role {
		case "assistant":
			for id := range open {
				t.Errorf("message %d: tool call %s was never answered", i, id)
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case "tool":
			if !open[m.ToolCallID] {
				t.Errorf("message %d: tool message %s answers no open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			pairs++
		}
	}
	return pairs
}

// TestQwenCodeThroughProxy runs Qwen Code through the proxy on the Chat
// Completions API: the 42-step session, then resumed questions.
func TestQwenCodeThroughProxy(t *testing.T) {
	bin := agentBin(t, "qwen")
	up := scripted.NewWith(sessionScript(nil), thinkingOptions)
	defer up.Close()
	px := newProxy(t, up)
	home, work := t.TempDir(), t.TempDir()
	env := qwenSetup(t, home, px.http.URL+"/v1")

	start := time.Now()
	out := runQwen(t, bin, work, env, runPrompt, false)
	if !strings.Contains(out, "Build session done: ran 42 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	var answers []string
	var hyd []string
	for _, p := range probes {
		n := len(px.records())
		answers = append(answers, lastLine(runQwen(t, bin, work, env, askPrompt(p), true)))
		hyd = append(hyd, px.hydratedSince(n, p))
	}
	checkAnswers(t, answers, hyd, px.clientHad)
	t.Logf("Qwen Code session through the proxy: %v", time.Since(start).Round(time.Millisecond))
	checkProxySession(t, px, up, scripted.Chat, checkChatPairs)
}
