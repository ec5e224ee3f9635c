package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// wire drives a real `contextfold mcp` subprocess over stdio with raw lines.
type wire struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	lines chan string
}

func startWire(t *testing.T, dir string, extra ...string) *wire { return startWireB(t, dir, extra...) }

func startWireB(t testing.TB, dir string, extra ...string) *wire {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp", "--dir", dir, "--quiet"}, extra...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &wire{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(stdout, 1<<20), lines: make(chan string, 64)}
	go func() {
		defer close(w.lines)
		for {
			l, err := w.out.ReadString('\n')
			if l != "" {
				w.lines <- l
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wire-test","version":"1"}}}`)
	w.next()
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

func (w *wire) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		w.t.Fatalf("the server stopped reading (exited?): %v", err)
	}
}

// reply is one JSON-RPC response.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func (w *wire) next() reply {
	w.t.Helper()
	select {
	case l, ok := <-w.lines:
		if !ok {
			w.t.Fatal("the server closed stdout (it exited)")
		}
		var r reply
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			w.t.Fatalf("not JSON on stdout: %q", l)
		}
		r.raw = l
		return r
	case <-time.After(30 * time.Second):
		w.t.Fatal("no reply within 30 s")
	}
	return reply{}
}

// call sends a request with a string id and returns its reply, collecting
// any other replies that arrive first.
func (w *wire) call(id, method, params string) reply {
	w.t.Helper()
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, params))
	for {
		r := w.next()
		if string(r.ID) == strconv.Quote(id) {
			return r
		}
	}
}

// toolText returns the text of a tools/call result and whether it is an
// error.
func toolText(t *testing.T, r reply) (string, bool) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("JSON-RPC error %d %s, want a tool result", r.Error.Code, r.Error.Message)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("not a tool result: %s", r.raw)
	}
	return res.Content[0].Text, res.IsError
}

// A line that is JSON but not one JSON-RPC request, or that holds
// an id the SDK cannot echo exactly, is answered with Invalid Request and
// the session goes on; before, such a line ended the server without a reply
// or got a wrong id back.
func TestStdioRefusesWhatIsNotARequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store") // not .contextfold: a new one is served as the hooks' sessions (meantForSessions)
	w := startWire(t, dir)
	for i, c := range []struct {
		line   string
		code   int
		id     string // the id the error must carry
		reason string
	}{
		{`[]`, -32600, "null", "batch"},
		{`null`, -32600, "null", "JSON-RPC"},
		{`42`, -32600, "null", "JSON-RPC"},
		{`"tools/list"`, -32600, "null", "JSON-RPC"},
		{`[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`, -32600, "null", "batch"},
		{`{"jsonrpc":"1.0","id":6,"method":"tools/list"}`, -32600, "6", `"2.0"`},
		{`{"id":7,"method":"tools/list"}`, -32600, "7", "jsonrpc"},
		{`{"jsonrpc":"2.0","id":{"n":8},"method":"tools/list"}`, -32600, "null", "string or an integer"},
		{`{"jsonrpc":"2.0","id":[9],"method":"tools/list"}`, -32600, "null", "string or an integer"},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, -32600, "null", "string or an integer"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, -32600, "null", "not an integer"},
		{`{"jsonrpc":"2.0","id":1e3,"method":"tools/list"}`, -32600, "null", "not an integer"},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`, -32600, "null", "2^53"},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, -32600, "null", "id null"},
		{`{"jsonrpc":"2.0","id":10,"method":7}`, -32600, "10", "not a string"},
		{`{"jsonrpc":"2.0","id":11,"method":"tools/list","params":"x"}`, -32600, "11", "params"},
		{`{"jsonrpc":"2.0","id":12}`, -32600, "12", "method"},
		{`{"jsonrpc":"2.0"`, -32700, "null", "not JSON"},
		// Valid JSON nested past the decoder's depth: said so (before:
		// "not JSON" alone, for a line that is).
		{`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`, -32700, "null", "nested deeper than"},
	} {
		w.send(c.line)
		r := w.next()
		if r.Error == nil || r.Error.Code != c.code || string(r.ID) != c.id || !strings.Contains(r.Error.Message, c.reason) {
			t.Errorf("%s: got %s, want error %d with id %s mentioning %q", c.line, strings.TrimSpace(r.raw), c.code, c.id, c.reason)
		}
		// The session goes on.
		after := w.call("after-"+strconv.Itoa(i), "tools/list", "{}")
		if after.Error != nil || !strings.Contains(string(after.Result), "fold_turn") {
			t.Fatalf("after %s: %s", c.line, after.raw)
		}
	}
	// An escaped "2.0" is "2.0".
	w.send(`{"jsonrpc":"2\u002e0","id":"escaped","method":"tools/list"}`)
	if r := w.next(); r.Error != nil || string(r.ID) != `"escaped"` {
		t.Errorf("escaped version: %s", r.raw)
	}
	// Ids that are valid come back exactly.
	for _, id := range []string{`9007199254740992`, `-9007199254740992`, `0`, `"9007199254740993"`, `"x y"`} {
		w.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
		if r := w.next(); string(r.ID) != id || r.Error != nil {
			t.Errorf("id %s answered as %s", id, r.raw)
		}
	}
}

// A line over the frame limit is skipped with an error naming the
// limit, the session goes on, and the server does not buffer it (the 17 MB
// fold_turn that used to kill the server at the SDK's 16 MiB limit).
func TestStdioFrameLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store") // not .contextfold: a new one is served as the hooks' sessions (meantForSessions)
	for _, c := range []struct {
		flags []string
		size  int
		limit string
	}{
		{nil, 17 << 20, "16777216"},
		{[]string{"--max-frame-bytes", "1048576"}, 2 << 20, "1048576"},
	} {
		w := startWire(t, dir, c.flags...)
		big := fmt.Sprintf(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"fold_turn","arguments":{"step_id":1,"summary":"big","content":%q}}}`, strings.Repeat("log line\n", c.size/9))
		w.send(big)
		r := w.next()
		if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, c.limit) || !strings.Contains(r.Error.Message, "--max-frame-bytes") {
			t.Fatalf("%d-byte line: got %.300s, want -32600 naming the limit %s", len(big), r.raw, c.limit)
		}
		if after := w.call("after", "tools/call", `{"name":"store_status","arguments":{}}`); after.Error != nil {
			t.Fatalf("after the long line: %s", after.raw)
		}
	}
	// Under the limit it is folded.
	w := startWire(t, dir, "--max-frame-bytes", "1048576")
	r := w.call("small", "tools/call", fmt.Sprintf(`{"name":"fold_turn","arguments":{"step_id":2,"summary":"small","content":%q}}`, strings.Repeat("log line\n", 1000)))
	if text, isErr := toolText(t, r); isErr {
		t.Fatalf("fold under the limit: %s", text)
	}
}

