package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/match"
)

// foldAll folds every message outside the last two (field-report bodies are
// short conversations).
var foldAll = harness.Config{HotWindow: 1, FoldBlock: 1, MinFoldTokens: 50, Match: match.Exact}

// rawBlocks returns the raw bytes of every content block of the given types.
func rawBlocks(t *testing.T, body []byte, types ...string) [][]byte {
	r, err := parseRequest(APIAnthropic, body)
	if err != nil {
		t.Fatal(err)
	}
	top := objectFields(body, span{0, len(body)})
	ms, _ := get(top, "messages")
	var out [][]byte
	for _, m := range arrayElems(body, ms) {
		c, _ := get(objectFields(body, m), "content")
		for _, blk := range arrayElems(body, c) {
			typ := stringField(body, objectFields(body, blk), "type")
			for _, want := range types {
				if typ == want {
					out = append(out, body[blk.start:blk.end])
				}
			}
		}
	}
	_ = r
	return out
}

// 05: thinking and redacted_thinking blocks before the fold event's first
// changed message go upstream byte-identical and in place; the old
// tool_result is folded; the blocks after it, bound to the prefix the fold
// changed, are left out (reasoning.go) rather than sent to fail the check.
func TestField05ThinkingByteIdentical(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	body := readFile(t, "field-reports/05-thinking-signature.json")
	resp, _ := post(t, tp.http.URL+PathAnthropic, body, nil)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	fwd := up.last(t).Body
	want := rawBlocks(t, body, "thinking", "redacted_thinking")
	got := rawBlocks(t, fwd, "thinking", "redacted_thinking")
	if len(want) != 3 || len(got) != 1 || !bytes.Equal(want[0], got[0]) {
		t.Fatalf("thinking blocks: %d client, %d forwarded; the one before the fold must be byte-identical", len(want), len(got))
	}
	ms := messages(t, fwd)
	recordOf(t, ms[2]["content"].([]any)[0].(map[string]any)["content"].(string))
	if c := ms[3]["content"].([]any); len(c) != 1 || c[0].(map[string]any)["type"] != "text" {
		t.Fatalf("message 3 forwarded as %v", c)
	}
	rec := tp.record(t, 1)
	if rec.StepsFolded != 1 || rec.Reasoning.FoldEvents != 1 || rec.Reasoning.Invalidated != 2 || rec.Reasoning.Removed != 2 || rec.Reasoning.DropBlock != 0 {
		t.Fatalf("record %+v", rec)
	}
}

// 07: exactly the client's four cache_control markers; the folded block
// keeps its marker.
func TestField07CacheControl(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	body := readFile(t, "field-reports/07-cache-control-four.json")
	post(t, tp.http.URL+PathAnthropic, body, nil)
	fwd := up.last(t).Body
	if n := bytes.Count(fwd, []byte(`"cache_control"`)); n != 4 {
		t.Fatalf("%d cache_control markers forwarded", n)
	}
	tr := messages(t, fwd)[2]["content"].([]any)[0].(map[string]any)
	recordOf(t, tr["content"].(string))
	if tr["cache_control"] == nil {
		t.Fatal("the folded block lost its cache_control marker")
	}
}

// 08: hydrated content goes after every tool_result block, which stay
// first and in order.
func TestField08HydrateAfterToolResults(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{HotWindow: 2, FoldBlock: 1, MinFoldTokens: 50, Match: match.Exact})
	body := readFile(t, "field-reports/08-hydrate-after-tool-results.json")
	post(t, tp.http.URL+PathAnthropic, body, nil)
	ms := messages(t, up.last(t).Body)
	if len(ms) != 7 {
		t.Fatalf("%d messages", len(ms))
	}
	blocks := ms[6]["content"].([]any)
	if len(blocks) != 4 {
		t.Fatalf("last message has %d blocks", len(blocks))
	}
	for i, id := range []string{"toolu_01FAKE0000000000000802", "toolu_01FAKE0000000000000803"} {
		b := blocks[i].(map[string]any)
		if b["type"] != "tool_result" || b["tool_use_id"] != id {
			t.Fatalf("block %d: %v", i, b)
		}
	}
	if blocks[2].(map[string]any)["text"] != "compare these with the warnings in build-log-7f3a" {
		t.Fatalf("prompt block moved: %v", blocks[2])
	}
	step, content := hydrationOf(t, blocks[3].(map[string]any)["text"].(string))
	var orig map[string]any
	json.Unmarshal(body, &orig)
	raw := orig["messages"].([]any)[2].(map[string]any)["content"].([]any)[0].(map[string]any)["content"].(string)
	h, err := tp.store(t, tp.record(t, 1)).Hydrate(2)
	if err != nil {
		t.Fatal(err)
	}
	// The 33 kB log exceeds the per-call cap: the verified content is cut.
	if step != "2" || content != h.Content || !h.Truncated || !strings.HasPrefix(raw, content) || h.RawContent != raw {
		t.Fatalf("hydrated step %s, content is the verified capped content: %v", step, content == h.Content)
	}
}

