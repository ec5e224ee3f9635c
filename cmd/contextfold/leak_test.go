package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/mcpserver"
	"github.com/contextfold/contextfold/proxy"
	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/scrub/scrubtest"
)

// leakTurn is one turn of the leak test: a generated token of one rule in
// every field, next to rotating punctuation, and in the payload next to
// every punctuation the token may meet, plain and JSON-escaped.
type leakTurn struct {
	sample                   scrubtest.Sample
	summary, payload, sessID string
	files, commands, errors  []string
}

func pick(list []string, i int) string { return list[i%len(list)] }

// leakTurns builds one turn per rule the generator has a token for.
func leakTurns(t *testing.T) []leakTurn {
	t.Helper()
	sc, err := scrub.New()
	if err != nil {
		t.Fatal(err)
	}
	samples, _ := scrubtest.Samples(sc)
	if len(samples) < 150 { // of the 221 gitleaks rules
		t.Fatalf("only %d generated samples", len(samples))
	}
	if raceOn || testing.Short() {
		// Every sixth rule (twelfth under the race detector): the full
		// set takes minutes, and many more under the race detector.
		step := 6
		if raceOn {
			step = 12
		}
		var some []scrubtest.Sample
		for i := 0; i < len(samples); i += step {
			some = append(some, samples[i])
		}
		samples = some
	}
	var out []leakTurn
	for i, s := range samples {
		var p strings.Builder
		fmt.Fprintf(&p, "$ ./deploy.sh --rule %s\n", s.RuleID)
		// Every third neighbour, rotating with the rule: across the turns,
		// each rule meets a third of them on every path and every
		// neighbour meets a third of the rules (scrub's
		// TestEveryRuleEveryNeighbour crosses them all).
		for j, a := range scrubtest.After {
			if (i+j)%3 == 0 {
				p.WriteString("out " + s.Line(" ", a) + " end\n")
			}
		}
		for j, b := range scrubtest.Before {
			if (i+j)%3 == 0 {
				p.WriteString("in" + s.Line(b, " ") + "end\n")
			}
		}
		p.WriteString(`{"config":` + s.JSONLine("/srv/keys/", ".json&page=2") + "}\n")
		p.WriteString("uploaded backup to /srv/keys/" + s.Secret + ".json\n")
		out = append(out, leakTurn{
			sample:   s,
			summary:  "rotated " + s.Line("keys/", pick(scrubtest.After, i)),
			payload:  p.String(),
			sessID:   "sess " + s.Line("", pick(scrubtest.After, i+1)),
			files:    []string{s.Line("srv/keys/", pick(scrubtest.After, i+2)), "cmd/deploy/main.go"},
			commands: []string{"curl " + s.Line("'https://api.example.com/v1?key=", pick(scrubtest.After, i+3))},
			errors:   []string{"AuthError" + s.Line(pick(scrubtest.Before, i), pick(scrubtest.After, i+4))},
		})
	}
	return out
}

// standalone returns the sample of the first turn from i on whose token
// needs no context (a vendor token with its own prefix).
func standalone(turns []leakTurn, i int) scrubtest.Sample {
	for k := range turns {
		if s := turns[(i+k)%len(turns)].sample; s.Prefix == "" {
			return s
		}
	}
	return turns[i].sample
}

// leakFinder searches bytes for the secrets of the leak turns: as they
// are, lower-cased and JSON-escaped (ASCII case-insensitive).
type leakFinder struct {
	needles map[string]string // lower-cased needle → rule id
}

func newLeakFinder(turns []leakTurn) *leakFinder {
	f := &leakFinder{needles: map[string]string{}}
	for _, lt := range turns {
		for _, n := range lt.sample.Needles() {
			f.needles[strings.ToLower(n)] = lt.sample.RuleID
		}
	}
	return f
}

// count returns, by rule, how many times a secret occurs in b.
func (f *leakFinder) count(b []byte) map[string]int {
	low := strings.ToLower(string(b))
	out := map[string]int{}
	for n, id := range f.needles {
		if c := strings.Count(low, n); c > 0 {
			out[id] += c
		}
	}
	return out
}

// treeBytes returns every regular file under the given directories, by
// path.
func treeBytes(t *testing.T, dirs ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range dirs {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				out[p] = b
			}
			return nil
		})
	}
	return out
}

