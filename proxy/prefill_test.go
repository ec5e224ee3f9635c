package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/match"
)

// TestPrefillPromptHydrates asks about a folded tool output in a request
// whose last message is an assistant prefill (the start of the answer the
// client wants continued: `{"answer": `), a valid Messages and Chat
// Completions request. The human prompt is the message before the prefill;
// its request is the prompt's first, so the scan must run and the node must
// be hydrated into the prompt's message, with the prefill still last and
// unchanged. Before: only a request whose very last message was the prompt
// was scanned, so a prefilled question got no hydration at all.
func TestPrefillPromptHydrates(t *testing.T) {
	for _, api := range []API{APIAnthropic, APIOpenAI} {
		t.Run(string(api), func(t *testing.T) {
			up := newUpstream(t)
			tp := newProxy(t, up, harness.Config{ContextBudget: 1500, HotWindow: 2, MinFoldTokens: 50, Match: match.Ranked})
			turns := []ingest.Turn{
				{StepID: 0, Role: "user", Kind: "prompt", Payload: "build the project"},
				{StepID: 1, Role: "assistant", Kind: "tool_call", Tool: "Bash", Command: "make build", Payload: "make build"},
				{StepID: 2, Role: "tool", Kind: "tool_result", Tool: "Bash", Payload: bigLog("frobnicator", 200)},
				{StepID: 3, Role: "assistant", Kind: "response", Payload: "Build finished."},
			}
			const q = "why did the frobnicator module warn?"
			const prefill = `{"answer": `
			var body []byte
			path := PathAnthropic
			if api == APIAnthropic {
				system, msgs := anthropicMessages(turns)
				msgs = append(history(msgs, len(msgs), api),
					map[string]any{"role": "user", "content": q},
					map[string]any{"role": "assistant", "content": prefill})
				body, _ = json.Marshal(map[string]any{"model": "claude-opus-5-5", "max_tokens": 1024, "system": system, "messages": msgs})
			} else {
				path = PathOpenAI
				msgs := []map[string]any{
					{"role": "user", "content": "build the project"},
					{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
						"function": map[string]any{"name": "Bash", "arguments": `{"command":"make build"}`}}}},
					{"role": "tool", "tool_call_id": "call_1", "content": bigLog("frobnicator", 200)},
					{"role": "assistant", "content": "Build finished."},
					{"role": "user", "content": q},
					{"role": "assistant", "content": prefill},
				}
				body, _ = json.Marshal(map[string]any{"model": "gpt-5", "messages": msgs})
			}
			resp, err := http.Post(tp.http.URL+path, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %s", resp.Status)
			}
			rec := tp.record(t, 1)
			if len(rec.Hydrated) == 0 || rec.Hydrated[0].StepID != 2 {
				t.Fatalf("hydrated %+v, want step 2 (the frobnicator build log) for the prefilled question", rec.Hydrated)
			}
			fwd := messages(t, up.last(t).Body)
			last := fwd[len(fwd)-1]
			if last["role"] != "assistant" || last["content"] != prefill {
				t.Fatalf("the prefill is no longer the last message as sent: %v", last)
			}
			prompt, _ := fwd[len(fwd)-2]["content"].(string)
			if !bytes.Contains([]byte(prompt), []byte(q)) || len(harness.HydrationBlocks(prompt)) != 1 {
				t.Fatalf("the prompt's message does not carry the hydration: %.300q", prompt)
			}
		})
	}
}
