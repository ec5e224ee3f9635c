package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binRunIn runs the built binary in the working directory wd with stdin,
// and returns stdout, stderr and the exit code.
func binRunIn(t *testing.T, bin, wd, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir = wd
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// ledgerTranscript is the bundled Claude Code session.
func ledgerTranscript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "ingest", "testdata", "transcripts", "claude-code", "ledger-api-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFoldPrintsTheNodeFileItWrote: fold names the cold node's file by its
// absolute path, one that exists from any working directory. Before, it
// printed the index's file_path, relative to the store's parent
// ("st/cold_nodes/step_000001.json" for --dir a/b/st), which named no file
// from where the user ran it.
func TestFoldPrintsTheNodeFileItWrote(t *testing.T) {
	bin := buildBinary(t)
	wd := t.TempDir()
	want := filepath.Join(wd, "a", "b", "st", "cold_nodes", "step_000001.json")
	out, errs, code := binRunIn(t, bin, wd, "", "--dir", "a/b/st", "fold", "1", "pytest failed in tests/test_db.py")
	if code != 0 || !strings.Contains(out, "folded step 1 → "+want+"\n") {
		t.Fatalf("fold: %d %q %q (want the path %s)", code, out, errs, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("the printed path: %v", err)
	}
	out, _, code = binRunIn(t, bin, wd, "", "--dir", "a/b/st", "fold", "1", "pytest failed in tests/test_db.py")
	if code != 0 || !strings.Contains(out, "nothing changed ("+want+")") {
		t.Fatalf("fold again: %d %q", code, out)
	}
}

// TestHookWithoutCwdSaysWhichStore: Claude Code sends cwd with every hook
// event; a payload without it (a hand-made test, another agent) used the
// process's working directory without a word. The hook now says so on
// stderr, in one line naming the store, and still exits 0 (a hook never
// blocks); with cwd, or with a --dir that does not use {cwd}, nothing is
// said.
func TestHookWithoutCwdSaysWhichStore(t *testing.T) {
	bin := buildBinary(t)
	wd := t.TempDir()
	tr := ledgerTranscript(t)
	payload := func(cwd string) string {
		m := map[string]any{"session_id": "abc", "transcript_path": tr, "hook_event_name": "Stop"}
		if cwd != "" {
			m["cwd"] = cwd
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	store := filepath.Join(wd, ".contextfold", "sessions", "abc")
	_, errs, code := binRunIn(t, bin, wd, payload(""), "hook", "claude-code", "Stop")
	if code != 0 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `no "cwd"`) || !strings.Contains(errs, store) {
		t.Fatalf("no cwd: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(store, "recall_index.json")); err != nil {
		t.Fatalf("the store the warning names: %v", err)
	}
	if _, errs, code := binRunIn(t, bin, wd, payload(wd), "hook", "claude-code", "Stop"); code != 0 || errs != "" {
		t.Fatalf("with cwd: %d %q", code, errs)
	}
	if _, errs, code := binRunIn(t, bin, wd, payload(""), "hook", "claude-code", "Stop", "--dir", filepath.Join(wd, "fixed")); code != 0 || errs != "" {
		t.Fatalf("--dir without {cwd}: %d %q", code, errs)
	}
	if _, errs, _ := binRunIn(t, bin, wd, payload(""), "hook", "claude-code", "Stop", "--dir", "{cwd}/cf/{session_id}"); !strings.Contains(errs, filepath.Join(wd, "cf", "abc")) {
		t.Fatalf("--dir with {cwd}: %q", errs)
	}
}

// TestHookTakesStoreAsDir: the global --store, which every command's help
// lists, was ignored by the hook, which then wrote its default store. A
// directory --store is now the hook's --dir; a PostgreSQL one is refused
// in one line (exit 0: a hook never blocks; 1 with --strict), nothing
// written.
func TestHookTakesStoreAsDir(t *testing.T) {
	bin := buildBinary(t)
	wd := t.TempDir()
	b, _ := json.Marshal(map[string]any{"session_id": "abc", "transcript_path": ledgerTranscript(t), "cwd": wd, "hook_event_name": "Stop"})
	dir := filepath.Join(wd, "mine")
	if _, errs, code := binRunIn(t, bin, wd, string(b), "hook", "claude-code", "Stop", "--store", dir); code != 0 || errs != "" {
		t.Fatalf("--store DIR: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "recall_index.json")); err != nil {
		t.Fatalf("--store DIR wrote elsewhere: %v", err)
	}
	for _, strict := range []bool{false, true} {
		args := []string{"hook", "claude-code", "Stop", "--store", "postgres://cf@127.0.0.1:1/cf?session=x"}
		want := 0
		if strict {
			args, want = append(args, "--strict"), 1
		}
		_, errs, code := binRunIn(t, bin, wd, string(b), args...)
		if code != want || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "cannot write a PostgreSQL store") {
			t.Fatalf("--store postgres (strict %v): %d %q", strict, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, ".contextfold")); err == nil {
		t.Fatal("a refused --store wrote the default store")
	}
}

// TestRecallLimit: recall takes --limit as the MCP tool takes limit, in one
// store (default: all) and across a directory of session stores (default
// 20), saying how many were left out; --limit 0 is refused.
func TestRecallLimit(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	dir := filepath.Join(root, "sessions", "s1")
	if _, errs, code := binRunIn(t, bin, root, "", "--dir", dir, "ingest", ledgerTranscript(t)); code != 0 {
		t.Fatalf("ingest: %d %q", code, errs)
	}
	var all []json.RawMessage
	out, _, _ := binRunIn(t, bin, root, "", "--dir", dir, "--json", "recall", "--match", "exact", "migration")
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) < 4 {
		t.Fatalf("recall --json: %v %q", err, out)
	}
	var two []json.RawMessage
	out, _, _ = binRunIn(t, bin, root, "", "--dir", dir, "--json", "recall", "--match", "exact", "--limit", "2", "migration")
	if err := json.Unmarshal([]byte(out), &two); err != nil || len(two) != 2 || string(two[1]) != string(all[1]) {
		t.Fatalf("recall --json --limit 2: %v %q", err, out)
	}
	out, _, code := binRunIn(t, bin, root, "", "--dir", dir, "recall", "--match", "exact", "--limit", "2", "migration")
	if code != 0 || strings.Count(out, "step ") != 2 || !strings.Contains(out, "more candidates left out by --limit 2") {
		t.Fatalf("recall --limit 2: %d %q", code, out)
	}
	// Across sessions.
	var across struct {
		Candidates []json.RawMessage `json:"candidates"`
		Omitted    int               `json:"omitted"`
	}
	out, _, _ = binRunIn(t, bin, root, "", "--dir", root, "--json", "recall", "--match", "exact", "--limit", "3", "migration")
	if err := json.Unmarshal([]byte(out), &across); err != nil || len(across.Candidates) != 3 || across.Omitted != len(all)-3 {
		t.Fatalf("across sessions --limit 3: %v %q", err, out)
	}
	out, _, _ = binRunIn(t, bin, root, "", "--dir", root, "recall", "--match", "exact", "--limit", "3", "migration")
	if strings.Count(out, "session s1  step") != 3 || !strings.Contains(out, "(--limit 3)") {
		t.Fatalf("across sessions --limit 3, text: %q", out)
	}
	out, _, _ = binRunIn(t, bin, root, "", "--dir", root, "--json", "recall", "--match", "exact", "--limit", "-1", "migration")
	if err := json.Unmarshal([]byte(out), &across); err != nil || len(across.Candidates) != len(all) || across.Omitted != 0 {
		t.Fatalf("across sessions --limit -1: %v %q", err, out)
	}
	for _, bad := range []string{"0", "-2"} {
		if _, errs, code := binRunIn(t, bin, root, "", "--dir", dir, "recall", "--limit", bad, "migration"); code != 1 || !strings.Contains(errs, "--limit "+bad) {
			t.Fatalf("--limit %s: %d %q", bad, code, errs)
		}
	}
}

// TestScanJSONCountsExactMatches: a ranked scan that selects nothing says in
// text how many turns the exact match finds (the below-cut-off hint);
// --json now gives that count as exact_matches, in one store and across
// sessions, and 0 for a word no turn holds.
func TestScanJSONCountsExactMatches(t *testing.T) {
	bin := buildBinary(t)
	src, err := os.ReadFile(ledgerTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	root := t.TempDir()
	tr := filepath.Join(root, "s.jsonl")
	if err := os.WriteFile(tr, []byte(strings.Join(lines[:20], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "stores", "one")
	if _, errs, code := binRunIn(t, bin, root, "", "--dir", dir, "ingest", tr); code != 0 {
		t.Fatalf("ingest: %d %q", code, errs)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		for word, want := range map[string]float64{"migration": 3, "zebrafish": 0} {
			out, errs, code := binRunIn(t, bin, root, "", "--dir", d, "--json", "scan", word)
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
				t.Fatalf("scan --json %s in %s: %d %v %q %q", word, d, code, err, out, errs)
			}
			if n, ok := doc["exact_matches"].(float64); !ok || n != want {
				t.Errorf("scan --json %s in %s: exact_matches %v, want %v", word, d, doc["exact_matches"], want)
			}
		}
	}
	// A scan that selects something has no such count.
	out, _, _ := binRunIn(t, bin, root, "", "--dir", dir, "--json", "scan", "0003_tenant_billing.sql")
	if strings.Contains(out, "exact_matches") || !strings.Contains(out, `"step_id"`) {
		t.Errorf("a scan with picks: %q", out)
	}
}

// TestIngestJSONSaysWhatTheTextSays: ingest's --json carries what the text
// report says: the --min-tokens threshold beside the turns below it, and
// why nothing was folded (nothing_folded); the text names the threshold
// and the count apart (before: "below --min-tokens 45", 45 being the
// count). With stderr not a terminal nothing is drawn there: the report
// is the one summary.
func TestIngestJSONSaysWhatTheTextSays(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	tr := ledgerTranscript(t)
	type report struct {
		Folded        int    `json:"turns_folded"`
		Skipped       int    `json:"skipped_below_min_tokens"`
		MinTokens     int    `json:"min_tokens"`
		NothingFolded string `json:"nothing_folded"`
	}
	ingest := func(args ...string) report {
		t.Helper()
		out, errs, code := binRunIn(t, bin, root, "", append([]string{"--dir", "st", "--json", "ingest", tr}, args...)...)
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || errs != "" {
			t.Fatalf("ingest --json %v: %d %v %q %q", args, code, err, out, errs)
		}
		return r
	}
	if r := ingest("--min-tokens", "200"); r.Folded != 2 || r.Skipped != 45 || r.MinTokens != 200 || r.NothingFolded != "" {
		t.Fatalf("--min-tokens 200: %+v", r)
	}
	if r := ingest("--min-tokens", "100000"); r.Folded != 0 || r.NothingFolded != "below_min_tokens" {
		t.Fatalf("--min-tokens 100000: %+v", r)
	}
	if r := ingest(); r.Folded != 45 || r.MinTokens != 0 {
		t.Fatalf("the rest: %+v", r)
	}
	if r := ingest(); r.Folded != 0 || r.NothingFolded != "already_indexed" {
		t.Fatalf("again: %+v", r)
	}
	out, _, _ := binRunIn(t, bin, root, "", "--dir", "st2", "ingest", tr, "--min-tokens", "200")
	if !strings.Contains(out, "not folded, below --min-tokens 200: 45\n") {
		t.Fatalf("text: %q", out)
	}
}

// TestHydrateReadsTheOnlySession: hydrate given a directory of session
// stores that holds one session (a project's .contextfold after the hooks'
// first session, read by default) reads that session's store, saying so on
// stderr, as the MCP tool fetch_archived_node does without a session; so
// do status, steps, validate and scrub-check. Before, they were refused
// and the user had to copy the session's store path. evict, which writes,
// is still refused; with two sessions hydrate is refused, naming
// --session and the session written last (before: "no store at …", and a
// --dir to give, though hydrate takes --session).
func TestHydrateReadsTheOnlySession(t *testing.T) {
	bin := buildBinary(t)
	project := t.TempDir()
	one := filepath.Join(project, ".contextfold", "sessions", "0d7c2a41-aaaa-4bbb-8ccc-000000000001")
	if _, errs, code := binRunIn(t, bin, project, "", "--dir", one, "fold", "6", "linker error: undefined reference to frobnicate_widget"); code != 0 {
		t.Fatalf("fold: %d %q", code, errs)
	}
	out, errs, code := binRunIn(t, bin, project, "", "hydrate", "6")
	if code != 0 || !strings.Contains(out, "frobnicate_widget") || !strings.Contains(errs, "one session, 0d7c2a41-aaaa-4bbb-8ccc-000000000001") {
		t.Fatalf("hydrate in the project: %d %q %q", code, out, errs)
	}
	out, _, code = binRunIn(t, bin, project, "", "hydrate", "6", "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc["step_id"] != float64(6) {
		t.Fatalf("hydrate --json: %d %v %q", code, err, out)
	}
	// The JSON names the session read, as given --session.
	if sess, _ := doc["session"].(map[string]any); sess["id"] != "0d7c2a41-aaaa-4bbb-8ccc-000000000001" || sess["source"] != "hooks" || !strings.HasSuffix(fmt.Sprint(sess["dir"]), one[len(project):]) {
		t.Errorf("hydrate --json on the only session: session %v", doc["session"])
	}
	// So do the other read-only commands; a write (evict) does not guess.
	for _, c := range [][]string{{"status"}, {"steps"}, {"validate"}, {"scrub-check"}} {
		out, errs, code := binRunIn(t, bin, project, "", c...)
		if code != 0 || !strings.Contains(errs, "with one session") || out == "" {
			t.Errorf("%v in the project: %d %q %q", c, code, out, errs)
		}
	}
	if _, errs, code := binRunIn(t, bin, project, "", "evict", "6"); code != 1 || strings.Contains(errs, "with one session") {
		t.Errorf("evict in the project: %d %q", code, errs)
	}
	two := filepath.Join(project, ".contextfold", "sessions", "f9211a28-ffd3-48d4-9583-b307aff94dc2")
	if _, errs, code := binRunIn(t, bin, project, "", "--dir", two, "fold", "6", "another session's turn"); code != 0 {
		t.Fatalf("fold: %d %q", code, errs)
	}
	old := time.Now().Add(-time.Hour) // the first session's index written before the second's, on any clock resolution
	if err := os.Chtimes(filepath.Join(one, "recall_index.json"), old, old); err != nil {
		t.Fatal(err)
	}
	_, errs, code = binRunIn(t, bin, project, "", "hydrate", "6")
	if code != 1 || !strings.Contains(errs, "holding 2 sessions (2 from the hooks), not one store: pick one with --session ID (the latest written: --session f9211a28-ffd3-48d4-9583-b307aff94dc2)") {
		t.Fatalf("two sessions: %d %q", code, errs)
	}
	out, _, code = binRunIn(t, bin, project, "", "hydrate", "6", "--session", "0d7c2a41-aaaa-4bbb-8ccc-000000000001")
	if code != 0 || !strings.Contains(out, "frobnicate_widget") {
		t.Fatalf("--session: %d %q", code, out)
	}
}
