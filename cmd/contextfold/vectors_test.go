package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
)

// vectorCases reads the cases of a conformance vector file.
func vectorCases(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "conformance", name))
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatal(err)
	}
	return vf.Cases
}

// canonOf decodes JSON (numbers as literals) and re-encodes it, so that two
// documents compare by value and key order does not matter.
func canonOf(t *testing.T, data []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// vectorStoreDir makes an empty store directory named .contextfold holding
// the case's policy (raw JSON) when it has one.
func vectorStoreDir(t *testing.T, policy json.RawMessage) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), contextfold.DefaultStoreDir)
	if len(policy) > 0 && string(policy) != "null" {
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, contextfold.PolicyFile), policy, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCLIConformanceFold: every fold vector, folded through the command
// line ('fold --input - --json' under the reference profile), gives the
// reference's cold node, file bytes and index bytes — empty summaries with
// empty or absent payloads included.
func TestCLIConformanceFold(t *testing.T) {
	t.Setenv(contextfold.EnvSourceDateEpoch, "1767225600") // 2026-01-01T00:00:00Z, the vectors' clock
	for _, raw := range vectorCases(t, "fold.json") {
		var c struct {
			ID       string                     `json:"id"`
			Input    map[string]json.RawMessage `json:"input"`
			Expected struct {
				ColdNode      json.RawMessage `json:"cold_node"`
				FileText      string          `json:"file_text"`
				IndexFileText string          `json:"index_file_text"`
			} `json:"expected"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		t.Run(c.ID, func(t *testing.T) {
			dir := vectorStoreDir(t, c.Input["policy"])
			if string(c.Input["folded_at"]) != `"2026-01-01T00:00:00Z"` {
				t.Fatalf("unexpected clock %s", c.Input["folded_at"])
			}
			delete(c.Input, "policy")
			delete(c.Input, "folded_at")
			in, _ := json.Marshal(c.Input)
			out, errs, code := cli(t, string(in), "--dir", dir, "--no-scrub", "fold", "--input", "-", "--json")
			if code != 0 {
				t.Fatalf("fold: exit %d %s", code, errs)
			}
			if got, want := canonOf(t, []byte(out)), canonOf(t, c.Expected.ColdNode); got != want {
				t.Errorf("cold node:\n got %s\nwant %s", got, want)
			}
			var step struct {
				StepID int `json:"step_id"`
			}
			json.Unmarshal(c.Expected.ColdNode, &step)
			s, _ := contextfold.Open(dir, contextfold.Options{})
			if file, _ := os.ReadFile(s.NodePath(step.StepID)); string(file) != c.Expected.FileText {
				t.Errorf("file text differs:\n got %q\nwant %q", file, c.Expected.FileText)
			}
			if ix, _ := os.ReadFile(filepath.Join(dir, contextfold.IndexFile)); string(ix) != c.Expected.IndexFileText {
				t.Errorf("index file differs:\n got %q\nwant %q", ix, c.Expected.IndexFileText)
			}
		})
	}
}

// TestCLIConformanceHydrate: every hydrate vector through the command line
// ('hydrate --json') gives the reference's content, token estimate and
// truncation — a per-call cap of 0 included (empty content, truncated).
func TestCLIConformanceHydrate(t *testing.T) {
	for _, raw := range vectorCases(t, "hydrate.json") {
		var c struct {
			ID    string `json:"id"`
			Input struct {
				Turn   json.RawMessage `json:"turn"`
				Policy json.RawMessage `json:"policy"`
			} `json:"input"`
			Expected struct {
				Content       string `json:"content"`
				TokenEstimate int    `json:"token_estimate"`
				Truncated     bool   `json:"truncated"`
			} `json:"expected"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		t.Run(c.ID, func(t *testing.T) {
			dir := vectorStoreDir(t, c.Input.Policy)
			if _, errs, code := cli(t, string(c.Input.Turn), "--dir", dir, "--no-scrub", "fold", "--input", "-"); code != 0 {
				t.Fatalf("fold: exit %d %s", code, errs)
			}
			var turn struct {
				StepID json.Number `json:"step_id"`
			}
			json.Unmarshal(c.Input.Turn, &turn)
			out, errs, code := cli(t, "", "--dir", dir, "hydrate", "--json", "--", turn.StepID.String())
			if code != 0 {
				t.Fatalf("hydrate: exit %d %s", code, errs)
			}
			var h struct {
				Content       string `json:"content"`
				TokenEstimate int    `json:"token_estimate"`
				Truncated     bool   `json:"truncated"`
			}
			mustJSON(t, out, &h)
			if h.Content != c.Expected.Content || h.TokenEstimate != c.Expected.TokenEstimate || h.Truncated != c.Expected.Truncated {
				t.Errorf("hydrate: got (%q, %d, %v), want (%q, %d, %v)", h.Content, h.TokenEstimate, h.Truncated,
					c.Expected.Content, c.Expected.TokenEstimate, c.Expected.Truncated)
			}
		})
	}
}

// TestCLIConformanceScanRecall: every scan and recall vector through the
// command line (each turn folded with 'fold --input -' under the reference
// profile, then 'scan --json' / 'recall --json') gives the reference's
// selection with its matched terms, and its ranking with status, coverage
// and score.
func TestCLIConformanceScanRecall(t *testing.T) {
	t.Setenv(contextfold.EnvSourceDateEpoch, "1767225600")
	for _, kind := range []string{"scan", "recall"} {
		for _, raw := range vectorCases(t, kind+".json") {
			var c struct {
				ID    string `json:"id"`
				Input struct {
					Turns  []json.RawMessage `json:"turns"`
					Prompt *string           `json:"prompt"`
					Query  *string           `json:"query"`
					Policy json.RawMessage   `json:"policy"`
				} `json:"input"`
				Expected json.RawMessage `json:"expected"`
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			t.Run(c.ID, func(t *testing.T) {
				dir := vectorStoreDir(t, c.Input.Policy)
				for _, tu := range c.Input.Turns {
					if _, errs, code := cli(t, string(tu), "--dir", dir, "--no-scrub", "fold", "--input", "-"); code != 0 {
						t.Fatalf("fold: exit %d %s %s", code, errs, tu)
					}
				}
				q := ""
				if c.Input.Prompt != nil {
					q = *c.Input.Prompt
				}
				if c.Input.Query != nil {
					q = *c.Input.Query
				}
				out, errs, code := cli(t, "", "--dir", dir, kind, "--json", "--match", "exact", "--", q) // the vectors check the reference (spec §5)
				if code != 0 {
					t.Fatalf("%s: exit %d %s", kind, code, errs)
				}
				var got any
				if kind == "scan" {
					var s struct {
						Selected []struct {
							StepID       json.Number `json:"step_id"`
							MatchedTerms []string    `json:"matched_terms"`
						} `json:"selected"`
					}
					mustJSON(t, out, &s)
					l := []map[string]any{}
					for _, x := range s.Selected {
						l = append(l, map[string]any{"step_id": x.StepID, "matched_terms": x.MatchedTerms})
					}
					got = l
				} else {
					var s []struct {
						StepID   json.Number `json:"step_id"`
						Status   string      `json:"status"`
						Coverage json.Number `json:"coverage"`
						Score    json.Number `json:"score"`
					}
					mustJSON(t, out, &s)
					l := []map[string]any{}
					for _, x := range s {
						l = append(l, map[string]any{"step_id": x.StepID, "status": x.Status, "coverage": x.Coverage, "score": x.Score})
					}
					got = l
				}
				g, _ := json.Marshal(got)
				if a, b := canonOf(t, g), canonOf(t, c.Expected); a != b {
					t.Errorf("%s %q:\n got %s\nwant %s", kind, q, a, b)
				}
			})
		}
	}
}
