//go:build unix

package mcpserver_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// TestCopiedStoreIsNotCalledHealthy: in a store copied under another name
// (its index still points into the old directory, so no node can be
// fetched) store_status, scan_prompt and recall_archived_nodes answer a tool
// error naming the copy and the one command that fixes it, instead of
// "healthy" and steps that fetch_archived_node then refuses. Before:
// store_status answered 8 nodes and scan_prompt recommended steps 342, 137
// and 447.
func TestCopiedStoreIsNotCalledHealthy(t *testing.T) {
	s := demoStore(t)
	copied := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("cp", "-r", s.Dir(), copied).CombinedOutput(); err != nil {
		t.Skipf("cp: %v %s", err, out)
	}
	c, err := contextfold.Open(copied, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, c)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"store_status", map[string]any{}},
		{"scan_prompt", map[string]any{"prompt": contextfold.DemoPrompt}},
		{"recall_archived_nodes", map[string]any{"query": "port"}},
		{"fetch_archived_node", map[string]any{"step_id": 137}},
	} {
		res := call(t, cs, tc.tool, tc.args, nil)
		msg := text(res)
		if !res.IsError || !strings.Contains(msg, "copied or renamed") || !strings.Contains(msg, "repair --apply") || !strings.Contains(msg, copied) {
			t.Errorf("%s on a copied store: error %v, %q", tc.tool, res.IsError, msg)
		}
	}
	if _, err := c.Repair(true); err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, "scan_prompt", map[string]any{"prompt": contextfold.DemoPrompt}, nil); res.IsError {
		t.Errorf("scan_prompt after repair --apply: %s", text(res))
	}
}