// Step ids above 2^53 are decoded exactly through MCP, in
// arguments and in results; what does not fit an int64 is a BadArgument.
func TestStdioExactStepIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store") // not .contextfold: a new one is served as the hooks' sessions (meantForSessions)
	w := startWire(t, dir)
	fold := func(step, content string) reply {
		return w.call("fold-"+step, "tools/call", fmt.Sprintf(`{"name":"fold_turn","arguments":{"step_id":%s,"summary":"turn %s","content":%q}}`, step, step, content))
	}
	for _, step := range []string{"9007199254740992", "9007199254740993", "9007199254740995", "9223372036854775807"} {
		text, isErr := toolText(t, fold(step, "content of step "+step))
		if isErr || !strings.Contains(text, `"step_id":`+step+`,`) {
			t.Fatalf("fold_turn %s: %s", step, text)
		}
	}
	r := w.call("fetch", "tools/call", `{"name":"fetch_archived_node","arguments":{"step_id":9007199254740993}}`)
	if text, isErr := toolText(t, r); isErr || !strings.Contains(text, "content of step 9007199254740993") || !strings.Contains(text, `"step_id":9007199254740993,`) {
		t.Fatalf("fetch 9007199254740993 read another node: %s", text)
	}
	r = w.call("evict", "tools/call", `{"name":"evict_node","arguments":{"step_id":9007199254740993}}`)
	if text, isErr := toolText(t, r); isErr || !strings.Contains(text, `"step_id":9007199254740993,`) {
		t.Fatalf("evict 9007199254740993: %s", text)
	}
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range map[int]bool{9007199254740992: false, 9007199254740993: true, 9007199254740995: false} {
		e, err := s.Entry(step)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if e.Evicted != want {
			t.Errorf("step %d evicted=%v, want %v", step, e.Evicted, want)
		}
	}
	// Past int64, fractions, exponents: refused, never rounded.
	for _, bad := range []string{"9223372036854775808", "1.5", "1e3", `"12"`} {
		r := w.call("bad", "tools/call", `{"name":"evict_node","arguments":{"step_id":`+bad+`}}`)
		if text, isErr := toolText(t, r); !isErr || !strings.HasPrefix(text, "BadArgument") {
			t.Errorf("evict_node step_id %s: isError=%v %q, want a BadArgument", bad, isErr, text)
		}
	}
	// Arguments that fail the schema are BadArgument too (docs/mcp-and-hooks.md).
	for _, args := range []string{`{"step_id":"x"}`, `{"summary":"no step"}`, `{"step_id":1}`, `{"step_id":1,"summary":"s","unknown":1}`} {
		r := w.call("schema", "tools/call", `{"name":"fold_turn","arguments":`+args+`}`)
		if text, isErr := toolText(t, r); !isErr || !strings.HasPrefix(text, "BadArgument") {
			t.Errorf("fold_turn %s: isError=%v %q, want a BadArgument", args, isErr, text)
		}
	}
}

