package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/match"
)

// TestEarlierPromptReencodedKeepsItsHydration: Claude Code sends the
// latest human prompt as a text block with cache_control and the same
// prompt, one turn later, as a plain string. That is the same message (the
// same text), not a rewritten one: the hydration the proxy appended to it
// must stay in it, or the forwarded conversation changes before the
// model's answer to it, whose thinking (bound to that prefix) becomes
// invalid — a 400 from the API without drop_block, the thinking dropped
// with it. Before: the earlier turn's hydration was dropped (the message's
// bytes differed), so request 2 no longer extended request 1.
func TestEarlierPromptReencodedKeepsItsHydration(t *testing.T) {
	up := newUpstream(t)
	cfg := smallWindow
	cfg.Match = match.Ranked
	tp := newProxy(t, up, cfg)
	turns := []ingest.Turn{
		{StepID: 0, Role: "user", Kind: "prompt", Payload: "build the project"},
		{StepID: 1, Role: "assistant", Kind: "tool_call", Tool: "Bash", Command: "make build", Payload: "make build"},
		{StepID: 2, Role: "tool", Kind: "tool_result", Tool: "Bash", Payload: bigLog("frobnicator", 200)},
		{StepID: 3, Role: "assistant", Kind: "response", Payload: "Build finished."},
	}
	system, msgs := anthropicMessages(turns)
	hist := history(msgs, len(msgs), APIAnthropic)
	const q1 = "why did the frobnicator module warn?"
	latest := func(q string) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": q, "cache_control": map[string]any{"type": "ephemeral"}}}}
	}
	send := func(messages []map[string]any) []byte {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "claude-opus-5-5", "max_tokens": 1024, "system": system, "messages": messages})
		resp, err := http.Post(tp.http.URL+PathAnthropic, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %s", resp.Status)
		}
		return up.last(t).Body
	}
	forwardedMessage := func(body []byte, i int) string {
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || i >= len(req.Messages) {
			t.Fatalf("forwarded body: %v (%d messages)", err, len(req.Messages))
		}
		return string(req.Messages[i])
	}
	// texts are the message's text blocks as the Messages API reads them
	// (a string is one text block; cache_control is not part of it).
	texts := func(raw string) []string {
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal([]byte(raw), &m)
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			return []string{str}
		}
		var blocks []struct {
			Type, Text string
		}
		json.Unmarshal(m.Content, &blocks)
		var out []string
		for _, b := range blocks {
			out = append(out, b.Type+":"+b.Text)
		}
		for i, o := range out {
			out[i] = strings.TrimPrefix(o, "text:")
		}
		return out
	}
	host := len(hist)
	for _, firstAs := range []string{"block", "string"} {
		t.Run("latest prompt as a "+firstAs, func(t *testing.T) {
			prompt := latest(q1)
			if firstAs == "string" {
				prompt = map[string]any{"role": "user", "content": q1}
			}
			first := send(append(append([]map[string]any{}, hist...), prompt))
			if !strings.Contains(forwardedMessage(first, host), harness.HydrationOpen) {
				t.Fatalf("the first question hydrated nothing: %.300s", forwardedMessage(first, host))
			}
			second := send(append(append([]map[string]any{}, hist...),
				map[string]any{"role": "user", "content": q1}, // the same prompt, now a plain string
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "It warned about a deprecated flag."}}},
				latest("thanks; now write a haiku about autumn leaves")))
			want, got := texts(forwardedMessage(first, host)), texts(forwardedMessage(second, host))
			if !strings.Contains(forwardedMessage(second, host), harness.HydrationOpen) || strings.Join(want, "\x00") != strings.Join(got, "\x00") {
				t.Errorf("the earlier prompt, re-encoded by the client, is forwarded as another message: first as %d text blocks %.80q, then as %d %.80q", len(want), want, len(got), got)
			}
		})
	}
}
