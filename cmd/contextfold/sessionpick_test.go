package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// startProxyBin starts the built binary's proxy on dir (loopback, a small
// context budget so that a short conversation folds) in front of upstream,
// and returns its address and a function that stops it.
func startProxyBin(t *testing.T, bin, dir, upstream string) (string, func()) {
	t.Helper()
	cmd := exec.Command(bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--dir", dir,
		"--context-budget", "1500", "--payback-requests", "-1", "--hot-window", "2")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(stop)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening on http://"); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return a, stop
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not start within 30 s")
	}
	return "", stop
}

// sendLedgerConversation sends, through the proxy at addr, an OpenAI Chat
// Completions conversation of tool outputs past its budget as session
// (X-Contextfold-Session), so that its older turns fold into
// <dir>/<session>/g1.
func sendLedgerConversation(t *testing.T, addr, session string) {
	t.Helper()
	msgs := []map[string]any{{"role": "user", "content": "get the ledger API's tests passing against the local database"}}
	outputs := []string{
		"psql: error: connection to server at \"127.0.0.1\", port 5433 failed: FATAL:  password authentication failed for user \"ledger_rw\"\n",
		"npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\nnpm ERR! ledger-api@1.4.2 build: `tsc -p tsconfig.build.json`\n",
		"FAIL src/accounts/transfer.test.ts\n  transfer rejects an overdraft\n    expected 422, received 500\n",
		"docker compose ps\nNAME            STATUS\nledger-db       Up 3 minutes (healthy)\n",
		"git diff --stat\n src/accounts/transfer.ts | 14 ++++++++------\n",
		"migrate up\n2026-12-07T10:01:12Z applied 0007_add_overdraft_limit.sql in 41 ms\n",
	}
	for i, o := range outputs {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":"step %d"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat(o, 12)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "now run the whole test suite again"})
	body, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs})
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Contextfold-Session", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("proxy: status %d: %s", resp.StatusCode, out)
	}
}

