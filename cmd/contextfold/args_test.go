package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// TestWrongArgumentCountNamesTheUsage: a command given too few or too many
// arguments says which command, what it takes and where the examples are,
// with exit 1, in text and in --json; an extra argument to a command that
// takes none is not called an "unknown command".
func TestWrongArgumentCountNamesTheUsage(t *testing.T) {
	dir := demoDir(t)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"evict"}, []string{"evict takes 1 argument, got none", "usage: contextfold evict <step_id>", "contextfold evict --help"}},
		{[]string{"hydrate", "1", "2"}, []string{"hydrate takes 1 argument, got 2", "usage: contextfold hydrate <step_id>"}},
		{[]string{"ingest"}, []string{"ingest takes 1 argument, got none", "usage: contextfold ingest"}},
		{[]string{"status", "extra"}, []string{`status takes no arguments, got "extra"`, "usage: contextfold status"}},
		{[]string{"validate", "now", "please"}, []string{`validate takes no arguments, got "now" "please"`}},
		{[]string{"schema", "a", "b"}, []string{"schema takes at most 1 argument, got 2", "usage: contextfold schema"}},
	}
	for _, c := range cases {
		_, errs, code := cli(t, "", append([]string{"--dir", dir}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", c.args, code)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, errs, w)
			}
		}
		if strings.Contains(errs, "unknown command") || strings.Contains(errs, "arg(s)") {
			t.Errorf("%v: stderr %q speaks cobra's words", c.args, errs)
		}
	}
	_, errs, code := cli(t, "", "--dir", dir, "--json", "evict")
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(errs), &e); err != nil || code != 1 || e.ExitCode != 1 || !strings.Contains(e.Error, "usage: contextfold evict <step_id>") {
		t.Errorf("--json evict: %d %v %s", code, err, errs)
	}
	// An unknown subcommand of a command with subcommands stays one.
	if _, errs, code := cli(t, "", "bogus"); code != 1 || !strings.Contains(errs, `unknown command "bogus"`) {
		t.Errorf("unknown command: %d %s", code, errs)
	}
}

// TestStoreErrorsNameTheRemedy: hydrate's and evict's errors for a step the
// index does not hold, a tampered node and an orphan say what to run next,
// keeping their exit codes (2, 3, 4); an error that already names a remedy
// is left as it is.
func TestStoreErrorsNameTheRemedy(t *testing.T) {
	dir := demoDir(t)
	nodes := filepath.Join(dir, "cold_nodes")
	check := func(wantCode int, want string, args ...string) {
		t.Helper()
		_, errs, code := cli(t, "", append([]string{"--dir", dir}, args...)...)
		if code != wantCode || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", args, code, errs, wantCode, want)
		}
		if strings.Count(errs, "contextfold repair") > 1 {
			t.Errorf("%v: the remedy is given twice: %q", args, errs)
		}
	}
	check(2, "contextfold steps lists the folded steps", "hydrate", "1")
	check(2, "contextfold steps lists the folded steps", "evict", "1")
	data := mustRead(t, filepath.Join(nodes, "step_000137.json"))
	os.WriteFile(filepath.Join(nodes, "step_000137.json"), bytes.Replace(data, []byte("5433"), []byte("5435"), 1), 0o644)
	check(3, "contextfold validate lists every finding; contextfold repair --apply moves the node to quarantine/", "hydrate", "137")
	os.WriteFile(filepath.Join(nodes, "step_000138.json"), data, 0o644)
	check(4, "run 'contextfold repair'", "hydrate", "138")
	os.Remove(filepath.Join(nodes, "step_000342.json"))
	check(5, "run 'contextfold repair'", "hydrate", "342")
}

