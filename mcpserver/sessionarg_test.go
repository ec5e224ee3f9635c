package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// sessionArgProject makes a project's .contextfold that the real Claude
// Code hooks (two sessions whose UUIDs share their first four characters)
// and the real proxy (session ux-proxy-mcp, one store g1) wrote into,
// plus a proxy session ux-two with two stores (g1, g2: one per history the
// client sent; laid out with the library, as the proxy lays them out). It
// returns the directory and the two hooks session ids.
func sessionArgProject(t *testing.T) (root, a, b string) {
	t.Helper()
	proj := t.TempDir()
	root = filepath.Join(proj, ".contextfold")
	a, b = "0d7c2a41-aaaa-4bbb-8ccc-000000000001", "0d7c9e55-bbbb-4ccc-8ddd-000000000002"
	transcript, err := filepath.Abs("../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, b} {
		payload, _ := json.Marshal(map[string]any{"session_id": id, "transcript_path": transcript, "cwd": proj, "hook_event_name": "Stop"})
		cmd := exec.Command(binary, "hook", "claude-code", "Stop", "--strict")
		cmd.Dir, cmd.Stdin = proj, bytes.NewReader(payload)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("Stop hook %s: %v\n%s", id, err, out)
		}
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	foldThroughProxy(t, startProxy(t, root, up.URL))
	for _, g := range []string{"g1", "g2"} {
		s, err := contextfold.Open(filepath.Join(root, "ux-two", g), contextfold.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
			t.Fatal(err)
		}
	}
	return root, a, b
}

// cliJSON runs the real binary with args and decodes its --json output.
func cliJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	data, err := exec.Command(binary, args...).Output()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%v: %v in %s", args, err, data)
	}
}