// 10: OpenAI folding replaces content only; tool messages still follow the
// assistant message holding their tool_call_id; the count stays 10.
func TestField10OpenAIToolPairing(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	body := readFile(t, "field-reports/10-openai-orphan-tool.json")
	post(t, tp.http.URL+PathOpenAI, body, nil)
	fwd := messages(t, up.last(t).Body)
	var orig map[string]any
	json.Unmarshal(body, &orig)
	in := orig["messages"].([]any)
	if len(fwd) != 10 || len(in) != 10 {
		t.Fatalf("%d messages forwarded", len(fwd))
	}
	folded := 0
	for i := range fwd {
		a, b := in[i].(map[string]any), fwd[i]
		for k := range a {
			if k == "content" {
				continue
			}
			ja, _ := json.Marshal(a[k])
			jb, _ := json.Marshal(b[k])
			if !bytes.Equal(ja, jb) {
				t.Fatalf("message %d: %s changed", i, k)
			}
		}
		if s, ok := b["content"].(string); ok && strings.HasPrefix(s, "[contextfold folded step") {
			recordOf(t, s)
			folded++
		}
	}
	if folded != 2 {
		t.Fatalf("%d messages folded, want the two large tool outputs", folded)
	}
	ids := map[string]bool{}
	for _, m := range fwd {
		if tcs, ok := m["tool_calls"].([]any); ok {
			for _, tc := range tcs {
				ids[tc.(map[string]any)["id"].(string)] = true
			}
		}
		if m["role"] == "tool" && !ids[m["tool_call_id"].(string)] {
			t.Fatalf("orphan tool message %v", m["tool_call_id"])
		}
	}
}

// 12: stream_options unchanged; choices: [] does not panic; fragments split
// inside an escape reassemble; the client gets the upstream bytes.
func TestField12OpenAIStream(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	body := readFile(t, "field-reports/12-openai-stream-request.json")
	resp, got := post(t, tp.http.URL+PathOpenAI, body, nil)
	want := readFile(t, "field-reports/12-openai-stream-upstream.sse.txt")
	if !bytes.Equal(got, want) {
		t.Fatalf("client stream differs from upstream:\n%q\n%q", got, want)
	}
	if resp.Header.Get("Content-Length") != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("headers %v", resp.Header)
	}
	if !bytes.Equal(up.last(t).Body, body) {
		t.Fatal("a one-message request must go upstream unchanged")
	}
	rec := tp.record(t, 1)
	if len(rec.Observed.ToolCalls) != 1 || rec.Observed.ToolCalls[0].String() != `read_file {"path":"conf/café.yaml"}` {
		t.Fatalf("reassembled %+v", rec.Observed.ToolCalls)
	}
}

