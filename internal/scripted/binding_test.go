package scripted

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// conversation builds a Messages API body: system, tools and messages as
// given (JSON values).
func conversation(system, tools string, msgs ...string) []byte {
	return []byte(`{"model":"m","max_tokens":10,"system":` + system + `,"tools":` + tools + `,"messages":[` + strings.Join(msgs, ",") + `]}`)
}

const (
	sys1   = `[{"type":"text","text":"You are terse."}]`
	tools1 = `[{"name":"Bash","input_schema":{"type":"object"}}]`
	user1  = `{"role":"user","content":"run it"}`
)

// signedTurn returns the assistant message the model returns to body (a
// thinking block signed over body, then a tool_use) and the user message
// with its result.
func signedTurn(t *testing.T, b *Binder, body []byte, n int) (assistant, result string) {
	t.Helper()
	think := "step " + string(rune('a'+n)) + ": think"
	sig, err := b.SignThinking(body, think)
	if err != nil {
		t.Fatal(err)
	}
	th, _ := json.Marshal(map[string]any{"type": "thinking", "thinking": think, "signature": sig})
	id := "toolu_" + string(rune('a'+n))
	assistant = `{"role":"assistant","content":[` + string(th) + `,{"type":"tool_use","id":"` + id + `","name":"Bash","input":{"command":"ls"}}]}`
	result = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"out ` + id + `"}]}`
	return
}

// threeTurns is an append-only conversation of three signed turns; it
// returns the messages of the last request.
func threeTurns(t *testing.T, b *Binder) []string {
	msgs := []string{user1}
	for n := 0; n < 3; n++ {
		a, r := signedTurn(t, b, conversation(sys1, tools1, msgs...), n)
		msgs = append(msgs, a, r)
	}
	return msgs
}

func paths(c ThinkingCheck) []string {
	var out []string
	for _, r := range c.Invalid {
		out = append(out, r.Path)
	}
	return out
}

func TestPrefixCheck(t *testing.T) {
	b := NewBinder("test")
	msgs := threeTurns(t, b)
	check := func(body []byte) ThinkingCheck {
		t.Helper()
		c, err := b.CheckAnthropic(body)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	clone := func() []string { return append([]string(nil), msgs...) }

	if c := check(conversation(sys1, tools1, msgs...)); c.Blocks != 3 || len(c.Invalid) != 0 {
		t.Fatalf("append-only: %+v", c)
	}
	// cache_control moved, a string content as a single text block, a
	// tool_result's string as a text block, keys reordered: still valid.
	m := clone()
	m[0] = `{"content":[{"type":"text","text":"run it","cache_control":{"type":"ephemeral"}}],"role":"user"}`
	m[2] = strings.Replace(m[2], `"content":"out toolu_a"`, `"content":[{"type":"text","text":"out toolu_a"}],"cache_control":{"type":"ephemeral"}`, 1)
	sysCC := `[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral","ttl":"1h"}}]`
	toolsCC := `[{"input_schema":{"type":"object"},"name":"Bash","cache_control":{"type":"ephemeral"}}]`
	if c := check(conversation(sysCC, toolsCC, m...)); len(c.Invalid) != 0 {
		t.Fatalf("cache_control and equal forms: %v", paths(c))
	}
	if c := check(conversation(`"You are terse."`, tools1, msgs...)); len(c.Invalid) != 0 {
		t.Fatalf("system as a string: %v", paths(c))
	}

	all := []string{"messages.1.content.0", "messages.3.content.0", "messages.5.content.0"}
	cases := []struct {
		name string
		body []byte
		want []string
	}{
		{"system changed", conversation(`"You are verbose."`, tools1, msgs...), all},
		{"tools changed", conversation(sys1, `[{"name":"Bash","input_schema":{"type":"object","properties":{}}}]`, msgs...), all},
		{"tool added", conversation(sys1, `[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Read","input_schema":{}}]`, msgs...), all},
		{"earlier result folded", func() []byte {
			m := clone()
			m[4] = strings.Replace(m[4], "out toolu_b", "[folded: step 2]", 1)
			return conversation(sys1, tools1, m...)
		}(), all[2:]},
		{"first prompt changed", func() []byte {
			m := clone()
			m[0] = `{"role":"user","content":"run it now"}`
			return conversation(sys1, tools1, m...)
		}(), all},
		{"thinking text changed", func() []byte {
			m := clone()
			m[3] = strings.Replace(m[3], "step b: think", "step b: thought", 1)
			return conversation(sys1, tools1, m...)
		}(), all[1:]},
		{"middle block left out", func() []byte {
			var a map[string]any
			m := clone()
			_ = json.Unmarshal([]byte(m[3]), &a)
			a["content"] = a["content"].([]any)[1:]
			nb, _ := json.Marshal(a)
			m[3] = string(nb)
			return conversation(sys1, tools1, m...)
		}(), []string{"messages.5.content.0"}},
		{"blocks swapped", func() []byte {
			m := clone()
			var a1, a3 map[string]any
			_ = json.Unmarshal([]byte(m[1]), &a1)
			_ = json.Unmarshal([]byte(m[3]), &a3)
			c1, c3 := a1["content"].([]any), a3["content"].([]any)
			c1[0], c3[0] = c3[0], c1[0]
			b1, _ := json.Marshal(a1)
			b3, _ := json.Marshal(a3)
			m[1], m[3] = string(b1), string(b3)
			return conversation(sys1, tools1, m...)
		}(), all},
		{"foreign signature", func() []byte {
			m := clone()
			m[5] = strings.Replace(m[5], `"signature":"scripted1.`, `"signature":"scripted1.X`, 1)
			return conversation(sys1, tools1, m...)
		}(), all[2:]},
	}
	for _, tc := range cases {
		c := check(tc.body)
		if strings.Join(paths(c), " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: invalid %v, want %v", tc.name, paths(c), tc.want)
		}
	}

	// A later block produced after the change is valid again: the client
	// keeps the folded history and the model signs over it.
	m = clone()
	m[2] = strings.Replace(m[2], "out toolu_a", "[folded]", 1)
	m = []string{m[0], m[2][:0] + `{"role":"assistant","content":"earlier turns folded"}`, user1}
	a, r := signedTurn(t, b, conversation(sys1, tools1, m...), 7)
	if c := check(conversation(sys1, tools1, append(m, a, r)...)); c.Blocks != 1 || len(c.Invalid) != 0 {
		t.Fatalf("thinking signed after the change: %v", paths(c))
	}
	// A client that keeps the invalid blocks (drop_block sent on every
	// request): the block produced after them is valid, they stay invalid.
	m = clone()
	m[2] = strings.Replace(m[2], "out toolu_a", "[folded]", 1)
	a, r = signedTurn(t, b, conversation(sys1, tools1, m...), 8)
	if c := check(conversation(sys1, tools1, append(m, a, r)...)); c.Blocks != 4 || strings.Join(paths(c), " ") != "messages.3.content.0 messages.5.content.0" {
		t.Fatalf("thinking produced after invalid blocks: %v", paths(c))
	}
}