// assertNoLeak fails for every file (or named output) holding a secret.
func assertNoLeak(t *testing.T, f *leakFinder, files map[string][]byte) {
	t.Helper()
	if len(files) == 0 {
		t.Fatal("nothing was written: the test proves nothing")
	}
	total := 0
	where := map[string]int{}
	for p, b := range files {
		c := f.count(b)
		for id, n := range c {
			total += n
			where[leakPlace(p)] += n
			t.Errorf("%s: %d plaintext copies of the %s token", p, n, id)
		}
	}
	if total > 0 {
		t.Errorf("%d plaintext copies in all: %v", total, where)
	}
}

// leakPlace names the kind of file p is, for the summary of a leak.
func leakPlace(p string) string {
	switch {
	case strings.Contains(p, "/cold_nodes/"):
		return "cold nodes"
	case strings.HasSuffix(p, contextfold.IndexFile):
		return "index"
	case strings.Contains(p, "contextfold-cache") || strings.Contains(p, "ranked"):
		return "cache"
	case strings.HasPrefix(p, "("):
		return p
	}
	return filepath.Base(p)
}

// assertScrubCheckClean runs scrub-check on a store just written: it must
// agree (nothing found, exit 0).
func assertScrubCheckClean(t *testing.T, dir string) {
	t.Helper()
	out, errs, code := cli(t, "", "--dir", dir, "scrub-check")
	if code != 0 || !strings.Contains(out, " 0 contain secrets") {
		t.Errorf("scrub-check on the store fold just wrote: exit %d\n%.3000s%s", code, out, errs)
	}
}

// withCache gives the test a per-user cache directory of its own, so that
// the ranked cache written is searched too.
func withCache(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "contextfold-cache")
	t.Setenv(cachedir.Env, d)
	return d
}

// readAfterFold exercises the read paths that write caches (ranked index)
// and logs: recall, scan, steps and hydrate.
func readAfterFold(t *testing.T, dir string, step int) {
	t.Helper()
	cli(t, "", "--dir", dir, "recall", "deploy keys backup rotated")
	cli(t, "", "--dir", dir, "scan", "the deploy failed with AuthError, rotate the keys")
	cli(t, "", "--dir", dir, "steps")
	cli(t, "", "--dir", dir, "hydrate", fmt.Sprint(step))
}

