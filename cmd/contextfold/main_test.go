package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// cli runs the command line in-process and returns stdout, stderr and the
// exit code.
func cli(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}

func demoDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := cli(t, "", "demo", "--dir", dir); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	return dir
}

func TestDemoShowsShowcaseAndCleanValidate(t *testing.T) {
	out, _, code := cli(t, "", "demo", "--json", "--dir", filepath.Join(t.TempDir(), "s"))
	var res struct {
		Hydrated   []int `json:"hydrated_steps"`
		ValidateOK bool  `json:"validate_ok"`
		Passed     int   `json:"passed"`
	}
	mustJSON(t, out, &res)
	if code != 0 || !reflect.DeepEqual(res.Hydrated, []int{342, 137, 447}) || !res.ValidateOK || res.Passed != 8 {
		t.Fatalf("demo: code %d %+v", code, res)
	}
	text, _, _ := cli(t, "", "demo", "--dir", filepath.Join(t.TempDir(), "s"))
	for _, want := range []string{"hydrate step 342", "hydrate step 137", "hydrate step 447", "latest_chronological", "evicted step 342", "clean"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestDemoWithoutDirUsesATemporaryStore(t *testing.T) {
	wd := t.TempDir()
	old, _ := os.Getwd()
	os.Chdir(wd)
	defer os.Chdir(old)
	t.Setenv(contextfold.EnvStoreDir, "")
	out, _, code := cli(t, "", "demo")
	if code != 0 || !strings.Contains(out, os.TempDir()) {
		t.Fatalf("demo: %d\n%s", code, out)
	}
	i := strings.Index(out, "rm -rf ")
	if i < 0 {
		t.Fatalf("demo does not say how to remove its temporary directory:\n%s", out)
	}
	tmp := strings.Fields(out[i+len("rm -rf "):])[0]
	if _, err := os.Stat(filepath.Join(tmp, ".contextfold", "recall_index.json")); err != nil || !strings.HasPrefix(tmp, os.TempDir()) {
		t.Errorf("the named directory %s is not the demo's: %v", tmp, err)
	}
	os.RemoveAll(tmp)
	if _, err := os.Stat(filepath.Join(wd, ".contextfold")); err == nil {
		t.Error("demo without --dir touched ./.contextfold")
	}
}

func TestDirFlagBeforeOrAfterAndEnv(t *testing.T) {
	dir := demoDir(t)
	for _, args := range [][]string{{"--dir", dir, "status", "--json"}, {"status", "--json", "--dir", dir}} {
		out, _, code := cli(t, "", args...)
		var st map[string]any
		mustJSON(t, out, &st)
		if code != 0 || st["total"] != float64(8) {
			t.Errorf("%v: %d %v", args, code, st)
		}
		for _, k := range []string{"total", "active", "evicted", "total_tokens", "policy"} {
			if _, ok := st[k]; !ok {
				t.Errorf("status --json lacks %q", k)
			}
		}
	}
	t.Setenv(contextfold.EnvStoreDir, dir)
	out, _, _ := cli(t, "", "status", "--json")
	if !strings.Contains(out, `"total": 8`) {
		t.Errorf("CONTEXTFOLD_DIR ignored: %s", out)
	}
}

func TestFoldArgumentsAndOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	log := filepath.Join(t.TempDir(), "out.log")
	os.WriteFile(log, []byte("$ go test ./...\nFAIL: TestX ValueError"), 0o644)

	out, _, code := cli(t, "", "--dir", dir, "fold", "42", "go", "test", "run", "--file", log, "--json")
	if code != 0 {
		t.Fatalf("fold: %d", code)
	}
	stored, _ := os.ReadFile(filepath.Join(dir, "cold_nodes", "step_000042.json"))
	if strings.TrimSpace(out) != string(stored) {
		t.Errorf("fold --json must print the cold node as stored")
	}
	var node map[string]any
	mustJSON(t, out, &node)
	if node["summary"] != "go test run" || node["artifact_sha256"] == nil {
		t.Errorf("node: %v", node)
	}
	// Folding an indexed step exits 0 and says so.
	out, _, code = cli(t, "", "--dir", dir, "fold", "42", "other")
	if code != 0 || !strings.Contains(out, "already indexed") {
		t.Errorf("refold: %d %s", code, out)
	}
	// Negative ids after --.
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "--", "-5", "before", "the", "start"); code != 0 {
		t.Errorf("negative id: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "cold_nodes", "step_-00005.json")); err != nil {
		t.Error(err)
	}
	// Standard input and explicit lists.
	out, _, code = cli(t, "", "--dir", dir, "fold", "7", "stdin", "--file", "-", "--files", "a.go,b.go", "--errors", "", "--json")
	mustJSON(t, out, &node)
	if code != 0 || !reflect.DeepEqual(node["files"], []any{"a.go", "b.go"}) || !reflect.DeepEqual(node["errors"], []any{}) {
		t.Errorf("explicit lists: %v", node)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"fold", "abc", "summary"}, "not an integer"},
		{[]string{"fold", "1"}, "needs a step id and a summary"},
		{[]string{"fold", "1", "s", "--file", "/does/not/exist"}, "cannot read"},
		{[]string{"fold", "1", "s", "--file", t.TempDir()}, "is a directory"},
		{[]string{"fold", "1", "s", "--bogus"}, "unknown flag"},
	}
	for _, b := range bad {
		_, errs, code := cli(t, "", append([]string{"--dir", dir}, b.args...)...)
		if code != 1 || !strings.Contains(errs, b.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", b.args, code, errs, b.want)
		}
	}
}

