package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestIngestCollisionSuggestsAStoreBesideNotInside: ingesting a second
// session into a store refuses it and names a store of its own to ingest it
// into (the real binary). That store is never inside the store (it was
// STORE/sessions/NAME: a store inside a store, which "contextfold sessions"
// and the MCP server never list): beside a plain store, STORE-NAME; for a
// hooks session store (.contextfold/sessions/ID), .contextfold/sessions/NAME;
// for a proxy session's store (ROOT/SESSION/gN), ROOT/NAME. Following the
// suggestion ingests it, and for the directories of session stores
// "contextfold sessions" then lists both sessions.
func TestIngestCollisionSuggestsAStoreBesideNotInside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	first, err := filepath.Abs("../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	second, _ := filepath.Abs("../../ingest/testdata/transcripts/mini-swe-agent/psf__requests-6028.traj.json")
	suggested := regexp.MustCompile(`Ingest it into a store of its own: contextfold --dir (\S+) ingest `)
	base := t.TempDir()
	for _, c := range []struct {
		name, store, want, root string // root: the directory of session stores, "" for none
	}{
		{"plain store", filepath.Join(base, "plain", "st"), filepath.Join(base, "plain", "st-psf__requests-6028"), ""},
		{"default .contextfold", filepath.Join(base, "proj", ".contextfold"), filepath.Join(base, "proj", ".contextfold-psf__requests-6028"), ""},
		{"hooks session", filepath.Join(base, "hooks", ".contextfold", "sessions", "abc"), filepath.Join(base, "hooks", ".contextfold", "sessions", "psf__requests-6028"), filepath.Join(base, "hooks", ".contextfold")},
		{"proxy session", filepath.Join(base, "proxy", "s-0123", "g1"), filepath.Join(base, "proxy", "psf__requests-6028"), filepath.Join(base, "proxy")},
	} {
		if _, errs, code := binRun(t, bin, "--dir", c.store, "ingest", first); code != 0 {
			t.Fatalf("%s: first ingest: %s", c.name, errs)
		}
		_, errs, code := binRun(t, bin, "--dir", c.store, "ingest", second)
		m := suggested.FindStringSubmatch(errs)
		if code != 1 || m == nil {
			t.Fatalf("%s: second session: exit %d, %q; want exit 1 naming a store of its own", c.name, code, errs)
		}
		if got := m[1]; got != c.want || strings.HasPrefix(got, c.store+string(filepath.Separator)) {
			t.Errorf("%s: suggested --dir %s; want %s (beside the store, not inside it)", c.name, got, c.want)
		}
		if _, errs, code := binRun(t, bin, "--dir", m[1], "ingest", second); code != 0 {
			t.Fatalf("%s: the suggested ingest: %s", c.name, errs)
		}
		if c.root == "" {
			continue
		}
		out, errs, code := binRun(t, bin, "sessions", "--dir", c.root, "--json")
		var res struct {
			Sessions []struct {
				Store string `json:"store"`
			} `json:"sessions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("%s: sessions: exit %d %s %s", c.name, code, out, errs)
		}
		var stores []string
		for _, s := range res.Sessions {
			stores = append(stores, s.Store)
		}
		if len(stores) != 2 || !slices.Contains(stores, c.store) || !slices.Contains(stores, c.want) {
			t.Errorf("%s: sessions lists %v; want %s and %s", c.name, stores, c.store, c.want)
		}
	}
}
