package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// The real transcripts bundled with the ingest package's tests (MIT; see
// ingest/testdata/transcripts/README.md).
var transcripts = []struct{ path, format string }{
	{"../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl", "claude-code"},
	{"../../ingest/testdata/transcripts/swe-agent/i_got_id_demo.traj", "swe-agent"},
	{"../../ingest/testdata/transcripts/openai-chat/marshmallow-1867.function-calling.traj", "swe-agent"},
	{"../../ingest/testdata/transcripts/mini-swe-agent/psf__requests-6028.traj.json", "mini-swe-agent"},
	{"../../ingest/testdata/transcripts/openhands/multi_swe_bench_example_output.jsonl", "openhands"},
	{"../../ingest/testdata/transcripts/aider/afi-core.aider.chat.history.md", "aider"},
}

type ingestJSON struct {
	Format         string `json:"format"`
	Turns          int    `json:"turns"`
	Folded         int    `json:"turns_folded"`
	AlreadyIndexed int    `json:"already_indexed"`
	TokensArchived int    `json:"tokens_archived"`
	SummaryTokens  int    `json:"summary_tokens"`
}

func TestIngestRealTranscripts(t *testing.T) {
	for _, tr := range transcripts {
		t.Run(filepath.Base(tr.path), func(t *testing.T) {
			if _, err := os.Stat(tr.path); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), ".contextfold")
			out, errs, code := cli(t, "", "--dir", dir, "ingest", tr.path, "--json")
			if code != 0 {
				t.Fatalf("ingest: %d %s", code, errs)
			}
			var rep ingestJSON
			mustJSON(t, out, &rep)
			if rep.Format != tr.format || rep.Folded == 0 || rep.Folded != rep.Turns || rep.TokensArchived <= rep.SummaryTokens {
				t.Fatalf("report: %+v", rep)
			}
			if _, errs, code := cli(t, "", "--dir", dir, "validate"); code != 0 {
				t.Fatalf("validate: %s", errs)
			}
			before := snapshot(t, dir)
			out, _, _ = cli(t, "", "--dir", dir, "ingest", tr.path, "--json")
			mustJSON(t, out, &rep)
			if rep.Folded != 0 || rep.AlreadyIndexed != rep.Turns {
				t.Errorf("re-ingest folded again: %+v", rep)
			}
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Error("re-ingest changed the store")
			}
			checkDistinctiveScan(t, dir)
		})
	}
}

// checkDistinctiveScan picks the largest turn, an identifier no other node
// holds, and checks that scanning for it hydrates exactly that turn.
func checkDistinctiveScan(t *testing.T, dir string) {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := s.Entries()
	count := map[string]int{}
	for _, e := range entries {
		for _, term := range e.Terms() {
			count[term]++
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].TokenEstimate > entries[j].TokenEstimate })
	for _, e := range entries {
		for _, id := range e.Identifiers {
			if count[id] != 1 || len(id) < 6 {
				continue
			}
			// The identifiers are the index entry's (exact mode's terms).
			out, _, code := cli(t, "", "--dir", dir, "scan", "--json", "--match", "exact", id)
			var scan struct {
				Selected []struct {
					StepID int `json:"step_id"`
				} `json:"selected"`
			}
			mustJSON(t, out, &scan)
			if code != 0 || len(scan.Selected) == 0 || scan.Selected[0].StepID != e.StepID {
				t.Fatalf("scan for %q: %s, want step %d", id, out, e.StepID)
			}
			out, _, code = cli(t, "", "--dir", dir, "hydrate", "--json", itoa(e.StepID))
			var h map[string]any
			mustJSON(t, out, &h)
			if code != 0 || h["artifact_sha256"] != e.ArtifactSHA256 {
				t.Fatalf("hydrate %d: %d", e.StepID, code)
			}
			return
		}
	}
	t.Fatal("no distinctive identifier found")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && filepath.Base(p) != ".lock" {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// TestIngestLongerTranscriptFoldsOnlyNewTurns ingests the first half of a
// JSONL session, then the whole: the first half's files are unchanged.
func TestIngestLongerTranscriptFoldsOnlyNewTurns(t *testing.T) {
	full, err := os.ReadFile(transcripts[0].path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(full, []byte("\n"))
	half := filepath.Join(t.TempDir(), "half.jsonl")
	os.WriteFile(half, bytes.Join(lines[:len(lines)/2], nil), 0o644)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	out, _, _ := cli(t, "", "--dir", dir, "ingest", half, "--json")
	var first ingestJSON
	mustJSON(t, out, &first)
	nodesBefore := snapshot(t, filepath.Join(dir, "cold_nodes"))
	out, _, code := cli(t, "", "--dir", dir, "ingest", transcripts[0].path, "--json")
	var second ingestJSON
	mustJSON(t, out, &second)
	if code != 0 || second.AlreadyIndexed != first.Turns || second.Folded != second.Turns-first.Turns {
		t.Fatalf("first %+v second %+v", first, second)
	}
	nodesAfter := snapshot(t, filepath.Join(dir, "cold_nodes"))
	for p, v := range nodesBefore {
		if nodesAfter[p] != v {
			t.Errorf("%s changed when the transcript grew", p)
		}
	}
}

func TestIngestRejectsUnknownInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("just some notes\n"), 0o644)
	_, errs, code := cli(t, "", "--dir", t.TempDir(), "ingest", p)
	if code != 1 || !strings.Contains(errs, "claude-code") {
		t.Errorf("unknown input: %d %s", code, errs)
	}
	if _, errs, code := cli(t, "", "ingest", p, "--format", "bogus"); code != 1 || !strings.Contains(errs, "bogus") {
		t.Errorf("bad format: %d %s", code, errs)
	}
	if _, errs, code := cli(t, "", "ingest", t.TempDir()); code != 1 || !strings.Contains(errs, "directory") {
		t.Errorf("directory: %d %s", code, errs)
	}
}