func TestFoldInputJSONKeepsAnyText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	raw := "NUL\x00 and\r\nnewlines \u2028 ✓"
	in, _ := json.Marshal(map[string]any{"step_id": 9, "summary": "odd bytes", "raw_content": raw, "commands": []string{}})
	out, errs, code := cli(t, string(in), "--dir", dir, "fold", "--input", "-", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	out, _, _ = cli(t, "", "--dir", dir, "hydrate", "9", "--json")
	var h map[string]any
	mustJSON(t, out, &h)
	if h["raw_content"] != raw || h["content"] != raw || h["truncated"] != false {
		t.Errorf("hydrate: %v", h)
	}
	for _, k := range []string{"step_id", "content", "raw_content", "token_estimate", "truncated", "payload_sha256", "projection_sha256", "artifact_sha256", "summary"} {
		if _, ok := h[k]; !ok {
			t.Errorf("hydrate --json lacks %q", k)
		}
	}
	if _, errs, code := cli(t, `{"summary": "no id"}`, "--dir", dir, "fold", "--input", "-"); code != 1 || !strings.Contains(errs, "step_id") {
		t.Errorf("missing step_id: %d %s", code, errs)
	}
	if _, errs, code := cli(t, `{"step_id": "x"`, "--dir", dir, "fold", "--input", "-"); code != 1 || !strings.Contains(errs, "expected") {
		t.Errorf("malformed: %d %s", code, errs)
	}
}

// The reference's scan and recall JSON (--match exact; the default is
// ranked, TestMatchFlag).
func TestQueryCommandsJSON(t *testing.T) {
	dir := demoDir(t)
	out, _, code := cli(t, "", "--dir", dir, "scan", "--json", "--match", "exact", contextfold.DemoPrompt)
	var scan struct {
		QueryTerms []string `json:"query_terms"`
		Selected   []struct {
			StepID       int      `json:"step_id"`
			MatchedTerms []string `json:"matched_terms"`
			TokenCost    int      `json:"token_cost"`
		} `json:"selected"`
		Dropped []any `json:"dropped"`
	}
	mustJSON(t, out, &scan)
	if code != 0 || len(scan.Selected) != 3 || scan.Selected[0].StepID != 342 || scan.Selected[0].TokenCost != 12 || scan.Dropped == nil {
		t.Errorf("scan: %s", out)
	}
	out, _, _ = cli(t, "", "--dir", dir, "recall", "--json", "--match", "exact", "PostgreSQL", "port")
	var hits []map[string]any
	mustJSON(t, out, &hits)
	if len(hits) != 4 || hits[0]["step_id"] != float64(137) || hits[0]["status"] != "latest_chronological" || hits[0]["summary"] == nil || hits[0]["coverage"] != float64(2) {
		t.Errorf("recall: %s", out)
	}
	out, _, _ = cli(t, "", "--dir", dir, "scan", "--", "-v flag broke nothing")
	if !strings.Contains(out, "query terms") {
		t.Errorf("a prompt starting with - after --: %s", out)
	}
	out, _, _ = cli(t, "", "--dir", dir, "evict", "137", "--json")
	var ev map[string]any
	mustJSON(t, out, &ev)
	if ev["step_id"] != float64(137) || ev["evicted_at"] == nil {
		t.Errorf("evict: %s", out)
	}
}