func TestJudge(t *testing.T) {
	b := NewBinder("test")
	msgs := threeTurns(t, b)
	msgs[2] = strings.Replace(msgs[2], "out toolu_a", "[folded]", 1)
	body := conversation(sys1, tools1, msgs...)

	j := b.Judge(http.Header{}, body, MismatchReject)
	want := "messages.3.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. " +
		"Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(j.ErrorBody, &e); err != nil || j.Status != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message != want {
		t.Fatalf("reject: %d %s", j.Status, j.ErrorBody)
	}

	drop := strings.Replace(string(body), `"max_tokens":10,`, `"max_tokens":10,"thinking":{"type":"adaptive","block_binding":{"prefix_mismatch_behavior":"drop_block"}},`, 1)
	if j := b.Judge(http.Header{}, []byte(drop), MismatchReject); j.Status != 400 || !strings.Contains(string(j.ErrorBody), BetaThinkingBinding) {
		t.Fatalf("drop_block without the beta header: %d %s", j.Status, j.ErrorBody)
	}
	h := http.Header{}
	h.Add("anthropic-beta", "interleaved-thinking-2025-05-14, "+BetaThinkingBinding)
	j = b.Judge(h, []byte(drop), MismatchReject)
	if j.Status != 200 || !j.Report || strings.Join(j.Dropped, " ") != "messages.3.content.0 messages.5.content.0" {
		t.Fatalf("drop_block: %+v", j)
	}
	tr, _ := json.Marshal(j.Check.Transformations())
	if string(tr) != `[{"path":"messages.3.content.0","type":"thinking_dropped"},{"path":"messages.5.content.0","type":"thinking_dropped"}]` {
		t.Fatalf("input_transformations: %s", tr)
	}
	// The request without the dropped blocks passes the check.
	kept, err := DropPaths([]byte(drop), j.Dropped)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := b.CheckAnthropic(kept); c.Blocks != 1 || len(c.Invalid) != 0 {
		t.Fatalf("after the drop: %+v", c)
	}
	if j := b.Judge(http.Header{}, body, MismatchDrop); j.Status != 200 || j.Report || len(j.Dropped) != 2 {
		t.Fatalf("silent drop: %+v", j)
	}
	if j := b.Judge(http.Header{}, body, MismatchIgnore); j.Status != 200 || len(j.Dropped) != 0 {
		t.Fatalf("no check: %+v", j)
	}
}

