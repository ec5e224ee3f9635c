package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/match"
)

// credFilePasswords are the passwords of the rsyncd.secrets file the
// sessions of TestCredentialFileAcrossTurnsThroughProxy print: plain
// words and digits, which no rule finds by their look.
var credFilePasswords = []string{"backupWinter2024", "mirror7sunflower", "Stagingpass42"}

// credFileSession is a coding agent's session in api's shape: some build
// calls, then a tool call running "cat /etc/rsyncd.secrets" and its
// result (the file's USER:PASSWORD lines), then more build calls, a
// closing text and prompt. upto cuts it after that many items (0: whole).
func credFileSession(api API, upto int) []byte {
	type msg = map[string]any
	var items []any
	add := func(m msg) { items = append(items, m) }
	top := msg{"model": "m", "stream": false}
	key := "messages"
	user := func(text string) {
		switch api {
		case APIAnthropic:
			add(msg{"role": "user", "content": []any{msg{"type": "text", "text": text}}})
		case APIResponses:
			add(msg{"type": "message", "role": "user", "content": []any{msg{"type": "input_text", "text": text}}})
		default:
			add(msg{"role": "user", "content": text})
		}
	}
	switch api {
	case APIOpenAI:
		add(msg{"role": "system", "content": "You are a coding agent."})
	case APIAnthropic:
		top["system"], top["max_tokens"] = "You are a coding agent.", 1024
	case APIResponses:
		key, top["instructions"] = "input", "You are a coding agent."
	}
	user("The nightly rsync backup fails with an auth error; find out why.")
	file := "backup:" + credFilePasswords[0] + "\nmirror:" + credFilePasswords[1] + "\nstaging:" + credFilePasswords[2] + "\n"
	call := func(i int, command, out string) {
		id := "call_" + itoa(i)
		args, _ := json.Marshal(map[string]string{"command": command})
		switch api {
		case APIOpenAI:
			add(msg{"role": "assistant", "content": nil, "tool_calls": []any{msg{"id": id, "type": "function", "function": msg{"name": "bash", "arguments": string(args)}}}})
			add(msg{"role": "tool", "tool_call_id": id, "content": out})
		case APIAnthropic:
			add(msg{"role": "assistant", "content": []any{msg{"type": "tool_use", "id": id, "name": "Bash", "input": msg{"command": command}}}})
			add(msg{"role": "user", "content": []any{msg{"type": "tool_result", "tool_use_id": id, "content": out}}})
		case APIResponses:
			add(msg{"type": "function_call", "call_id": id, "name": "shell", "arguments": string(args)})
			add(msg{"type": "function_call_output", "call_id": id, "output": out})
		}
	}
	call(1, "journalctl -u rsync-nightly --no-pager", bigLog("rsync", 30))
	call(2, "cat /etc/rsyncd.secrets", file)
	call(3, "systemctl status rsync", bigLog("systemd", 30))
	call(4, "go build ./...", bigLog("build", 30))
	user("go on")
	if upto > 0 && upto < len(items) {
		items = items[:upto]
	}
	top[key] = items
	b, err := json.Marshal(top)
	if err != nil {
		panic(err)
	}
	return b
}

// credFileItems is how many messages (items) credFileSession(api, 0) has.
func credFileItems(api API) int {
	var top struct{ Messages, Input []json.RawMessage }
	if err := json.Unmarshal(credFileSession(api, 0), &top); err != nil {
		panic(err)
	}
	return len(top.Messages) + len(top.Input)
}

// TestCredentialFileAcrossTurnsThroughProxy: an agent prints a credential
// file by a tool call (cat /etc/rsyncd.secrets) whose output comes back
// as the next message (Claude Code's tool_use then tool_result, a Chat
// Completions tool call then its tool message, Codex's function_call then
// function_call_output). The proxy folds the output as a turn of its own
// (the call's message stays in the prompt; the output turn is told its
// command, Turn.OutputOf), in one fold event or, the session sent a
// message a request, in a later one: in every case no file under the
// proxy's directory
// (stores, logs, saved state) holds a password, and a proxy started again
// over it reads the conversation as the one it folded. Before, the
// credential-file rule saw the command and the file's lines only in one
// text: through a real agent the passwords reached disk.
func TestCredentialFileAcrossTurnsThroughProxy(t *testing.T) {
	paths := map[API]string{APIOpenAI: PathOpenAI, APIAnthropic: PathAnthropic, APIResponses: PathResponses}
	for _, api := range []API{APIAnthropic, APIOpenAI, APIResponses} {
		for _, mode := range []string{"one request", "a request per message"} {
			t.Run(string(api)+"/"+mode, func(t *testing.T) {
				up := newUpstream(t)
				if api == APIResponses {
					up.handler = func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", "application/json")
						io.WriteString(w, responsesReply)
					}
				}
				cfg := harness.Config{HotWindow: 1, FoldBlock: 1, MinFoldTokens: 1, Match: match.Exact}
				tp := newProxy(t, up, cfg)
				var bodies [][]byte
				if mode == "one request" {
					bodies = [][]byte{credFileSession(api, 0)}
				} else {
					// The session grown by one message a request: the
					// output is folded by a later fold event than the
					// messages before it.
					for k := 2; k <= credFileItems(api); k++ {
						bodies = append(bodies, credFileSession(api, k))
					}
				}
				folded := 0
				for k, b := range bodies {
					resp, out := post(t, tp.http.URL+paths[api], b, nil)
					if resp.StatusCode != 200 {
						t.Fatalf("request %d: status %d: %s", k+1, resp.StatusCode, out)
					}
					folded += tp.record(t, k+1).StepsFolded
				}
				if folded < 4 {
					t.Fatalf("%d steps folded in all; want the call and its output folded", folded)
				}
				tp.srv.Close()
				// A proxy started again over the directory reads the
				// conversation as the one it folded: the redacted
				// passwords read as no divergence (the same generation).
				tp2 := newProxyWith(t, up, func(o *Options) { o.Dir = tp.dir; o.Harness = cfg })
				if resp, out := post(t, tp2.http.URL+paths[api], credFileSession(api, 0), nil); resp.StatusCode != 200 {
					t.Fatalf("after a restart: status %d: %s", resp.StatusCode, out)
				}
				if r := tp2.record(t, 1); r.Generation != 1 {
					t.Errorf("after a restart the conversation went to store generation %d (warnings %q)", r.Generation, r.Warnings)
				}
				tp2.srv.Close()
				for _, pw := range credFilePasswords {
					if got := filesHolding(tp.dir, pw); len(got) > 0 {
						t.Errorf("these files hold the password %q: %v", pw, got)
					}
				}
			})
		}
	}
}
