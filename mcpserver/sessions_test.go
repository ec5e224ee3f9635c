package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// hooksProject makes a project directory as the Claude Code hooks leave
// it: the real binary's Stop hook folds the bundled Claude Code session into
// .contextfold/sessions/ledger; a second session, demo, holds the spec's
// demo session; a third, between them by name, has a damaged recall index.
// It returns the project's .contextfold.
func hooksProject(t *testing.T) string {
	t.Helper()
	proj := t.TempDir()
	transcript, err := filepath.Abs("../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"session_id": "ledger", "transcript_path": transcript, "cwd": proj, "hook_event_name": "Stop"})
	cmd := exec.Command(binary, "hook", "claude-code", "Stop", "--strict")
	cmd.Dir = proj
	cmd.Stdin = bytes.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Stop hook: %v\n%s", err, out)
	}
	root := filepath.Join(proj, ".contextfold")
	s, err := contextfold.Open(filepath.Join(root, "sessions", "demo"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(root, "sessions", "half")
	if err := os.MkdirAll(filepath.Join(broken, contextfold.ColdNodesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, contextfold.IndexFile), []byte(`{"ipcf_version": "1.1", "nodes": {"0": `), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// dirHash hashes every path under dir with its mode, size, modification
// time and content.
func dirHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := p + " " + fi.Mode().String() + " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// The MCP server given a project's .contextfold of the hooks, through the
// real binary and the SDK's client over stdio: it lists the sessions,
// searches all of them or one, fetches from a named session, reports the
// damaged store and serves the others, offers no tool that writes, and
// changes no byte under the directory.
func TestMCPOverSessionStores(t *testing.T) {
	root := hooksProject(t)
	before := dirHash(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--dir", root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("tool %s is not marked read-only", tl.Name)
		}
	}
	sort.Strings(names)
	if want := "fetch_archived_node list_sessions recall_archived_nodes scan_prompt"; strings.Join(names, " ") != want {
		t.Fatalf("tools %v, want %s", names, want)
	}

	var ls mcpserver.ListSessionsResult
	call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
	if len(ls.Sessions) != 3 {
		t.Fatalf("list_sessions: %+v", ls)
	}
	got := map[string]mcpserver.SessionInfo{}
	for _, si := range ls.Sessions {
		got[si.Session] = si
	}
	if got["ledger"].Nodes == 0 || got["demo"].Nodes != len(contextfold.DemoTurns()) || got["ledger"].FirstFoldedAt == "" || got["ledger"].LastFoldedAt == "" {
		t.Errorf("list_sessions counts and times: %+v", ls.Sessions)
	}
	if last := ls.Sessions[2]; last.Session != "half" || last.Error == "" {
		t.Errorf("the damaged store must be listed last with its error: %+v", last)
	}
	if got["demo"].Store != filepath.Join(root, "sessions", "demo") {
		t.Errorf("store path %q", got["demo"].Store)
	}

	// Across sessions: each candidate names its session; the damaged one is reported.
	var rr mcpserver.SessionRecallResult
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "PostgreSQL port migration"}, &rr)
	sessions := map[string]bool{}
	for _, c := range rr.Candidates {
		sessions[c.Session] = true
	}
	if !sessions["ledger"] || !sessions["demo"] || rr.Sessions != 2 {
		t.Errorf("recall across sessions: %d searched, sessions %v", rr.Sessions, sessions)
	}
	if len(rr.Candidates) > 20 {
		t.Errorf("recall across sessions returned %d candidates, more than the default 20", len(rr.Candidates))
	}
	for i := 1; i < len(rr.Candidates); i++ {
		if rr.Candidates[i].Score > rr.Candidates[i-1].Score {
			t.Fatalf("candidates not by score: %+v", rr.Candidates)
		}
	}
	if len(rr.FailedSessions) != 1 || rr.FailedSessions[0].Session != "half" {
		t.Errorf("failed sessions: %+v", rr.FailedSessions)
	}
	// The same call twice: the same bytes.
	again := call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "PostgreSQL port migration"}, nil)
	first := call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "PostgreSQL port migration"}, nil)
	if text(again) != text(first) {
		t.Error("recall across sessions is not deterministic")
	}

	// One session.
	var one mcpserver.SessionRecallResult
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "deadlock", "session": "ledger"}, &one)
	if len(one.Candidates) == 0 || one.Sessions != 1 {
		t.Fatalf("recall in session ledger: %+v", one)
	}
	for _, c := range one.Candidates {
		if c.Session != "ledger" {
			t.Errorf("candidate of session %s in a recall of ledger", c.Session)
		}
	}

	// Scan across sessions, within one per-turn budget.
	var sr mcpserver.SessionScanResult
	call(t, cs, mcpserver.ToolScan, map[string]any{"prompt": "What port are we using for PostgreSQL?"}, &sr)
	if len(sr.Selected) == 0 || sr.UsedTokens > sr.BudgetTokens || sr.Sessions != 2 || len(sr.FailedSessions) != 1 {
		t.Fatalf("scan across sessions: %+v", sr)
	}

	// Fetch: the session is needed when there are several; from a named one, verified.
	res := call(t, cs, mcpserver.ToolFetch, map[string]any{"step_id": 342}, nil)
	if !res.IsError || !strings.HasPrefix(text(res), "BadArgument") || !strings.Contains(text(res), "session") {
		t.Errorf("fetch without session: %v %q", res.IsError, text(res))
	}
	var f mcpserver.SessionFetchResult
	call(t, cs, mcpserver.ToolFetch, map[string]any{"session": "demo", "step_id": 342}, &f)
	if f.Session != "demo" || !f.Verified || f.Content == "" || f.StepID != 342 {
		t.Errorf("fetch demo 342: %+v", f)
	}
	pick := sr.Selected[0]
	var pf mcpserver.SessionFetchResult
	call(t, cs, mcpserver.ToolFetch, map[string]any{"session": pick.Session, "step_id": pick.StepID}, &pf)
	if pf.Content == "" {
		t.Errorf("fetch of the scan's first pick %s/%d: %+v", pick.Session, pick.StepID, pf)
	}
	res = call(t, cs, mcpserver.ToolFetch, map[string]any{"session": "half", "step_id": 0}, nil)
	if !res.IsError || !strings.HasPrefix(text(res), "StoreFileError") {
		t.Errorf("fetch from the damaged store: %v %q", res.IsError, text(res))
	}
	res = call(t, cs, mcpserver.ToolFetch, map[string]any{"session": "nope", "step_id": 1}, nil)
	if !res.IsError || !strings.HasPrefix(text(res), "BadArgument") || !strings.Contains(text(res), "demo, half, ledger") {
		t.Errorf("fetch from an unknown session: %v %q", res.IsError, text(res))
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fold_turn", Arguments: map[string]any{"step_id": 1, "summary": "x"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("fold_turn over session stores: %v", err)
	}
	if _, err := cs.ListResources(ctx, nil); err == nil {
		t.Log("resources/list answered") // no resources capability: either way, nothing is listed
	}

	// A session the hooks start while the server runs appears.
	s, err := contextfold.Open(filepath.Join(root, "sessions", "later"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fold(contextfold.Turn{StepID: 1, Summary: "zebrafish assay result", RawContent: "zebrafish assay: 42 larvae"}); err != nil {
		t.Fatal(err)
	}
	before = dirHash(t, root)
	var lr mcpserver.SessionRecallResult
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "zebrafish"}, &lr)
	if len(lr.Candidates) != 1 || lr.Candidates[0].Session != "later" {
		t.Errorf("a new session is not searched: %+v", lr)
	}
	cs.Close()
	if after := dirHash(t, root); after != before {
		t.Error("the MCP server changed files under the directory of session stores")
	}
}

