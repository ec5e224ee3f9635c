package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// TestRecallCoverageCountsAlias: a prompt word matched through its alias
// ("linker" through ld and collect2) is a covered word, so recall must not
// print coverage 0 for the very node it matched that way.
func TestRecallCoverageCountsAlias(t *testing.T) {
	dir := demoDir(t)
	if _, errs, code := cli(t, "collect2: error: ld returned 1 exit status\n/usr/bin/ld: cannot find -lfoo\n", "--dir", dir, "--no-scrub", "fold", "201", "build failed at the final step", "--file", "-"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := cli(t, "", "--dir", dir, "recall", "linker", "--json")
	var rows []struct {
		Step     int `json:"step_id"`
		Coverage int `json:"coverage"`
	}
	mustJSON(t, out, &rows)
	if code != 0 || len(rows) != 1 || rows[0].Step != 201 {
		t.Fatalf("recall linker: %d %s %s", code, errs, out)
	}
	if rows[0].Coverage != 1 {
		t.Errorf("recall linker: coverage %d for the node matched by alias, want 1", rows[0].Coverage)
	}
}

// TestScanSaysWhenNoTerm: a prompt of stop words only ("hello") has no
// query term; scan says so plainly instead of printing an empty list.
func TestScanSaysWhenNoTerm(t *testing.T) {
	dir := demoDir(t)
	out, errs, code := cli(t, "", "--dir", dir, "scan", "hello")
	if code != 0 {
		t.Fatalf("scan hello: %d %s", code, errs)
	}
	if strings.Contains(out, "query terms: \n") || !strings.Contains(out, "query terms: none") {
		t.Errorf("scan hello printed an empty term list, want it to say there is none:\n%s", out)
	}
	out, _, _ = cli(t, "", "--dir", dir, "scan", "what port for PostgreSQL?")
	if !strings.Contains(out, "query terms: port") {
		t.Errorf("scan with terms lost its term list:\n%s", out)
	}
}

// TestRepairJSONFilesAbsolute: every action of repair --json names its
// file by an absolute path, drop_reference included (it printed the
// index's relative file_path).
func TestRepairJSONFilesAbsolute(t *testing.T) {
	dir := demoDir(t)
	copied := filepath.Join(t.TempDir(), "other")
	if err := os.Rename(dir, copied); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, "", "--dir", copied, "repair", "--json")
	var plan struct {
		Actions []struct {
			Action string `json:"action"`
			File   string `json:"file"`
		} `json:"actions"`
	}
	mustJSON(t, out, &plan)
	kinds := map[string]bool{}
	for _, a := range plan.Actions {
		kinds[a.Action] = true
		if !filepath.IsAbs(a.File) {
			t.Errorf("repair --json: %s names %q, not an absolute path", a.Action, a.File)
		}
	}
	if !kinds["drop_reference"] || !kinds["reindex"] {
		t.Fatalf("repair --json (exit %d %s): want drop_reference and reindex actions, got %s", code, errs, out)
	}
}

// TestValidateCopiedStoreOneFinding: validate on a copied store names the
// move once, with the count of nodes it affects, instead of a
// path_containment finding (and its remedy) for every node.
func TestValidateCopiedStoreOneFinding(t *testing.T) {
	dir := demoDir(t)
	copied := filepath.Join(t.TempDir(), "other")
	if err := os.Rename(dir, copied); err != nil {
		t.Fatal(err)
	}
	out, _, code := cli(t, "", "--dir", copied, "validate")
	if code != 1 {
		t.Fatalf("validate on a copy: exit %d\n%s", code, out)
	}
	if n := strings.Count(out, "path_containment"); n != 1 {
		t.Errorf("validate on a copy printed %d path_containment findings, want 1:\n%s", n, out)
	}
	for _, want := range []string{"8 of 8 indexed nodes", `".contextfold"`, "contextfold --dir " + copied + " repair --apply"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate on a copy lacks %q:\n%s", want, out)
		}
	}
	// --json keeps one finding per node (repair plans one action each).
	out, _, _ = cli(t, "", "--dir", copied, "validate", "--json")
	var rep struct {
		Findings []struct{ Kind string } `json:"findings"`
	}
	mustJSON(t, out, &rep)
	if len(rep.Findings) != 8 {
		t.Errorf("validate --json on a copy: %d findings, want 8", len(rep.Findings))
	}
}

// TestScanReportsFocusedTokens: a pick over the per-call cap that
// hydration focuses on its matched lines is reported with the tokens
// hydration places (and marked focused), not only with the cap it holds
// against the per-turn budget (scan printed 3000 tokens for a pick that
// hydrates as a few dozen).
func TestScanReportsFocusedTokens(t *testing.T) {
	dir := buildLogStore(t)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "row %d of the test run: case t%d passed\n", i, i)
	}
	if _, errs, code := cli(t, b.String(), "--dir", dir, "--no-scrub", "fold", "4", "test run", "--file", "-"); code != 0 {
		t.Fatal(errs)
	}
	prompt := "why is quux_zz missing"
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := match.Hydrate(s, 3, prompt, match.Ranked)
	if err != nil || len(h.Windows) == 0 {
		t.Fatalf("hydrate 3 is not focused: %v %+v", err, h)
	}
	out, errs, code := cli(t, "", "--dir", dir, "scan", "--json", prompt)
	var res struct {
		Selected []struct {
			Step   int `json:"step_id"`
			Cost   int `json:"token_cost"`
			Placed int `json:"placed_tokens"`
		} `json:"selected"`
	}
	mustJSON(t, out, &res)
	if code != 0 || len(res.Selected) == 0 || res.Selected[0].Step != 3 {
		t.Fatalf("scan: %d %s %s", code, errs, out)
	}
	if p := res.Selected[0]; p.Placed != h.TokenEstimate || p.Cost <= p.Placed {
		t.Errorf("scan --json: step 3 token_cost %d placed_tokens %d; hydration places %d", p.Cost, p.Placed, h.TokenEstimate)
	}
	out, _, _ = cli(t, "", "--dir", dir, "scan", prompt)
	if want := fmt.Sprintf("%d tokens (focused", h.TokenEstimate); !strings.Contains(out, want) {
		t.Errorf("scan lacks %q:\n%s", want, out)
	}
}