func TestExitCodesForBrokenState(t *testing.T) {
	dir := demoDir(t)
	nodes := filepath.Join(dir, "cold_nodes")
	if _, _, code := cli(t, "", "--dir", dir, "hydrate", "1"); code != 2 {
		t.Errorf("not found: %d", code)
	}
	if _, _, code := cli(t, "", "--dir", dir, "evict", "1"); code != 2 {
		t.Errorf("evict not found: %d", code)
	}
	data, _ := os.ReadFile(filepath.Join(nodes, "step_000137.json"))
	os.WriteFile(filepath.Join(nodes, "step_000138.json"), data, 0o644)
	if _, _, code := cli(t, "", "--dir", dir, "hydrate", "138"); code != 4 {
		t.Errorf("orphan: %d", code)
	}
	os.Remove(filepath.Join(nodes, "step_000342.json"))
	if _, errs, code := cli(t, "", "--dir", dir, "hydrate", "342"); code != 5 || !strings.Contains(errs, "broken reference") {
		t.Errorf("broken: %d %s", code, errs)
	}
	os.WriteFile(filepath.Join(nodes, "step_000447.json"), bytes.Replace(mustRead(t, filepath.Join(nodes, "step_000447.json")), []byte("Patched"), []byte("Botched"), 1), 0o644)
	if _, _, code := cli(t, "", "--dir", dir, "hydrate", "447"); code != 3 {
		t.Errorf("tampered: %d", code)
	}
	out, _, code := cli(t, "", "--dir", dir, "validate", "--json")
	var rep struct {
		OK       bool `json:"ok"`
		Passed   int  `json:"passed"`
		Findings []struct {
			StepID *int   `json:"step_id"`
			Kind   string `json:"kind"`
		} `json:"findings"`
	}
	mustJSON(t, out, &rep)
	kinds := map[string]int{}
	for _, f := range rep.Findings {
		kinds[f.Kind] = *f.StepID
	}
	if code != 1 || rep.OK || rep.Passed != 6 || kinds["orphan"] != 138 || kinds["broken_reference"] != 342 || kinds["integrity"] != 447 {
		t.Errorf("validate: %d %s", code, out)
	}
	if _, _, code := cli(t, "", "--dir", demoDir(t), "validate"); code != 0 {
		t.Errorf("clean validate: %d", code)
	}
}