func TestIngestMinTokens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	out, _, _ := cli(t, "", "--dir", dir, "ingest", transcripts[0].path, "--min-tokens", "200", "--json")
	var rep struct {
		Turns   int `json:"turns"`
		Folded  int `json:"turns_folded"`
		Skipped int `json:"skipped_below_min_tokens"`
	}
	mustJSON(t, out, &rep)
	if rep.Skipped == 0 || rep.Folded == 0 || rep.Folded+rep.Skipped != rep.Turns {
		t.Errorf("min tokens: %+v", rep)
	}
}

// TestIngestSharesSecretsAcrossTurns: a value turn 2 reveals
// (PROD_DB_PASSWORD=…) is redacted where turn 0 shows it bare; re-ingesting
// the transcript is idempotent; and a store that holds an earlier, shorter
// transcript (turn 0 stored before the value was revealed) still takes
// the longer one (its turns match the store without the shared
// redaction).
func TestIngestSharesSecretsAcrossTurns(t *testing.T) {
	v := "Mx8q" + "Rt5vNw2kLp7z"
	short := []map[string]any{{"role": "user", "content": "is " + v + " right?"}, {"role": "assistant", "content": "let me check the environment"}}
	long := append(append([]map[string]any{}, short...), map[string]any{"role": "user", "content": "env says PROD_DB_PASSWORD=" + v})
	write := func(msgs []map[string]any) string {
		p := filepath.Join(t.TempDir(), "s.json")
		b, _ := json.Marshal(map[string]any{"messages": msgs})
		os.WriteFile(p, b, 0o600)
		return p
	}
	holds := func(dir string) bool {
		found := false
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), v) {
					found = true
				}
			}
			return nil
		})
		return found
	}
	dir := filepath.Join(t.TempDir(), ".contextfold")
	in := write(long)
	for i := 0; i < 2; i++ {
		if _, errs, code := cli(t, "", "--dir", dir, "ingest", in); code != 0 {
			t.Fatalf("ingest %d: exit %d %s", i, code, errs)
		}
	}
	if holds(dir) {
		t.Error("the store holds the value turn 2 revealed")
	}
	grown := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := cli(t, "", "--dir", grown, "ingest", write(short)); code != 0 {
		t.Fatalf("ingest short: exit %d %s", code, errs)
	}
	if _, errs, code := cli(t, "", "--dir", grown, "ingest", in); code != 0 {
		t.Fatalf("ingest of the longer transcript refused: exit %d %s", code, errs)
	}
}
