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
)

// binRun runs the built binary with args and returns stdout, stderr and the
// exit code.
func binRun(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
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

// TestSessionFlagTakesTheProxySessionID: the proxy's request log names a
// session s-…; --session given that id (without /g<N>) reads its only
// store, and one with several stores is refused naming them, through the
// real binary.
func TestSessionFlagTakesTheProxySessionID(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	g1 := filepath.Join(root, "s-067b2f1806c3026e", "g1")
	if _, errs, code := binRun(t, bin, "--dir", g1, "fold", "12", "linker error: undefined reference to frobnicate_widget"); code != 0 {
		t.Fatalf("fold: %d %s", code, errs)
	}
	out, errs, code := binRun(t, bin, "hydrate", "12", "--dir", root, "--session", "s-067b2f1806c3026e")
	if code != 0 || !strings.Contains(out, "frobnicate_widget") {
		t.Fatalf("hydrate --session <proxy session>: %d %q %q", code, out, errs)
	}
	out, errs, code = binRun(t, bin, "recall", "--dir", root, "--session", "s-067b2f1806c3026e", "frobnicate_widget")
	if code != 0 || !strings.Contains(out, "step 12") {
		t.Fatalf("recall --session <proxy session>: %d %q %q", code, out, errs)
	}
	g2 := filepath.Join(root, "s-067b2f1806c3026e", "g2")
	if _, errs, code := binRun(t, bin, "--dir", g2, "fold", "3", "another history"); code != 0 {
		t.Fatalf("fold: %d %s", code, errs)
	}
	_, errs, code = binRun(t, bin, "hydrate", "12", "--dir", root, "--session", "s-067b2f1806c3026e")
	if code != 1 || !strings.Contains(errs, "has 2 stores") || !strings.Contains(errs, "s-067b2f1806c3026e/g1, s-067b2f1806c3026e/g2") {
		t.Fatalf("two stores: %d %q", code, errs)
	}
	// The start of an id that two stores share is ambiguous: both are
	// named, with the command that lists them (an unknown id: see
	// TestSessionByNameOnEveryCommand).
	_, errs, code = binRun(t, bin, "hydrate", "12", "--dir", root, "--session", "s-067b")
	if code != 1 || !strings.Contains(errs, `session "s-067b" under `+root+" is ambiguous") || !strings.Contains(errs, "s-067b2f1806c3026e/g1 (proxy), s-067b2f1806c3026e/g2 (proxy)") || !strings.Contains(errs, "contextfold sessions --dir "+root) {
		t.Fatalf("ambiguous session: %d %q", code, errs)
	}
	if out, _, code := binRun(t, bin, "hydrate", "12", "--dir", root, "--session", "s-067b2f1806c3026e/g1"); code != 0 || !strings.Contains(out, "frobnicate_widget") {
		t.Fatalf("full id: %d %q", code, out)
	}
}

// TestEmptyRankedResultSaysExactFindsTurns: in a 20-turn session where a
// third of the turns are about migrations, a ranked recall or scan of
// "migration" finds nothing (no turn passes the cut-off); the binary then
// says the exact match finds turns and how to list them, instead of a bare
// "no archived turn matches"; a word in no turn gets no such line.
func TestEmptyRankedResultSaysExactFindsTurns(t *testing.T) {
	bin := buildBinary(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "ingest", "testdata", "transcripts", "claude-code", "ledger-api-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	tr := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(tr, []byte(strings.Join(lines[:20], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := binRun(t, bin, "--dir", dir, "ingest", tr); code != 0 {
		t.Fatalf("ingest: %d %s", code, errs)
	}
	for _, c := range []string{"recall", "scan"} {
		out, errs, code := binRun(t, bin, "--dir", dir, c, "migration")
		if code != 0 || !strings.Contains(out, "--match exact finds 3 turns with the query's words") || !strings.Contains(out, "contextfold "+c+" --match exact") {
			t.Errorf("%s migration: %d %q %q", c, code, out, errs)
		}
		out, _, _ = binRun(t, bin, "--dir", dir, c, "zebrafish")
		if strings.Contains(out, "--match exact finds") {
			t.Errorf("%s zebrafish: %q", c, out)
		}
	}
	// Across sessions too (a directory of session stores).
	out, errs, code := binRun(t, bin, "recall", "--dir", filepath.Dir(dir), "migration")
	if code != 0 || !strings.Contains(out, "--match exact finds 3 turns") {
		t.Errorf("recall across sessions: %d %q %q", code, out, errs)
	}
	// The remedy works: exact lists them.
	out, _, _ = binRun(t, bin, "--dir", dir, "recall", "--match", "exact", "migration")
	if strings.Count(out, "step ") != 3 {
		t.Errorf("recall --match exact: %q", out)
	}
}

// TestSessionFlagOnAOneStoreCommand: status, steps, validate… take
// --session (they refused it until it picked a session for them: see
// TestSessionByNameOnEveryCommand); on a directory with no session store
// yet, --session says so, in text and --json, without the advice about
// negative step ids.
func TestSessionFlagOnAOneStoreCommand(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	for _, c := range []string{"status", "steps", "validate"} {
		_, errs, code := binRun(t, bin, c, "--dir", root, "--session", "abc")
		if code != 1 || !strings.Contains(errs, "--session abc: "+root+" holds no session store yet") || strings.Contains(errs, "negative step id") {
			t.Errorf("%s --session: %d %q", c, code, errs)
		}
	}
	_, errs, code := binRun(t, bin, "status", "--json", "--dir", root, "--session=abc")
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(errs)), &e); err != nil || code != 1 || e.ExitCode != 1 || !strings.Contains(e.Error, "holds no session store yet") {
		t.Errorf("status --json --session=abc: %d %q %v", code, errs, err)
	}
}

