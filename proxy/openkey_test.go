package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/match"
)

// TestRestartKeepsPrivateKeyOpen: an agent reads a private key in three
// tool outputs (head: the BEGIN line and first body lines; sed: body lines
// alone; tail: the last lines and the END line). The first proxy folds the
// conversation up to the first part and is stopped; a second proxy started
// on the same directory receives the conversation grown by the other two
// parts. No key body line may reach any file under the directory (raw
// bytes). The middle part is plain base64, a secret only because an
// earlier turn left the key open; the second proxy's Store never folded
// that turn and its fold batch holds the new messages alone, so the store's
// own reading of stored turns (storedOpenKey) does not apply: the harness
// reads the key left open from the indexed messages the client resends
// (resumeIndexedOpenKey). Before, lines 9-16 were written in clear to the
// second fold event's cold node.
func TestRestartKeepsPrivateKeyOpen(t *testing.T) { restartKeepsKeyOpen(t, foldAll) }

// TestRestartKeepsPrivateKeyOpenBudget is TestRestartKeepsPrivateKeyOpen
// in the proxy's other fold mode, the context budget (harness/budget.go),
// which folds oldest first once a request is past the budget: its fold
// event reads the key left open the same way (learnIndexedSecrets), and
// this keeps it so.
func TestRestartKeepsPrivateKeyOpenBudget(t *testing.T) {
	restartKeepsKeyOpen(t, harness.Config{ContextBudget: 250, FoldTarget: 30, PaybackRequests: -1, CacheTTL: -1,
		HotWindow: 1, MinFoldTokens: 50, Match: match.Exact})
}

// restartKeepsKeyOpen is TestRestartKeepsPrivateKeyOpen with the proxy's
// harness configured by cfg.
func restartKeepsKeyOpen(t *testing.T, cfg harness.Config) {
	line := func(i int) string { // 64 base64 characters, none of them a word
		return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64]
	}
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			b.WriteString(line(i) + "\n")
		}
		return b.String()
	}
	// An RSA key's 24 body lines, read 8 at a time: each part is long
	// enough to be folded on its own.
	parts := []string{
		"-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + lines(1, 8),
		lines(9, 16),
		lines(17, 23) + line(24)[:20] + "==\n-----END OPENSSH PRIVATE" + " KEY-----\n",
	}
	const nLines = 24
	commands := []string{"head -n 9 ~/.ssh/id_rsa", "sed -n 10,17p ~/.ssh/id_rsa", "tail -n 9 ~/.ssh/id_rsa"}
	pad := strings.Repeat("The deploy host only accepts this key; checking that it is the right one. ", 3)
	part := func(i int) []map[string]any {
		id := fmt.Sprintf("call_k%d", i)
		return []map[string]any{
			{"role": "assistant", "content": pad, "tool_calls": []map[string]any{{"id": id, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":%q}`, commands[i])}}}},
			{"role": "tool", "tool_call_id": id, "content": parts[i]},
		}
	}
	first := []map[string]any{{"role": "user", "content": "show me the deploy key, a few lines at a time"}}
	first = append(first, part(0)...)
	first = append(first, map[string]any{"role": "user", "content": "go on"})
	second := append([]map[string]any{}, first...)
	second = append(second, part(1)...)
	second = append(second, part(2)...)
	second = append(second, map[string]any{"role": "user", "content": "thanks, that is all of it"})
	keyLines := func(dir string) []string {
		var found []string
		for i := 1; i <= nLines; i++ {
			if f := filesHolding(dir, line(i)[:20]); len(f) > 0 {
				found = append(found, fmt.Sprintf("line %d in %v", i, f))
			}
		}
		return found
	}

	up := newUpstream(t)
	tp := newProxy(t, up, cfg)
	if resp, b := post(t, tp.http.URL+PathOpenAI, chatMessagesBody(t, first), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if r := tp.record(t, 1); r.StepsFolded+r.StepsCollapsed == 0 {
		t.Fatalf("the first request folded nothing (%+v): the test does not cover a key left open by a proxy that stopped", r)
	}
	if err := tp.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if found := keyLines(tp.dir); len(found) > 0 {
		t.Fatalf("before the restart, key lines reached disk: %v", found)
	}

	tp2 := newProxyWith(t, up, func(o *Options) { o.Dir = tp.dir; o.Harness = cfg })
	if resp, b := post(t, tp2.http.URL+PathOpenAI, chatMessagesBody(t, second), nil); resp.StatusCode != 200 {
		t.Fatalf("after the restart: status %d: %s", resp.StatusCode, b)
	}
	r := tp2.record(t, 1)
	if r.StepsFolded+r.StepsCollapsed < 2 || r.Generation != 1 {
		t.Fatalf("after the restart: %d steps folded, generation %d (warnings %q); want the key's other parts folded in the same store",
			r.StepsFolded, r.Generation, r.Warnings)
	}
	if err := tp2.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if found := keyLines(tp.dir); len(found) > 0 {
		t.Fatalf("after a restart between the key's parts, these reached disk: %v", found)
	}
	// The tool calls between the parts are no secret and stay searchable.
	if f := filesHolding(tp.dir, "sed -n 10,17p"); len(f) == 0 {
		t.Error("the tool call between the key's parts is nowhere on disk: was it redacted as a key part?")
	}
}

// TestWholeKeyOutputSummary: a tool output that is a whole private key
// (cat ~/.ssh/id_rsa), folded by the proxy, leaves no line of the key on
// disk. The proxy's summary of a message leads with its first line that
// is not noise, and skips the BEGIN line as a "-----" banner: it quoted
// the key's first body line, which the redaction of the block as one
// value did not reach (before: line 1 in the cold node and the index).
func TestWholeKeyOutputSummary(t *testing.T) {
	line := func(i int) string { return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64] }
	var b strings.Builder
	b.WriteString("-----BEGIN OPENSSH PRIVATE" + " KEY-----\n")
	for i := 1; i <= 8; i++ {
		b.WriteString(line(i) + "\n")
	}
	b.WriteString("-----END OPENSSH PRIVATE" + " KEY-----\n")
	msgs := []map[string]any{
		{"role": "user", "content": "show me the deploy key"},
		{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function",
			"function": map[string]any{"name": "bash", "arguments": `{"command":"cat ~/.ssh/id_rsa"}`}}}},
		{"role": "tool", "tool_call_id": "c1", "content": b.String()},
		{"role": "user", "content": "go on"},
	}
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	if resp, body := post(t, tp.http.URL+PathOpenAI, chatMessagesBody(t, msgs), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if r := tp.record(t, 1); r.StepsFolded+r.StepsCollapsed == 0 {
		t.Fatal("nothing folded: the test does not cover the key's node")
	}
	if err := tp.srv.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		if f := filesHolding(tp.dir, line(i)[:20]); len(f) > 0 {
			t.Errorf("key line %d reached disk: %v", i, f)
		}
	}
	if f := filesHolding(tp.dir, "cat ~/.ssh/id_rsa"); len(f) == 0 {
		t.Error("the summary lost the command too")
	}
}
