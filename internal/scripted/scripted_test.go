package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// script answers a prompt with a tool call, and the tool's result with text
// naming how many results it saw.
func script(t *Turn) Reply {
	if len(t.Results) == 0 {
		return Reply{Calls: []Call{{Name: "Bash", Input: map[string]any{"command": "echo héllo"}}}}
	}
	return Reply{Text: "saw " + t.Results[len(t.Results)-1] + " after " + t.Prompt}
}

// The real Anthropic SDK parses the scripted stream: a tool_use with its
// input, then text; the server read the prompt and the tool result.
func TestAnthropicStreamWithSDK(t *testing.T) {
	s := New(script)
	defer s.Close()
	c := anthropic.NewClient(aoption.WithBaseURL(s.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("<system-reminder>x</system-reminder>"), anthropic.NewTextBlock("run it"))}
	params := anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 100, Messages: msgs,
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "Bash", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}}}
	st := c.Messages.NewStreaming(context.Background(), params)
	var m anthropic.Message
	for st.Next() {
		if err := m.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if m.StopReason != "tool_use" || len(m.Content) != 2 || m.Content[0].Type != "thinking" || !strings.HasPrefix(m.Content[0].Signature, "scripted1.") ||
		m.Content[1].Name != "Bash" || string(m.Content[1].Input) != `{"command":"echo héllo"}` {
		t.Fatalf("%+v", m)
	}
	params.Messages = append(msgs, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "héllo", false)))
	m2, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Content) != 2 || m2.Content[1].Text != "saw héllo after <system-reminder>x</system-reminder>\nrun it" {
		t.Fatalf("%+v", m2.Content)
	}
	rs := s.ModelRequests(Anthropic)
	if len(rs) != 2 || !rs[0].Turn.Stream || rs[1].Turn.Stream || rs[1].Turn.PromptIndex != 0 || rs[0].Turn.Tools[0] != "Bash" {
		t.Fatalf("recorded %+v", rs)
	}
	// The SDK resent the streamed thinking block as it came: valid.
	if b := s.Binding(); b.Signed != 2 || b.Blocks != 1 || b.Invalid != 0 || b.Rejected != 0 {
		t.Fatalf("binding %+v", b)
	}

	// An earlier message rewritten (as a fold event does): the documented
	// 400 reaches the SDK.
	folded := append([]anthropic.MessageParam(nil), params.Messages...)
	folded[0] = anthropic.NewUserMessage(anthropic.NewTextBlock("[folded]"))
	params.Messages = folded
	_, err = c.Messages.New(context.Background(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 ||
		!strings.Contains(apiErr.RawJSON(), "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation.") {
		t.Fatalf("want the 400 naming messages.1.content.0, got %v", err)
	}
	// drop_block with the beta header: dropped and reported.
	params.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
	m3, err := c.Messages.New(context.Background(), params,
		aoption.WithJSONSet("thinking.block_binding", map[string]any{"prefix_mismatch_behavior": "drop_block"}),
		aoption.WithHeaderAdd("anthropic-beta", BetaThinkingBinding))
	if err != nil {
		t.Fatal(err)
	}
	if tr := gjsonPath(m3.RawJSON(), "input_transformations"); tr != `[{"path":"messages.1.content.0","type":"thinking_dropped"}]` {
		t.Fatalf("input_transformations %s", tr)
	}
	if b := s.Binding(); b.Rejected != 1 || b.Dropped != 1 || b.Reported != 1 {
		t.Fatalf("binding %+v", b)
	}
}

// gjsonPath returns the JSON of a top-level field of raw.
func gjsonPath(raw, field string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(raw), &m)
	return string(m[field])
}

// The real OpenAI SDK reads the streamed reasoning item; resent unchanged
// it is kept, after a shortened tool output it is dropped and reported.
func TestResponsesReasoningWithSDK(t *testing.T) {
	s := New(script)
	defer s.Close()
	c := openai.NewClient(ooption.WithBaseURL(s.URL+"/v1"), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
	input := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("run it", responses.EasyInputMessageRoleUser)}
	params := responses.ResponseNewParams{Model: "m", Store: openai.Bool(false), Include: []responses.ResponseIncludable{"reasoning.encrypted_content"},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
	st := c.Responses.NewStreaming(context.Background(), params)
	var done responses.Response
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.completed" {
			done = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(done.Output) != 2 || done.Output[0].Type != "reasoning" || done.Output[0].EncryptedContent == "" || done.Output[1].Type != "function_call" {
		t.Fatalf("%+v", done.Output)
	}
	item := func(raw string) responses.ResponseInputItemUnionParam {
		var p responses.ResponseInputItemUnionParam
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	output := func(text string) responses.ResponseInputItemUnionParam {
		return item(`{"type":"function_call_output","call_id":"` + done.Output[1].CallID + `","output":"` + text + `"}`)
	}
	for _, o := range done.Output {
		input = append(input, item(o.RawJSON()))
	}
	input = append(input, output("héllo"))
	params.Input.OfInputItemList = input
	r2, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Binding(); b.ReasoningSigned != 2 || b.ReasoningItems != 1 || b.ReasoningDropped != 0 || gjsonPath(r2.RawJSON(), "input_transformations") != "" {
		t.Fatalf("append-only: %+v %s", b, r2.RawJSON())
	}
	input[0] = responses.ResponseInputItemParamOfMessage("run it!", responses.EasyInputMessageRoleUser)
	r3, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"action":"removed","id":"` + done.Output[0].ID + `","reason":"prefix_mismatch","type":"reasoning"}]`
	if got := gjsonPath(r3.RawJSON(), "input_transformations"); got != want {
		t.Fatalf("input_transformations %s, want %s", got, want)
	}
}

// The real OpenAI SDK accumulates the scripted Chat Completions stream.
func TestChatStreamWithSDK(t *testing.T) {
	s := New(script)
	defer s.Close()
	c := openai.NewClient(ooption.WithBaseURL(s.URL+"/v1"), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("run it")}})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"command":"echo héllo"}` {
		t.Fatalf("%+v", acc.Choices)
	}
	tc := acc.Choices[0].Message.ToolCalls[0]
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("run it"), acc.Choices[0].Message.ToParam(), openai.ToolMessage("héllo", tc.ID)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "saw héllo after run it" {
		t.Fatalf("%q", got)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-scripted-") {
		t.Fatal(resp.ID)
	}
}

// A redacted_thinking block streamed to the real SDK and resent as the SDK
// keeps it passes the check; moved behind the tool_use it fails.
func TestRedactedThinkingWithSDK(t *testing.T) {
	s := NewWith(script, Options{RedactEvery: 1})
	defer s.Close()
	c := anthropic.NewClient(aoption.WithBaseURL(s.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("run it"))}
	params := anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 100, Messages: msgs}
	st := c.Messages.NewStreaming(context.Background(), params)
	var m anthropic.Message
	for st.Next() {
		if err := m.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 2 || m.Content[0].Type != "redacted_thinking" || m.Content[0].Data == "" {
		t.Fatalf("%+v", m.Content)
	}
	params.Messages = append(msgs, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "out", false)))
	if _, err := c.Messages.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	if b := s.Binding(); b.Blocks != 1 || b.Invalid != 0 {
		t.Fatalf("binding %+v", b)
	}
	a := params.Messages[1].OfAssistant
	a.Content[0], a.Content[1] = a.Content[1], a.Content[0]
	_, err := c.Messages.New(context.Background(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), "messages.1.content.1: Invalid `signature` in `redacted_thinking` block") {
		t.Fatalf("want the 400 naming messages.1.content.1, got %v", err)
	}
}