// TestAcrossSessionsPrintsTheFirstHydrateCommand: recall and scan over a
// directory of session stores end with the hydrate command of their first
// result, ready to run (the session and step filled in), and count the
// sessions in English ("1 session").
func TestAcrossSessionsPrintsTheFirstHydrateCommand(t *testing.T) {
	bin := buildBinary(t)
	root := filepath.Join(t.TempDir(), "proxy dir")
	if _, errs, code := binRun(t, bin, "--dir", filepath.Join(root, "s-1", "g1"), "fold", "12", "linker error: undefined reference to frobnicate_widget"); code != 0 {
		t.Fatalf("fold: %d %s", code, errs)
	}
	for _, c := range []string{"recall", "scan"} {
		out, errs, code := binRun(t, bin, c, "--dir", root, "frobnicate_widget")
		if code != 0 || !strings.Contains(out, "searched 1 session under") {
			t.Fatalf("%s: %d %q %q", c, code, out, errs)
		}
		_, line, ok := strings.Cut(out, "(the first: contextfold ")
		if !ok {
			t.Fatalf("%s: no first command: %q", c, out)
		}
		line, _, _ = strings.Cut(line, ")\n")
		want := "hydrate 12 --dir '" + root + "' --session s-1/g1"
		if line != want {
			t.Fatalf("%s: first command %q, want %q", c, line, want)
		}
		hout, errs, code := binRun(t, bin, "hydrate", "12", "--dir", root, "--session", "s-1/g1")
		if code != 0 || !strings.Contains(hout, "frobnicate_widget") {
			t.Fatalf("the printed command: %d %q %q", code, hout, errs)
		}
	}
}

// mcpCalls runs the built binary's MCP server over stdio with args, sends
// initialize and the tool calls (name, arguments JSON), and returns the
// responses by id (2, 3, …) and stderr.
func mcpCalls(t *testing.T, bin string, args []string, calls ...[2]string) (map[int]string, string) {
	t.Helper()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	for i, c := range calls {
		in += fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, i+2, c[0], c[1]) + "\n"
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, append([]string{"mcp", "--quiet"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(in), &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp: %v\n%s", err, errb.String())
	}
	res := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		res[m.ID] = l
	}
	return res, errb.String()
}

