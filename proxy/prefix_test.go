package proxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// prefixBodies is a conversation growing one message per request in the
// shape of api, with the variations a client produces: the array moving
// (a field before it changes length), a cache_control marker moving off
// the previous last message, and another session with the same start.
func prefixBodies(api API) [][]byte { return prefixBodiesSized(api, 12) }

// prefixBodiesSized is prefixBodies with tool outputs of the given lines
// (12: about 0.4 kB; 400: about 14 kB, bodies of several bodyBlocks).
func prefixBodiesSized(api API, lines int) [][]byte {
	type msg = map[string]any
	var conv []any
	var out [][]byte
	add := func(m msg) { conv = append(conv, m) }
	body := func(model string, marker bool, items []any) []byte {
		items = append([]any(nil), items...)
		if marker && api == APIAnthropic && len(items) > 0 {
			// The marker on the last message's last block (Claude Code).
			last := items[len(items)-1].(msg)
			if blocks, ok := last["content"].([]any); ok && len(blocks) > 0 {
				c := map[string]any{}
				for k, v := range last {
					c[k] = v
				}
				nb := append([]any(nil), blocks...)
				b := map[string]any{}
				for k, v := range nb[len(nb)-1].(msg) {
					b[k] = v
				}
				b["cache_control"] = msg{"type": "ephemeral"}
				nb[len(nb)-1] = b
				c["content"] = nb
				items[len(items)-1] = c
			}
		}
		key := "messages"
		top := msg{"model": model, "stream": false}
		switch api {
		case APIAnthropic:
			top["system"] = "You are a coding agent."
			top["max_tokens"] = 1024
		case APIResponses:
			key = "input"
			top["instructions"] = "Be brief."
		}
		top[key] = items
		b, err := json.Marshal(top)
		if err != nil {
			panic(err)
		}
		return b
	}
	switch api {
	case APIOpenAI:
		add(msg{"role": "system", "content": "You are a coding agent."})
		add(msg{"role": "user", "content": "Fix the parser in pkg7."})
	case APIAnthropic:
		add(msg{"role": "user", "content": []any{msg{"type": "text", "text": "Fix the parser in pkg7."}}})
	case APIResponses:
		add(msg{"type": "message", "role": "developer", "content": "You are a coding agent."})
		add(msg{"type": "message", "role": "user", "content": []any{msg{"type": "input_text", "text": "Fix the parser in pkg7."}}})
	}
	for i := 1; i <= 24; i++ {
		id := "call_" + itoa(i)
		cmd := `{"command":"go test ./pkg` + itoa(i) + `"}`
		switch api {
		case APIOpenAI:
			add(msg{"role": "assistant", "content": nil, "tool_calls": []any{msg{"id": id, "type": "function", "function": msg{"name": "bash", "arguments": cmd}}}})
			out = append(out, body("gpt-4.1", false, conv))
			add(msg{"role": "tool", "tool_call_id": id, "content": bigLog("pkg"+itoa(i), lines)})
		case APIAnthropic:
			add(msg{"role": "assistant", "content": []any{msg{"type": "text", "text": "Running pkg" + itoa(i)}, msg{"type": "tool_use", "id": id, "name": "Bash", "input": json.RawMessage(cmd)}}})
			out = append(out, body("claude-sonnet-4-5", true, conv))
			add(msg{"role": "user", "content": []any{msg{"type": "tool_result", "tool_use_id": id, "content": bigLog("pkg"+itoa(i), lines)}}})
		case APIResponses:
			if i%3 == 0 {
				add(msg{"type": "reasoning", "id": "rs_" + itoa(i), "summary": []any{}, "encrypted_content": "gAAAA" + itoa(i)})
			}
			add(msg{"type": "function_call", "call_id": id, "name": "shell", "arguments": cmd})
			out = append(out, body("gpt-5", false, conv))
			add(msg{"type": "function_call_output", "call_id": id, "output": bigLog("pkg"+itoa(i), lines)})
		}
		if i%6 == 0 {
			// A human prompt; then the same request again with a longer
			// model name (the array moves), and one from another session
			// sharing the start but not the middle.
			switch api {
			case APIResponses:
				add(msg{"type": "message", "role": "user", "content": "what did pkg" + itoa(i-2) + " print?"})
			default:
				add(msg{"role": "user", "content": "what did pkg" + itoa(i-2) + " print?"})
			}
			out = append(out, body("m", true, conv), body("a-much-longer-model-name", true, conv))
			other := append([]any(nil), conv[:3]...)
			other = append(other, conv[len(conv)-1])
			out = append(out, body("m", false, other))
		}
	}
	return out
}