// TestMissingStoreNamesWhatChoseIt: the note and errors about a store
// directory that does not exist name what chose the directory — --dir,
// --store, $CONTEXTFOLD_STORE, $CONTEXTFOLD_DIR or the default
// ./.contextfold — instead of always "check --dir or $CONTEXTFOLD_DIR"
// (wrong when $CONTEXTFOLD_STORE or the default chose it).
func TestMissingStoreNamesWhatChoseIt(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo")
	t.Setenv("CONTEXTFOLD_DIR", "")
	t.Setenv("CONTEXTFOLD_STORE", "")
	cases := []struct {
		env, val string
		args     []string
		want     string
	}{
		{"", "", []string{"--dir", typo, "status"}, "check --dir"},
		{"", "", []string{"--store", typo, "validate"}, "check --store"},
		{"CONTEXTFOLD_STORE", typo, []string{"status"}, "check $CONTEXTFOLD_STORE"},
		{"CONTEXTFOLD_STORE", typo, []string{"validate"}, "check $CONTEXTFOLD_STORE"},
		{"CONTEXTFOLD_DIR", typo, []string{"scan", "x"}, "check $CONTEXTFOLD_DIR"},
		{"", "", []string{"status"}, "the default ./.contextfold of the working directory"},
	}
	for _, c := range cases {
		if c.env != "" {
			t.Setenv(c.env, c.val)
		}
		if len(c.args) == 1 || c.args[0] == "scan" {
			t.Chdir(t.TempDir())
		}
		_, errs, _ := cli(t, "", c.args...)
		if !strings.Contains(errs, "no store at") || !strings.Contains(errs, c.want) {
			t.Errorf("%s=%s %v: stderr %q lacks %q", c.env, c.val, c.args, errs, c.want)
		}
		if c.env != "" {
			t.Setenv(c.env, "")
		}
	}
}

// TestProxyDirectoryNamesItsStores: --dir at a proxy session directory
// (<dir>/<session>, which holds g1/ and workset.jsonl) or at the proxy's
// directory of sessions is refused as before, but the error names the
// store(s) to give instead (before: only "holds 2 entries but no
// recall_index.json"; the README's <session>/g1 is easy to miss).
func TestProxyDirectoryNamesItsStores(t *testing.T) {
	root := t.TempDir()
	sess := filepath.Join(root, "s-0123456789abcdef")
	if _, _, code := cli(t, "", "--dir", filepath.Join(sess, "g1"), "fold", "3", "a folded turn"); code != 0 {
		t.Fatal("fold")
	}
	if _, _, code := cli(t, "", "--dir", filepath.Join(sess, "g2"), "fold", "4", "after a history rewrite"); code != 0 {
		t.Fatal("fold")
	}
	os.WriteFile(filepath.Join(sess, "workset.jsonl"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "s-fedcba9876543210"), 0o755) // a session that never folded
	os.WriteFile(filepath.Join(root, "s-fedcba9876543210", "workset.jsonl"), []byte("{}\n"), 0o644)

	_, errs, code := cli(t, "", "--dir", sess, "status")
	if code != 1 || !strings.Contains(errs, "a proxy session directory") || !strings.Contains(errs, "--dir "+filepath.Join(sess, "g2")) || !strings.Contains(errs, "g1") {
		t.Errorf("session directory: %d %q", code, errs)
	}
	_, errs, code = cli(t, "", "--dir", root, "validate")
	if code != 1 || !strings.Contains(errs, "the proxy's directory of sessions") || !strings.Contains(errs, "--dir "+filepath.Join(sess, "g2")) {
		t.Errorf("sessions directory: %d %q", code, errs)
	}
	// recall and sessions read the proxy's sessions as they are: each
	// store is a session <session>/g<N>.
	out, errs, code := cli(t, "", "--dir", root, "--json", "sessions")
	if code != 0 || !strings.Contains(out, `"session": "s-0123456789abcdef/g2"`) || !strings.Contains(out, `"session": "s-0123456789abcdef/g1"`) {
		t.Errorf("sessions of the proxy's directory: %d %s %s", code, out, errs)
	}
	out, errs, code = cli(t, "", "--dir", root, "recall", "history", "rewrite")
	if code != 0 || !strings.Contains(out, "session s-0123456789abcdef/g2  step 4") {
		t.Errorf("recall over the proxy's directory: %d %s %s", code, out, errs)
	}
	// Any other directory keeps the plain message.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module x\n"), 0o644)
	if _, errs, _ := cli(t, "", "--dir", other, "status"); strings.Contains(errs, "proxy") {
		t.Errorf("a project directory is not a proxy's: %q", errs)
	}
}

