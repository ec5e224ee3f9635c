package proxy

import (
	"fmt"
	"strings"
	"testing"
)

// manyToolCallsBody is an Anthropic request whose second message holds n
// tool calls (Bash, command "cmd-<i>") and whose third holds their n
// results, newest first.
func manyToolCallsBody(n int) []byte {
	var calls, results []string
	for i := range n {
		calls = append(calls, fmt.Sprintf(`{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"cmd-%d"}}`, i, i))
		results = append(results, fmt.Sprintf(`{"type":"tool_result","tool_use_id":"t%d","content":"ok %d"}`, n-1-i, n-1-i))
	}
	return []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[` + strings.Join(calls, ",") + `]},` +
		`{"role":"user","content":[` + strings.Join(results, ",") + `]}]}`)
}

// TestManyToolCallsInFewMessages: the results of many tool calls held by
// a few messages are attributed to their calls as with few calls: the
// message of results names the tool and the command of its first result's
// call. (The calls are looked up in a map once the new events, not the new
// messages, pass 64: 10^5 calls and results in two messages, a 13 MB
// request, took a minute of CPU and 800 MB to parse; BenchmarkParseManyToolCalls.)
func TestManyToolCallsInFewMessages(t *testing.T) {
	for _, n := range []int{3, 40, 200} {
		r, err := parseRequest(APIAnthropic, manyToolCallsBody(n))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.msgs) != 3 {
			t.Fatalf("n=%d: %d messages", n, len(r.msgs))
		}
		m := r.msgs[2]
		if want := fmt.Sprintf("cmd-%d", n-1); m.Tool != "Bash" || m.Command != want {
			t.Errorf("n=%d: results attributed to %q %q, want Bash %q", n, m.Tool, m.Command, want)
		}
	}
}

// BenchmarkParseManyToolCalls parses a request of 10^4 tool calls in one
// message and their results in the next.
func BenchmarkParseManyToolCalls(b *testing.B) {
	body := manyToolCallsBody(10000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := parseRequest(APIAnthropic, body); err != nil {
			b.Fatal(err)
		}
	}
}