// comparable strips what only the cache sets (the element keys).
func comparableMsgs(ms []harness.Message) []harness.Message {
	out := make([]harness.Message, len(ms))
	for i, m := range ms {
		m.Key, m.PrefixKey = 0, 0
		m.Parts = append([]harness.Part(nil), m.Parts...)
		out[i] = m
	}
	return out
}

// TestPrefixCacheSameParse: a request parsed with the prefix and element
// caches (as the proxy does: measure, then remember) reads exactly as
// parsed from scratch — messages, tools, token counts, splice spans,
// points, the session seed — for the three APIs, whether the conversation
// grows, moves in the body, changes its last message or shares only its
// start with another session; and the prefix is actually reused.
func TestPrefixCacheSameParse(t *testing.T) {
	for _, tc := range []struct {
		api   API
		lines int
	}{{APIOpenAI, 12}, {APIAnthropic, 12}, {APIResponses, 12}, {APIOpenAI, 400}, {APIAnthropic, 400}, {APIResponses, 400}} {
		api := tc.api
		t.Run(string(api)+"/"+itoa(tc.lines), func(t *testing.T) {
			c := newParseCache()
			reused, blocked := 0, 0
			for k, body := range prefixBodiesSized(api, tc.lines) {
				got, err := parseRequestCached(api, body, c)
				if err != nil {
					t.Fatalf("body %d: %v", k, err)
				}
				want, err := parseRequest(api, body)
				if err != nil {
					t.Fatal(err)
				}
				count := func(s string) int { return max(1, len([]rune(s))/4) }
				gt, gf := got.measure(count, true, "heuristic")
				wt, wf := want.measure(count, true, "heuristic")
				if gt != wt || gf != wf {
					t.Fatalf("body %d: measure %d/%d, from scratch %d/%d", k, gt, gf, wt, wf)
				}
				c.remember(got, "heuristic")
				if got.known > 0 {
					reused++
				}
				if got.prefix.blocked > 0 {
					blocked++
				}
				if !reflect.DeepEqual(comparableMsgs(got.msgs), comparableMsgs(want.msgs)) {
					for i := range got.msgs {
						if !reflect.DeepEqual(comparableMsgs(got.msgs[i:i+1]), comparableMsgs(want.msgs[i:i+1])) {
							t.Fatalf("body %d (known %d): message %d\n got %+v\nwant %+v", k, got.known, i, got.msgs[i], want.msgs[i])
						}
					}
				}
				norm := func(sp [][]span) [][]span {
					out := make([][]span, len(sp))
					for i, s := range sp {
						if len(s) > 0 {
							out[i] = s
						}
					}
					return out
				}
				for _, x := range []struct {
					name      string
					got, want any
				}{{"elems", got.elems, want.elems}, {"spans", norm(got.spans), norm(want.spans)}, {"points", got.points, want.points},
					{"roles", got.roles, want.roles}, {"seed", string(got.seed), string(want.seed)}, {"stream", got.stream, want.stream},
					{"session", got.sessionID(), want.sessionID()}} {
					if !reflect.DeepEqual(x.got, x.want) {
						t.Fatalf("body %d (known %d): %s differ\n got %v\nwant %v", k, got.known, x.name, x.got, x.want)
					}
				}
			}
			if reused < 20 {
				t.Fatalf("the prefix cache was used for %d requests only", reused)
			}
			t.Logf("%d requests took a prefix, %d by the body's blocks", reused, blocked)
			// The large bodies span several blocks: most requests take
			// their prefix by the body's blocks.
			if tc.lines > 100 && blocked < 15 {
				t.Fatalf("the body's blocks covered a prefix in %d requests only", blocked)
			}
		})
	}
}

