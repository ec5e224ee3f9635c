package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/match"
)

var smallWindow = harness.Config{HotWindow: 1, FoldBlock: 2, MinFoldTokens: 50, Match: match.Exact}

func anthropicClient(tp *testProxy) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(tp.http.URL), aoption.WithAPIKey("sk-ant-SECRET-test-key"), aoption.WithMaxRetries(0))
}

func anthropicConversation(log string, prompt string) []anthropic.MessageParam {
	return []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("build the project")),
		anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]any{"command": "make build"}, "Bash")),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", log, false)),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("Build finished.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock(prompt)),
	}
}

// The Anthropic SDK through the proxy: the old tool result is folded into
// its record, the matching prompt gets the verified raw content in its own
// message only, the next prompt does not, and the eviction is logged.
func TestAnthropicSDKFoldHydrateEvict(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, smallWindow)
	c := anthropicClient(tp)
	log := bigLog("frobnicator", 200)
	conv := anthropicConversation(log, "why did the frobnicator module warn?")
	msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: conv})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "ok" {
		t.Fatalf("reply %+v", msg.Content)
	}
	got := up.last(t)
	if got.Header.Get("Authorization") != "Bearer sk-ant-SECRET-test-key" && got.Header.Get("X-Api-Key") != "sk-ant-SECRET-test-key" {
		t.Fatalf("authentication header not passed through: %v", got.Header)
	}
	ms := messages(t, got.Body)
	if len(ms) != 5 {
		t.Fatalf("message count %d", len(ms))
	}
	tr := ms[2]["content"].([]any)[0].(map[string]any)
	if tr["tool_use_id"] != "toolu_1" || tr["type"] != "tool_result" {
		t.Fatalf("tool_result pairing broken: %v", tr)
	}
	st := recordOf(t, tr["content"].(string))
	if st.StepID != 2 || st.Artifacts.ColdNodeRef == "" || st.ActionType != harness.ActionCommandExecution {
		t.Fatalf("record %+v", st)
	}
	last := ms[4]["content"].([]any)
	if len(last) != 2 || last[0].(map[string]any)["text"] != "why did the frobnicator module warn?" {
		t.Fatalf("prompt message %v", last)
	}
	step, content := hydrationOf(t, last[1].(map[string]any)["text"].(string))
	rec := tp.record(t, 1)
	h, err := tp.store(t, rec).Hydrate(2)
	if err != nil {
		t.Fatal(err)
	}
	if step != "2" || content != h.Content || content != log {
		t.Fatalf("hydrated content is not the verified raw content (step %s, %d vs %d chars)", step, len(content), len(log))
	}
	if strings.Count(string(got.Body), harness.HydrationOpen) != 1 {
		t.Fatal("hydration must appear once, in the prompt message")
	}
	if rec.FoldedTokens == 0 || rec.ForwardedTokens >= rec.ClientTokens+rec.HydratedTokens || len(rec.Evicted) != 1 {
		t.Fatalf("accounting %+v", rec)
	}
	evs, _ := tp.store(t, rec).EvictionLog()
	if len(evs) != 1 || evs[0].StepID != 2 {
		t.Fatalf("eviction log %+v", evs)
	}

	// Next human prompt: no hydration.
	conv = append(conv, anthropic.NewAssistantMessage(anthropic.NewTextBlock("It warned about a deprecated flag.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("thanks, now list the files")))
	if _, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: conv}); err != nil {
		t.Fatal(err)
	}
	got = up.last(t)
	// The node was evicted (the log above); on the wire the text the model
	// read stays in the message it was placed in, byte for byte, until a
	// fold event (append-only between fold events); the new prompt gets
	// none.
	ms = messages(t, got.Body)
	if !reflect.DeepEqual(ms[4]["content"], []any{last[0], last[1]}) || strings.Count(string(got.Body), harness.HydrationOpen) != 1 {
		t.Fatal("the earlier turn's hydration changed, or hydration crept into the next turn")
	}
	if fmt.Sprint(ms[len(ms)-1]["content"]) != fmt.Sprint([]any{map[string]any{"type": "text", "text": "thanks, now list the files"}}) {
		t.Fatalf("the next prompt changed: %v", ms[len(ms)-1]["content"])
	}
	if strings.Contains(tp.log.String(), "SECRET") {
		t.Fatal("the API key was logged")
	}
	if !strings.Contains(tp.log.String(), "evicted=[2]") {
		t.Fatalf("eviction not logged: %s", tp.log.String())
	}
}

