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

// compactionItem is the opaque item the Responses API returns for Codex's
// remote compaction (a compaction_trigger input item) and that Codex then
// resends in place of the history it compacted.
const compactionItem = `{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAABo-COMPACTED-HISTORY=="}`

// codexCompactedInput is the input of a Codex request after a remote
// compaction: instructions, the compaction item, then n shell calls with
// large outputs and the prompt; trigger appends a compaction_trigger.
func codexCompactedInput(n int, prompt string, trigger bool) []byte {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"build the service"}]}`,
		compactionItem,
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

// A compaction item (and a compaction_trigger) is forwarded byte for byte
// at and after a fold event: it holds the compacted history, and no fold
// may leave it out.
func TestResponsesCompactionItemKept(t *testing.T) {
	for name, cfg := range map[string]harness.Config{"window": smallWindow, "budget": {ContextBudget: 3000, Match: match.Exact}} {
		t.Run(name, func(t *testing.T) { compactionItemKept(t, cfg) })
	}
}

func compactionItemKept(t *testing.T, cfg harness.Config) {
	sp := newScriptedProxy(t, cfg, func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	for _, body := range [][]byte{
		codexCompactedInput(8, "", false),
		codexCompactedInput(9, "", true),
		codexCompactedInput(10, "where does stage1loader fail?", false),
	} {
		resp, b := post(t, sp.http.URL+"/v1/responses", body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		got := sp.last(t).Body
		if !bytes.Contains(got, []byte(compactionItem)) {
			t.Errorf("the compaction item did not reach the model byte for byte:\n%.2000s", got)
		}
		if bytes.Contains(body, []byte(`"compaction_trigger"`)) && !bytes.HasSuffix(bytes.TrimSpace(got), []byte(`{"type":"compaction_trigger"}]}`)) {
			t.Errorf("the compaction_trigger is not the last input item: %.300s", got[max(0, len(got)-300):])
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	folded := 0
	for _, r := range sp.recs {
		folded += r.StepsFolded + r.StepsCollapsed
	}
	if folded == 0 {
		t.Fatalf("nothing folded: the test does not cover a fold event")
	}
}
