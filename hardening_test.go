package contextfold

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contextfold/contextfold/schema"
	"github.com/contextfold/contextfold/tokens"
)

// A store laid out exactly as the reference writes it (files taken from the
// vectors) validates clean, schema findings included.
func TestReferenceWrittenStoreValidatesClean(t *testing.T) {
	vf := loadVectors(t, "fold.json")
	for _, raw := range vf.Cases[:40] {
		var c struct {
			ID    string `json:"id"`
			Input struct {
				StepID int             `json:"step_id"`
				Policy json.RawMessage `json:"policy"`
			} `json:"input"`
			Expected struct {
				FileText      string `json:"file_text"`
				IndexFileText string `json:"index_file_text"`
			} `json:"expected"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		s := vectorStore(t, vf.FixedTimestamp, c.Input.Policy)
		os.MkdirAll(filepath.Join(s.Dir(), ColdNodesDir), 0o755)
		os.WriteFile(s.NodePath(c.Input.StepID), []byte(c.Expected.FileText), 0o644)
		os.WriteFile(filepath.Join(s.Dir(), IndexFile), []byte(c.Expected.IndexFileText), 0o644)
		rep, err := s.Validate()
		if err != nil || !rep.OK() || rep.Passed != 1 {
			t.Fatalf("%s: reference store: %v %+v", c.ID, err, rep.Findings)
		}
	}
}

func TestSchemaFindingForAHandBrokenField(t *testing.T) {
	s := demoStore(t)
	// A re-signed node whose status is not one of cold/hydrated/evicted: it
	// verifies, but breaks the cold node schema.
	h := editColdNode(t, s, 137, true, func(d map[string]any) { d["status"] = "lukewarm" })
	editIndexEntry(t, s, 137, func(e map[string]any) { e["artifact_sha256"] = h })
	os.WriteFile(filepath.Join(s.Dir(), EvictionLogFile), []byte(`{"evicted": [{"step_id": "137"}]}`), 0o644)
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range rep.Findings {
		if f.Kind == KindSchema {
			files = append(files, filepath.Base(f.File)+" "+f.Message)
			var ve *schema.ValidationError
			if !errors.As(f.Err, &ve) {
				t.Errorf("schema finding without a *schema.ValidationError: %v", f.Err)
			}
		}
	}
	joined := strings.Join(files, "\n")
	if !strings.Contains(joined, "step_000137.json") || !strings.Contains(joined, "/status") || !strings.Contains(joined, EvictionLogFile) {
		t.Errorf("schema findings:\n%s", joined)
	}
}

func TestEveryWrittenArtifactFollowsItsSchema(t *testing.T) {
	s := demoStore(t)
	writePolicy(t, s, `{"max_rehydration_tokens_per_turn": 60, "token_counter": "cl100k_base"}`)
	if _, err := s.Fold(Turn{StepID: 600, Summary: "extra", RawContent: "token=abc $ make test"}); err != nil {
		t.Fatal(err)
	}
	s.Evict(137)
	s.Evict(600)
	os.Remove(s.NodePath(342))
	if _, err := s.Repair(true); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		schema.RecallIndex: IndexFile, schema.EvictionLog: EvictionLogFile, schema.RepairLog: RepairLogFile, schema.HydrationPolicy: PolicyFile,
	} {
		data, err := os.ReadFile(filepath.Join(s.Dir(), file))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(name, data); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), ColdNodesDir))
	for _, d := range entries {
		data, _ := os.ReadFile(filepath.Join(s.Dir(), ColdNodesDir, d.Name()))
		if err := schema.Validate(schema.ColdNode, data); err != nil {
			t.Errorf("%s: %v", d.Name(), err)
		}
	}
}

func TestExactTokenCounters(t *testing.T) {
	payload := "func main() {\n\tfmt.Println(\"héllo, 世界 🌍\")\n}\n" + strings.Repeat("İstanbul'da hata: ValueError at line 42\n", 40)
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		t.Run(name, func(t *testing.T) {
			counter, err := tokens.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			s := newTestStore(t)
			writePolicy(t, s, `{"token_counter": "`+name+`", "max_rehydration_tokens_per_call": 50, "max_rehydration_tokens_per_turn": 70}`)
			r, err := s.Fold(Turn{StepID: 1, Summary: "tokenizer sample", RawContent: payload})
			if err != nil {
				t.Fatal(err)
			}
			if r.Node.TokenEstimate != counter.Count(payload) || r.Node.TokenEstimate == TokenEstimate(payload) {
				t.Errorf("token_estimate %d, exact %d, heuristic %d", r.Node.TokenEstimate, counter.Count(payload), TokenEstimate(payload))
			}
			h, err := s.Hydrate(1)
			if err != nil {
				t.Fatal(err)
			}
			if !h.Truncated || h.TokenEstimate > 50 || counter.Count(h.Content) > 50 || !strings.HasPrefix(payload, h.Content) || !utf8.ValidString(h.Content) {
				t.Errorf("cut: %d tokens, %q", h.TokenEstimate, h.Content)
			}
			if more, _ := counter.Truncate(payload, 51); len(more) <= len(h.Content) {
				t.Errorf("the cut is not the longest prefix within the cap")
			}
			res, _ := s.Scan("ValueError istanbul")
			if len(res.Selected) != 1 || res.Selected[0].TokenCost != 50 {
				t.Errorf("scan cost: %+v", res.Selected)
			}
		})
	}
	s := newTestStore(t)
	writePolicy(t, s, `{"token_counter": "p50k"}`)
	if _, err := s.Fold(Turn{StepID: 1, Summary: "x"}); err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("unknown counter: %v", err)
	}
}