func TestBadStoreFilesNameTheFile(t *testing.T) {
	dir := demoDir(t)
	os.WriteFile(filepath.Join(dir, "hydration_policy.json"), []byte("{oops"), 0o644)
	if _, errs, code := cli(t, "", "--dir", dir, "scan", "port"); code != 1 || !strings.Contains(errs, "hydration_policy.json") || !strings.Contains(errs, "remove the file") {
		t.Errorf("bad policy: %d %s", code, errs)
	}
	dir = demoDir(t)
	os.WriteFile(filepath.Join(dir, "recall_index.json"), []byte(`{"nodes": {"1": {"step_id": "one"}}}`), 0o644)
	if _, errs, code := cli(t, "", "--dir", dir, "status"); code != 1 || !strings.Contains(errs, "recall_index.json") {
		t.Errorf("bad index: %d %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(file, nil, 0o644)
	if _, errs, code := cli(t, "", "--dir", file, "status"); code != 1 || !strings.Contains(errs, "not a directory") {
		t.Errorf("--dir on a file: %d %s", code, errs)
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, c := range []string{"fold", "scan", "recall", "hydrate", "evict", "status", "validate", "demo"} {
		out, _, code := cli(t, "", c, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help: %d, no example", c, code)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBinarySubprocess runs the real binary once, as a user would.
func TestBinarySubprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	cmd := exec.Command(bin, "demo", "--dir", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "hydrate", "999", "--dir", dir)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("exit code for not found: %v", err)
	}
}

func TestSchemaCommand(t *testing.T) {
	out, _, code := cli(t, "", "schema", "cold_node")
	var s map[string]any
	mustJSON(t, out, &s)
	if code != 0 || s["$schema"] == nil {
		t.Errorf("schema cold_node: %d %s", code, out)
	}
	out, _, _ = cli(t, "", "schema")
	var all map[string]any
	mustJSON(t, out, &all)
	if len(all) != 7 || all["folded_step"] == nil {
		t.Errorf("schema: %d schemas", len(all))
	}
	if _, errs, code := cli(t, "", "schema", "nope"); code != 1 || !strings.Contains(errs, "cold_node") {
		t.Errorf("unknown schema: %d %s", code, errs)
	}
}

func TestSourceDateEpochFixesTimestamps(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	run := func() map[string]string {
		dir := filepath.Join(t.TempDir(), ".contextfold")
		cli(t, "", "--dir", dir, "demo")
		return snapshotRel(t, dir)
	}
	a, b := run(), run()
	if !maps.Equal(a, b) {
		t.Error("two demo runs with SOURCE_DATE_EPOCH differ")
	}
	if !strings.Contains(a["recall_index.json"], `"created_at": "2026-01-01T00:00:00Z"`) || !strings.Contains(a["eviction_log.json"], `"evicted_at": "2026-01-01T00:00:00Z"`) {
		t.Errorf("timestamps do not follow SOURCE_DATE_EPOCH:\n%s", a["eviction_log.json"])
	}
}

func snapshotRel(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	for p, v := range snapshot(t, dir) {
		r, _ := filepath.Rel(dir, p)
		out[r] = v
	}
	return out
}

func TestNewUserRoughEdges(t *testing.T) {
	dir := demoDir(t)
	if _, errs, code := cli(t, `{"step_id":11,"summary":"s"}{"step_id":12,"summary":"t"}`, "--dir", dir, "fold", "--input", "-"); code != 1 || !strings.Contains(errs, "more than one JSON document") {
		t.Errorf("two documents on --input: %d %s", code, errs)
	}
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "14", "empty", "stdin", "--file", "-"); code != 0 || !strings.Contains(errs, "summary is the payload") {
		t.Errorf("empty stdin: %d %s", code, errs)
	}
	os.WriteFile(filepath.Join(dir, "hydration_policy.json"), []byte(`{"max_rehydration_tokens_per_call": "lots"}`), 0o644)
	if _, errs, code := cli(t, "", "--dir", dir, "status"); code != 1 || !strings.Contains(errs, "must be a number") {
		t.Errorf("status with a bad policy: %d %s", code, errs)
	}
	if out, _, code := cli(t, "", "--dir", dir, "repair"); code != 1 || !strings.Contains(out, "needs a hand") {
		t.Errorf("repair with a bad policy: %d %s", code, out)
	}
	os.Remove(filepath.Join(dir, "hydration_policy.json"))
	if out, _, code := cli(t, "", "--version"); code != 0 || !strings.Contains(out, "IPCF-1.1") {
		t.Errorf("--version: %d %s", code, out)
	}
	if _, errs, _ := cli(t, "", "--dir", filepath.Join(t.TempDir(), "typo"), "status"); !strings.Contains(errs, "no store at") {
		t.Errorf("missing store: %s", errs)
	}
	in, _ := json.Marshal(map[string]any{"step_id": 900, "summary": "ansi", "raw_content": "red \x1b[31mX\x1b[0m \u202eevil"})
	cli(t, string(in), "--dir", dir, "fold", "--input", "-")
	out, _, _ := cli(t, "", "--dir", dir, "hydrate", "900")
	if strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `\u001b[31m`) {
		t.Errorf("human hydrate must not send control characters to the terminal: %q", out)
	}
	raw, _, _ := cli(t, "", "--dir", dir, "hydrate", "900", "--raw")
	if raw != "red \x1b[31mX\x1b[0m \u202eevil" {
		t.Errorf("--raw must be exact: %q", raw)
	}
	if _, errs, code := cli(t, "", "hydrate", "99999999999999999999"); code != 1 || !strings.Contains(errs, "out of range") {
		t.Errorf("huge id: %d %s", code, errs)
	}
}

func TestHydrateOffsetReadsPastTheCap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	var b strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "line %d of a long log\n", i)
	}
	log := filepath.Join(t.TempDir(), "big.log")
	os.WriteFile(log, []byte(b.String()), 0o644)
	cli(t, "", "--dir", dir, "fold", "1", "big", "--file", log)
	var got strings.Builder
	offset := 0
	for pages := 0; pages < 10; pages++ {
		out, errs, code := cli(t, "", "--dir", dir, "hydrate", "1", "--json", "--offset", fmt.Sprint(offset))
		if code != 0 {
			t.Fatalf("offset %d: %s", offset, errs)
		}
		var h struct {
			Content string `json:"content"`
			Next    int    `json:"next_offset"`
		}
		mustJSON(t, out, &h)
		got.WriteString(h.Content)
		if h.Next == 0 {
			break
		}
		offset = h.Next
	}
	if got.String() != b.String() {
		t.Errorf("the pages do not add up to the payload (%d of %d bytes)", got.Len(), b.Len())
	}
	if _, errs, code := cli(t, "", "--dir", dir, "hydrate", "1", "--offset", "999999"); code != 1 || !strings.Contains(errs, "outside the content") {
		t.Errorf("offset past the end: %d %s", code, errs)
	}
}