// TestMCPSessionsFetchNamesTheStoreItRead: fetch_archived_node given a
// proxy session's id alone answers with the id of the store it read
// ("s-1/g1"), which the other tools take; a directory with no session yet
// says so instead of listing nothing; the note counts in English.
func TestMCPSessionsFetchNamesTheStoreItRead(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	if _, errs, code := binRun(t, bin, "--dir", filepath.Join(root, "s-1", "g1"), "fold", "12", "linker error: undefined reference to frobnicate_widget"); code != 0 {
		t.Fatalf("fold: %d %s", code, errs)
	}
	res, errs := mcpCalls(t, bin, []string{"--dir", root}, [2]string{"fetch_archived_node", `{"step_id":12,"session":"s-1"}`})
	if !strings.Contains(res[2], `"session":"s-1/g1"`) || !strings.Contains(res[2], "frobnicate_widget") || !strings.Contains(errs, "(1 session)") {
		t.Errorf("fetch s-1: %q\n%s", res[2], errs)
	}
	empty := t.TempDir()
	res, _ = mcpCalls(t, bin, []string{"--dir", empty, "--sessions"}, [2]string{"fetch_archived_node", `{"step_id":12,"session":"s-1"}`})
	if !strings.Contains(res[2], "holds no session store yet") || !strings.Contains(res[2], `"isError":true`) {
		t.Errorf("fetch in an empty directory: %q", res[2])
	}
}

// TestSessionsHelpNamesTheJSONFieldsOfBothKinds: the sessions --help
// example for a directory reads the key its --json really has (session,
// not the database's name), checked against the built binary's output.
func TestSessionsHelpNamesTheJSONFieldsOfBothKinds(t *testing.T) {
	bin := buildBinary(t)
	help, _, _ := binRun(t, bin, "sessions", "--help")
	if !strings.Contains(help, "jq -r '.sessions[].session'") || !strings.Contains(help, "a directory's have session, source, store, nodes") {
		t.Fatalf("help: %s", help)
	}
	root := t.TempDir()
	if _, errs, code := binRun(t, bin, "--dir", filepath.Join(root, "sessions", "abc"), "fold", "1", "x"); code != 0 {
		t.Fatalf("fold: %s", errs)
	}
	out, _, code := binRun(t, bin, "sessions", "--dir", root, "--json")
	var doc struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || len(doc.Sessions) != 1 {
		t.Fatalf("sessions --json: %d %q %v", code, out, err)
	}
	for _, k := range []string{"session", "source", "store", "nodes", "total_tokens", "first_folded_at", "last_folded_at"} {
		if _, ok := doc.Sessions[0][k]; !ok {
			t.Errorf("no %s in %v", k, doc.Sessions[0])
		}
	}
}