// A resource read that fails carries a JSON-RPC error code and a
// message, never code 0.
func TestStdioResourceErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store") // not .contextfold: a new one is served as the hooks' sessions (meantForSessions)
	w := startWire(t, dir)
	toolText(t, w.call("fold", "tools/call", `{"name":"fold_turn","arguments":{"step_id":3,"summary":"three","content":"the third"}}`))
	for _, uri := range []string{
		"contextfold://steps/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
		"contextfold://steps/..",
		"contextfold://steps/003",
		"contextfold://steps/99999999999999999999",
	} {
		r := w.call("read", "resources/read", fmt.Sprintf(`{"uri":%q}`, uri))
		if r.Error == nil || r.Error.Code != -32602 || !strings.HasPrefix(r.Error.Message, "BadArgument") {
			t.Errorf("%s: %s, want error -32602 starting BadArgument", uri, strings.TrimSpace(r.raw))
		}
	}
	// "+3" does not match the URI template: the SDK's own not-found error.
	if r := w.call("plus", "resources/read", `{"uri":"contextfold://steps/+3"}`); r.Error == nil || r.Error.Code == 0 || r.Error.Message == "" {
		t.Errorf("+3: %s", r.raw)
	}
	r := w.call("missing", "resources/read", `{"uri":"contextfold://steps/4"}`)
	if r.Error == nil || r.Error.Code == 0 || r.Error.Message == "" {
		t.Errorf("missing step: %s, want a resource-not-found error", r.raw)
	}
	r = w.call("ok", "resources/read", `{"uri":"contextfold://steps/3"}`)
	if r.Error != nil || !strings.Contains(string(r.Result), "the third") {
		t.Errorf("step 3: %s", r.raw)
	}
}

// The same checks guard streamable HTTP: a body that is not one JSON-RPC
// message with an exact id, or that is over the frame limit, is answered
// before the SDK decodes it, and valid requests still go through.
func TestHTTPRefusesWhatIsNotARequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store") // not .contextfold: a new one is served as the hooks' sessions (meantForSessions)
	port := freePort(t)
	cmd := exec.Command(binary, "mcp", "--dir", dir, "--http", "127.0.0.1:"+port, "--quiet", "--max-frame-bytes", "65536")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url := "http://127.0.0.1:" + port + "/mcp"
	post := func(body string) (int, reply) {
		t.Helper()
		var resp *http.Response
		var err error
		// A minute: the command listens within a second on an idle machine;
		// only a hang reaches the bound.
		for deadline := time.Now().Add(hangWait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			req, _ := http.NewRequest("POST", url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if resp, err = http.DefaultClient.Do(req); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r reply
		text := string(b)
		if i := strings.Index(text, "data: "); i >= 0 { // an event stream answer
			text = strings.TrimSpace(strings.SplitN(text[i+6:], "\n", 2)[0])
		}
		json.Unmarshal([]byte(text), &r)
		r.raw = string(b)
		return resp.StatusCode, r
	}
	for body, want := range map[string]int{
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`: -32600,
		`42`: -32600,
		`{"jsonrpc":"2.0","id":1.5,"method":"initialize"}`:                                    -32600,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`:                             -32600,
		`{"jsonrpc":"1.0","id":1,"method":"initialize"}`:                                      -32600,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 70000) + `"}`: -32600,
		`{"jsonrpc":`: -32700,
	} {
		code, r := post(body)
		if (code != 400 && code != 413) || r.Error == nil || r.Error.Code != want {
			t.Errorf("%.60s: HTTP %d %.200s, want 400/413 with error %d", body, code, r.raw, want)
		}
	}
	code, r := post(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != 200 || r.Error != nil || string(r.ID) != "7" {
		t.Fatalf("initialize over HTTP: %d %.300s", code, r.raw)
	}
}
