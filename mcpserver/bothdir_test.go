package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold/mcpserver"
)

// TestHooksAndProxyOnOneDirectory: a project's .contextfold that both the
// Claude Code hooks (the real `hook claude-code Stop`, sessions/<id>) and
// the real proxy (--dir .contextfold: its marker and <session>/g1) write
// into, in either order, is read whole by every reader: `sessions` lists
// both sessions with their SOURCE (text and --json), `recall` and `scan`
// search both (each result marked when the directory mixes sources),
// `hydrate --session` and `status --session` read either, and the MCP server (the SDK's client,
// started before the second writer) lists, recalls and fetches both,
// each with its source. No reader writes into the directory. Before, the
// hooks' sessions/ hid the proxy's sessions from every reader: `sessions`
// listed the hooks session alone, recall of the proxy's turn found nothing,
// and `status`/`hydrate` read the hooks session as "the only one".
func TestHooksAndProxyOnOneDirectory(t *testing.T) {
	transcript, err := filepath.Abs("../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	run := func(wd string, args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = wd, &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	for _, hooksFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("hooks first %v", hooksFirst), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			proj := t.TempDir()
			root := filepath.Join(proj, ".contextfold")
			stop := func() {
				payload, _ := json.Marshal(map[string]any{"session_id": "ledger", "transcript_path": transcript, "cwd": proj, "hook_event_name": "Stop"})
				cmd := exec.Command(binary, "hook", "claude-code", "Stop", "--strict")
				cmd.Dir, cmd.Stdin = proj, bytes.NewReader(payload)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("Stop hook: %v\n%s", err, out)
				}
			}
			var addr string
			if hooksFirst {
				stop()
			} else {
				addr = startProxy(t, root, up.URL)
				foldThroughProxy(t, addr)
			}
			// The MCP server starts between the two writers (Claude Code
			// starts it with the session).
			cmd := exec.Command(binary, "mcp", "--quiet", "--dir", root)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if hooksFirst {
				addr = startProxy(t, root, up.URL)
				foldThroughProxy(t, addr)
			} else {
				stop()
			}
			before := tree(t, root)

			// sessions: both, each with its source.
			out, errs, code := run(proj, "sessions")
			if code != 0 || !strings.HasPrefix(out, "SESSION ") || !strings.Contains(out, " SOURCE ") {
				t.Fatalf("sessions: %d %q %q", code, out, errs)
			}
			rows := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
				f := strings.Fields(l)
				rows[f[0]] = f[1]
			}
			if want := map[string]string{"ledger": "hooks", "ux-proxy-mcp/g1": "proxy"}; fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Errorf("sessions: %v, want %v:\n%s", rows, want, out)
			}
			out, _, _ = run(proj, "sessions", "--json")
			var doc struct {
				Sessions []struct{ Session, Source string } `json:"sessions"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Sessions) != 2 {
				t.Fatalf("sessions --json: %v %s", err, out)
			}
			var srcs []string
			for _, s := range doc.Sessions {
				srcs = append(srcs, s.Session+" "+s.Source)
			}
			sort.Strings(srcs)
			if !slices.Equal(srcs, []string{"ledger hooks", "ux-proxy-mcp/g1 proxy"}) {
				t.Errorf("sessions --json: %v", srcs)
			}

			// recall and scan search both; the results say which kind.
			out, errs, code = run(proj, "recall", "ledger_rw password authentication")
			if code != 0 || !strings.Contains(out, "searched 2 sessions") || !strings.Contains(out, "session ux-proxy-mcp/g1 (proxy)  step") {
				t.Errorf("recall: %d %q %q", code, out, errs)
			}
			out, _, _ = run(proj, "recall", "Postgres docker port 5433", "--json")
			var rec struct {
				Candidates []struct {
					Session, Source string
					StepID          int `json:"step_id"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal([]byte(out), &rec); err != nil || len(rec.Candidates) == 0 {
				t.Fatalf("recall --json: %v %s", err, out)
			}
			kinds := map[string]bool{}
			for _, c := range rec.Candidates {
				kinds[c.Source] = true
			}
			if !kinds["hooks"] || !kinds["proxy"] {
				t.Errorf("recall --json of a fact both sessions hold: sources %v:\n%s", kinds, out)
			}
			out, _, code = run(proj, "scan", "why did password authentication fail for ledger_rw?")
			if code != 0 || !strings.Contains(out, "(proxy)  step") {
				t.Errorf("scan: %d %q", code, out)
			}
			// hydrate picks either with --session; without it, two
			// sessions are not "the only one".
			for _, s := range []string{"ledger", "ux-proxy-mcp/g1"} {
				if out, errs, code := run(proj, "hydrate", "2", "--session", s); code != 0 || !strings.Contains(out, "verified") {
					t.Errorf("hydrate --session %s: %d %q %q", s, code, out, errs)
				}
			}
			if _, errs, code := run(proj, "status"); code != 1 || !strings.Contains(errs, "holding 2 sessions (1 from the hooks, 1 from the proxy), not one store: pick one with --session ID") {
				t.Errorf("status on both kinds: %d %q", code, errs)
			}
			// status picks either with --session too (a prefix: "ux").
			for s, want := range map[string]string{"ledger": filepath.Join("sessions", "ledger"), "ux": filepath.Join("ux-proxy-mcp", "g1")} {
				if out, errs, code := run(proj, "status", "--session", s); code != 0 || !strings.Contains(out, want+"\n") {
					t.Errorf("status --session %s: %d %q %q", s, code, out, errs)
				}
			}

			// MCP: the same sessions, each with its source.
			var ls mcpserver.ListSessionsResult
			call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
			got := map[string]string{}
			for _, s := range ls.Sessions {
				got[s.Session] = s.Source
			}
			if fmt.Sprint(got) != fmt.Sprint(map[string]string{"ledger": "hooks", "ux-proxy-mcp/g1": "proxy"}) {
				t.Errorf("list_sessions: %+v", ls.Sessions)
			}
			var rr mcpserver.SessionRecallResult
			call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "password authentication failed ledger_rw port 5433"}, &rr)
			if rr.Sessions != 2 || len(rr.Candidates) == 0 || rr.Candidates[0].Session != "ux-proxy-mcp/g1" || rr.Candidates[0].Source != "proxy" {
				t.Fatalf("recall_archived_nodes: %+v", rr)
			}
			var fr mcpserver.SessionFetchResult
			res := call(t, cs, mcpserver.ToolFetch, map[string]any{"session": "ux-proxy-mcp/g1", "step_id": rr.Candidates[0].StepID}, &fr)
			if res.IsError || fr.Source != "proxy" || !strings.Contains(fr.Content, `password authentication failed for user "ledger_rw"`) {
				t.Errorf("fetch from the proxy's session: %s %+v", text(res), fr)
			}
			// The start of one session's id names it (sessiondir.Resolve), and
			// the answer gives its whole id.
			res = call(t, cs, mcpserver.ToolFetch, map[string]any{"session": "ux", "step_id": rr.Candidates[0].StepID}, &fr)
			if res.IsError || fr.Session != "ux-proxy-mcp/g1" || fr.Source != "proxy" {
				t.Errorf("fetch by the start of the proxy session's id: %s %+v", text(res), fr)
			}
			res = call(t, cs, mcpserver.ToolFetch, map[string]any{"session": "ledger", "step_id": 4}, &fr)
			if res.IsError || fr.Source != "hooks" || !strings.Contains(fr.Content, "5433") {
				t.Errorf("fetch from the hooks' session: %s %+v", text(res), fr)
			}
			if after := tree(t, root); !slices.Equal(before, after) {
				var diff []string
				for _, p := range after {
					if !slices.Contains(before, p) {
						diff = append(diff, "+"+p)
					}
				}
				for _, p := range before {
					if !slices.Contains(after, p) {
						diff = append(diff, "-"+p)
					}
				}
				t.Errorf("the readers changed the directory: %v", diff)
			}
		})
	}
}