func TestReasoningCheck(t *testing.T) {
	b := NewBinder("test")
	req := func(tools string, items ...string) []byte {
		return []byte(`{"model":"m","instructions":"be brief","tools":` + tools + `,"input":[` + strings.Join(items, ",") + `]}`)
	}
	tl := `[{"type":"function","name":"shell","parameters":{}}]`
	items := []string{`{"role":"user","content":"run it"}`}
	for n := 0; n < 3; n++ {
		id := "rs_" + string(rune('a'+n))
		enc, err := b.SignReasoning(req(tl, items...), id)
		if err != nil {
			t.Fatal(err)
		}
		// Codex resends the reasoning item without its id.
		items = append(items, `{"type":"reasoning","summary":[],"encrypted_content":"`+enc+`"}`,
			`{"type":"function_call","call_id":"c`+id+`","name":"shell","arguments":"{}"}`,
			`{"type":"function_call_output","call_id":"c`+id+`","output":"out `+id+`"}`)
	}
	if c, _ := b.CheckResponses(req(tl, items...)); c.Items != 3 || len(c.Dropped) != 0 {
		t.Fatalf("append-only: %+v", c)
	}
	m := append([]string(nil), items...)
	m[0] = `{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]}`
	if c, _ := b.CheckResponses(req(tl, m...)); len(c.Dropped) != 0 {
		t.Fatalf("equal forms: %+v", c)
	}
	m[3] = strings.Replace(m[3], "out rs_a", "[folded]", 1)
	c, _ := b.CheckResponses(req(tl, m...))
	tr, _ := json.Marshal(c.Transformations())
	if string(tr) != `[{"action":"removed","id":"rs_b","reason":"prefix_mismatch","type":"reasoning"},{"action":"removed","id":"rs_c","reason":"prefix_mismatch","type":"reasoning"}]` {
		t.Fatalf("shortened tool output: %s", tr)
	}
	if c, _ := b.CheckResponses(req(`[]`, items...)); len(c.Dropped) != 3 {
		t.Fatalf("tools changed: %+v", c)
	}
}

func TestFirstChange(t *testing.T) {
	b := NewBinder("test")
	msgs := threeTurns(t, b)
	prev := conversation(sys1, tools1, msgs[:3]...)
	cases := []struct {
		name string
		next []byte
		want int
	}{
		{"appended", conversation(sys1, tools1, msgs...), -1},
		{"same", prev, -1},
		{"cache_control and string form", conversation(`"You are terse."`, tools1,
			`{"role":"user","content":[{"type":"text","text":"run it","cache_control":{"type":"ephemeral"}}]}`, msgs[1], msgs[2]), -1},
		{"result folded", conversation(sys1, tools1, msgs[0], msgs[1], strings.Replace(msgs[2], "out toolu_a", "[folded]", 1)), 2},
		{"message removed", conversation(sys1, tools1, msgs[0], msgs[2]), 1},
		{"tools changed", conversation(sys1, `[]`, msgs[:3]...), 0},
	}
	for _, c := range cases {
		got, err := FirstChange(Anthropic, prev, c.next)
		if err != nil || got != c.want {
			t.Errorf("%s: %d %v, want %d", c.name, got, err, c.want)
		}
	}
	r := func(items ...string) []byte {
		return []byte(`{"instructions":"x","input":[` + strings.Join(items, ",") + `]}`)
	}
	if got, _ := FirstChange(Responses, r(`{"role":"user","content":"a"}`), r(`{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]}`, `{"type":"function_call","call_id":"c"}`)); got != -1 {
		t.Errorf("responses appended: %d", got)
	}
	if got, _ := FirstChange(Responses, r(`{"role":"user","content":"a"}`, `{"role":"user","content":"b"}`), r(`{"role":"user","content":"a"}`, `{"role":"user","content":"c"}`)); got != 1 {
		t.Errorf("responses changed: %d", got)
	}
}
