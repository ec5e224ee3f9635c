package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/hooks"
	"github.com/contextfold/contextfold/mcpserver"
)

// TestMistypedDirIsNotAStore: the commands that would write, serve or
// export a store refuse a directory that is not one, say so, exit 1, and
// create nothing (export wrote an empty store to --to).
func TestMistypedDirIsNotAStore(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "typo")
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	for _, dir := range []string{missing, empty} {
		for _, args := range [][]string{{"repair", "--apply"}, {"repair"}, {"compact"}, {"ui", "--listen", "127.0.0.1:0"}, {"export", "--to", filepath.Join(base, "out")}, {"evict", "3"}} {
			_, errs, code := cli(t, "", append([]string{"--dir", dir}, args...)...)
			if code != 1 || !strings.Contains(errs, "no store at "+dir) || !strings.Contains(errs, "--dir") {
				t.Errorf("%s %v: exit %d %q", filepath.Base(dir), args, code, errs)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a mistyped --dir was created")
	}
	if _, err := os.Stat(filepath.Join(base, "out")); err == nil {
		t.Error("export of a mistyped --dir wrote a store")
	}
	// The MCP server (it may fold, so it serves a new store) says so.
	if _, errs, code := cli(t, "", "--dir", missing, "mcp", "--quiet"); code != 0 || !strings.Contains(errs, "no store at "+missing+" yet") {
		t.Errorf("mcp on a mistyped --dir: %d %q", code, errs)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("an empty directory got %v", ents)
	}
	// A real store is still repaired.
	dir := demoDir(t)
	if out, errs, code := cli(t, "", "--dir", dir, "repair", "--apply"); code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Errorf("repair of a store: %d %s %s", code, out, errs)
	}
}

// TestIngestOfAnotherSessionIsRefused: ingesting a second, different
// session into a store that holds one is refused (exit 1) naming both
// sessions and the remedy, and changes nothing; the remedy works; a
// re-ingest of the same session says why nothing was folded; a grown
// transcript still folds only its new turns.
func TestIngestOfAnotherSessionIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	first, second := transcripts[0].path, transcripts[1].path // Claude Code, then SWE-agent
	if _, errs, code := cli(t, "", "--dir", dir, "ingest", first); code != 0 {
		t.Fatalf("first ingest: %s", errs)
	}
	before := snapshot(t, dir)
	out, errs, code := cli(t, "", "--dir", dir, "ingest", second)
	if code != 1 || !strings.Contains(errs, "another session") || !strings.Contains(errs, "Nothing was folded") ||
		!strings.Contains(errs, "--dir "+dir+"-i_got_id_demo ") {
		t.Fatalf("second session: exit %d\n%s\n%s", code, out, errs)
	}
	// Both sessions are named: the stored one (from its cold nodes) and the new one.
	n, err := os.ReadFile(filepath.Join(dir, "cold_nodes", "step_000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Session string `json:"session_id"`
	}
	mustJSON(t, string(n), &node)
	if !strings.Contains(errs, `"`+node.Session+`"`) {
		t.Errorf("the stored session %q is not named: %s", node.Session, errs)
	}
	if !maps.Equal(before, snapshot(t, dir)) {
		t.Error("a refused ingest changed the store")
	}
	// The remedy: a store of its own.
	i := strings.Index(errs, "contextfold --dir ")
	fields := strings.Fields(errs[i:])
	if _, errs, code := cli(t, "", "--dir", fields[2], "ingest", second); code != 0 {
		t.Fatalf("remedy: %s", errs)
	}
	// The same session again: exit 0, and says why nothing was folded.
	out, _, code = cli(t, "", "--dir", dir, "ingest", first)
	if code != 0 || !strings.Contains(out, "nothing new") {
		t.Errorf("re-ingest: %d %s", code, out)
	}
	// Two OpenAI-style message files without session ids collide too.
	a := filepath.Join(t.TempDir(), "a.json")
	b := filepath.Join(t.TempDir(), "b.json")
	os.WriteFile(a, []byte(`[{"role":"user","content":"fix the parser in lexer.go"},{"role":"assistant","content":"done: lexer.go patched"}]`), 0o644)
	os.WriteFile(b, []byte(`[{"role":"user","content":"why is the CI red on main?"},{"role":"assistant","content":"flaky test in net_test.go"}]`), 0o644)
	d2 := filepath.Join(t.TempDir(), ".contextfold")
	cli(t, "", "--dir", d2, "ingest", a)
	// Neither names its session: the remedy's store is named after the
	// file, so that a third such file does not collide there again.
	c := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(c, []byte(`[{"role":"user","content":"bump the version"},{"role":"assistant","content":"version.go bumped"}]`), 0o644)
	for _, f := range []string{b, c} {
		_, errs, code := cli(t, "", "--dir", d2, "ingest", f)
		if code != 1 || !strings.Contains(errs, "Nothing was folded") || !strings.Contains(errs, "name their session") {
			t.Fatalf("%s: %d %s", filepath.Base(f), code, errs)
		}
		i := strings.Index(errs, "contextfold --dir ")
		remedy := strings.Fields(errs[i:])[2]
		if filepath.Base(remedy) != ".contextfold-"+strings.TrimSuffix(filepath.Base(f), ".json") {
			t.Errorf("%s: remedy store %s", filepath.Base(f), remedy)
		}
		if _, errs, code := cli(t, "", "--dir", remedy, "ingest", f); code != 0 {
			t.Errorf("%s: remedy: %d %s", filepath.Base(f), code, errs)
		}
	}
}

