package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
)

// budgetCfg is a small budget, so that short test sessions cross it.
var budgetCfg = harness.Config{ContextBudget: 5000}

// anthropicSession is a Claude Code-like request: a system prompt, the
// task, then steps tool_use / tool_result pairs (the assistant message with a
// signed thinking block), the last user message a human question.
func anthropicSession(steps int, question string) []byte {
	msgs := []any{map[string]any{"role": "user", "content": "Fix the flaky retry in the billing webhook handler."}}
	for i := 0; i < steps; i++ {
		id := "toolu_" + itoa(i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "look at pkg" + itoa(i), "signature": "sig" + itoa(i)},
				map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "go test ./pkg" + itoa(i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": bigLog("webhookpkg"+itoa(i), 30)}}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Done with the sweep."}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": question, "cache_control": map[string]any{"type": "ephemeral"}}}})
	b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
		"system": []any{map[string]any{"type": "text", "text": "You are Claude Code.", "cache_control": map[string]any{"type": "ephemeral"}}},
		"tools":  []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}, "messages": msgs})
	return b
}

// openaiSession is the same session as OpenAI Chat Completions.
func openaiSession(steps int, question string, stream bool) []byte {
	msgs := []any{map[string]any{"role": "system", "content": "You are a coding agent."},
		map[string]any{"role": "user", "content": "Fix the flaky retry in the billing webhook handler."}}
	for i := 0; i < steps; i++ {
		id := "call_" + itoa(i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": bigLog("webhookpkg"+itoa(i), 30)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": question})
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "stream": stream, "messages": msgs})
	return b
}

// responsesSession is the same session as an OpenAI Responses request,
// each call led by a reasoning item.
func responsesSession(steps int, question string) []byte {
	items := []any{map[string]any{"role": "user", "content": "Fix the flaky retry in the billing webhook handler."}}
	for i := 0; i < steps; i++ {
		id := "call_" + itoa(i)
		items = append(items,
			map[string]any{"type": "reasoning", "id": "rs_" + itoa(i), "summary": []any{}, "encrypted_content": "enc" + itoa(i)},
			map[string]any{"type": "function_call", "call_id": id, "name": "shell", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`},
			map[string]any{"type": "function_call_output", "call_id": id, "output": bigLog("webhookpkg"+itoa(i), 30)})
	}
	items = append(items, map[string]any{"role": "user", "content": question})
	b, _ := json.Marshal(map[string]any{"model": "gpt-5", "instructions": "You are a coding agent.", "input": items})
	return b
}

// checkPairs fails when a tool result is not answered by the message right
// before it (Anthropic) or by an earlier assistant tool call (OpenAI).
func checkPairs(t *testing.T, api API, fwd []byte) {
	t.Helper()
	if api == APIResponses {
		var body struct{ Input []map[string]any }
		json.Unmarshal(fwd, &body)
		calls := map[any]bool{}
		for i, it := range body.Input {
			switch it["type"] {
			case "reasoning":
				if i+1 >= len(body.Input) || body.Input[i+1]["type"] != "function_call" {
					t.Fatalf("item %d: reasoning item without the call it leads to", i)
				}
			case "function_call":
				// Its reasoning item may have been left out at a fold event
				// (bound to the prefix the fold changed; reasoning.go): a
				// call needs no reasoning before it, a reasoning item needs
				// its call after it.
				calls[it["call_id"]] = true
			case "function_call_output":
				if !calls[it["call_id"]] {
					t.Fatalf("item %d answers a call that is no longer there", i)
				}
			}
		}
		return
	}
	ms := messages(t, fwd)
	calls := map[string]bool{}
	for i, m := range ms {
		if api == APIOpenAI {
			if tc, ok := m["tool_calls"].([]any); ok {
				for _, c := range tc {
					calls[c.(map[string]any)["id"].(string)] = true
				}
			}
			if m["role"] == "tool" && !calls[m["tool_call_id"].(string)] {
				t.Fatalf("message %d answers a tool call that is no longer there", i)
			}
			continue
		}
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm := b.(map[string]any)
			if bm["type"] != "tool_result" {
				continue
			}
			prev, _ := ms[i-1]["content"].([]any)
			found := false
			for _, p := range prev {
				if p.(map[string]any)["id"] == bm["tool_use_id"] {
					found = true
				}
			}
			if !found {
				t.Fatalf("message %d: tool_result %v without its tool_use right before it", i, bm["tool_use_id"])
			}
		}
	}
}

func TestWorkingSetBothAPIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  API
		path string
		body func(steps int) []byte
	}{
		{"anthropic", APIAnthropic, PathAnthropic, func(n int) []byte { return anthropicSession(n, "what did the sweep find?") }},
		{"openai", APIOpenAI, PathOpenAI, func(n int) []byte { return openaiSession(n, "what did the sweep find?", false) }},
		{"openai-stream", APIOpenAI, PathOpenAI, func(n int) []byte { return openaiSession(n, "what did the sweep find?", true) }},
		{"responses", APIResponses, PathResponses, func(n int) []byte { return responsesSession(n, "what did the sweep find?") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			tp := newProxy(t, up, budgetCfg)
			// Under the budget: byte for byte.
			small := tc.body(3)
			if resp, _ := post(t, tp.http.URL+tc.path, small, nil); resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			if !bytes.Equal(up.last(t).Body, small) {
				t.Fatal("a request under the budget was not forwarded byte for byte")
			}
			var prev []byte
			for k, steps := range []int{40, 41, 42} {
				body := tc.body(steps)
				resp, _ := post(t, tp.http.URL+tc.path, body, nil)
				if resp.StatusCode != 200 {
					t.Fatal(resp.Status)
				}
				fwd := up.last(t).Body
				if !json.Valid(fwd) {
					t.Fatal("forwarded body is not JSON")
				}
				if n := contextfold.TokenEstimate(string(fwd)); n > budgetCfg.ContextBudget {
					t.Fatalf("%d steps: %d tokens forwarded, budget %d", steps, n, budgetCfg.ContextBudget)
				}
				checkPairs(t, tc.api, fwd)
				if tc.api == APIResponses {
					if !bytes.Contains(fwd, []byte(`{"content":"Fix the flaky retry in the billing webhook handler.","role":"user"},{"role":"user","content":"`+harness.PageTableOpen)) {
						t.Fatal("no page table right after the task")
					}
					prev = fwd
					continue
				}
				ms := messages(t, fwd)
				// The task statement is pinned; the page table follows it.
				task := 0
				if tc.api == APIOpenAI {
					task = 1
				}
				if ms[task]["content"] != "Fix the flaky retry in the billing webhook handler." {
					t.Fatalf("the task statement changed: %v", ms[task]["content"])
				}
				pt, _ := ms[task+1]["content"].(string)
				if !strings.HasPrefix(pt, harness.PageTableOpen) {
					t.Fatalf("no page table after the task: %.200v", ms[task+1])
				}
				if tc.api == APIAnthropic {
					if n := bytes.Count(fwd, []byte(`"cache_control"`)); n != 2 {
						t.Fatalf("%d cache_control markers, the client put 2", n)
					}
					// The latest thinking block stays unless this request is
					// a fold event: it is then after the first changed
					// message, bound to a prefix that changed, left out.
					fe := tp.record(t, k+2).Reasoning.FoldEvents > 0
					if has := bytes.Contains(fwd, []byte(`"signature":"sig`+itoa(steps-1)+`"`)); has == fe {
						t.Fatalf("fold event %v, the latest thinking block forwarded %v", fe, has)
					}
				}
				if prev != nil {
					// No fold event between these requests: the forwarded
					// prefix is byte-identical up to the previous tail.
					rec := tp.record(t, k+2)
					if rec.WorkingSet == nil {
						t.Fatal("no working set in the record")
					}
					if !rec.WorkingSet.FoldEvent {
						cut := bytes.Index(prev, []byte(`compiled webhookpkg`+itoa(steps-2)+` `))
						if cut < 0 || !bytes.Equal(prev[:cut], fwd[:cut]) {
							t.Fatal("the forwarded prefix changed between fold events")
						}
					}
				}
				prev = fwd
			}
		})
	}
}

