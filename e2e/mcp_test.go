package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/scripted"
)

const mcpFetch = "mcp__contextfold__fetch_archived_node"

// TestClaudeCodeMCP registers `contextfold mcp` in the project's .mcp.json;
// the scripted model calls mcp__contextfold__fetch_archived_node for a
// verified node and for a tampered one. The verified content comes back to
// the model in the next request; the tampered node is refused.
func TestClaudeCodeMCP(t *testing.T) {
	bin := agentBin(t, "claude")
	cf := needContextfold(t)
	home, work := t.TempDir(), t.TempDir()
	store := filepath.Join(work, ".contextfold")
	s, err := contextfold.Open(store, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for i := 1; i <= 200; i++ {
		log.WriteString("deploy: synced shard " + itoa(i) + " of the release\n")
	}
	const line = "rollback marker for the release is ZEBRA-7731" // "token … is VALUE" would be a prose secret, redacted at fold
	content := log.String() + line + "\n"
	if _, err := s.Fold(contextfold.Turn{StepID: 7, Summary: "deploy log of the release", RawContent: content}); err != nil {
		t.Fatal(err)
	}
	const tamperedLine = "the operator key is KITE-0042"
	res, err := s.Fold(contextfold.Turn{StepID: 9, Summary: "operator notes", RawContent: "operator notes\n" + tamperedLine + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	// Tamper with node 9 on disk: its bytes no longer match their hash.
	node := filepath.Join(filepath.Dir(store), filepath.FromSlash(res.Entry.FilePath))
	b, err := os.ReadFile(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(node, []byte(strings.Replace(string(b), "KITE-0042", "KITE-9999", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	mcp := map[string]any{"mcpServers": map[string]any{"contextfold": map[string]any{
		"command": cf, "args": []string{"mcp", "--dir", store, "--quiet"}}}}
	writeJSON(t, filepath.Join(work, ".mcp.json"), mcp)
	writeJSON(t, filepath.Join(work, ".claude", "settings.json"), map[string]any{"enableAllProjectMcpServers": true})

	script := func(tn *scripted.Turn) scripted.Reply {
		if !strings.Contains(tn.Prompt, "CFMCP") {
			return scripted.Reply{}
		}
		if !tn.HasTool(mcpFetch) {
			return scripted.Reply{Text: "NO-MCP-TOOL offered: " + strings.Join(tn.Tools, ",")}
		}
		switch len(tn.Results) {
		case 0:
			return scripted.Reply{Calls: []scripted.Call{{Name: mcpFetch, Input: map[string]any{"step_id": 7}}}}
		case 1:
			return scripted.Reply{Calls: []scripted.Call{{Name: mcpFetch, Input: map[string]any{"step_id": 9}}}}
		}
		return scripted.Reply{Text: "MCP done."}
	}
	up := scripted.New(sessionScript(script))
	defer up.Close()
	t.Cleanup(func() { dump(t, up) })
	env := append(claudeEnv(home, up.URL), "ENABLE_TOOL_SEARCH=false", "MCP_TIMEOUT=30000")

	r := runClaude(t, bin, work, env, "CFMCP: read archived step 7 and step 9 through the contextfold MCP server.", "")
	if r.Result != "MCP done." {
		t.Fatalf("the MCP session did not finish: %q", r.Result)
	}
	var results []string
	for _, rq := range up.ModelRequests(scripted.Anthropic) {
		if strings.Contains(rq.Turn.Prompt, "CFMCP") && len(rq.Turn.Results) > len(results) {
			results = rq.Turn.Results
		}
	}
	if len(results) != 2 {
		t.Fatalf("the model saw %d tool results, want 2", len(results))
	}
	if !strings.Contains(results[0], line) || !strings.Contains(results[0], "deploy: synced shard 1 of the release") {
		t.Errorf("the verified content of step 7 did not come back: %.300q", results[0])
	}
	if !strings.Contains(results[1], "IntegrityCheckError") || strings.Contains(results[1], "KITE-") {
		t.Errorf("the tampered step 9 was not refused: %.300q", results[1])
	}
	t.Logf("MCP: step 7 came back with %d characters; step 9: %.120q", len(results[0]), results[1])
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
