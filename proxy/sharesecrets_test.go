package proxy

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFoldEventsShareSecretsThroughProxy: a value that a tool output
// reveals as a secret only by its context (CLOUDFLARE_API_KEY=…), folded
// by one request's fold event, is redacted from the assistant text that
// repeats it bare, folded by the next request's fold event; no file under
// the proxy's directory (stores, logs, saved state) holds it. A proxy
// started again over the same directory, which no longer knows the value,
// still reads the conversation as the one it folded (no divergence, the
// same store generation). Before the session shared its values, the
// assistant text reached disk raw: alone, it does not look like a secret.
func TestFoldEventsShareSecretsThroughProxy(t *testing.T) {
	v := "Hv3k" + "Qz8nLw2pXr5tMb7d"
	base, second := secretConversation(v, "HOME=/root\nSHELL=/bin/bash\n")
	third := append(append([]map[string]any{}, second...),
		map[string]any{"role": "assistant", "content": "done"},
		map[string]any{"role": "user", "content": "and now?"})
	body := func(msgs []map[string]any) []byte { return chatMessagesBody(t, msgs) }
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	for k, msgs := range [][]map[string]any{base, second} {
		if resp, b := post(t, tp.http.URL+PathOpenAI, body(msgs), nil); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", k+1, resp.StatusCode, b)
		}
	}
	if r1, r2 := tp.record(t, 1), tp.record(t, 2); r1.StepsFolded == 0 || r2.StepsFolded == 0 {
		t.Fatalf("steps folded: %d then %d; want a fold event in each request", r1.StepsFolded, r2.StepsFolded)
	}
	tp.srv.Close() // its saved state and logs are written
	holds := func(dir string) []string { return filesHolding(dir, v) }
	if got := holds(tp.dir); len(got) > 0 {
		t.Fatalf("these files hold the value the first fold event revealed: %v", got)
	}
	// A proxy started again over the same directory.
	tp2 := newProxyWith(t, up, func(o *Options) { o.Dir = tp.dir; o.Harness = foldAll })
	if resp, b := post(t, tp2.http.URL+PathOpenAI, body(third), nil); resp.StatusCode != 200 {
		t.Fatalf("after a restart: status %d: %s", resp.StatusCode, b)
	}
	r := tp2.record(t, 1)
	if r.Generation != 1 {
		t.Fatalf("after a restart the conversation went to store generation %d (warnings %q): its shared redactions read as a divergence", r.Generation, r.Warnings)
	}
	tp2.srv.Close()
	if got := holds(tp.dir); len(got) > 0 {
		t.Fatalf("after a restart these files hold the value: %v", got)
	}
}

// TestRestartBetweenFoldEventsSharesSecrets: the proxy stops between the
// fold event that folded a value's context (CLOUDFLARE_API_KEY=… in a
// tool output) and the one that folds an assistant text repeating the
// value bare. The store's session secrets live in memory only, so the
// restarted proxy learns them again from the messages its store already
// holds, which the client resends; before, the bare value reached the
// second fold event's cold node as it stood.
func TestRestartBetweenFoldEventsSharesSecrets(t *testing.T) {
	v := "Jm4t" + "Rw9cKx2vPq7sNb3h"
	base, second := secretConversation(v, "HOME=/root\n")
	body := func(msgs []map[string]any) []byte { return chatMessagesBody(t, msgs) }
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	if resp, b := post(t, tp.http.URL+PathOpenAI, body(base), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if r := tp.record(t, 1); r.StepsFolded == 0 {
		t.Fatal("the first request folded nothing: the test does not cover a restart between fold events")
	}
	tp.srv.Close()
	tp2 := newProxyWith(t, up, func(o *Options) { o.Dir = tp.dir; o.Harness = foldAll })
	if resp, b := post(t, tp2.http.URL+PathOpenAI, body(second), nil); resp.StatusCode != 200 {
		t.Fatalf("after the restart: status %d: %s", resp.StatusCode, b)
	}
	if r := tp2.record(t, 1); r.StepsFolded == 0 || r.Generation != 1 {
		t.Fatalf("after the restart: %d steps folded, generation %d; want a fold event in the same store", r.StepsFolded, r.Generation)
	}
	tp2.srv.Close()
	if found := filesHolding(tp.dir, v); len(found) > 0 {
		t.Fatalf("after a restart between fold events these files hold the value: %v", found)
	}
}

// secretConversation returns a conversation whose tool output reveals v as
// a secret by its context (CLOUDFLARE_API_KEY=v after env lines), and the
// same conversation grown by an assistant text repeating v bare, which
// alone does not look like a secret.
func secretConversation(v, env string) (base, second []map[string]any) {
	pad := strings.Repeat("The deployment pipeline reads its settings from the environment. ", 4)
	base = []map[string]any{
		{"role": "user", "content": "set up the deploy"},
		{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"env"}`}}}},
		{"role": "tool", "tool_call_id": "c1", "content": env + "CLOUDFLARE_API_KEY=" + v + "\nPATH=/usr/bin\n" + pad},
		{"role": "user", "content": "go on"},
	}
	second = append(append([]map[string]any{}, base...),
		map[string]any{"role": "assistant", "content": pad + "I checked that " + v + " is the one in use. " + pad},
		map[string]any{"role": "user", "content": "thanks"})
	return base, second
}

// filesHolding returns the files under dir (relative to it) whose bytes
// hold v.
func filesHolding(dir, v string) []string {
	var found []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), v) {
			found = append(found, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return found
}

// chatMessagesBody is a Chat Completions request body holding msgs.
func chatMessagesBody(t *testing.T, msgs []map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