// TestHooksDoNotImportTheMCPAdapter: adapters do not lean on each other;
// the hooks name the MCP fetch tool by the same name the server has.
func TestHooksDoNotImportTheMCPAdapter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../hooks").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "contextfold/mcpserver") {
		t.Error("hooks imports mcpserver")
	}
	if hooks.ToolFetchName != mcpserver.ToolFetch {
		t.Errorf("hooks name the fetch tool %q, the MCP server %q", hooks.ToolFetchName, mcpserver.ToolFetch)
	}
}

// TestSmallEdges: a negative id without -- is answered with the hint to use
// --; proxy --help names its own store default.
func TestSmallEdges(t *testing.T) {
	for _, args := range [][]string{{"hydrate", "-1"}, {"evict", "-3"}, {"scan", "-x marks the spot"}} {
		_, errs, code := cli(t, "", args...)
		if code != 1 || !strings.Contains(errs, "put -- before it") {
			t.Errorf("%v: %d %s", args, code, errs)
		}
	}
	// A step id that is not an integer: the example names the command.
	for _, args := range [][]string{{"hydrate", "x7"}, {"evict", "x7"}, {"fold", "x7", "s"}} {
		cmd := args[0]
		if _, errs, code := cli(t, "", append([]string{"--dir", t.TempDir()}, args...)...); code != 1 || !strings.Contains(errs, "'contextfold "+cmd+" -- -5'") {
			t.Errorf("%s x7: %d %s", cmd, code, errs)
		}
	}
	if _, errs, code := cli(t, `{"step_id": 1.5, "summary": "s"}`, "--dir", t.TempDir(), "fold", "--input", "-"); code != 1 || !strings.Contains(errs, "not an integer") || strings.Contains(errs, "put --") {
		t.Errorf("fold --input step_id 1.5: %d %s", code, errs)
	}
	out, _, _ := cli(t, "", "proxy", "--help")
	if !strings.Contains(out, "one store per session (default: the per-user cache directory") || strings.Contains(out, "else ./.contextfold") {
		t.Errorf("proxy --help on --dir:\n%s", out)
	}
}

// TestFoldOfAnotherTurnAtAnIndexedStepSaysSo: folding a different turn at
// an indexed step changes nothing (exit 0, as the reference) but says on
// stderr that the turn was not stored, naming the sessions; the same turn
// again is silent.
func TestFoldOfAnotherTurnAtAnIndexedStepSaysSo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "5", "the port is 5433"); code != 0 {
		t.Fatal(errs)
	}
	before := snapshot(t, dir)
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "5", "the port is 5433"); code != 0 || errs != "" {
		t.Errorf("same turn again: %d %q", code, errs)
	}
	out, errs, code := cli(t, "", "--dir", dir, "fold", "5", "CI is red", "--session", "run-2")
	if code != 0 || !strings.Contains(out, "already indexed") || !strings.Contains(errs, "NOT stored") ||
		!strings.Contains(errs, `"default-session"`) || !strings.Contains(errs, dir+"-run-2") {
		t.Errorf("another session's turn: %d %q %q", code, out, errs)
	}
	if _, errs, _ := cli(t, "", "--dir", dir, "--json", "fold", "5", "the port is 5434"); !strings.Contains(errs, "NOT stored") || strings.Contains(errs, "sessions") {
		t.Errorf("another turn of the same session (--json): %q", errs)
	}
	if !maps.Equal(before, snapshot(t, dir)) {
		t.Error("a fold at an indexed step changed the store")
	}
}

