package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// binary is the contextfold command built once for the subprocess tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "contextfold-mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "contextfold")
	os.Setenv("CONTEXTFOLD_CACHE_DIR", filepath.Join(dir, "cache")) // derived data (ranked index) stays out of the user's cache
	out, err := exec.Command("go", "build", "-o", binary, "github.com/contextfold/contextfold/cmd/contextfold").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building contextfold: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A real subprocess over stdio, driven by the SDK's client.
func TestStdioSubprocess(t *testing.T) {
	s := demoStore(t)
	tamper(t, s, 137, "restored", "RESTORED")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--dir", s.Dir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	var r mcpserver.ScanResult
	call(t, cs, mcpserver.ToolScan, mcpserver.ScanArgs{Prompt: "PostgreSQL port"}, &r)
	if len(r.Selected) == 0 {
		t.Error("scan over stdio selected nothing")
	}
	res := call(t, cs, mcpserver.ToolFetch, map[string]any{"step_id": 137}, nil)
	if !res.IsError || !strings.HasPrefix(text(res), "IntegrityCheckError") {
		t.Errorf("tampered node over stdio: %v %q", res.IsError, text(res))
	}
	var f mcpserver.FetchResult
	call(t, cs, mcpserver.ToolFetch, map[string]any{"step_id": 342}, &f)
	if !f.Verified || f.Content == "" {
		t.Errorf("fetch 342 over stdio: %+v", f)
	}
}

// Field report 20, on the wire: stdout carries only JSON-RPC (logs go to
// stderr), an unknown tool is a JSON-RPC error, a well-formed but missing or
// malformed step reference is a result with isError and a readable message.
func TestStdoutCleanFieldReport20(t *testing.T) {
	s := demoStore(t)
	raw, err := os.ReadFile("testdata/20-mcp-stdout-clean.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in := strings.ReplaceAll(string(raw), "<hydrate-tool>", mcpserver.ToolFetch)
	in += `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fetch_archived_node","arguments":{"step_id":99999}}}` + "\n"
	in += `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fetch_archived_node","arguments":{"step_id":"step-7"}}}` + "\n"
	cmd := exec.Command(binary, "mcp", "--dir", s.Dir())
	cmd.Stdin = strings.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "level=INFO") {
		t.Errorf("no log on stderr: %q", stderr.String())
	}
	byID := map[int]map[string]json.RawMessage{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || string(msg["jsonrpc"]) != `"2.0"` {
			t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		var id int
		if err := json.Unmarshal(msg["id"], &id); err != nil {
			t.Fatalf("stdout message without an id: %q", sc.Text())
		}
		byID[id] = msg
	}
	for _, id := range []int{1, 2, 3, 4, 5, 6, 7} {
		if byID[id] == nil {
			t.Fatalf("no answer to request %d; stdout:\n%s", id, stdout.String())
		}
	}
	if byID[3]["error"] == nil || !strings.Contains(string(byID[3]["error"]), "unknown tool") {
		t.Errorf("unknown tool: %s", byID[3]["result"])
	}
	for id, want := range map[int]string{4: "NodeNotFoundError", 5: "not a SHA-256 digest", 6: "NodeNotFoundError", 7: "step_id"} {
		var res struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if byID[id]["error"] != nil {
			t.Errorf("request %d: JSON-RPC error %s, want a tool result with isError", id, byID[id]["error"])
			continue
		}
		if err := json.Unmarshal(byID[id]["result"], &res); err != nil || !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, want) {
			t.Errorf("request %d: %s; want isError with %q", id, byID[id]["result"], want)
		}
	}
}

// The official TypeScript SDK client (npm @modelcontextprotocol/sdk) lists
// and calls every tool, reads resources, and gets a typed error for a
// tampered node. .ci/run installs node and runs npm ci in testdata/ts-client.
func TestTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	ci := os.Getenv("CI") == "true"
	if err != nil {
		if ci {
			t.Fatal("node is not installed; .ci/run must install nodejs and npm")
		}
		t.Skip("node is not installed")
	}
	if _, err := os.Stat("testdata/ts-client/node_modules/@modelcontextprotocol/sdk"); err != nil {
		if ci {
			t.Fatal("testdata/ts-client/node_modules is missing; .ci/run must run npm ci there")
		}
		t.Skip("run 'npm ci' in mcpserver/testdata/ts-client to enable this test")
	}
	s := demoStore(t)
	tamper(t, s, 137, "restored", "RESTORED")
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", binary, s.Dir(), "137")
	cmd.Dir = "testdata/ts-client"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var rep struct {
		OK    bool     `json:"ok"`
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || !rep.OK || len(rep.Tools) != 7 {
		t.Fatalf("report %s (%v)", stdout.String(), err)
	}
	t.Logf("TypeScript SDK client report: %s", strings.TrimSpace(stdout.String()))
}

// Streamable HTTP: the command serves on a loopback port; the SDK client
// connects and calls a tool.
func TestStreamableHTTP(t *testing.T) {
	s := demoStore(t)
	port := freePort(t)
	cmd := exec.Command(binary, "mcp", "--dir", s.Dir(), "--http", "127.0.0.1:"+port, "--quiet")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	// Bounds for a hang only: the command listens within a second when the
	// machine is idle, but 100 tries 50 ms apart (5 s) could pass on a
	// loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cs *mcp.ClientSession
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:" + port + "/mcp"}, nil)
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	var st mcpserver.StatusResult
	call(t, cs, mcpserver.ToolStatus, mcpserver.NoArgs{}, &st)
	if st.Total != 8 {
		t.Errorf("status over HTTP: %+v", st)
	}
	// A non-loopback address is refused.
	out, err := exec.Command(binary, "mcp", "--dir", s.Dir(), "--http", "0.0.0.0:"+port).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "loopback") {
		t.Errorf("--http 0.0.0.0: %v %s", err, out)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// A line that is not JSON gets a parse error and the session goes on: the
// requests around it are all answered.
func TestStdioSurvivesAMalformedLine(t *testing.T) {
	var out bytes.Buffer
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage line`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"store_status","arguments":{}}}`,
	}, "\n") + "\n"
	store, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(store, mcpserver.Options{})
	if err := srv.Run(context.Background(), mcpserver.StdioTransport(strings.NewReader(in), &out, 10*time.Second)); err != nil {
		t.Logf("run: %v", err)
	}
	text := out.String()
	for _, want := range []string{`"id":1`, `"code":-32700`, `"id":2`, `"id":3`} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s in:\n%s", want, text)
		}
	}
}