// TestHooksDirectoryNamesItsStores: in a project set up with the Claude
// Code hooks, `contextfold status` reads the default ./.contextfold, which
// holds only sessions/<session_id>/ (one store per session). It is refused
// as before, but the error names the session store to give (before: "the
// directory holds 1 entries but no recall_index.json", and "cd to the
// project" for a user already in it). So is --dir .contextfold/sessions.
func TestHooksDirectoryNamesItsStores(t *testing.T) {
	project := t.TempDir()
	sessions := filepath.Join(project, ".contextfold", "sessions")
	older := filepath.Join(sessions, "0d7c2a41-aaaa-4bbb-8ccc-000000000001")
	newer := filepath.Join(sessions, "f9211a28-ffd3-48d4-9583-b307aff94dc2")
	if _, _, code := cli(t, "", "--dir", older, "fold", "3", "a folded turn"); code != 0 {
		t.Fatal("fold")
	}
	if _, _, code := cli(t, "", "--dir", newer, "fold", "4", "a turn of the later session"); code != 0 {
		t.Fatal("fold")
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(older, contextfold.IndexFile), past, past); err != nil {
		t.Fatal(err)
	}
	t.Chdir(project)
	_, errs, code := cli(t, "", "status")
	if code != 1 || !strings.Contains(errs, "Claude Code hooks") || !strings.Contains(errs, "--dir "+newer) {
		t.Errorf("status in the project: %d %q", code, errs)
	}
	_, errs, code = cli(t, "", "--dir", sessions, "steps")
	if code != 1 || !strings.Contains(errs, "Claude Code hooks' directory of sessions") || !strings.Contains(errs, "--dir "+newer) || !strings.Contains(errs, "--session ID") {
		t.Errorf("--dir sessions/: %d %q", code, errs)
	}
	// scan and recall read every session of such a directory.
	out, errs, code := cli(t, "", "--dir", sessions, "scan", "which turn of the later session")
	if code != 0 || !strings.Contains(out, "searched 2 sessions") {
		t.Errorf("scan --dir sessions/: %d %q %q", code, out, errs)
	}
	// The MCP server of docs/agents.md (--dir "$PWD/.contextfold") beside
	// the hooks serves the hooks' session stores, read-only, and says so
	// on stderr (stdin ends at once here).
	_, errs, code = cli(t, "", "mcp", "--quiet", "--dir", filepath.Join(project, ".contextfold"))
	if code != 0 || !strings.Contains(errs, "directory of session stores (2 sessions)") {
		t.Errorf("mcp at the hooks' directory: %d %q", code, errs)
	}
	// Once .contextfold is a store of its own (fold_turn before the hooks),
	// it is served as that store, and stderr names the sessions it does not serve.
	// (fold refuses a directory of session stores: the store comes first here.)
	project = t.TempDir()
	sessions = filepath.Join(project, ".contextfold", "sessions")
	if _, _, code := cli(t, "", "--dir", filepath.Join(project, ".contextfold"), "fold", "1", "a turn fold_turn folded"); code != 0 {
		t.Fatal("fold")
	}
	for _, d := range []string{older, newer} {
		if _, _, code := cli(t, "", "--dir", filepath.Join(sessions, filepath.Base(d)), "fold", "3", "a folded turn"); code != 0 {
			t.Fatal("fold")
		}
	}
	_, errs, code = cli(t, "", "mcp", "--quiet", "--dir", filepath.Join(project, ".contextfold"))
	if code != 0 || !strings.Contains(errs, "the 2 session stores below it (sessions/) are not") || !strings.Contains(errs, "--dir "+sessions) {
		t.Errorf("mcp at a store with the hooks' sessions below it: %d %q", code, errs)
	}
}

// TestJSONErrorWhenTheParseStopsEarly: with --json an error is one JSON
// object on stderr, also when an unknown command or flag stopped the
// parse before --json was read (before: plain text, which a script
// reading the JSON could not parse). "--json" after "--" is an argument.
func TestJSONErrorWhenTheParseStopsEarly(t *testing.T) {
	dir := t.TempDir() // an empty store: no note on stderr
	for _, args := range [][]string{
		{"validate", "--dir", dir, "--bogus", "--json"},
		{"bogus", "--json"},
		{"scan", "--dir", dir, "--match", "fuzzy", "--json", "which port"},
	} {
		out, errs, code := cli(t, "", args...)
		var e struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(errs), &e); err != nil || e.Error == "" || e.ExitCode != code || code != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (%v)", args, code, out, errs, err)
		}
	}
	if _, errs, code := cli(t, "", "bogus", "--", "--json"); code != 1 || strings.HasPrefix(strings.TrimSpace(errs), "{") {
		t.Errorf("--json after --: exit %d, stderr %q", code, errs)
	}
}
