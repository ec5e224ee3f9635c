package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

type scanOut struct {
	Match    string `json:"match"`
	Selected []struct {
		StepID int      `json:"step_id"`
		Score  float64  `json:"score"`
		Why    []string `json:"why"`
	} `json:"selected"`
}

func scanSteps(s scanOut) []int {
	var out []int
	for _, p := range s.Selected {
		out = append(out, p.StepID)
	}
	return out
}

// --match selects the mode of scan and recall; ranked is the default (the
// proxy's, MCP server's and hooks' matching), exact's JSON is unchanged; the
// store's {"matching": "exact"} setting makes exact the default of that
// store (a reference store), {"matching": "ranked"} keeps ranked.
func TestMatchFlag(t *testing.T) {
	dir := demoDir(t)
	exact, _, code := cli(t, "", "--dir", dir, "scan", "--json", "--match", "exact", contextfold.DemoPrompt)
	if code != 0 || strings.Contains(exact, `"score"`) || strings.Contains(exact, `"match"`) {
		t.Errorf("exact JSON changed: %s", exact)
	}
	out, _, code := cli(t, "", "--dir", dir, "scan", "--json", "--match", "ranked", contextfold.DemoPrompt)
	var r scanOut
	mustJSON(t, out, &r)
	if code != 0 || r.Match != "ranked" || !reflect.DeepEqual(scanSteps(r), []int{342, 137, 447}) || r.Selected[0].Score <= 0 || len(r.Selected[0].Why) == 0 {
		t.Errorf("ranked scan: %s", out)
	}
	if def, _, _ := cli(t, "", "--dir", dir, "scan", "--json", contextfold.DemoPrompt); def != out {
		t.Errorf("scan without --match is not ranked: %s", def)
	}
	if err := os.WriteFile(filepath.Join(dir, contextfold.SettingsFile), []byte(`{"matching": "exact"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if ref, _, _ := cli(t, "", "--dir", dir, "scan", "--json", contextfold.DemoPrompt); ref != exact {
		t.Errorf("a store saying exact does not scan exactly: %s", ref)
	}
	if err := os.Remove(filepath.Join(dir, contextfold.SettingsFile)); err != nil {
		t.Fatal(err)
	}
	out, _, code = cli(t, "", "--dir", dir, "scan", "--match", "ranked", "thanks, go on")
	if code != 0 || !strings.Contains(out, "nothing would be hydrated") {
		t.Errorf("thanks, go on: %d %s", code, out)
	}
	for _, cmd := range []string{"scan", "recall"} {
		_, errs, code := cli(t, "", "--dir", dir, cmd, "--match", "fuzzy", "port")
		if code != 1 || !strings.Contains(errs, "exact, ranked") {
			t.Errorf("%s --match fuzzy: exit %d, %q", cmd, code, errs)
		}
	}
	out, _, code = cli(t, "", "--dir", dir, "recall", "--match", "ranked", "--json", "PostgreSQL", "port")
	var hits []map[string]any
	mustJSON(t, out, &hits)
	if code != 0 || len(hits) == 0 || hits[0]["step_id"] != float64(137) || hits[0]["status"] != contextfold.StatusLatest {
		t.Errorf("ranked recall: %s", out)
	}
	if err := os.WriteFile(filepath.Join(dir, contextfold.SettingsFile), []byte(`{"matching": "ranked"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = cli(t, "", "--dir", dir, "scan", "--json", contextfold.DemoPrompt)
	mustJSON(t, out, &r)
	if r.Match != "ranked" {
		t.Errorf("the store setting did not select ranked: %s", out)
	}
	out, _, _ = cli(t, "", "--dir", dir, "scan", "--json", "--match", "exact", contextfold.DemoPrompt)
	if out != exact {
		t.Errorf("--match exact does not override the setting: %s", out)
	}
}

// hydrate --focus places the content around the matched line of a large
// node; plain hydrate keeps the reference's truncation.
func TestHydrateFocus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		if i == 1500 {
			b.WriteString("panic: nil map write in ledger.Post at ledger.go:88\n")
			continue
		}
		b.WriteString("ok   compiling package number something or other\n")
	}
	if _, _, code := cli(t, b.String(), "--dir", dir, "--no-scrub", "fold", "3", "go test output", "--file", "-"); code != 0 {
		t.Fatal("fold failed")
	}
	out, _, code := cli(t, "", "--dir", dir, "hydrate", "3", "--raw", "--focus", "where was the nil map write?")
	if code != 0 || !strings.Contains(out, "panic: nil map write in ledger.Post at ledger.go:88") || !strings.Contains(out, "[contextfold: lines 1498-1502") {
		t.Errorf("focused: %d %.300q", code, out)
	}
	plain, _, _ := cli(t, "", "--dir", dir, "hydrate", "3", "--raw")
	if strings.Contains(plain, "nil map write") {
		t.Error("plain hydrate is not the prefix truncation")
	}
	out, _, _ = cli(t, "", "--dir", dir, "hydrate", "3", "--json", "--focus", "nil map write")
	if !strings.Contains(out, `"windows"`) || !strings.Contains(out, `"first_line": 1498`) {
		t.Errorf("focused JSON: %.300s", out)
	}
	// The JSON offsets are the raw content's: no next_offset counted in
	// the focused text; a window's start read with --offset starts at its
	// first line.
	var fj struct {
		Windows []struct {
			Start int `json:"start"`
		} `json:"windows"`
		NextOffset *int `json:"next_offset"`
	}
	mustJSON(t, out, &fj)
	if fj.NextOffset != nil || len(fj.Windows) == 0 {
		t.Fatalf("focused JSON has next_offset or no windows: %.300s", out)
	}
	page, _, code := cli(t, "", "--dir", dir, "hydrate", "3", "--raw", "--offset", fmt.Sprint(fj.Windows[0].Start))
	if code != 0 || !strings.HasPrefix(page, "ok   compiling") || !strings.Contains(page, "panic: nil map write") {
		t.Errorf("--offset at the window's start: %d %.200q", code, page)
	}
}

// A bad "matching" value in store_settings.json is an error naming the
// file, the value and the modes; status shows the mode scan and recall use
// (text and JSON): ranked without a setting.
func TestStoreMatchingSetting(t *testing.T) {
	dir := demoDir(t)
	out, _, code := cli(t, "", "--dir", dir, "status", "--json")
	if code != 0 || !strings.Contains(out, `"matching": "ranked"`) {
		t.Errorf("status JSON: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(dir, contextfold.SettingsFile), []byte(`{"matching": "exact"}`), 0o644)
	if out, _, _ := cli(t, "", "--dir", dir, "status"); !strings.Contains(out, "matching exact") {
		t.Errorf("status text: %s", out)
	}
	os.WriteFile(filepath.Join(dir, contextfold.SettingsFile), []byte(`{"matching": "bm25"}`), 0o644)
	for _, args := range [][]string{{"scan", "PostgreSQL port"}, {"recall", "port"}, {"status"}} {
		_, errOut, code := cli(t, "", append([]string{"--dir", dir}, args...)...)
		if code == 0 || !strings.Contains(errOut, contextfold.SettingsFile) || !strings.Contains(errOut, `"bm25"`) || !strings.Contains(errOut, "exact, ranked") {
			t.Errorf("%v with a bad setting: %d %s", args, code, errOut)
		}
	}
	// --match overrides the store's setting, even a bad one.
	if _, _, code := cli(t, "", "--dir", dir, "scan", "--match", "exact", "PostgreSQL port"); code != 0 {
		t.Errorf("--match exact with a bad setting: %d", code)
	}
}

// TestHydrateFocusReadOnCommand: the plain-text hydrate --focus prints, per
// window, a command that reads on from the window's first line in the raw
// content, and that command, run as printed, shows the matched line.
// (Before: it printed "--offset N" with N counted in the focused text,
// which pointed near the start of the node, far from the matched line.)
func TestHydrateFocusReadOnCommand(t *testing.T) {
	dir := buildLogStore(t)
	out, errs, code := cli(t, "", "--dir", dir, "hydrate", "3", "--focus", "quux_zz")
	if code != 0 || !strings.Contains(out, "FATAL: linker error symbol quux_zz") {
		t.Fatalf("focused: %d %s %.300q", code, errs, out)
	}
	i := strings.Index(out, "contextfold --dir ")
	if i < 0 {
		t.Fatalf("no read-on command: %q", out)
	}
	cmdline := strings.Fields(out[i : strings.Index(out[i:], "\n")+i])
	if len(cmdline) != 7 || cmdline[5] != "--offset" {
		t.Fatalf("read-on command %q", cmdline)
	}
	page, errs, code := cli(t, "", cmdline[1:]...)
	if code != 0 || !strings.Contains(page, "FATAL: linker error symbol quux_zz") {
		t.Errorf("%v: %d %s; the page does not hold the matched line: %.300q", cmdline, code, errs, page)
	}
}

// buildLogStore makes a store whose step 3 is a 4,001-line build log (far
// over the per-call cap) with one matching line at its end,
// "FATAL: linker error symbol quux_zz missing", and returns its directory.
func buildLogStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".contextfold")
	var b strings.Builder
	for i := 1; i <= 4000; i++ {
		fmt.Fprintf(&b, "line %d of the build log: compiling pkg/mod%d ok\n", i, i)
	}
	b.WriteString("FATAL: linker error symbol quux_zz missing\n")
	if _, errs, code := cli(t, b.String(), "--dir", dir, "--no-scrub", "fold", "3", "build log", "--file", "-"); code != 0 {
		t.Fatal(errs)
	}
	return dir
}