// tree lists the paths under root with their sizes, but for the spare
// files the running proxy preallocates in its stores in the background.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(fi.Name(), ".spare-") {
			return nil
		}
		if strings.HasPrefix(fi.Name(), "session-state-g") || strings.HasPrefix(fi.Name(), ".state-") && strings.HasSuffix(fi.Name(), ".tmp") {
			// The proxy (a writer, still running) saves its session state
			// after it has answered, through a temporary .state-*.tmp
			// (proxy's stateTempPattern) renamed into place: either may
			// land, or the temporary go, after the first tree is taken.
			// They are the proxy's, never a reader's.
			return nil
		}
		out = append(out, fmt.Sprintf("%s %d", p, fi.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMCPInstructionsHoldAfterTheSwitch: `mcp --dir D` on a D that holds
// nothing serves one store until a proxy starts on D, then the proxy's
// sessions (tools/list_changed). A client reads the server's instructions
// once, at initialize: they now say both (one archive until a proxy starts
// on the directory, then its sessions with list_sessions and a session
// argument), and recall_archived_nodes, scan_prompt and fetch_archived_node
// each end by saying which is served, before and after the switch (the
// real binary and the SDK's client). Before, the instructions described one
// store only, and stayed so after the switch, when fetch needs a session
// and list_sessions is the way to learn them; the descriptions did not say
// which was served. A server that cannot switch (a store, or a directory of
// session stores) keeps its own instructions.
func TestMCPInstructionsHoldAfterTheSwitch(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer up.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	connect := func(dir string, changed chan struct{}) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			},
		})
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(binary, "mcp", "--quiet", "--dir", dir)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	descriptions := func(cs *mcp.ClientSession) map[string]string {
		t.Helper()
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, tl := range lt.Tools {
			m[tl.Name] = tl.Description
		}
		return m
	}
	const storeSays, sessionsSays = "Served here: one archive (one store)", "Served here: the archives of several sessions"
	shared := []string{mcpserver.ToolRecall, mcpserver.ToolScan, mcpserver.ToolFetch}

	dir := filepath.Join(t.TempDir(), "proxy-sessions")
	changed := make(chan struct{}, 1)
	cs := connect(dir, changed)
	ins := cs.InitializeResult().Instructions
	for _, want := range []string{"one archive until a contextfold proxy starts", "list_sessions appears", "with the session the result names", "BadArgument"} {
		if !strings.Contains(ins, want) {
			t.Errorf("instructions of a server that may switch lack %q:\n%s", want, ins)
		}
	}
	d := descriptions(cs)
	for _, n := range shared {
		if !strings.HasSuffix(d[n], storeSays+"; no session argument.") {
			t.Errorf("before the switch, %s does not say one store is served: %q", n, d[n])
		}
	}
	startProxy(t, dir, up.URL)
	d = descriptions(cs)
	if _, ok := d[mcpserver.ToolSessions]; !ok {
		t.Fatalf("no switch after the proxy started: %v", d)
	}
	for _, n := range shared {
		if !strings.Contains(d[n], sessionsSays) || strings.Contains(d[n], storeSays) {
			t.Errorf("after the switch, %s does not say sessions are served: %q", n, d[n])
		}
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("no notifications/tools/list_changed")
	}

	// Servers that cannot switch keep their own instructions.
	store := filepath.Join(t.TempDir(), "store")
	if out, err := exec.Command(binary, "--dir", store, "fold", "1", "make: *** [all] Error 2").CombinedOutput(); err != nil {
		t.Fatalf("fold: %v %s", err, out)
	}
	cs = connect(store, make(chan struct{}, 1))
	if ins := cs.InitializeResult().Instructions; strings.Contains(ins, "proxy") || strings.Contains(ins, "list_sessions") {
		t.Errorf("a store's instructions speak of sessions: %s", ins)
	}
	if d := descriptions(cs); !strings.Contains(d[mcpserver.ToolFetch], storeSays) {
		t.Errorf("a store's fetch_archived_node: %q", d[mcpserver.ToolFetch])
	}
	cs = connect(dir, make(chan struct{}, 1)) // the proxy's --dir: its sessions from the start
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "list_sessions") || strings.Contains(ins, "until a contextfold proxy") {
		t.Errorf("a directory of session stores' instructions: %s", ins)
	}
	if d := descriptions(cs); !strings.Contains(d[mcpserver.ToolFetch], sessionsSays) {
		t.Errorf("a directory of session stores' fetch_archived_node: %q", d[mcpserver.ToolFetch])
	}
}