// TestMCPSessionArgumentAsCLI: the MCP tools over a directory of session
// stores take their session argument as the command line's --session
// does (one resolver, sessiondir.Resolve): a session's whole id, the
// first characters of one id alone, or a proxy session's name alone for
// its only store. Through the real binary and the SDK's client, each form
// reads the same session as `--session` on the command line (recall's
// candidates, scan's picks, the fetched node, each compared with the
// CLI's --json), and the reply names the session read by its whole id; a
// start two ids share, a proxy session with two stores and an unknown id
// are BadArgument naming the candidates, as the CLI refuses them. The
// descriptions say what the argument accepts. No byte changes.
//
// Before: the tools resolved the same way, but every description said
// "the session id from list_sessions", so a model never passed a start of
// an id; and recall and scan did not say which session a start had read.
func TestMCPSessionArgumentAsCLI(t *testing.T) {
	root, a, b := sessionArgProject(t)
	before := dirHash(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(binary, "mcp", "--quiet", "--dir", root)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// The descriptions say what session accepts.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == mcpserver.ToolSessions {
			if !strings.Contains(tl.Description, "the first characters of one id alone") {
				t.Errorf("%s does not say the other tools take a start of an id: %q", tl.Name, tl.Description)
			}
			continue
		}
		schema, _ := json.Marshal(tl.InputSchema)
		var in struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		json.Unmarshal(schema, &in)
		for _, w := range []string{"the first characters of one id alone", "a proxy session's name alone"} {
			if d := in.Properties["session"].Description; !strings.Contains(d, w) {
				t.Errorf("%s: the session argument's description lacks %q: %q", tl.Name, w, d)
			}
			if !strings.Contains(tl.Description, w) {
				t.Errorf("%s: the description lacks %q: %q", tl.Name, w, tl.Description)
			}
		}
	}

	bStore := filepath.Join(root, "sessions", b)
	pStore := filepath.Join(root, "ux-proxy-mcp", "g1")
	const query, prompt = "ledger_rw password authentication", "why did password authentication fail for ledger_rw?"
	for id, want := range map[string]mcpserver.Read{
		b:                 {Session: b, Source: "hooks", Store: bStore},
		"0d7c9":           {Session: b, Source: "hooks", Store: bStore},
		"ux-proxy-mcp":    {Session: "ux-proxy-mcp/g1", Source: "proxy", Store: pStore},
		"ux-proxy-mcp/g1": {Session: "ux-proxy-mcp/g1", Source: "proxy", Store: pStore},
		"ux-pr":           {Session: "ux-proxy-mcp/g1", Source: "proxy", Store: pStore},
	} {
		var rr mcpserver.SessionRecallResult
		call(t, cs, mcpserver.ToolRecall, map[string]any{"query": query, "session": id}, &rr)
		var cr struct {
			Session    struct{ ID, Source, Dir string } `json:"session"`
			Candidates []struct {
				StepID int `json:"step_id"`
			} `json:"candidates"`
		}
		cliJSON(t, &cr, "recall", "--dir", root, "--session", id, "--json", query)
		var got, cli []int
		for _, c := range rr.Candidates {
			got = append(got, c.StepID)
			if c.Session != want.Session {
				t.Errorf("recall session %s: a candidate of session %s", id, c.Session)
			}
		}
		for _, c := range cr.Candidates {
			cli = append(cli, c.StepID)
		}
		if rr.Read != want || cr.Session.ID != want.Session || cr.Session.Dir != want.Store || len(got) == 0 || !slices.Equal(got, cli) {
			t.Errorf("recall session %s: MCP read %+v steps %v; CLI --session read %+v steps %v; want %+v", id, rr.Read, got, cr.Session, cli, want)
		}

		var sr mcpserver.SessionScanResult
		call(t, cs, mcpserver.ToolScan, map[string]any{"prompt": prompt, "session": id}, &sr)
		var cs2 struct {
			Session  struct{ ID string } `json:"session"`
			Selected []struct {
				StepID int `json:"step_id"`
			} `json:"selected"`
		}
		cliJSON(t, &cs2, "scan", "--dir", root, "--session", id, "--json", prompt)
		got, cli = nil, nil
		for _, p := range sr.Selected {
			got = append(got, p.StepID)
		}
		for _, p := range cs2.Selected {
			cli = append(cli, p.StepID)
		}
		if sr.Read != want || cs2.Session.ID != want.Session || len(got) == 0 || !slices.Equal(got, cli) {
			t.Errorf("scan session %s: MCP read %+v picks %v; CLI picks %v (%s)", id, sr.Read, got, cli, cs2.Session.ID)
		}

		step := rr.Candidates[0].StepID
		var f mcpserver.SessionFetchResult
		call(t, cs, mcpserver.ToolFetch, map[string]any{"session": id, "step_id": step}, &f)
		var ch struct {
			Session        struct{ ID string } `json:"session"`
			Content        string              `json:"content"`
			ArtifactSHA256 string              `json:"artifact_sha256"`
		}
		cliJSON(t, &ch, "hydrate", "--dir", root, "--session", id, "--json", "--", strconv.Itoa(step))
		if f.Session != want.Session || f.Source != want.Source || !f.Verified || f.ArtifactSHA256 != ch.ArtifactSHA256 || f.Content != ch.Content || ch.Session.ID != want.Session {
			t.Errorf("fetch session %s step %d: %s %s %s; CLI hydrate %s %s", id, step, f.Session, f.Source, f.ArtifactSHA256, ch.Session.ID, ch.ArtifactSHA256)
		}
	}

	// What the CLI refuses, the tools refuse, naming the same candidates.
	for id, names := range map[string][]string{
		"0d7c":   {a + " (hooks)", b + " (hooks)", "give more of the id"},
		"ux-two": {"ux-two/g1", "ux-two/g2"},
		"nope":   {`no session "nope"`, b, "ux-two/g2"},
	} {
		out, err := exec.Command(binary, "recall", "--dir", root, "--session", id, "x").CombinedOutput()
		for _, w := range names {
			if err == nil || !strings.Contains(string(out), w) {
				t.Errorf("recall --session %q: %v %q lacks %q", id, err, out, w)
			}
		}
		for _, tool := range []string{mcpserver.ToolRecall, mcpserver.ToolScan, mcpserver.ToolFetch} {
			args := map[string]any{"session": id}
			switch tool {
			case mcpserver.ToolRecall:
				args["query"] = "x"
			case mcpserver.ToolScan:
				args["prompt"] = "x"
			default:
				args["step_id"] = 1
			}
			res := call(t, cs, tool, args, nil)
			for _, w := range names {
				if !res.IsError || !strings.HasPrefix(text(res), "BadArgument: ") || !strings.Contains(text(res), w) {
					t.Errorf("%s session %q: %v %q lacks %q", tool, id, res.IsError, text(res), w)
				}
			}
		}
	}
	cs.Close()
	if dirHash(t, root) != before {
		t.Error("the MCP server or the CLI changed files under the directory of session stores")
	}
}

