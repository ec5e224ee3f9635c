package scripted

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
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
	if m.StopReason != "tool_use" || len(m.Content) != 1 || m.Content[0].Name != "Bash" || string(m.Content[0].Input) != `{"command":"echo héllo"}` {
		t.Fatalf("%+v", m)
	}
	params.Messages = append(msgs, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[0].ID, "héllo", false)))
	m2, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Content) != 1 || m2.Content[0].Text != "saw héllo after <system-reminder>x</system-reminder>\nrun it" {
		t.Fatalf("%+v", m2.Content)
	}
	rs := s.ModelRequests(Anthropic)
	if len(rs) != 2 || !rs[0].Turn.Stream || rs[1].Turn.Stream || rs[1].Turn.PromptIndex != 0 || rs[0].Turn.Tools[0] != "Bash" {
		t.Fatalf("recorded %+v", rs)
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