// The command line over the same directory, through the real binary:
// sessions, recall and scan across sessions (the damaged store named on
// stderr, exit 0), --session to pick one, hydrate --session, and no byte
// changed.
func TestCLIOverSessionStores(t *testing.T) {
	root := hooksProject(t)
	before := dirHash(t, root)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, errs, code := run("sessions", "--dir", root, "--json")
	var ls struct {
		Sessions []struct {
			Session, Store, Error string
			Nodes                 int
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil || len(ls.Sessions) != 3 || ls.Sessions[2].Error == "" {
		t.Fatalf("sessions: %d %s %s", code, out, errs)
	}

	out, errs, code = run("recall", "--dir", root, "--json", "PostgreSQL", "port")
	var rr struct {
		Candidates []struct {
			Session string `json:"session"`
			StepID  int    `json:"step_id"`
		} `json:"candidates"`
		Searched int `json:"sessions_searched"`
		Failed   []struct {
			Session string `json:"session"`
		} `json:"failed_sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rr) != nil || rr.Searched != 2 || len(rr.Failed) != 1 || !strings.Contains(errs, "session half") {
		t.Fatalf("recall across sessions: %d %s %s", code, out, errs)
	}
	seen := map[string]bool{}
	for _, c := range rr.Candidates {
		seen[c.Session] = true
	}
	if !seen["demo"] || !seen["ledger"] {
		t.Errorf("recall across sessions: %v", seen)
	}

	out, _, code = run("scan", "--dir", root, "which migration hit a deadlock?")
	if code != 0 || !strings.Contains(out, "session ledger") || !strings.Contains(out, "searched 2 sessions") {
		t.Errorf("scan across sessions: %d %s", code, out)
	}

	// --session: that store alone, as --dir with its store; the JSON
	// names the session read.
	one, _, code := run("recall", "--dir", root, "--session", "demo", "--json", "PostgreSQL", "port")
	direct, _, code2 := run("recall", "--dir", filepath.Join(root, "sessions", "demo"), "--json", "PostgreSQL", "port")
	var picked struct {
		Session    struct{ ID, Source, Dir string } `json:"session"`
		Candidates json.RawMessage                  `json:"candidates"`
	}
	var plain bytes.Buffer
	if err := json.Unmarshal([]byte(one), &picked); err == nil {
		json.Indent(&plain, picked.Candidates, "", "  ")
		plain.WriteString("\n")
	}
	if code != 0 || code2 != 0 || plain.String() != direct || picked.Session.ID != "demo" || picked.Session.Dir != filepath.Join(root, "sessions", "demo") {
		t.Errorf("recall --session demo differs from --dir of its store:\n%s\n%s", one, direct)
	}
	out, _, code = run("hydrate", "342", "--dir", root, "--session", "demo", "--json")
	if code != 0 || !strings.Contains(out, `"step_id": 342`) {
		t.Errorf("hydrate --session: %d %s", code, out)
	}
	_, errs, code = run("hydrate", "1", "--dir", root, "--session", "nope")
	if code != 1 || !strings.Contains(errs, "demo, half, ledger") {
		t.Errorf("an unknown session: %d %s", code, errs)
	}
	_, errs, code = run("recall", "--dir", root, "--session", "half", "x")
	if code == 0 || !strings.Contains(errs, "half/recall_index.json") {
		t.Errorf("recall in the damaged session: %d %s", code, errs)
	}
	if after := dirHash(t, root); after != before {
		t.Error("the commands changed files under the directory of session stores")
	}
}

// mcp --sessions serves a directory before it holds any session (the
// hooks' .contextfold before their first Stop, when Claude Code starts the
// server): a session folded later is found; a store is refused.
func TestMCPSessionsBeforeTheFirstSession(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".contextfold") // not made yet
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--quiet", "--sessions", "--dir", root)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var ls mcpserver.ListSessionsResult
	call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
	if len(ls.Sessions) != 0 {
		t.Fatalf("sessions of an empty directory: %+v", ls)
	}
	var rr mcpserver.SessionRecallResult
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "PostgreSQL port"}, &rr)
	if len(rr.Candidates) != 0 || rr.Sessions != 0 {
		t.Fatalf("recall in an empty directory: %+v", rr)
	}
	if _, err := os.Stat(root); err == nil {
		t.Fatal("the server made the directory")
	}
	s, err := contextfold.Open(filepath.Join(root, "sessions", "first"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "PostgreSQL port"}, &rr)
	if len(rr.Candidates) == 0 || rr.Candidates[0].Session != "first" {
		t.Errorf("a session folded after the start is not searched: %+v", rr)
	}
	cs.Close()

	out, err := exec.Command(binary, "mcp", "--sessions", "--dir", filepath.Join(root, "sessions", "first")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is a store, not a directory of session stores") {
		t.Errorf("mcp --sessions on a store: %v %s", err, out)
	}
}

// A token pasted into a prompt by mistake (field report 22's u-2208) is not
// echoed back by the tools over a directory of session stores, nor by the
// CLI's scan and recall across sessions, in any letter case; the rest of
// the query still finds the demo session's turns.
func TestSessionRepliesEchoNoSecret(t *testing.T) {
	root := hooksProject(t)
	tok := "ghp_" + "FAKEfake0123456789FAKEfake0123456789"
	q := "I pasted my token by mistake: " + tok + " - ignore it. What port did PostgreSQL use?"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(binary, "mcp", "--dir", root)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var r mcpserver.SessionRecallResult
	res := call(t, cs, mcpserver.ToolRecall, map[string]any{"query": q}, &r)
	var sr mcpserver.SessionScanResult
	res2 := call(t, cs, mcpserver.ToolScan, map[string]any{"prompt": q}, &sr)
	all := text(res) + text(res2) + r.Query + strings.Join(r.Terms, " ") + strings.Join(sr.QueryTerms, " ")
	for _, args := range [][]string{{"scan", q}, {"scan", "--json", q}, {"recall", q}, {"recall", "--json", q}} {
		out, err := exec.Command(binary, append([]string{"--dir", root}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args[:len(args)-1], err, out)
		}
		all += string(out)
	}
	if strings.Contains(strings.ToLower(all), "fakefake0123456789") {
		t.Errorf("a reply echoes the token:\n%s", all)
	}
	if !strings.Contains(r.Query, "PostgreSQL") || len(r.Candidates) == 0 {
		t.Errorf("the rest of the query must still work: %q, %d candidates", r.Query, len(r.Candidates))
	}
}