// TestFoldInputTypedFields: a --input turn whose field has the wrong JSON
// type (a quoted, fractional, boolean or out-of-range step_id, a number as
// the summary, a string where a list of strings goes, …) is refused with
// our message naming the field, its value and the remedy, not
// encoding/json's; exit 1 and nothing written.
func TestFoldInputTypedFields(t *testing.T) {
	const stepRule = "step_id must be an integer up to 2^63-1"
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"step_id": "abc", "summary": "s"}`, []string{`"step_id" is "abc" (a string, not an integer)`, stepRule}},
		{`{"step_id": "12", "summary": "s"}`, []string{`"step_id" is "12" (a string, not an integer)`, stepRule}},
		{`{"step_id": 1.5, "summary": "s"}`, []string{`"step_id" is 1.5 (a number, not an integer)`, stepRule}},
		{`{"step_id": 2e3, "summary": "s"}`, []string{`"step_id" is 2e3`, stepRule}},
		{`{"step_id": true, "summary": "s"}`, []string{`"step_id" is true (a boolean, not an integer)`, stepRule}},
		{`{"step_id": [1], "summary": "s"}`, []string{`"step_id" is [1] (a list, not an integer)`, stepRule}},
		{`{"step_id": 9223372036854775808, "summary": "s"}`, []string{`"step_id" is 9223372036854775808 (out of range)`, stepRule}},
		{`{"summary": "s"}`, []string{`"step_id" is required`, stepRule}},
		{`{"step_id": 1, "summary": 5}`, []string{`"summary" is 5 (a number)`, "summary must be a JSON string"}},
		{`{"step_id": 1, "raw_content": {"a": 1}}`, []string{`"raw_content" is {"a": 1} (an object)`, "raw_content must be a JSON string"}},
		{`{"step_id": 1, "session_id": false}`, []string{`"session_id" is false (a boolean)`, "session_id must be a JSON string"}},
		{`{"step_id": 1, "files": "a.go"}`, []string{`"files" is "a.go" (a string)`, "files must be a list of JSON strings"}},
		{`{"step_id": 1, "commands": [true]}`, []string{`"commands[0]" is true (a boolean)`, "commands must be a list of JSON strings"}},
		{`{"step_id": 1, "errors": ["E", 2]}`, []string{`"errors[1]" is 2 (a number)`, "errors must be a list of JSON strings"}},
		{`[1, 2]`, []string{"holds a list, not a turn object"}},
	} {
		dir := filepath.Join(t.TempDir(), ".contextfold")
		out, errs, code := cli(t, tc.in, "--dir", dir, "fold", "--input", "-")
		if code == 0 || out != "" {
			t.Errorf("%s: exit %d, stdout %q", tc.in, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: stderr %q lacks %q", tc.in, errs, w)
			}
		}
		if strings.Contains(errs, "json:") || strings.Contains(errs, "Go struct") || strings.Contains(errs, "unmarshal") {
			t.Errorf("%s: encoding/json's message leaked: %s", tc.in, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: the store was written (%v)", tc.in, err)
		}
	}
	// The right types still fold; null is an absent field.
	dir := filepath.Join(t.TempDir(), ".contextfold")
	in := `{"step_id": -2, "summary": "s", "raw_content": null, "files": ["a.go"], "commands": [], "errors": null, "session_id": "s1"}`
	if _, errs, code := cli(t, in, "--dir", dir, "fold", "--input", "-"); code != 0 {
		t.Fatalf("a well-typed turn: exit %d %s", code, errs)
	}
}
