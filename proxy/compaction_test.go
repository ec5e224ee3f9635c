package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/match"
)

// codexCompactedInput is the input of a Codex request after a remote
// compaction: instructions, the task, the compaction item (item; none when
// ""), then n shell calls with large outputs and the prompt; trigger
// appends a compaction_trigger (the remote compaction request).
func codexCompactedInput(item string, n int, prompt string, trigger bool) []byte {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"build the service"}]}`,
	}
	if item != "" {
		items = append(items, item)
	}
	for i := 0; i < n; i++ {
		out, _ := json.Marshal(bigLog(fmt.Sprintf("stage%dloader", i), 150))
		items = append(items,
			fmt.Sprintf(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"make stage%d\"}","call_id":"call_%d"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":%s}`, i, out))
	}
	if prompt != "" {
		items = append(items, fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}`, prompt))
	}
	if trigger {
		items = append(items, `{"type":"compaction_trigger"}`)
	}
	return []byte(`{"model":"gpt-5-codex","stream":false,"input":[` + strings.Join(items, ",") + `]}`)
}

// Codex's remote compaction through the proxy: the compaction request
// (its history folded, its compaction_trigger last) returns the model's
// compaction item; Codex then sends that item in place of the history, and
// it reaches the model byte for byte at and after fold events (the model
// answers 400 to one it did not return): it holds the compacted history,
// and no fold may leave it out.
func TestResponsesCompactionItemKept(t *testing.T) {
	for name, cfg := range map[string]harness.Config{"window": smallWindow, "budget": {ContextBudget: 3000, Match: match.Exact}} {
		t.Run(name, func(t *testing.T) { compactionItemKept(t, cfg) })
	}
}

func compactionItemKept(t *testing.T, cfg harness.Config) {
	sp := newScriptedProxy(t, cfg, func(t *scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	resp, b := post(t, sp.http.URL+"/v1/responses", codexCompactedInput("", 8, "", true), nil)
	var out struct {
		Output []json.RawMessage `json:"output"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || len(out.Output) != 1 || !bytes.Contains(out.Output[0], []byte(`"compaction"`)) {
		t.Fatalf("the compaction request: %d %s", resp.StatusCode, b)
	}
	if got := sp.last(t); !got.Turn.Compact {
		t.Fatalf("the compaction_trigger is not the last input item the model received: %.300s", got.Body[max(0, len(got.Body)-300):])
	}
	item := string(out.Output[0])
	for _, body := range [][]byte{
		codexCompactedInput(item, 8, "", false),
		codexCompactedInput(item, 9, "", false),
		codexCompactedInput(item, 10, "where does stage1loader fail?", false),
	} {
		resp, b := post(t, sp.http.URL+"/v1/responses", body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if got := sp.last(t).Body; !bytes.Contains(got, []byte(item)) {
			t.Errorf("the compaction item did not reach the model byte for byte:\n%.2000s", got)
		}
	}
	if b := sp.up.Binding(); b.Compactions != 1 || b.CompactionsBack != 3 || b.CompactionRejected != 0 {
		t.Errorf("the model's compaction items: %+v", b)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	folded := 0
	for _, r := range sp.recs[1:] {
		folded += r.StepsFolded + r.StepsCollapsed
	}
	if folded == 0 {
		t.Fatalf("nothing folded after the compaction: the test does not cover a fold event")
	}
}