// A summary or list given on the command line that is not valid UTF-8 is
// refused (stored as JSON it would silently become U+FFFD), and nothing is
// written, as for --file.
func TestFoldRefusesInvalidUTF8Arguments(t *testing.T) {
	for _, args := range [][]string{
		{"fold", "1", "bad \xff byte"},
		{"fold", "1", "fine", "--files", "a\xfeb.go"},
		{"fold", "1", "fine", "--session", "s\xc3"},
	} {
		dir := filepath.Join(t.TempDir(), ".contextfold")
		_, errs, code := cli(t, "", append([]string{"--dir", dir}, args...)...)
		if code != 1 || !strings.Contains(errs, "not valid UTF-8") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 naming invalid UTF-8", args, code, errs)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%q: the store was created", args)
		}
	}
}

// validate of a directory that does not exist fails (a mistyped --dir must
// not pass a CI check with "ok: 0 nodes"); an existing empty directory is
// an empty store and passes.
func TestValidateMissingStoreFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-store")
	if _, errs, code := cli(t, "", "--dir", missing, "validate"); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Errorf("missing: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("validate created the directory")
	}
	if out, errs, code := cli(t, "", "--dir", t.TempDir(), "validate"); code != 0 {
		t.Errorf("empty directory: exit %d %s %s", code, out, errs)
	}
}

// proxy --store postgres://…?session=NAME is refused before anything
// connects: the proxy's sessions come from the requests, so the parameter
// would be ignored; the password is not shown.
func TestProxyStoreWithSessionRefused(t *testing.T) {
	_, errs, code := cli(t, "", "proxy", "--store", "postgres://cf:pw-secret@127.0.0.1:1/db?session=foo", "--upstream", "http://127.0.0.1:9")
	if code != 1 || !strings.Contains(errs, "remove ?session=") || strings.Contains(errs, "pw-secret") {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming ?session= without the password", code, errs)
	}
}

// TestHydrateCutsAtALineAndSaysHowToReadOn: a node larger than the per-call
// cap is printed up to its last whole line, and the printed "read on"
// command, run as printed, starts at the next line; following it page after
// page gives back the whole payload, and the --focus command is named.
// (Before: the page ended mid-line and only --offset was named in the header.)
func TestHydrateCutsAtALineAndSaysHowToReadOn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	var b strings.Builder
	for i := 0; i < 1500; i++ {
		fmt.Fprintf(&b, "line %d of a long build log, with some words (%s)\n", i, strings.Repeat("é", i%7))
	}
	log := filepath.Join(t.TempDir(), "big.log")
	os.WriteFile(log, []byte(b.String()), 0o644)
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "1", "big", "--file", log); code != 0 {
		t.Fatal(errs)
	}
	var got strings.Builder
	args := []string{"--dir", dir, "hydrate", "1"}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("more than 20 pages")
		}
		out, errs, code := cli(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		_, rest, _ := strings.Cut(out, "--- content ---\n")
		content, tail, ok := strings.Cut(rest, "\n--- end ---\n")
		if !ok {
			t.Fatalf("no end marker: %q", out)
		}
		got.WriteString(content + "\n")
		if !strings.HasPrefix(content, "line ") || !strings.HasSuffix(content, ")") {
			t.Errorf("page %d does not hold whole lines: starts %q, ends %q", pages, content[:min(20, len(content))], content[max(0, len(content)-20):])
		}
		if !strings.Contains(out, "whole") && !strings.Contains(tail, "--focus") {
			t.Errorf("page %d: no --focus command: %q", pages, tail)
		}
		i := strings.Index(tail, "contextfold --dir ")
		if i < 0 {
			break
		}
		cmdline := strings.Fields(tail[i : strings.Index(tail[i:], "\n")+i])
		if len(cmdline) != 7 || cmdline[5] != "--offset" {
			t.Fatalf("page %d: read-on command %q", pages, cmdline)
		}
		args = cmdline[1:]
	}
	if got.String() != b.String() {
		t.Errorf("the pages do not add up to the payload (%d of %d bytes)", got.Len(), b.Len())
	}
}