// TestRepairGroupsOneFindingOverManySteps: a store copied from a directory
// named .contextfold has one path finding per step; the built binary's
// repair plan shows the first action in full and the others as a count and
// their steps (was one 400-character paragraph per step), --json lists
// each, and the applied repair leaves validate clean.
func TestRepairGroupsOneFindingOverManySteps(t *testing.T) {
	bin := buildBinary(t)
	orig := filepath.Join(t.TempDir(), ".contextfold")
	tr := filepath.Join("..", "..", "ingest", "testdata", "transcripts", "claude-code", "ledger-api-session.jsonl")
	if _, errs, code := binRun(t, bin, "--dir", orig, "ingest", tr); code != 0 {
		t.Fatalf("ingest: %d %s", code, errs)
	}
	copied := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", orig, copied).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	out, errs, code := binRun(t, bin, "--dir", copied, "repair")
	if code != 0 || !strings.Contains(out, "would drop_reference 46 more, the same finding for steps 1–46 (--json lists each)") ||
		!strings.Contains(out, "would reindex        46 more, the same finding for steps 1–46") || strings.Count(out, "\n") > 10 {
		t.Fatalf("repair: %d\n%s\n%s", code, out, errs)
	}
	out, _, _ = binRun(t, bin, "--dir", copied, "--json", "repair")
	var plan struct {
		Actions []map[string]any `json:"actions"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Actions) != 94 {
		t.Fatalf("repair --json: %d actions, %v", len(plan.Actions), err)
	}
	if out, errs, code := binRun(t, bin, "--dir", copied, "repair", "--apply"); code != 0 || !strings.Contains(out, "94 actions applied") {
		t.Fatalf("repair --apply: %d %q %q", code, out, errs)
	}
	if out, errs, code := binRun(t, bin, "--dir", copied, "validate"); code != 0 {
		t.Fatalf("validate: %d %q %q", code, out, errs)
	}
}

// TestHydrateOfAQuarantinedStepSaysWhereItWent: after repair --apply moved
// a tampered node to quarantine/, hydrate and evict of that step (exit 2)
// name the quarantined file and how to bring it back, instead of pointing
// at steps and recall, which no longer list it; an id never folded keeps
// the plain advice.
func TestHydrateOfAQuarantinedStepSaysWhereItWent(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := binRun(t, bin, "--dir", dir, "fold", "6", "deadlock detected in migration 0003"); code != 0 {
		t.Fatalf("fold: %s", errs)
	}
	node := filepath.Join(dir, "cold_nodes", "step_000006.json")
	data, err := os.ReadFile(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(node, bytes.Replace(data, []byte("deadlock"), []byte("deadLOCK"), -1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := binRun(t, bin, "--dir", dir, "repair", "--apply"); code != 0 || !strings.Contains(out, "quarantine") {
		t.Fatalf("repair: %d %q %q", code, out, errs)
	}
	for _, c := range []string{"hydrate", "evict"} {
		_, errs, code := binRun(t, bin, "--dir", dir, c, "6")
		if code != 2 || !strings.Contains(errs, "contextfold repair moved its cold node to "+filepath.Join(dir, "quarantine")) || !strings.Contains(errs, "-step_000006.json") {
			t.Errorf("%s 6: %d %q", c, code, errs)
		}
	}
	if _, errs, code := binRun(t, bin, "--dir", dir, "hydrate", "7"); code != 2 || strings.Contains(errs, "quarantine") || !strings.Contains(errs, "contextfold steps lists") {
		t.Errorf("hydrate 7: %d %q", code, errs)
	}
}

// TestUnknownFlagAdviceFitsTheCommand: the advice to put -- before a
// negative step id or text starting with '-' is given by the commands that
// take such arguments (hydrate -5), not by proxy, mcp or status, whose
// arguments are never step ids ("contextfold proxy -- -1" was suggested).
func TestUnknownFlagAdviceFitsTheCommand(t *testing.T) {
	bin := buildBinary(t)
	for _, args := range [][]string{{"proxy", "--bogus"}, {"mcp", "-x"}, {"status", "--bogus"}, {"sessions", "--bogus"}} {
		_, errs, code := binRun(t, bin, args...)
		if code != 1 || strings.Contains(errs, "put -- before it") || !strings.Contains(errs, "see 'contextfold "+args[0]+" --help'") {
			t.Errorf("%v: %d %q", args, code, errs)
		}
	}
	for _, args := range [][]string{{"hydrate", "-5"}, {"recall", "-v", "flag"}, {"fold", "-2", "summary"}} {
		_, errs, code := binRun(t, bin, args...)
		if code != 1 || !strings.Contains(errs, "put -- before it") {
			t.Errorf("%v: %d %q", args, code, errs)
		}
	}
}

// TestStatusHelpSaysWhatItReads: status --help had one line, nothing on a
// project's .contextfold of the Claude Code hooks (one store per session)
// nor on its --json; contextfold --help said the store is ./.contextfold
// and nothing of the sessions in it. status --help now says what it reads
// there and names contextfold sessions, and lists its --json keys, checked
// against the built binary's output; the root help says which commands
// read a directory of session stores and how.
func TestStatusHelpSaysWhatItReads(t *testing.T) {
	bin := buildBinary(t)
	help, _, _ := binRun(t, bin, "status", "--help")
	if !strings.Contains(help, "contextfold sessions") || !strings.Contains(help, "reads its store when it holds one") {
		t.Errorf("status --help: %s", help)
	}
	_, rest, ok := strings.Cut(help, "--json: ")
	keys, _, _ := strings.Cut(rest, ".\n")
	if !ok {
		t.Fatalf("status --help names no --json keys: %s", help)
	}
	dir := filepath.Join(t.TempDir(), "st")
	if _, errs, code := binRun(t, bin, "--dir", dir, "fold", "1", "x"); code != 0 {
		t.Fatalf("fold: %s", errs)
	}
	out, _, _ := binRun(t, bin, "--dir", dir, "status", "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := range strings.FieldsFuncSeq(keys, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		want = append(want, k)
	}
	if len(want) != len(doc) {
		t.Errorf("status --help names %v, --json has %d keys: %v", want, len(doc), doc)
	}
	for _, k := range want {
		if _, ok := doc[k]; !ok {
			t.Errorf("status --help names %s, not in --json %v", k, doc)
		}
	}
	root, _, _ := binRun(t, bin, "--help")
	if !strings.Contains(root, "sessions lists its sessions") || !strings.Contains(root, "every command that reads or changes one store (hydrate,\nstatus, steps") {
		t.Errorf("contextfold --help says nothing of a directory of session stores: %s", root)
	}
}