// TestNoSecretReachesDisk crosses a generated token of every rule the
// scrubber knows with every neighbouring punctuation and every field
// (payload, summary, files, commands, errors, session id, tool arguments,
// JSON-escaped), on every write path — fold, fold --input, ingest, the
// Claude Code Stop hook, MCP fold_turn, the proxy — and searches every byte
// written (store, index, journal, caches, logs, working-set log, saved
// session state, proxy stats): zero plaintext copies; scrub-check agrees
// with each store written.
func TestNoSecretReachesDisk(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	turns := leakTurns(t)
	finder := newLeakFinder(turns)

	t.Run("fold", func(t *testing.T) {
		cache := withCache(t)
		dir := filepath.Join(t.TempDir(), ".contextfold")
		for i, lt := range turns {
			args := []string{"--dir", dir, "fold", fmt.Sprint(i + 1), lt.summary, "--file", "-",
				"--session", lt.sessID, "--commands", lt.commands[0], "--errors", lt.errors[0]}
			if i%2 == 0 { // half the lists given, half extracted from the text
				args = append(args, "--files", strings.Join(lt.files, ","))
			}
			if _, errs, code := cli(t, lt.payload, args...); code != 0 {
				t.Fatalf("fold %s: %s", lt.sample.RuleID, errs)
			}
		}
		readAfterFold(t, dir, 1)
		assertNoLeak(t, finder, treeBytes(t, dir, cache))
		assertScrubCheckClean(t, dir)
	})

	t.Run("fold --input", func(t *testing.T) {
		cache := withCache(t)
		dir := filepath.Join(t.TempDir(), ".contextfold")
		for i, lt := range turns {
			doc := map[string]any{"step_id": i + 1, "summary": lt.summary, "raw_content": lt.payload, "session_id": lt.sessID,
				"commands": lt.commands, "errors": lt.errors}
			if i%2 == 1 {
				doc["files"] = lt.files
			}
			b, _ := json.Marshal(doc)
			if _, errs, code := cli(t, string(b), "--dir", dir, "fold", "--input", "-"); code != 0 {
				t.Fatalf("fold --input %s: %s", lt.sample.RuleID, errs)
			}
		}
		readAfterFold(t, dir, 2)
		assertNoLeak(t, finder, treeBytes(t, dir, cache))
		assertScrubCheckClean(t, dir)
	})

	t.Run("MCP fold_turn", func(t *testing.T) {
		cache := withCache(t)
		dir := filepath.Join(t.TempDir(), ".contextfold")
		s, err := contextfold.Open(dir, contextfold.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var logBuf bytes.Buffer
		ctx := context.Background()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := mcpserver.New(s, mcpserver.Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}).Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for i, lt := range turns {
			args := mcpserver.FoldArgs{StepID: i + 1, Summary: lt.summary, Content: lt.payload, SessionID: lt.sessID,
				Commands: lt.commands, Errors: lt.errors}
			if i%2 == 0 {
				args.Files = lt.files
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolFold, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("fold_turn %s: %v %+v", lt.sample.RuleID, err, res)
			}
			b, _ := json.Marshal(res)
			if c := finder.count(b); len(c) > 0 {
				t.Errorf("fold_turn's answer for %s holds the secret: %v", lt.sample.RuleID, c)
			}
		}
		files := treeBytes(t, dir, cache)
		files["(MCP server log)"] = logBuf.Bytes()
		assertNoLeak(t, finder, files)
		assertScrubCheckClean(t, dir)
	})

	// One conversation carries every turn: the tool call's arguments hold
	// the command, the tool result the payload.
	type chatMsg = map[string]any
	conversation := func(ask bool) []chatMsg {
		msgs := []chatMsg{{"role": "system", "content": "You are a coding agent."},
			{"role": "user", "content": "rotate every key and redeploy; the old one was " + turns[0].sample.Line("", ".")}}
		for i, lt := range turns {
			argJSON, _ := json.Marshal(map[string]any{"command": lt.commands[0], "path": lt.files[0]})
			msgs = append(msgs,
				chatMsg{"role": "assistant", "content": lt.summary, "tool_calls": []any{chatMsg{"id": fmt.Sprintf("call_%d", i), "type": "function",
					"function": chatMsg{"name": "bash", "arguments": string(argJSON)}}}},
				chatMsg{"role": "tool", "tool_call_id": fmt.Sprintf("call_%d", i), "content": lt.payload + "\n" + lt.errors[0]})
		}
		if ask {
			msgs = append(msgs, chatMsg{"role": "user", "content": "which key did deploy.sh upload for rule " + turns[3].sample.RuleID + "? show its output"})
		}
		return msgs
	}

	t.Run("ingest", func(t *testing.T) {
		cache := withCache(t)
		dir := filepath.Join(t.TempDir(), ".contextfold")
		in := filepath.Join(t.TempDir(), "session.json")
		b, _ := json.Marshal(chatMsg{"messages": conversation(false)})
		os.WriteFile(in, b, 0o600)
		if _, errs, code := cli(t, "", "--dir", dir, "ingest", in); code != 0 {
			t.Fatalf("ingest: %s", errs)
		}
		readAfterFold(t, dir, 3)
		assertNoLeak(t, finder, treeBytes(t, dir, cache))
		assertScrubCheckClean(t, dir)
	})

	t.Run("Claude Code Stop hook", func(t *testing.T) {
		cache := withCache(t)
		dir := filepath.Join(t.TempDir(), ".contextfold")
		tdir := t.TempDir()
		// A token where an id should be: one that stands alone (a value
		// only its context marks as a secret cannot be told from an id).
		sess := "9b8c7d6e-5f4a-4b3c-8d2e-" + standalone(turns, 5).Secret
		var tr bytes.Buffer
		rec := func(typ, uuid string, msg any) {
			b, _ := json.Marshal(chatMsg{"type": typ, "uuid": uuid, "sessionId": sess, "cwd": "/home/dev/widget",
				"timestamp": "2026-03-02T12:00:00.000Z", "message": msg})
			tr.Write(append(b, '\n'))
		}
		rec("user", "u-0", chatMsg{"role": "user", "content": "rotate every key and redeploy"})
		for i, lt := range turns {
			id := fmt.Sprintf("toolu_%04d", i)
			rec("assistant", fmt.Sprintf("a-%d", i), chatMsg{"role": "assistant", "content": []any{
				chatMsg{"type": "text", "text": lt.summary},
				chatMsg{"type": "tool_use", "id": id, "name": "Bash", "input": chatMsg{"command": lt.commands[0], "description": lt.files[0]}}}})
			rec("user", fmt.Sprintf("u-%d", i+1), chatMsg{"role": "user", "content": []any{
				chatMsg{"type": "tool_result", "tool_use_id": id, "content": lt.payload + lt.errors[0]}}})
		}
		trPath := filepath.Join(tdir, "transcript.jsonl")
		os.WriteFile(trPath, tr.Bytes(), 0o600)
		payload, _ := json.Marshal(chatMsg{"session_id": sess, "transcript_path": trPath, "cwd": "/home/dev/widget",
			"hook_event_name": "Stop", "stop_hook_active": false})
		out, errs, code := cli(t, string(payload), "--dir", dir, "hook", "claude-code", "Stop", "--verbose")
		if code != 0 {
			t.Fatalf("Stop hook: exit %d %s", code, errs)
		}
		prompt, _ := json.Marshal(chatMsg{"session_id": sess, "transcript_path": trPath, "cwd": "/home/dev/widget",
			"hook_event_name": "UserPromptSubmit", "prompt": "what did deploy.sh print for " + turns[7].sample.RuleID + "?"})
		out2, errs2, _ := cli(t, string(prompt), "--dir", dir, "hook", "claude-code", "UserPromptSubmit")
		files := treeBytes(t, dir, cache)
		files["(hook output)"] = []byte(out + errs + out2 + errs2)
		assertNoLeak(t, finder, files)
		assertScrubCheckClean(t, dir)
	})

	t.Run("proxy", func(t *testing.T) {
		cache := withCache(t)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			if strings.HasSuffix(r.URL.Path, proxy.PathAnthropic) {
				io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_x","name":"Bash","input":{"command":"cat /srv/keys/`+turns[13].sample.Secret+`.json"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
				return
			}
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_x","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat /srv/keys/`+turns[9].sample.Secret+`.json\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
		}))
		defer up.Close()
		dir := t.TempDir()
		var logBuf bytes.Buffer
		var mu sync.Mutex
		// MaxSessions 1: a request on another session drops this one from
		// memory, which saves its state (working set, page table) to disk.
		srv, err := proxy.New(proxy.Options{Dir: dir, Upstream: up.URL, Harness: harness.Config{ContextBudget: 8000}, MaxSessions: 1,
			Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf, mu: &mu}, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
		hs := httptest.NewServer(srv)
		// A token as a session name (the proxy's names are 1 to 64 of
		// A-Z a-z 0-9 . _ -).
		session := ""
		for _, lt := range turns {
			if n := "t-" + lt.sample.Secret + "."; lt.sample.Prefix == "" && len(n) <= 64 && strings.Trim(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == "" {
				session = n
				break
			}
		}
		post := func(session, path string, doc chatMsg) {
			b, _ := json.Marshal(doc)
			req, _ := http.NewRequest("POST", hs.URL+path, bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(proxy.HeaderSession, session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		}
		send := func(session string, msgs []chatMsg) {
			post(session, proxy.PathOpenAI, chatMsg{"model": "gpt-4.1", "messages": msgs})
		}
		send(session, conversation(false))
		send(session, conversation(true))
		// The same turns as Anthropic Messages: tool_use input, tool_result
		// content.
		var anth []chatMsg
		anth = append(anth, chatMsg{"role": "user", "content": "rotate every key and redeploy"})
		for i, lt := range turns {
			id := fmt.Sprintf("toolu_%04d", i)
			anth = append(anth,
				chatMsg{"role": "assistant", "content": []any{chatMsg{"type": "text", "text": lt.summary},
					chatMsg{"type": "tool_use", "id": id, "name": "Bash", "input": chatMsg{"command": lt.commands[0], "path": lt.files[0]}}}},
				chatMsg{"role": "user", "content": []any{chatMsg{"type": "tool_result", "tool_use_id": id, "content": lt.payload + lt.errors[0]}}})
		}
		anth = append(anth, chatMsg{"role": "user", "content": "what did deploy.sh print for " + turns[5].sample.RuleID + "?"})
		post("anthropic-"+session[:min(len(session), 40)], proxy.PathAnthropic, chatMsg{"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": anth})
		send("other", conversation(false)[:3])
		if st := srv.Stats(); st.SessionsDropped < 2 {
			t.Errorf("no session was dropped from memory: its saved state is not searched")
		}
		resp, err := http.Get(hs.URL + proxy.PathStats)
		if err != nil {
			t.Fatal(err)
		}
		stats, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hs.Close()
		srv.Close()
		files := treeBytes(t, dir, cache)
		mu.Lock()
		files["(proxy log)"] = append([]byte{}, logBuf.Bytes()...)
		mu.Unlock()
		files["(proxy stats)"] = stats
		assertNoLeak(t, finder, files)
		stores := 0
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Name() == contextfold.IndexFile {
				stores++
				assertScrubCheckClean(t, filepath.Dir(p))
			}
			return nil
		})
		if stores < 2 {
			t.Errorf("the proxy folded %d session(s) of 2: the test proves less than it says", stores)
		}
	})
}

// lockedWriter serialises writes of a logger used from several goroutines.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
