package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// TestMCPHooksDirectoryBeforeTheFirstStop: the install command of
// docs/agents.md, `mcp --dir "$PWD/.contextfold"` without --sessions,
// started by Claude Code before the hooks' first Stop (.contextfold
// missing, or an empty directory) serves it as a directory of session
// stores: the session the real Stop hook folds afterwards is listed and
// searched at the next call, and the server writes nothing there (no store
// made in .contextfold itself). A directory of another name that already
// holds the hooks' sessions/ directory is served so too. Before, such a
// directory was served as one empty store whose tools never saw the
// hooks' sessions (until the next restart), and fold_turn made it a store.
// --sessions=false keeps the old behaviour (one store, fold_turn), and is
// refused on a directory that holds sessions; a .contextfold that is a
// store is still served as that store.
func TestMCPHooksDirectoryBeforeTheFirstStop(t *testing.T) {
	transcript, err := filepath.Abs("../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	connect := func(args ...string) (*mcp.ClientSession, *bytes.Buffer) {
		t.Helper()
		var stderr bytes.Buffer
		cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("mcp %v: %v\n%s", args, err, stderr.String())
		}
		return cs, &stderr
	}
	tools := func(cs *mcp.ClientSession) []string {
		t.Helper()
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	stop := func(proj string) {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"session_id": "ledger", "transcript_path": transcript, "cwd": proj, "hook_event_name": "Stop"})
		cmd := exec.Command(binary, "hook", "claude-code", "Stop", "--strict")
		cmd.Dir = proj
		cmd.Stdin = bytes.NewReader(payload)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("Stop hook: %v\n%s", err, out)
		}
	}

	for _, made := range []bool{false, true} {
		proj := t.TempDir()
		root := filepath.Join(proj, ".contextfold")
		if made {
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cs, stderr := connect("--dir", root)
		names := tools(cs)
		if !slices.Contains(names, mcpserver.ToolSessions) || slices.Contains(names, mcpserver.ToolFold) {
			t.Fatalf(".contextfold made %v: tools %v; want the session tools (list_sessions, no fold_turn)", made, names)
		}
		var ls mcpserver.ListSessionsResult
		call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
		if len(ls.Sessions) != 0 {
			t.Fatalf("sessions before the first Stop: %+v", ls)
		}
		stop(proj)
		call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
		if len(ls.Sessions) != 1 || ls.Sessions[0].Session != "ledger" || ls.Sessions[0].Nodes == 0 {
			t.Errorf(".contextfold made %v: the session the Stop hook folded after the start is not listed: %+v", made, ls)
		}
		var rr mcpserver.SessionRecallResult
		call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "Postgres in docker on port 5433"}, &rr)
		if len(rr.Candidates) == 0 || rr.Candidates[0].Session != "ledger" {
			t.Errorf(".contextfold made %v: recall does not search the new session: %+v", made, rr)
		}
		cs.Close()
		if !strings.Contains(stderr.String(), "holds no session store yet") || !strings.Contains(stderr.String(), "--sessions=false") {
			t.Errorf("stderr does not say how it serves the directory and how to fold into it: %q", stderr.String())
		}
		ents, _ := os.ReadDir(root)
		if len(ents) != 1 || ents[0].Name() != "sessions" {
			t.Errorf(".contextfold made %v: the directory holds %v; want the hooks' sessions/ alone", made, ents)
		}

		// --sessions=false on a directory that holds sessions: refused.
		out, err := exec.Command(binary, "mcp", "--sessions=false", "--dir", root).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--sessions=false") || !strings.Contains(string(out), "1 session store") {
			t.Errorf("--sessions=false over the hooks' sessions: %v %s", err, out)
		}
	}

	// Another name, with the hooks' (empty) sessions/ directory.
	other := filepath.Join(t.TempDir(), "archive")
	if err := os.MkdirAll(filepath.Join(other, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs, _ := connect("--quiet", "--dir", other)
	if names := tools(cs); !slices.Contains(names, mcpserver.ToolSessions) {
		t.Errorf("a directory holding sessions/: tools %v", names)
	}
	s, err := contextfold.Open(filepath.Join(other, "sessions", "first"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	var rr mcpserver.SessionRecallResult
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "PostgreSQL port"}, &rr)
	if len(rr.Candidates) == 0 || rr.Candidates[0].Session != "first" {
		t.Errorf("a session folded after the start is not searched: %+v", rr)
	}
	cs.Close()

	// --sessions=false: one store, which fold_turn makes.
	fresh := filepath.Join(t.TempDir(), ".contextfold")
	cs, _ = connect("--quiet", "--sessions=false", "--dir", fresh)
	if names := tools(cs); !slices.Contains(names, mcpserver.ToolFold) || slices.Contains(names, mcpserver.ToolSessions) {
		t.Fatalf("--sessions=false: tools %v; want one store's (fold_turn)", names)
	}
	res := call(t, cs, mcpserver.ToolFold, map[string]any{"step_id": 1, "summary": "build log", "content": "make: *** [all] Error 2\n"}, nil)
	if res.IsError {
		t.Fatalf("fold_turn: %s", text(res))
	}
	cs.Close()
	if _, err := os.Stat(filepath.Join(fresh, contextfold.IndexFile)); err != nil {
		t.Fatalf("fold_turn with --sessions=false made no store: %v", err)
	}
	// That .contextfold is now a store: served as one without the flag.
	cs, _ = connect("--quiet", "--dir", fresh)
	if names := tools(cs); !slices.Contains(names, mcpserver.ToolFold) {
		t.Errorf("a .contextfold that is a store: tools %v", names)
	}
	cs.Close()
}