// TestMCPServesOneSession: mcp --session ID serves that one session of a
// directory of session stores, read-only, resolved as every command's
// --session (a start of an id here): list_sessions lists it alone, recall
// and scan without a session read it alone, fetch needs no session, a
// session argument naming another session is unknown, and the
// descriptions say which session is served; stderr names it. An
// ambiguous start, --session on a store, with --sessions=false, and on a
// directory that holds no session are refused, exit 1. Before, mcp took
// no --session ("unknown flag: --session").
func TestMCPServesOneSession(t *testing.T) {
	root, a, b := sessionArgProject(t)
	before := dirHash(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--dir", root, "--session", "0d7c9")
	var stderr bytes.Buffer // read after Close, which waits for the process
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	bStore := filepath.Join(root, "sessions", b)

	var ls mcpserver.ListSessionsResult
	call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
	if len(ls.Sessions) != 1 || ls.Sessions[0].Session != b || ls.Sessions[0].Store != bStore || ls.Sessions[0].Nodes == 0 {
		t.Fatalf("list_sessions: %+v", ls)
	}
	var rr mcpserver.SessionRecallResult
	call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "ledger_rw password"}, &rr)
	if rr.Sessions != 1 || len(rr.Candidates) == 0 {
		t.Fatalf("recall: %+v", rr)
	}
	for _, c := range rr.Candidates {
		if c.Session != b {
			t.Errorf("recall: a candidate of session %s", c.Session)
		}
	}
	var sr mcpserver.SessionScanResult
	call(t, cs, mcpserver.ToolScan, map[string]any{"prompt": "why did password authentication fail for ledger_rw?"}, &sr)
	if sr.Sessions != 1 || len(sr.Selected) == 0 || sr.Selected[0].Session != b {
		t.Errorf("scan: %+v", sr)
	}
	var f mcpserver.SessionFetchResult
	call(t, cs, mcpserver.ToolFetch, map[string]any{"step_id": rr.Candidates[0].StepID}, &f)
	if f.Session != b || !f.Verified || f.Content == "" {
		t.Errorf("fetch without session: %+v", f)
	}
	if res := call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "x", "session": a}, nil); !res.IsError || !strings.Contains(text(res), `no session "`+a+`"`) {
		t.Errorf("recall in another session: %v %q", res.IsError, text(res))
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name != mcpserver.ToolSessions && !strings.HasSuffix(tl.Description, "Served here: one session, "+b+" (hooks), of a directory of session stores, read-only; no session argument is needed.") {
			t.Errorf("%s does not say which session is served: %q", tl.Name, tl.Description)
		}
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "--session 0d7c9 is session "+b+" (hooks): serving its store "+bStore+" alone, read-only") {
		t.Errorf("stderr does not name the session: %q", stderr.String())
	}
	// The start log names the session's store, not the directory of
	// session stores it was found in.
	logged := false
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "serving MCP on stdio") {
			logged = true
			if !strings.Contains(line, "store="+bStore) {
				t.Errorf("the start log does not name the session's store %s: %q", bStore, line)
			}
		}
	}
	if !logged {
		t.Errorf("no start log on stderr: %q", stderr.String())
	}
	if dirHash(t, root) != before {
		t.Error("mcp --session changed files under the directory of session stores")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", root, "--session", "0d7c"}, `session "0d7c" under ` + root + " is ambiguous"},
		{[]string{"--dir", bStore, "--session", "0d7c9"}, bStore + " is one store, not a directory of session stores"},
		{[]string{"--dir", root, "--session", "0d7c9", "--sessions=false"}, "--sessions=false serves --dir as one store"},
		{[]string{"--dir", filepath.Join(t.TempDir(), ".contextfold"), "--session", "x"}, "does not exist"},
		{[]string{"--dir", root, "--session", "0d7c", "--json"}, `"candidates"`},
	} {
		cmd := exec.Command(binary, append([]string{"mcp"}, c.args...)...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), c.want) {
			t.Errorf("mcp %v: %v %q, want exit 1 and %q", c.args, err, out, c.want)
		}
	}
}
