package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
)

// scriptedProxy is the proxy in front of the scripted model.
type scriptedProxy struct {
	up   *scripted.Server
	srv  *Server
	http *httptest.Server
	mu   sync.Mutex
	recs []RequestRecord
}

func newScriptedProxy(t *testing.T, cfg harness.Config, script scripted.Script) *scriptedProxy {
	t.Helper()
	sp := &scriptedProxy{up: scripted.New(script)}
	t.Cleanup(sp.up.Close)
	srv, err := New(Options{Dir: t.TempDir(), Upstream: sp.up.URL, Harness: cfg, Clock: fixedClock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnRequest: func(r RequestRecord) {
			sp.mu.Lock()
			sp.recs = append(sp.recs, r)
			sp.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	sp.srv = srv
	sp.http = httptest.NewServer(srv)
	t.Cleanup(sp.http.Close)
	return sp
}

func (sp *scriptedProxy) client() *openai.Client {
	c := openai.NewClient(ooption.WithBaseURL(sp.http.URL+"/v1"), ooption.WithAPIKey("sk-SECRET-responses"), ooption.WithMaxRetries(0))
	return &c
}

func (sp *scriptedProxy) last(t *testing.T) scripted.Request {
	t.Helper()
	rs := sp.up.Requests()
	if len(rs) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return rs[len(rs)-1]
}

// A reasoning item as Codex resends it: encrypted, with a summary.
const reasoningItem = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Look at the build log."}],"encrypted_content":"gAAAAABo-ENCRYPTED=="}`

// responsesInput is a Codex-shaped conversation: developer instructions,
// the prompt, a reasoning item, a shell call and its large output, an
// assistant message, then the new prompt.
func responsesInput(out, prompt string) responses.ResponseInputParam {
	var reasoning responses.ResponseInputItemUnionParam
	if err := json.Unmarshal([]byte(reasoningItem), &reasoning); err != nil {
		panic(err)
	}
	fco := responses.ResponseInputItemParamOfFunctionCallOutput(out)
	fco.OfFunctionCallOutput.CallID = openai.String("call_1")
	return responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("You are a coding agent.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage("build the service", responses.EasyInputMessageRoleUser),
		reasoning,
		responses.ResponseInputItemParamOfFunctionCall(`{"cmd":"make quuxloader"}`, "call_1", "exec_command"),
		fco,
		responses.ResponseInputItemParamOfMessage("The build failed in quuxloader.", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser),
	}
}

// rawItem returns the bytes of input item i as the body holds them.
func rawItem(t *testing.T, body []byte, i int) []byte {
	t.Helper()
	var b struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &b); err != nil || len(b.Input) <= i {
		t.Fatalf("no input[%d] in %s (%v)", i, body, err)
	}
	return b.Input[i]
}

func inputItems(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, it := range decode(t, body)["input"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// The Responses API through the real SDK, not streaming: the tool output is
// folded in place, the reasoning item goes upstream byte for byte, the
// prompt gets the verified hydration as an input_text part, and the node is
// evicted after the response.
func TestResponsesSDKFoldHydrateEvict(t *testing.T) {
	sp := newScriptedProxy(t, smallWindow, func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	out := bigLog("quuxloader", 150)
	var sent []byte // the body the SDK sent
	keep := ooption.WithMiddleware(func(r *http.Request, next ooption.MiddlewareNext) (*http.Response, error) {
		sent, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(sent))
		return next(r)
	})
	resp, err := sp.client().Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-5-codex",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responsesInput(out, "where does quuxloader fail?")}}, keep)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "ok" {
		t.Fatalf("response %q", resp.OutputText())
	}
	got := sp.last(t)
	if got.Header.Get("Authorization") != "Bearer sk-SECRET-responses" {
		t.Fatal("authorization not passed through")
	}
	if a, b := rawItem(t, sent, 2), rawItem(t, got.Body, 2); !bytes.Equal(a, b) || !bytes.Contains(a, []byte("ENCRYPTED")) {
		t.Fatalf("the reasoning item changed:\n%s\n%s", a, b)
	}
	items := inputItems(t, got.Body)
	if len(items) != 7 || items[4]["type"] != "function_call_output" || items[4]["call_id"] != "call_1" || items[3]["call_id"] != "call_1" {
		t.Fatalf("tool pairing broken: %v / %v", items[3], items[4])
	}
	st := recordOf(t, items[4]["output"].(string))
	if st.StepID != 4 || st.ActionType == "" {
		t.Fatalf("record %+v", st)
	}
	prompt := items[6]["content"].(string)
	if !strings.HasPrefix(prompt, "where does quuxloader fail?\n\n") {
		t.Fatalf("prompt %.100q", prompt)
	}
	step, content := hydrationOf(t, prompt)
	if step != "4" || content != out {
		t.Fatalf("hydrated step %s", step)
	}
	sp.mu.Lock()
	rec := sp.recs[0]
	sp.mu.Unlock()
	if rec.API != APIResponses || rec.StepsFolded == 0 || len(rec.Evicted) != 1 || rec.Evicted[0] != 4 || rec.Observed.StopReason != "completed" {
		t.Fatalf("record %+v", rec)
	}
}

// Streaming: the SDK reads the scripted model's function call through the
// proxy unchanged, and the proxy's bookkeeping sees it.
func TestResponsesSDKStreaming(t *testing.T) {
	sp := newScriptedProxy(t, smallWindow, func(*scripted.Turn) scripted.Reply {
		return scripted.Reply{Calls: []scripted.Call{{Name: "exec_command", Input: map[string]any{"cmd": "cat conf/café.yaml"}}}}
	})
	stream := sp.client().Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "gpt-5-codex",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responsesInput(bigLog("quuxloader", 150), "show the quuxloader config")}})
	var done *responses.Response
	events := 0
	for stream.Next() {
		events++
		if ev := stream.Current(); ev.Type == "response.completed" {
			r := ev.AsResponseCompleted().Response
			done = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	// The model reasons first (a reasoning item), then calls the tool.
	if done == nil || len(done.Output) != 2 || done.Output[0].Type != "reasoning" || done.Output[1].Type != "function_call" || done.Output[1].Name != "exec_command" ||
		done.Output[1].Arguments.OfString != `{"cmd":"cat conf/café.yaml"}` {
		t.Fatalf("completed %+v", done)
	}
	sp.mu.Lock()
	rec := sp.recs[0]
	sp.mu.Unlock()
	if !rec.Stream || rec.Observed.Events != events || len(rec.Observed.ToolCalls) != 1 ||
		rec.Observed.ToolCalls[0].String() != `exec_command {"cmd":"cat conf/café.yaml"}` || rec.StepsFolded == 0 {
		t.Fatalf("bookkeeping %+v (events %d)", rec, events)
	}
}

// previous_response_id: the provider holds the conversation, the client
// sends only the new items; nothing can be folded. The body goes upstream
// byte for byte, the response says why, and the stats count it.
func TestResponsesPreviousResponseIDPassesThrough(t *testing.T) {
	sp := newScriptedProxy(t, foldAll, func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	body := []byte(`{"model":"gpt-5","previous_response_id":"resp_abc","input":[{"type":"function_call_output","call_id":"call_9","output":"` +
		strings.Repeat("build line\\n", 400) + `"}],"stream":false}`)
	resp, b := post(t, sp.http.URL+PathResponses, body, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"output_text"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if got := sp.last(t).Body; !bytes.Equal(got, body) {
		t.Fatalf("body changed:\n%s", got)
	}
	if w := resp.Header.Get(HeaderWarning); !strings.Contains(w, "previous_response_id") {
		t.Fatalf("warning %q", w)
	}
	if st := sp.srv.Stats(); st.Chained != 1 || st.UnknownShape != 0 || st.FoldedTokens != 0 || st.Requests != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Shapes the proxy does not know pass through byte for byte with a
// warning and a counter: a Responses body without "input", and a POST to
// an unknown path. Never a 500, never a changed body.
func TestUnknownAPIShapesPassThroughUntouched(t *testing.T) {
	var mu sync.Mutex
	var got []recorded
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{r.Method, r.URL.Path, r.Header.Clone(), b})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"upstream":"answer"}`)
	}))
	defer up.Close()
	srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	cases := []struct{ path, body string }{
		{PathResponses, `{"model":"gpt-5","prompt":{"id":"pmpt_1"},"extra":[1, 2.50, "x"]}`},
		{"/v1/completions", `{"model":"davinci","prompt":"` + strings.Repeat("old api ", 300) + `"}`},
		{"/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"messages":[]}}]}`},
	}
	for i, c := range cases {
		resp, b := post(t, px.URL+c.path, []byte(c.body), nil)
		if resp.StatusCode != 200 || string(b) != `{"upstream":"answer"}` {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
		}
		if w := resp.Header.Get(HeaderWarning); !strings.Contains(w, "unknown API shape") {
			t.Errorf("%s: warning %q", c.path, w)
		}
		mu.Lock()
		if len(got) != i+1 || got[i].Path != c.path || string(got[i].Body) != c.body {
			t.Errorf("%s: upstream got %+v", c.path, got)
		}
		mu.Unlock()
	}
	// Token counting is a known endpoint: passed through without a warning.
	resp, b := post(t, px.URL+"/v1/messages/count_tokens", []byte(`{"model":"m","messages":[]}`), nil)
	if resp.StatusCode != 200 || string(b) != `{"upstream":"answer"}` || resp.Header.Get(HeaderWarning) != "" {
		t.Errorf("count_tokens: %d %s %q", resp.StatusCode, b, resp.Header.Get(HeaderWarning))
	}
	if st := srv.Stats(); st.UnknownShape != len(cases) || st.Rejected != 0 || st.Chained != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A Responses input that is a plain string is one user message; the
// hydration is appended to it as text.
func TestResponsesStringInput(t *testing.T) {
	r, err := parseRequest(APIResponses, []byte(`{"model":"m","instructions":"be brief","input":"hello there"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.msgs) != 1 || !r.msgs[0].Human || r.msgs[0].Parts[0].Text != "hello there" || r.passReason != "" {
		t.Fatalf("%+v", r.msgs)
	}
	out, err := r.rewrite(&harness.Dispatch{PromptIndex: 0, HydrationText: "HYD"})
	if err != nil || string(out) != `{"model":"m","instructions":"be brief","input":"hello there\n\nHYD"}` {
		t.Fatalf("%s %v", out, err)
	}
	r, err = parseRequest(APIResponses, []byte(`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:x"},{"type":"input_text","text":"what now"}]}]}`))
	if err != nil || !r.msgs[0].Human {
		t.Fatalf("%+v %v", r, err)
	}
	out, err = r.rewrite(&harness.Dispatch{PromptIndex: 0, HydrationText: "HYD"})
	if err != nil || !strings.HasSuffix(string(out), `{"type":"input_text","text":"what now"},{"type":"input_text","text":"HYD"}]}]}`) {
		t.Fatalf("%s %v", out, err)
	}
	if _, err := parseRequest(APIResponses, []byte(`{"input":[1]}`)); err == nil || !strings.Contains(err.Error(), "input[0] is not an object") {
		t.Fatalf("err %v", err)
	}
}

// A Responses assistant message item right before a function_call is the
// note of that call: it is named by the call's tool and command, as a Chat
// Completions assistant message holding its text and its calls is, so
// that its folded summary reads "assistant shell $ python repro.py: …" and
// the matcher pairs it with the output two items on. A message that is
// not right before a call, a second call after the first, and a message
// of an earlier request's elements keep their names.
func TestResponsesNoteNamesItsCall(t *testing.T) {
	body := `{"model":"m","input":[
{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the bug"}]},
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"I'll run the reproduction script."}]},
{"type":"function_call","name":"shell","call_id":"c1","arguments":"{\"command\":\"python repro.py\"}"},
{"type":"function_call","name":"shell","call_id":"c2","arguments":"{\"command\":\"ls\"}"},
{"type":"function_call_output","call_id":"c1","output":"Traceback: boom"},
{"type":"function_call_output","call_id":"c2","output":"a b"},
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}]}`
	r, err := parseRequest(APIResponses, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if m := r.msgs[1]; m.Tool != "shell" || m.Command != "python repro.py" {
		t.Errorf("the note before the call: tool %q command %q, want shell / python repro.py", m.Tool, m.Command)
	}
	if got := harness.Summarize(r.msgs[1]); !strings.HasPrefix(got, "assistant shell $ python repro.py: I'll run") {
		t.Errorf("the note's summary %q does not name its call", got)
	}
	if m := r.msgs[3]; m.Command != "ls" {
		t.Errorf("the second call's command %q, want its own", m.Command)
	}
	if m := r.msgs[6]; m.Tool != "" || m.Command != "" {
		t.Errorf("the closing message names tool %q command %q, want none", m.Tool, m.Command)
	}
	if m := r.msgs[0]; m.Tool != "" {
		t.Errorf("the user's prompt names tool %q", m.Tool)
	}
}

// Codex's shell tool passes its command as an argument vector: the folded
// summary names the script a shell runs with -lc / -c, or the vector
// joined, not nothing.
func TestResponsesArgvCommand(t *testing.T) {
	for args, want := range map[string]string{
		`{\"command\":[\"bash\",\"-lc\",\"pytest -q tests/\"],\"workdir\":\"/repo\"}`: "pytest -q tests/",
		`{\"command\":[\"/bin/sh\",\"-c\",\"make\"]}`:                                 "make",
		`{\"command\":[\"ls\",\"-la\",\"src\"]}`:                                      "ls -la src",
		`{\"command\":[\"echo\",3]}`:                                                  "",
	} {
		body := `{"input":[{"type":"message","role":"user","content":"go"},{"type":"function_call","name":"shell","call_id":"c1","arguments":"` + args + `"}]}`
		r, err := parseRequest(APIResponses, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.msgs[1].Command; got != want {
			t.Errorf("arguments %s: command %q, want %q", args, got, want)
		}
	}
}
