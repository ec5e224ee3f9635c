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

// TestSameQuestionTwiceHydratesOnce asks about a folded tool output in two
// human turns in a row. The proxy keeps the first turn's hydration in its
// host message for the rest of the conversation (byte for byte, so the
// forwarded prefix stays append-only); the second turn's scan selects the
// same node again, and must not send it a second time: the forwarded
// request holds the node's hydration block once, and the request's
// accounting names the step as already in the prompt. Before: the second
// request carried the block twice (up to the per-turn cap, every time the
// question came back).
func TestSameQuestionTwiceHydratesOnce(t *testing.T) {
	budget := harness.Config{ContextBudget: 1500, HotWindow: 2, MinFoldTokens: 50, Match: match.Ranked}
	fixed := smallWindow
	fixed.Match = match.Ranked
	for name, cfg := range map[string]harness.Config{"budget": budget, "fixed window": fixed} {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t)
			tp := newProxy(t, up, cfg)
			turns := []ingest.Turn{
				{StepID: 0, Role: "user", Kind: "prompt", Payload: "build the project"},
				{StepID: 1, Role: "assistant", Kind: "tool_call", Tool: "Bash", Command: "make build", Payload: "make build"},
				{StepID: 2, Role: "tool", Kind: "tool_result", Tool: "Bash", Payload: bigLog("frobnicator", 200)},
				{StepID: 3, Role: "assistant", Kind: "response", Payload: "Build finished."},
			}
			system, msgs := anthropicMessages(turns)
			hist := history(msgs, len(msgs), APIAnthropic)
			const q = "why did the frobnicator module warn?"
			send := func(messages []map[string]any) ([]byte, string) {
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
				return up.last(t).Body, resp.Header.Get(HeaderWarning)
			}
			blocks := func(body []byte) map[int]int {
				var req struct {
					Messages []struct {
						Content json.RawMessage `json:"content"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					t.Fatal(err)
				}
				n := map[int]int{}
				for _, m := range req.Messages {
					var s string
					if json.Unmarshal(m.Content, &s) != nil {
						var bs []struct{ Text string }
						json.Unmarshal(m.Content, &bs)
						for _, b := range bs {
							s += b.Text + "\n"
						}
					}
					for _, b := range harness.HydrationBlocks(s) {
						n[b.StepID]++
					}
				}
				return n
			}
			first, _ := send(append(append([]map[string]any{}, hist...), map[string]any{"role": "user", "content": q}))
			if blocks(first)[2] != 1 {
				t.Fatalf("the first question did not hydrate step 2 once: %v", blocks(first))
			}
			second, _ := send(append(append([]map[string]any{}, hist...),
				map[string]any{"role": "user", "content": q},
				map[string]any{"role": "assistant", "content": "It warned about a deprecated flag."},
				map[string]any{"role": "user", "content": q}))
			if n := blocks(second)[2]; n != 1 {
				t.Errorf("the second request carries step 2's hydration %d times, want once (the first turn's, still in the prompt)", n)
			}
			last := tp.record(t, 2)
			if len(last.StepsInPrompt) != 1 || last.StepsInPrompt[0] != 2 || len(last.StepsHydrated) != 0 {
				t.Errorf("the second request's accounting: hydrated %v, in the prompt %v; want step 2 reported as already in the prompt", last.StepsHydrated, last.StepsInPrompt)
			}
		})
	}
}