func TestAnthropicSDKStreaming(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, smallWindow)
	c := anthropicClient(tp)
	stream := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
		Messages: anthropicConversation(bigLog("frobnicator", 200), "explain the frobnicator lines")})
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "Hello é🌋 world" && !strings.HasSuffix(acc.Content[0].Text, " world") {
		t.Fatalf("accumulated %+v", acc.Content)
	}
	rec := tp.record(t, 1)
	if !rec.Stream || rec.StepsFolded != 1 || len(rec.StepsHydrated) != 1 || len(rec.Evicted) != 1 {
		t.Fatalf("record %+v", rec)
	}
}

func openaiClient(tp *testProxy) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(tp.http.URL+"/v1"), ooption.WithAPIKey("sk-SECRET-openai"), ooption.WithMaxRetries(0))
}

func openaiConversation(out, prompt string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage("inspect the service"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1",
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: `{"path":"svc/a/main.go"}`}}}}}},
		openai.ToolMessage(out, "call_1"),
		openai.AssistantMessage("The service loads its config twice."),
		openai.UserMessage(prompt),
	}
}

func TestOpenAISDKFoldHydrateEvict(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, smallWindow)
	c := openaiClient(tp)
	out := bigLog("quuxloader", 150)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1",
		Messages: openaiConversation(out, "where does quuxloader read the config?")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "ok" {
		t.Fatal(resp.Choices)
	}
	got := up.last(t)
	if got.Header.Get("Authorization") != "Bearer sk-SECRET-openai" {
		t.Fatal("authorization not passed through")
	}
	ms := messages(t, got.Body)
	if len(ms) != 6 || ms[3]["role"] != "tool" || ms[3]["tool_call_id"] != "call_1" {
		t.Fatalf("tool pairing broken: %v", ms[3])
	}
	recordOf(t, ms[3]["content"].(string))
	step, content := hydrationOf(t, ms[5]["content"].(string))
	if step != "3" || content != out {
		t.Fatalf("hydration step %s", step)
	}
	if !strings.HasPrefix(ms[5]["content"].(string), "where does quuxloader read the config?\n\n") {
		t.Fatal("prompt text changed")
	}
	rec := tp.record(t, 1)
	if len(rec.Evicted) != 1 || rec.Evicted[0] != 3 {
		t.Fatalf("record %+v", rec)
	}
}

func TestOpenAISDKStreaming(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, smallWindow)
	c := openaiClient(tp)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1",
		Messages:      openaiConversation(bigLog("quuxloader", 150), "show quuxloader again"),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(false)}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("accumulated %+v", acc.Choices)
	}
	tc := acc.Choices[0].Message.ToolCalls[0]
	if tc.Function.Name != "read_file" || tc.Function.Arguments != `{"path":"conf/caf\u00e9.yaml"}` {
		t.Fatalf("tool call %+v", tc.Function)
	}
	rec := tp.record(t, 1)
	if len(rec.Observed.ToolCalls) != 1 || rec.Observed.ToolCalls[0].String() != `read_file {"path":"conf/café.yaml"}` {
		t.Fatalf("bookkeeping %+v", rec.Observed)
	}
	if !strings.Contains(string(up.last(t).Body), `"stream_options":{"include_usage":false}`) {
		t.Fatal("stream_options changed")
	}
}

// Upstream errors reach the SDK unchanged, with retry-after.
func TestUpstreamErrorsPassThrough(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, smallWindow)
	for _, code := range []int{429, 500, 529} {
		body := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down ` + itoa(code) + `"}}`
		up.handler = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write([]byte(body))
		}
		resp, got := post(t, tp.http.URL+PathAnthropic, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), nil)
		if resp.StatusCode != code || string(got) != body || resp.Header.Get("Retry-After") != "7" {
			t.Fatalf("%d: got %d %q %q", code, resp.StatusCode, got, resp.Header.Get("Retry-After"))
		}
	}
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(429)
		w.Write([]byte(`{"error":{"message":"rate limited","type":"rate_limit"}}`))
	}
	c := openaiClient(tp)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: openaiConversation("x", "hi")})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("want a 429 from the SDK, got %v", err)
	}
}

var _ = contextfold.TokenEstimate
