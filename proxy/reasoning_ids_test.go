package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
)

// A Responses API client with store on (the API's default: "store" left
// out) sends every output item back as returned, ids included, through tool
// loops, each ended by a text answer and a new human prompt, at a budget
// that forces fold events; each reply makes one call, or two parallel calls
// (a reasoning item, then two function_call items). The scripted model, as
// the API does, answers 400 when an item sent by its id (fc_…, msg_…) comes
// without the reasoning item its response produced with it. The proxy
// leaves out the ids of the items whose reasoning item it does not forward
// (left out at a fold event, or gone with the messages that left the prompt
// while a parallel call stays): no request is rejected, fold events leave
// reasoning out, and between fold events every request extends the one
// before.
func TestReasoningResponsesStoredIDs(t *testing.T) {
	for _, calls := range []int{1, 2} {
		t.Run(itoa(calls)+" calls", func(t *testing.T) { storedIDsLoop(t, calls) })
	}
}

func storedIDsLoop(t *testing.T, calls int) {
	up := scripted.New(func(tu *scripted.Turn) scripted.Reply {
		if len(tu.Results) >= 3*calls {
			return scripted.Reply{Text: "Done: the retry now backs off."}
		}
		var cs []scripted.Call
		for c := 0; c < calls; c++ {
			cs = append(cs, scripted.Call{Name: "shell", Input: map[string]any{"command": "go test ./pkg" + itoa(len(tu.Results)) + "/" + itoa(c)}})
		}
		return scripted.Reply{Calls: cs}
	})
	defer up.Close()
	done := make(chan RequestRecord, 1)
	srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: discardLogger(),
		Harness: harness.Config{ContextBudget: 5000}, OnRequest: func(r RequestRecord) { done <- r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	items := []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Fix the flaky retry in the billing webhook handler."}}}}
	var total ReasoningStats
	var folds []bool
	for k := 0; k < 40; k++ {
		body, _ := json.Marshal(map[string]any{"model": "gpt-5-codex", "include": []string{"reasoning.encrypted_content"},
			"reasoning": map[string]any{"effort": "medium"}, "instructions": "You are a coding agent.", "input": items})
		hr, _ := http.NewRequest(http.MethodPost, px.URL+PathResponses, bytes.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set(HeaderSession, "stored"+itoa(calls))
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rec := <-done
		total.Add(rec.Reasoning)
		folds = append(folds, rec.Reasoning.FoldEvents > 0)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d (reasoning so far %+v): %s %s", k, total, resp.Status, rb)
		}
		var r struct {
			Output []any `json:"output"`
		}
		if err := json.Unmarshal(rb, &r); err != nil {
			t.Fatal(err)
		}
		n := len(items)
		items = append(items, r.Output...)
		var ids []string
		for _, o := range r.Output {
			if om := o.(map[string]any); om["type"] == "function_call" {
				ids = append(ids, om["call_id"].(string))
			}
		}
		for c, call := range ids {
			items = append(items, map[string]any{"type": "function_call_output", "call_id": call, "output": bigLog("webhookpkg"+itoa(n)+"x"+itoa(c), 40/calls)})
		}
		if len(ids) == 0 {
			items = append(items, map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Now look at the invoice exporter " + itoa(n) + "."}}})
		}
	}
	if total.FoldEvents < 2 || total.Removed == 0 {
		t.Fatalf("the loop must cross fold events that leave reasoning out: %+v", total)
	}
	if bad := appendOnly(t, up.Requests(), folds, "input"); len(bad) > 0 {
		t.Fatalf("requests %v changed the conversation outside a fold event", bad)
	}
	if b := up.Binding(); b.ReasoningRejected != 0 || b.ReasoningDropped != 0 {
		t.Fatalf("model: %s", b)
	}
	t.Logf("%d calls per reply, 40 requests: %+v", calls, total)
}