// 13: server_tool_use and tool_use inputs reassembled, no extra keys, block
// order kept; the client stream untouched.
func TestField13ServerToolUse(t *testing.T) {
	up := newUpstream(t)
	up.sse = readFile(t, "field-reports/13-sse-server-tool-use.txt")
	tp := newProxy(t, up, foldAll)
	_, got := post(t, tp.http.URL+PathAnthropic, []byte(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"search"}]}`), nil)
	if !bytes.Equal(got, up.sse) {
		t.Fatal("client stream changed")
	}
	o := tp.record(t, 1).Observed
	if strings.Join(o.Blocks, ",") != "server_tool_use,web_search_tool_result,tool_use" {
		t.Fatalf("blocks %v", o.Blocks)
	}
	if len(o.ToolCalls) != 2 || o.ToolCalls[0].Input != `{"query":"go 1.24 release notes"}` || o.ToolCalls[1].Input != `{"command":"go version"}` {
		t.Fatalf("tool calls %+v", o.ToolCalls)
	}
}

// 15: identical bytes (event lines, comments, pings, CRLF, multi-line data,
// raw UTF-8), each event flushed as it arrives, no Content-Length.
func TestField15SSEFlushedIdentical(t *testing.T) {
	up := newUpstream(t)
	sse := readFile(t, "field-reports/15-sse-event-lines-ping.txt")
	events := splitEvents(sse)
	step := make(chan struct{})
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for _, ev := range events {
			w.Write(ev)
			w.(http.Flusher).Flush()
			select { // the next event only after the client saw this one
			case <-step:
			case <-time.After(settleWait):
				return
			}
		}
	}
	tp := newProxy(t, up, foldAll)
	req, _ := http.NewRequest("POST", tp.http.URL+PathAnthropic, strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Length") != "" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("headers %v", resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	var got []byte
	for i, ev := range events {
		buf := make([]byte, len(ev))
		done := make(chan error, 1)
		go func() { _, err := io.ReadFull(br, buf); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(settleWait):
			t.Fatalf("event %d was not flushed to the client", i)
		}
		if !bytes.Equal(buf, ev) {
			t.Fatalf("event %d differs:\n%q\n%q", i, buf, ev)
		}
		got = append(got, buf...)
		step <- struct{}{}
	}
	if !bytes.Equal(got, sse) {
		t.Fatal("stream differs")
	}
}

// 23: a cold node whose bytes do not match its hash is refused, never
// pasted; the request still goes out with a warning header.
func TestField23TamperedNodeRefused(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	var fr struct {
		Blob   string `json:"blob_on_disk_utf8"`
		Prompt string `json:"hydrate_prompt"`
	}
	json.Unmarshal(readFile(t, "field-reports/23-torn-cold-blob.json"), &fr)
	mk := func(prompt string) []byte {
		b, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 5, "messages": []any{
			map[string]any{"role": "user", "content": "run the tests"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_01FAKE0000000000002301", "name": "Bash", "input": map[string]any{"command": "go test ./..."}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_01FAKE0000000000002301", "content": fr.Blob}}},
			map[string]any{"role": "assistant", "content": "All packages pass."},
			map[string]any{"role": "user", "content": prompt},
		}})
		return b
	}
	post(t, tp.http.URL+PathAnthropic, mk("thanks"), nil)
	rec := tp.record(t, 1)
	// Tear the stored blob: cut the raw content, keep the recorded hashes.
	path := tp.store(t, rec).NodePath(2)
	data, _ := os.ReadFile(path)
	torn := bytes.Replace(data, []byte("pkg001"), []byte("pkgXXX"), 1)
	if bytes.Equal(torn, data) {
		t.Fatal("could not tamper")
	}
	os.WriteFile(path, torn, 0o644)
	resp, _ := post(t, tp.http.URL+PathAnthropic, mk(fr.Prompt+" — the example.com/widget/pkg001 lines"), nil)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get(HeaderWarning), "refused") {
		t.Fatalf("status %d, warning %q", resp.StatusCode, resp.Header.Get(HeaderWarning))
	}
	fwd := up.last(t).Body
	if bytes.Contains(fwd, []byte(harness.HydrationOpen)) || bytes.Contains(fwd, []byte("pkgXXX")) {
		t.Fatal("tampered content was pasted")
	}
	if r := tp.record(t, 2); len(r.StepsRefused) != 1 || r.StepsRefused[0] != 2 {
		t.Fatalf("record %+v", r)
	}
	_ = filepath.Join
}

// 01: a lone surrogate in a folded turn; the forwarded body is valid JSON and
// every summary valid UTF-8 without surrogates.
func TestField01LoneSurrogate(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	// The tool output of the field report, with its lone \ud83d escape.
	var line struct {
		Message struct {
			Content []struct {
				Content json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"message"`
	}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "field-reports/01-lone-surrogate.jsonl")))
	sc.Buffer(nil, 1<<20)
	var out json.RawMessage
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`\ud83d…`)) && json.Unmarshal(sc.Bytes(), &line) == nil && len(line.Message.Content) > 0 {
			out = line.Message.Content[0].Content
			break
		}
	}
	if out == nil {
		t.Fatal("no surrogate line in the field report")
	}
	long := `"` + strings.Repeat(strings.Trim(string(out), `"`)+`\n`, 20) + `"`
	body := []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"show me the release notes"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cat RELEASE_NOTES.md"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + long + `}]},` +
		`{"role":"assistant","content":"Shipped."},{"role":"user","content":"what is pending on the status board?"}]}`)
	if !json.Valid(body) {
		t.Fatal("bad fixture")
	}
	post(t, tp.http.URL+PathAnthropic, body, nil)
	fwd := up.last(t).Body
	if !json.Valid(fwd) || !utf8.Valid(fwd) {
		t.Fatal("forwarded body is not valid JSON / UTF-8")
	}
	tr := messages(t, fwd)[2]["content"].([]any)[0].(map[string]any)["content"].(string)
	st := recordOf(t, tr)
	for _, r := range st.Summary {
		if r >= 0xD800 && r <= 0xDFFF {
			t.Fatal("surrogate in summary")
		}
	}
	if !utf8.ValidString(st.Summary) {
		t.Fatal("summary not valid UTF-8")
	}
	_ = context.Background
}