// The working-set log writes the messages that left the prompt as runs,
// so a request's line stays small however long the conversation: after a
// 2,000-message session has removed most of its messages, each line is
// under 4 KiB and names exactly the removed positions of its request.
func TestWorkingSetLogRemovedAsRanges(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	var removed [][]int
	srv, err := New(Options{Dir: dir, Upstream: up.srv.URL, Clock: fixedClock, Logger: newDiscardLogger(),
		OnRequest: func(r RequestRecord) {
			if r.WorkingSet != nil {
				removed = append(removed, append([]int{}, r.WorkingSet.Removed...))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	for _, n := range []int{2000, 2002, 2004} {
		resp, err := http.Post(px.URL+PathOpenAI, "application/json", bytes.NewReader(conversationOf(n, false)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	px.Close() // every response done: every line logged
	logs, _ := filepath.Glob(filepath.Join(dir, "*", harness.WorkingSetLogName))
	if len(logs) != 1 {
		t.Fatalf("logs: %v", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 3 || len(removed) != 3 {
		t.Fatalf("%d lines logged, %d records", len(lines), len(removed))
	}
	for k, line := range lines {
		var rec harness.WorkingSetRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if len(removed[k]) < 1000 {
			t.Fatalf("request %d removed %d messages: the test needs a long removed list", k+1, len(removed[k]))
		}
		if !reflect.DeepEqual(rec.RemovedSteps(), removed[k]) {
			t.Fatalf("request %d: the log's removed steps differ from the request's (%d vs %d)", k+1, len(rec.RemovedSteps()), len(removed[k]))
		}
		if bytes.Contains(line, []byte(`"removed":`)) || len(line) > 4096 {
			t.Fatalf("request %d: a %d-byte line, or one listing every removed position", k+1, len(line))
		}
	}
	// A line an older proxy wrote (the whole list) still reads.
	var old harness.WorkingSetRecord
	if err := json.Unmarshal([]byte(`{"request":1,"removed":[3,4,5,9]}`), &old); err != nil || !reflect.DeepEqual(old.RemovedSteps(), []int{3, 4, 5, 9}) {
		t.Fatalf("old line: %v %v", old.RemovedSteps(), err)
	}
	if got := harness.RangesOf([]int{3, 4, 5, 9, 11, 12}); !reflect.DeepEqual(got, [][2]int{{3, 5}, {9, 9}, {11, 12}}) {
		t.Fatalf("RangesOf: %v", got)
	}
}