// TestPrefixCacheRejectsChangedBytes: a body that differs from a remembered
// one anywhere in its array (one byte in an old message) is not read from
// the remembered parse, and a body made invalid after the remembered part
// is still refused.
func TestPrefixCacheRejectsChangedBytes(t *testing.T) {
	bodies := prefixBodies(APIOpenAI)
	c := newParseCache()
	var last []byte
	for _, b := range bodies[:12] {
		r, err := parseRequestCached(APIOpenAI, b, c)
		if err != nil {
			t.Fatal(err)
		}
		r.measure(nil, true, "heuristic")
		c.remember(r, "heuristic")
		last = b
	}
	i := strings.Index(string(last), "pkg3 module ok")
	if i < 0 {
		t.Fatal("no old message to change")
	}
	changed := append([]byte(nil), last...)
	changed[i+3] = '9' // pkg3 → pkg9 in an old tool output
	r, err := parseRequestCached(APIOpenAI, changed, c)
	if err != nil {
		t.Fatal(err)
	}
	r.measure(nil, true, "heuristic")
	want, _ := parseRequest(APIOpenAI, changed)
	want.measure(nil, true, "heuristic")
	if !reflect.DeepEqual(comparableMsgs(r.msgs), comparableMsgs(want.msgs)) {
		for i := range r.msgs {
			if !reflect.DeepEqual(comparableMsgs(r.msgs[i:i+1]), comparableMsgs(want.msgs[i:i+1])) {
				t.Fatalf("a changed old message was read from the remembered parse (known %d): message %d\n got %+v\nwant %+v", r.known, i, r.msgs[i], want.msgs[i])
			}
		}
	}
	if r.known == 0 || r.known >= len(r.msgs) {
		t.Fatalf("known %d of %d: the messages before the change should come from the cache, not those after", r.known, len(r.msgs))
	}
	bad := append([]byte(nil), last[:len(last)-1]...)
	bad = append(bad, []byte(`,"x":}`)...)
	if _, err := parseRequestCached(APIOpenAI, bad, c); err == nil {
		t.Fatal("an invalid body after the remembered array was accepted")
	}
	// A trailing garbage element after the remembered ones.
	j := strings.LastIndex(string(last), "]")
	bad = append(append(append([]byte(nil), last[:j]...), []byte(`,{"role":"user","content":"x"]`)...), last[j+1:]...)
	if _, err := parseRequestCached(APIOpenAI, bad, c); err == nil {
		t.Fatal("an invalid element after the remembered ones was accepted")
	}
}

// TestPrefixCacheInPlaceIsolated: the one request that extends a prefix
// state's arrays in place (claim) and the others that take the same state
// read exactly what a parse from scratch reads, and none of them changes
// what the state (and so a later request repeating it) reads: two sessions
// continuing one conversation differently, then the conversation itself
// again, then a request counted with another token counter.
func TestPrefixCacheInPlaceIsolated(t *testing.T) {
	bodies := prefixBodies(APIOpenAI)
	c := newParseCache()
	base := bodies[10]
	r, err := parseRequestCached(APIOpenAI, base, c)
	if err != nil {
		t.Fatal(err)
	}
	r.measure(nil, true, "heuristic")
	c.remember(r, "heuristic")
	j := strings.LastIndex(string(base), "]")
	with := func(msg string) []byte {
		return append(append(append([]byte(nil), base[:j]...), []byte(`,`+msg)...), base[j:]...)
	}
	one := with(`{"role":"user","content":"continue with pkg3"}`)
	two := with(`{"role":"user","content":"no, stop here and explain pkg9"}`)
	check := func(name string, body []byte, counter string) *request {
		t.Helper()
		got, err := parseRequestCached(APIOpenAI, body, c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := parseRequest(APIOpenAI, body)
		count := func(s string) int { return max(1, len([]rune(s))/3) }
		gt, gf := got.measure(count, counter == "heuristic", counter)
		wt, wf := want.measure(count, counter == "heuristic", counter)
		if gt != wt || gf != wf || !reflect.DeepEqual(comparableMsgs(got.msgs), comparableMsgs(want.msgs)) ||
			!reflect.DeepEqual(got.elems, want.elems) || !reflect.DeepEqual(got.roles, want.roles) {
			t.Fatalf("%s (known %d, in place %v): the parse differs from one from scratch", name, got.known, got.inPlace)
		}
		return got
	}
	a := check("first continuation", one, "heuristic")
	b := check("second continuation", two, "heuristic")
	if !a.inPlace || b.inPlace || a.known == 0 || b.known != a.known {
		t.Fatalf("in place: first %v (known %d), second %v (known %d); want only the first", a.inPlace, a.known, b.inPlace, b.known)
	}
	c.remember(b, "heuristic") // the second session is remembered first
	c.remember(a, "heuristic")
	check("the conversation again", base, "heuristic")
	check("first continuation again", one, "heuristic")
	check("another counter", with(`{"role":"user","content":"and pkg4?"}`), "other")
	check("first continuation once more", one, "heuristic")
}
