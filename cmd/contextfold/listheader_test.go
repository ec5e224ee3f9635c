package main

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/proxy"
)

// aligned checks that out is a header row naming cols, then rows whose
// cells start where the header's column names start (text/tabwriter), and
// returns the data rows.
func aligned(t *testing.T, what, out string, cols ...string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var at []int
	for _, c := range cols {
		i := strings.Index(header, c)
		if i < 0 {
			t.Fatalf("%s: header %q has no column %s", what, header, c)
		}
		at = append(at, i)
	}
	for _, l := range lines[1:] {
		for k, i := range at[1:] {
			if len(l) <= i || l[i] == ' ' || l[i-1] != ' ' {
				t.Errorf("%s: row %q: column %s does not start at %d, under its header", what, l, cols[k+1], i)
			}
		}
	}
	return lines[1:]
}

// TestListCommandsHaveAHeaderRow: the text of "contextfold sessions" (a
// directory of session stores) and "contextfold steps" starts with a header
// row naming the columns, and the rows are aligned under it (before: rows
// alone, "s-1/g1   47 nodes 5246 tokens  T1 .. T2  /path", and steps'
// unnamed columns); --json is unchanged. sessions on a proxy's --dir before
// its first session (the proxy marked it at start) lists nothing with exit
// 0 instead of refusing the directory, and status there names what the
// directory is. The real binary.
func TestListCommandsHaveAHeaderRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	root := t.TempDir()
	transcript, _ := filepath.Abs("../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	for _, s := range []string{"s-0a1b/g1", "ledger-second-run"} {
		if _, errs, code := binRun(t, bin, "--dir", filepath.Join(root, s), "ingest", transcript); code != 0 {
			t.Fatalf("ingest %s: %s", s, errs)
		}
	}
	out, errs, code := binRun(t, bin, "sessions", "--dir", root)
	if code != 0 {
		t.Fatalf("sessions: %d %s", code, errs)
	}
	rows := aligned(t, "sessions", out, "SESSION", "SOURCE", "NODES", "TOKENS", "FIRST FOLDED", "LAST FOLDED", "STORE")
	if len(rows) != 2 {
		t.Fatalf("sessions: %d rows, want 2:\n%s", len(rows), out)
	}
	for _, r := range rows {
		f := strings.Fields(r)
		want := map[string]string{"s-0a1b/g1": "proxy", "ledger-second-run": "store"}
		if len(f) != 7 || want[f[0]] == "" || f[1] != want[f[0]] || f[2] == "0" || !strings.HasPrefix(f[6], root) {
			t.Errorf("sessions row %q: want session, source, nodes, tokens, first, last, store", r)
		}
	}
	jout, _, _ := binRun(t, bin, "sessions", "--dir", root, "--json")
	var doc struct {
		Root     string           `json:"root"`
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(jout), &doc); err != nil || len(doc.Sessions) != 2 {
		t.Fatalf("sessions --json: %v\n%s", err, jout)
	}
	if keys := slices.Sorted(maps.Keys(doc.Sessions[0])); !slices.Equal(keys, []string{"first_folded_at", "last_folded_at", "nodes", "session", "source", "store", "total_tokens"}) {
		t.Errorf("sessions --json keys %v changed", keys)
	}

	out, errs, code = binRun(t, bin, "--dir", filepath.Join(root, "ledger-second-run"), "steps")
	if code != 0 {
		t.Fatalf("steps: %d %s", code, errs)
	}
	if rows := aligned(t, "steps", out, "STEP", "FOLDED", "ACTION", "STATUS", "SUMMARY"); len(rows) < 5 || !strings.HasPrefix(rows[0], "0 ") && !strings.HasPrefix(rows[0], "1 ") {
		t.Errorf("steps rows:\n%s", out)
	}
	jout, _, _ = binRun(t, bin, "--dir", filepath.Join(root, "ledger-second-run"), "steps", "--json")
	var steps []map[string]any
	if err := json.Unmarshal([]byte(jout), &steps); err != nil || len(steps) == 0 || steps[0]["step_id"] == nil {
		t.Errorf("steps --json: %v\n%.300s", err, jout)
	}

	// A proxy's --dir before its first session.
	pdir := filepath.Join(t.TempDir(), "proxy")
	srv, err := proxy.New(proxy.Options{Dir: pdir, Upstream: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	out, errs, code = binRun(t, bin, "sessions", "--dir", pdir)
	if code != 0 || !strings.Contains(out, "no session store under "+pdir+" yet") {
		t.Errorf("sessions on a proxy's --dir before its first session: exit %d %q %q", code, out, errs)
	}
	jout, _, code = binRun(t, bin, "sessions", "--dir", pdir, "--json")
	if code != 0 || strings.Join(strings.Fields(jout), " ") != `{ "root": "`+pdir+`", "sessions": [] }` {
		t.Errorf("sessions --json there: exit %d %s", code, jout)
	}
	if _, errs, code := binRun(t, bin, "status", "--dir", pdir); code != 1 || !strings.Contains(errs, "a proxy's directory of session stores, with no session yet") {
		t.Errorf("status on a proxy's --dir before its first session: exit %d %q", code, errs)
	}
}

// TestRecallAcrossSessionsJSONNamesItsTerms: recall --json across the
// sessions of a directory gives query_terms and match, as scan --json across
// sessions does (and the MCP tool its terms), a token in the query redacted:
// a recall that finds nothing says what it looked up. The other fields are
// unchanged.
func TestRecallAcrossSessionsJSONNamesItsTerms(t *testing.T) {
	root := t.TempDir()
	if _, errs, code := cli(t, "", "--dir", filepath.Join(root, "s-1", "g1"), "fold", "3", "linker error: undefined reference to frobnicate_widget"); code != 0 {
		t.Fatal(errs)
	}
	tok := "ghp_" + strings.Repeat("a1B2c3D4e5", 3) + "f6G7h8"
	out, errs, code := cli(t, "", "recall", "--dir", root, "--json", "the", "frobnicate_widget", "linker", tok)
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("recall --json: %d %s %s", code, out, errs)
	}
	if keys := slices.Sorted(maps.Keys(doc)); !slices.Equal(keys, []string{"candidates", "failed_sessions", "match", "omitted", "query_terms", "sessions_searched"}) {
		t.Errorf("recall --json keys %v", keys)
	}
	terms, _ := json.Marshal(doc["query_terms"])
	if doc["match"] != "ranked" || !strings.Contains(string(terms), `"frobnicate_widget"`) || !strings.Contains(string(terms), `"linker"`) || strings.Contains(out, tok) {
		t.Errorf("recall --json: match %v, query_terms %s (want the words looked up, the token redacted)", doc["match"], terms)
	}
	out, _, _ = cli(t, "", "recall", "--dir", root, "--json", "the")
	if !strings.Contains(out, `"query_terms": []`) {
		t.Errorf("recall --json of stop words alone: %s", out)
	}
}
