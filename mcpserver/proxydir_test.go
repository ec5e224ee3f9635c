package mcpserver_test

import (
	"bufio"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold/mcpserver"
	"github.com/contextfold/contextfold/proxy"
)

// TestMCPOnAProxyDirInEitherOrder: `contextfold proxy --dir D` and
// `contextfold mcp --dir D`, both without --sessions, on a D that does not
// exist yet, started in either order (the real binary, a loopback upstream,
// the SDK's client): the session the proxy folds afterwards is listed,
// recalled and fetched through the MCP server, which writes nothing into
// D. Proxy first: the proxy marks D when it starts (proxy.DirMarkerFile)
// and the server serves it as a directory of session stores at once. MCP
// first: D holds nothing, so the server serves it as one store (fold_turn)
// until the proxy claims it, then switches to the proxy's sessions at the
// next call (the same tool names, list_sessions added, fold_turn gone).
// Before, either order served D as one empty store that never saw the
// proxy's sessions unless --sessions was given.
func TestMCPOnAProxyDirInEitherOrder(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	for _, mcpFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("mcp first %v", mcpFirst), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			dir := filepath.Join(t.TempDir(), "proxy-sessions")
			var cs *mcp.ClientSession
			var stderr bytes.Buffer
			var mu sync.Mutex
			changed := make(chan struct{}, 8)
			startMCP := func() {
				cmd := exec.Command(binary, "mcp", "--dir", dir)
				cmd.Stderr = &lockedBuffer{b: &stderr, mu: &mu}
				c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				})
				var err error
				if cs, err = c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil); err != nil {
					t.Fatalf("mcp: %v", err)
				}
				t.Cleanup(func() { cs.Close() })
			}
			tools := func() []string {
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
			if mcpFirst {
				startMCP()
				if names := tools(); !slices.Contains(names, mcpserver.ToolFold) {
					t.Fatalf("a directory that holds nothing, before the proxy: tools %v; want one store's (fold_turn)", names)
				}
			}
			addr := startProxy(t, dir, up.URL)
			if !mcpFirst {
				startMCP()
			}
			var ls mcpserver.ListSessionsResult
			call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
			if len(ls.Sessions) != 0 {
				t.Fatalf("sessions before the first request: %+v", ls)
			}
			if names := tools(); !slices.Contains(names, mcpserver.ToolSessions) || slices.Contains(names, mcpserver.ToolFold) {
				t.Fatalf("tools %v; want the session tools (list_sessions, no fold_turn)", names)
			}
			if mcpFirst {
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					t.Error("no notifications/tools/list_changed after the switch to the proxy's sessions")
				}
			}

			foldThroughProxy(t, addr)

			call(t, cs, mcpserver.ToolSessions, map[string]any{}, &ls)
			if len(ls.Sessions) != 1 || !strings.HasPrefix(ls.Sessions[0].Session, "ux-proxy-mcp/g") || ls.Sessions[0].Nodes == 0 {
				t.Fatalf("the session the proxy folded is not listed: %+v", ls)
			}
			var rr mcpserver.SessionRecallResult
			call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "password authentication failed ledger_rw port 5433"}, &rr)
			if len(rr.Candidates) == 0 || rr.Candidates[0].Session != ls.Sessions[0].Session {
				t.Fatalf("recall does not find the folded turn: %+v", rr)
			}
			var fr mcpserver.SessionFetchResult
			res := call(t, cs, mcpserver.ToolFetch, map[string]any{"session": rr.Candidates[0].Session, "step_id": rr.Candidates[0].StepID}, &fr)
			if res.IsError || !strings.Contains(fr.Content, "password authentication failed for user \"ledger_rw\"") || !fr.Verified {
				t.Fatalf("fetch: %s %+v", text(res), fr)
			}
			// The server wrote nothing into D: the marker and the proxy's
			// session directory (and its lineage files), nothing else.
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if n := e.Name(); n != proxy.DirMarkerFile && n != "ux-proxy-mcp" && n != proxy.LineageDir && !strings.HasPrefix(n, proxy.SessionStateFilePrefix) {
					t.Errorf("D holds %s", n)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if mcpFirst && !strings.Contains(stderr.String(), "became a proxy's directory of session stores") {
				t.Errorf("stderr does not say the server switched: %q", stderr.String())
			}
		})
	}
}

// lockedBuffer is an io.Writer over a buffer shared with the test.
type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// startProxy starts the real proxy on dir with a small budget, and returns
// its address once it listens.
func startProxy(t *testing.T, dir, upstream string) string {
	t.Helper()
	cmd := exec.Command(binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--dir", dir,
		"--context-budget", "1500", "--payback-requests", "-1", "--hot-window", "2")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening on http://"); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not start within 30 s")
	}
	return ""
}

// foldThroughProxy sends a conversation of tool outputs past the budget
// through the proxy (OpenAI Chat Completions, session ux-proxy-mcp), so
// that its older turns fold.
func foldThroughProxy(t *testing.T, addr string) {
	t.Helper()
	msgs := []map[string]any{{"role": "user", "content": "get the ledger API's tests passing against the local database"}}
	outputs := []string{
		"psql: error: connection to server at \"127.0.0.1\", port 5433 failed: FATAL:  password authentication failed for user \"ledger_rw\"\n",
		"npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\nnpm ERR! ledger-api@1.4.2 build: `tsc -p tsconfig.build.json`\n",
		"FAIL src/accounts/transfer.test.ts\n  ● transfer › rejects an overdraft\n    expected 422, received 500\n",
		"docker compose ps\nNAME            STATUS\nledger-db       Up 3 minutes (healthy)\nledger-cache    Up 3 minutes\n",
		"git diff --stat\n src/accounts/transfer.ts | 14 ++++++++------\n src/db/pool.ts           |  3 ++-\n",
		"migrate up\n2026-12-07T10:01:12Z applied 0007_add_overdraft_limit.sql in 41 ms\n",
	}
	for i, o := range outputs {
		body := strings.Repeat(o, 12)
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":"step %d"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": body})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "now run the whole test suite again"})
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs})
	req, _ := http.NewRequest("POST", "http://"+addr+proxy.PathOpenAI, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proxy.HeaderSession, "ux-proxy-mcp")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
}