// TestSessionByNameOnEveryCommand: a project's .contextfold that the real
// Claude Code hooks (two sessions, UUIDs that share their first four
// characters) and the real proxy (a session s-…, and one named as the
// first hooks session) write into. Every command that reads one store takes
// --session with the session's id, its first characters when no other id
// starts so, or a proxy session's name alone, and prints exactly what it
// prints given --dir that session's store (text and --json), with a note
// on stderr naming the session a prefix chose; ui serves that store. An
// ambiguous prefix is refused naming each candidate with its source (and
// under --json as "candidates"); so are an unknown id and --session on a
// store. The commands that write (evict, compact, repair --apply) take the
// whole id only; fold refuses the directory instead of making it a store
// that hides every session, and ingest makes the transcript a session of
// it. The readers change no byte.
//
// Before: status, steps, validate, scrub-check, ui, export and repair
// refused --session ("reads one store, so --session does not pick one
// here"), and the user had to copy a store path such as
// .contextfold/sessions/0d7c9e55-bbbb-4ccc-8ddd-000000000002; hydrate,
// scan and recall took whole ids only ("no session \"0d7c9\""); and fold in
// the project wrote a store into .contextfold itself, after which sessions
// found no session at all.
func TestSessionByNameOnEveryCommand(t *testing.T) {
	bin := buildBinary(t)
	proj := t.TempDir()
	root := filepath.Join(proj, ".contextfold")
	const a, b, ps = "0d7c2a41-aaaa-4bbb-8ccc-000000000001", "0d7c9e55-bbbb-4ccc-8ddd-000000000002", "s-4e1f0c3a9b"
	tr := ledgerTranscript(t)
	for _, id := range []string{a, b} {
		payload, _ := json.Marshal(map[string]any{"session_id": id, "transcript_path": tr, "cwd": proj, "hook_event_name": "Stop"})
		if _, errs, code := binRunIn(t, bin, proj, string(payload), "hook", "claude-code", "Stop", "--strict"); code != 0 {
			t.Fatalf("Stop hook %s: %d %s", id, code, errs)
		}
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	addr, stopProxy := startProxyBin(t, bin, root, up.URL)
	sendLedgerConversation(t, addr, ps)
	sendLedgerConversation(t, addr, a) // a proxy session named as the hooks session a
	stopProxy()

	run := func(args ...string) (string, string, int) { return binRunIn(t, bin, proj, "", args...) }
	bStore := filepath.Join(root, "sessions", b)
	pStore := filepath.Join(root, ps, "g1")
	aProxy := filepath.Join(root, a, "g1")
	for _, d := range []string{bStore, pStore, aProxy, filepath.Join(root, "sessions", a)} {
		if !isStore(d) {
			t.Fatalf("no store at %s", d)
		}
	}
	before := snapshotRel(t, root)

	// Every reader: --session <prefix> is --dir <that store>.
	readers := [][]string{{"status"}, {"steps"}, {"validate"}, {"scrub-check"}, {"repair"}, {"hydrate", "2"},
		{"recall", "ledger_rw", "password"}, {"scan", "why did password authentication fail for ledger_rw?"}}
	for _, c := range readers {
		for _, js := range []bool{false, true} {
			args := slices.Clone(c)
			if js {
				args = append(args, "--json")
			}
			want, werrs, wcode := run(append([]string{"--dir", bStore}, args...)...)
			got, errs, code := run(append(slices.Clone(args), "--session", "0d7c9")...)
			if js {
				// The JSON names the session read; the rest is --dir's.
				sess, rest := setAsideSession(t, got, want)
				if w := (sessionJSON{ID: b, Source: "hooks", Dir: bStore}); sess != w {
					t.Errorf("%v --session 0d7c9: session %+v, want %+v", args, sess, w)
				}
				if _, again := setAsideSession(t, want, want); again != want {
					t.Errorf("%v --dir its store: %q names a session", args, want)
				}
				got = rest
			}
			if code != 0 || code != wcode || got != want || want == "" {
				t.Errorf("%v --session 0d7c9: %d %q %q\nwant (--dir its store) %d %q %q", args, code, got, errs, wcode, want, werrs)
			}
			if !strings.Contains(errs, "note: --session 0d7c9 is session "+b+" (hooks): reading its store "+bStore) {
				t.Errorf("%v --session 0d7c9: no note naming the session: %q", args, errs)
			}
		}
	}
	// A proxy session: its id, its name alone, a prefix.
	want, _, _ := run("steps", "--dir", pStore)
	wantJSON, _, _ := run("steps", "--dir", pStore, "--json")
	for _, id := range []string{ps + "/g1", ps, "s-4e"} {
		if got, errs, code := run("steps", "--session", id); code != 0 || got != want {
			t.Errorf("steps --session %s: %d %q %q", id, code, got, errs)
		}
		got, errs, code := run("steps", "--session", id, "--json")
		sess, rest := setAsideSession(t, got, wantJSON)
		if w := (sessionJSON{ID: ps + "/g1", Source: "proxy", Dir: pStore}); code != 0 || sess != w || rest != wantJSON {
			t.Errorf("steps --session %s --json: %d session %+v, want %+v; %q %q", id, code, sess, w, rest, errs)
		}
	}
	// export and ui read the session too.
	to := filepath.Join(t.TempDir(), "exported")
	if _, errs, code := run("export", "--session", "0d7c9", "--to", to); code != 0 {
		t.Fatalf("export --session: %d %q", code, errs)
	}
	// The same steps; each cold_node_ref names its own store's directory.
	if got, _, _ := run("steps", "--dir", to, "--json"); strings.ReplaceAll(got, `"exported/cold_nodes/`, `"`+b+`/cold_nodes/`) != mustOut(t, run, "steps", "--dir", bStore, "--json") {
		t.Errorf("export --session 0d7c9 wrote another session's nodes: %q", got)
	}
	if u := uiStatus(t, bin, proj, "--session", "0d7c9"); u.Dir != bStore || u.Total != 47 {
		t.Errorf("ui --session 0d7c9 serves %+v, want %s (47 nodes)", u, bStore)
	}

	// An ambiguous prefix names the candidates and their sources.
	_, errs, code := run("status", "--session", "0d7c")
	for _, w := range []string{`session "0d7c" under ` + root + " is ambiguous", a + " (hooks)", a + "/g1 (proxy)", b + " (hooks)", "give more of the id"} {
		if code != 1 || !strings.Contains(errs, w) {
			t.Errorf("status --session 0d7c: %d, lacks %q: %q", code, w, errs)
		}
	}
	_, errs, code = run("hydrate", "2", "--session", "0d7c", "--json")
	var amb struct {
		Error      string `json:"error"`
		ExitCode   int    `json:"exit_code"`
		Candidates []struct {
			Session, Source, Store string
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(errs), &amb); err != nil || code != 1 || amb.ExitCode != 1 || len(amb.Candidates) != 3 {
		t.Fatalf("hydrate --session 0d7c --json: %d %v %q", code, err, errs)
	}
	var got []string
	for _, c := range amb.Candidates {
		got = append(got, c.Session+" "+c.Source+" "+c.Store)
	}
	if w := []string{a + " hooks " + filepath.Join(root, "sessions", a), a + "/g1 proxy " + aProxy, b + " hooks " + bStore}; !reflect.DeepEqual(got, w) {
		t.Errorf("candidates %v, want %v", got, w)
	}
	// The hooks session's whole id is the hooks session; the proxy's of the
	// same name is named on stderr, and read as a/g1.
	if out, errs, code := run("status", "--session", a); code != 0 || !strings.Contains(out, filepath.Join(root, "sessions", a)+"\n") ||
		!strings.Contains(errs, "the proxy's session of the same name is "+a+"/g1") {
		t.Errorf("status --session %s: %d %q %q", a, code, out, errs)
	}
	if out, _, code := run("status", "--session", a+"/g1"); code != 0 || !strings.Contains(out, aProxy+"\n") {
		t.Errorf("status --session %s/g1: %d %q", a, code, out)
	}
	// Unknown, empty, on a store.
	if _, errs, code := run("steps", "--session", "nope"); code != 1 || !strings.Contains(errs, `no session "nope"`) || !strings.Contains(errs, b) {
		t.Errorf("an unknown session: %d %q", code, errs)
	}
	if _, errs, code := run("steps", "--session="); code != 1 || !strings.Contains(errs, "--session is empty") {
		t.Errorf("an empty session: %d %q", code, errs)
	}
	if _, errs, code := run("validate", "--dir", bStore, "--session", "0d7c9"); code != 1 || !strings.Contains(errs, bStore+" is one store, not a directory of session stores; leave out --session") {
		t.Errorf("--session on a store: %d %q", code, errs)
	}
	// Without --session, several sessions: the remedy is --session.
	if _, errs, code := run("steps"); code != 1 || !strings.Contains(errs, "pick one with --session ID") {
		t.Errorf("steps on 4 sessions: %d %q", code, errs)
	}
	if after := snapshotRel(t, root); !reflect.DeepEqual(before, after) {
		t.Error("the readers changed the directory of session stores")
	}

	// Writers: the whole id only.
	for _, c := range [][]string{{"evict", "2"}, {"compact"}, {"repair", "--apply"}} {
		if _, errs, code := run(append(slices.Clone(c), "--session", "0d7c9")...); code != 1 || !strings.Contains(errs, "takes the session's whole id") || !strings.Contains(errs, "--session "+b) {
			t.Errorf("%v --session 0d7c9: %d %q", c, code, errs)
		}
		if _, errs, code := run(append(slices.Clone(c), "--session", ps)...); code != 1 || !strings.Contains(errs, "--session "+ps+"/g1") {
			t.Errorf("%v --session %s: %d %q", c, ps, code, errs)
		}
	}
	if !reflect.DeepEqual(before, snapshotRel(t, root)) {
		t.Fatal("a refused write changed the directory")
	}
	if out, errs, code := run("evict", "2", "--session", b); code != 0 || !strings.HasPrefix(out, "evicted step 2") {
		t.Errorf("evict --session <whole id>: %d %q %q", code, out, errs)
	}
	if out, _, _ := run("status", "--dir", bStore); !strings.Contains(out, "(46 active, 1 evicted)") {
		t.Errorf("evict --session wrote elsewhere: %q", out)
	}
	for _, c := range [][]string{{"compact"}, {"repair", "--apply"}} {
		if _, errs, code := run(append(slices.Clone(c), "--session", b)...); code != 0 {
			t.Errorf("%v --session <whole id>: %d %q", c, code, errs)
		}
	}
	// The writers' JSON names the session too.
	if out, errs, code := run("compact", "--session", b, "--json"); code != 0 || out != "{\n  \"session\": {\n    \"id\": \""+b+"\",\n    \"source\": \"hooks\",\n    \"dir\": \""+bStore+"\"\n  },\n  \"compacted\": false\n}\n" {
		t.Errorf("compact --session --json: %d %q %q", code, out, errs)
	}
	// fold does not make the directory a store; ingest makes the
	// transcript a session of it (TestIngestIntoSessionDirectory).
	if _, errs, code := run("fold", "99", "a turn", "--session", b); code != 1 || !strings.Contains(errs, "contextfold fold folds into one store and does not pick a session") {
		t.Errorf("fold in the project: %d %q", code, errs)
	}
	if out, errs, code := run("ingest", tr); code != 0 || !strings.Contains(out, "into "+filepath.Join(root, "sessions", "5f1c2a9e-3b7d-4c1e-9a52-0d6e8b7f4a21")+"\n") {
		t.Errorf("ingest in the project: %d %q %q", code, out, errs)
	}
	if isStore(root) {
		t.Fatal("fold or ingest made .contextfold a store")
	}
	if out, _, _ := run("sessions", "--json"); strings.Count(out, `"session":`) != 5 {
		t.Errorf("sessions after the refused fold and the ingest: %s", out)
	}
}

// setAsideSession takes the "session" field out of the --json output got
// of a command given --session, and returns it and what is left, in
// want's form: the other keys of an object, or, when want is not an object
// (steps, recall: an array), the one other value the output wraps. Each
// is re-indented as the command prints JSON. An output without the field
// is returned as it is, with a zero session.
func setAsideSession(t *testing.T, got, want string) (sessionJSON, string) {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got), &doc); err != nil || doc["session"] == nil {
		return sessionJSON{}, got
	}
	var sess sessionJSON
	if err := json.Unmarshal(doc["session"], &sess); err != nil {
		t.Fatalf("the session field %s: %v", doc["session"], err)
	}
	if !strings.HasPrefix(got, "{\n  \"session\": {") {
		t.Errorf("the session field is not the output's first: %q", got)
	}
	if strings.HasPrefix(strings.TrimSpace(want), "{") {
		// An object: its own keys follow the field's closing line.
		i := strings.Index(got, "\n  },\n")
		if i < 0 {
			return sess, "{}\n"
		}
		return sess, "{\n" + got[i+len("\n  },\n"):]
	}
	delete(doc, "session")
	if len(doc) != 1 {
		t.Fatalf("an array output given --session wraps one value, got keys %v", doc)
	}
	var b bytes.Buffer
	for _, v := range doc {
		if err := json.Indent(&b, v, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	return sess, b.String() + "\n"
}

// mustOut is the standard output of run(args…).
func mustOut(t *testing.T, run func(...string) (string, string, int), args ...string) string {
	t.Helper()
	out, errs, code := run(args...)
	if code != 0 {
		t.Fatalf("%v: %d %q", args, code, errs)
	}
	return out
}

type uiServed struct {
	Dir   string
	Total int
}

// uiStatus starts the built binary's ui in wd with args on a free loopback
// port, and returns the store it names and the node count its /api/status
// serves.
func uiStatus(t *testing.T, bin, wd string, args ...string) uiServed {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"ui", "--listen", "127.0.0.1:0", "--json"}, args...)...)
	cmd.Dir = wd
	var errb bytes.Buffer
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var start struct{ URL, Dir string }
	done := make(chan error, 1)
	go func() { done <- json.NewDecoder(pipe).Decode(&start) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ui: %v; stderr %q", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ui did not start within 30 s: %q", errb.String())
	}
	resp, err := http.Get(start.URL + "api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Summary struct {
			Dir   string `json:"dir"`
			Steps int    `json:"steps"`
		} `json:"summary"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("ui /api/status: %v", err)
	}
	if st.Summary.Dir != start.Dir {
		t.Errorf("ui names %s, serves %s", start.Dir, st.Summary.Dir)
	}
	return uiServed{start.Dir, st.Summary.Steps}
}

// TestMistypedFlagNamesTheFlagMeant: an unknown flag a typo away from one
// the command takes (its own or a global one) names it; one far from every
// flag does not. Before, only "unknown flag: --sesion" was printed.
func TestMistypedFlagNamesTheFlagMeant(t *testing.T) {
	dir := t.TempDir()
	for args, want := range map[string]string{
		"steps --sesion x":    "unknown flag: --sesion (did you mean --session?) (see 'contextfold steps --help')",
		"status --jsno":       "unknown flag: --jsno (did you mean --json?)",
		"status --dri x":      "unknown flag: --dri (did you mean --dir?)",
		"hydrate 1 --ofset=3": "unknown flag: --ofset (did you mean --offset?); to pass a negative step id",
		"status --bogus":      "unknown flag: --bogus (see 'contextfold status --help')",
	} {
		_, errs, code := cli(t, "", append(strings.Fields(args), "--dir", dir)...)
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("%s: %d %q, want %q", args, code, errs, want)
		}
	}
	if _, errs, _ := cli(t, "", "status", "--bogus", "--dir", dir); strings.Contains(errs, "did you mean") {
		t.Errorf("--bogus: %q", errs)
	}
}
