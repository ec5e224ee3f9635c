package contextfold

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/canonjson"
)

// The public IPCF-1.1 vectors, produced with the reference implementation
// (testdata/conformance/README.md). Every case runs in a fresh store whose
// directory is named .contextfold, with the clock pinned.

type vectorFile struct {
	Kind                string            `json:"kind"`
	SchemaVersion       int               `json:"schema_version"`
	FixedTimestamp      string            `json:"fixed_timestamp"`
	DefaultPolicy       json.RawMessage   `json:"default_policy"`
	DefaultPolicySHA256 string            `json:"default_policy_sha256"`
	CaseCount           int               `json:"case_count"`
	Cases               []json.RawMessage `json:"cases"`
}

type vectorTurn struct {
	StepID     int       `json:"step_id"`
	Summary    string    `json:"summary"`
	RawContent *string   `json:"raw_content"`
	Files      *[]string `json:"files"`
	Commands   *[]string `json:"commands"`
	Errors     *[]string `json:"errors"`
}

func (v vectorTurn) turn() Turn {
	t := Turn{StepID: v.StepID, Summary: v.Summary}
	if v.RawContent != nil {
		t.RawContent = *v.RawContent
	}
	if v.Files != nil {
		t.Files = append([]string{}, (*v.Files)...)
	}
	if v.Commands != nil {
		t.Commands = append([]string{}, (*v.Commands)...)
	}
	if v.Errors != nil {
		t.Errors = append([]string{}, (*v.Errors)...)
	}
	return t
}

func loadVectors(t *testing.T, name string) *vectorFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "conformance", name))
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatal(err)
	}
	if vf.SchemaVersion != 1 || vf.CaseCount != len(vf.Cases) {
		t.Fatalf("%s: schema_version %d, case_count %d, %d cases", name, vf.SchemaVersion, vf.CaseCount, len(vf.Cases))
	}
	return &vf
}

// vectorStore makes a fresh store named .contextfold with the clock pinned and
// the case's policy (raw JSON, literals kept) written first.
func vectorStore(t *testing.T, fixed string, policy json.RawMessage) *Store {
	t.Helper()
	ts, err := time.Parse(TimeFormat, fixed)
	if err != nil {
		t.Fatal(err)
	}
	s := openTestStore(t, Options{Clock: func() time.Time { return ts }, Scrub: ScrubOff})
	if len(policy) > 0 && string(policy) != "null" {
		putStoreFile(t, s, PolicyFile, policy)
	}
	return s
}

// decodeExact decodes JSON keeping number literals.
func decodeExact(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := canonjson.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// normalise turns a value into its canonical JSON for comparison.
func canon(t *testing.T, v any) string {
	t.Helper()
	c, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

func TestConformanceDefaultPolicy(t *testing.T) {
	vf := loadVectors(t, "fold.json")
	p, err := ParsePolicy(vf.DefaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash() != vf.DefaultPolicySHA256 || DefaultPolicy().Hash() != vf.DefaultPolicySHA256 {
		t.Fatalf("default policy hash %s / %s, want %s", p.Hash(), DefaultPolicy().Hash(), vf.DefaultPolicySHA256)
	}
}

// TestConformanceFold covers CONF-01 (lossless storage), CONF-02 (payload),
// CONF-03 (deterministic indexing) and CONF-11 (replay): cold node, file
// bytes, index entry, index file bytes and policy hash, exactly.
func TestConformanceFold(t *testing.T) {
	vf := loadVectors(t, "fold.json")
	for _, raw := range vf.Cases {
		var c struct {
			ID    string `json:"id"`
			Input struct {
				vectorTurn
				Policy json.RawMessage `json:"policy"`
			} `json:"input"`
			Expected struct {
				ColdNode          json.RawMessage `json:"cold_node"`
				IndexEntry        json.RawMessage `json:"index_entry"`
				FileText          string          `json:"file_text"`
				FileSHA256        string          `json:"file_sha256"`
				IndexFileText     string          `json:"index_file_text"`
				FoldingPolicyHash string          `json:"folding_policy_hash"`
			} `json:"expected"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		t.Run(c.ID, func(t *testing.T) {
			s := vectorStore(t, vf.FixedTimestamp, c.Input.Policy)
			res, err := s.Fold(c.Input.turn())
			if err != nil {
				t.Fatal(err)
			}
			wantNode := decodeExact(t, c.Expected.ColdNode).(map[string]any)
			for k, want := range wantNode {
				if got := canon(t, res.Node.Doc[k]); got != canon(t, want) {
					t.Errorf("cold node %s:\n got %s\nwant %s", k, got, canon(t, want))
				}
			}
			if len(res.Node.Doc) != len(wantNode) {
				t.Errorf("cold node has %d keys, want %d", len(res.Node.Doc), len(wantNode))
			}
			file := readNodeBytes(t, s, c.Input.StepID)
			if !bytes.Equal(file, []byte(c.Expected.FileText)) {
				t.Errorf("file text differs:\n got %q\nwant %q", file, c.Expected.FileText)
			}
			sum := sha256.Sum256(file)
			if hex.EncodeToString(sum[:]) != c.Expected.FileSHA256 {
				t.Errorf("file sha256 differs")
			}
			if got, want := canon(t, res.Entry.Doc), canon(t, decodeExact(t, c.Expected.IndexEntry)); got != want {
				t.Errorf("index entry:\n got %s\nwant %s", got, want)
			}
			idx := indexFileBytes(t, s)
			if string(idx) != c.Expected.IndexFileText {
				t.Errorf("index file differs:\n got %q\nwant %q", idx, c.Expected.IndexFileText)
			}
			p, err := s.Policy()
			if err != nil {
				t.Fatal(err)
			}
			if p.Hash() != c.Expected.FoldingPolicyHash {
				t.Errorf("folding policy hash %s, want %s", p.Hash(), c.Expected.FoldingPolicyHash)
			}
			// Folding again changes nothing (spec §5).
			again, err := s.Fold(c.Input.turn())
			if err != nil || !again.AlreadyIndexed {
				t.Fatalf("second fold: %v, already=%v", err, again != nil && again.AlreadyIndexed)
			}
			idx2 := indexFileBytes(t, s)
			if !bytes.Equal(idx, idx2) {
				t.Errorf("second fold changed the index")
			}
			rep, err := s.Validate()
			if err != nil || !rep.OK() {
				t.Errorf("validate after fold: %v %+v", err, rep)
			}
		})
	}
}

func foldTurns(t *testing.T, s *Store, turns []vectorTurn) {
	t.Helper()
	for _, vt := range turns {
		if _, err := s.Fold(vt.turn()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConformanceRecall covers CONF-04 temporal disambiguation.
func TestConformanceRecall(t *testing.T) {
	vf := loadVectors(t, "recall.json")
	for _, raw := range vf.Cases {
		var c struct {
			ID    string `json:"id"`
			Input struct {
				Turns  []vectorTurn    `json:"turns"`
				Query  string          `json:"query"`
				Policy json.RawMessage `json:"policy"`
			} `json:"input"`
			Expected []struct {
				StepID   int    `json:"step_id"`
				Status   string `json:"status"`
				Coverage int    `json:"coverage"`
				Score    int    `json:"score"`
			} `json:"expected"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		t.Run(c.ID, func(t *testing.T) {
			s := vectorStore(t, vf.FixedTimestamp, c.Input.Policy)
			foldTurns(t, s, c.Input.Turns)
			hits, err := s.Recall(c.Input.Query)
			if err != nil {
				t.Fatal(err)
			}
			type row struct {
				StepID          int
				Status          string
				Coverage, Score int
			}
			got := make([]row, len(hits))
			for i, h := range hits {
				got[i] = row{h.StepID, h.Status, h.Coverage, h.Score}
			}
			want := make([]row, len(c.Expected))
			for i, h := range c.Expected {
				want[i] = row{h.StepID, h.Status, h.Coverage, h.Score}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("recall %q:\n got %+v\nwant %+v", c.Input.Query, got, want)
			}
		})
	}
}

// TestConformanceScan covers CONF-13 (multi-intent selection, Unicode) and
// CONF-06 (per-turn budgets with intent ownership).
func TestConformanceScan(t *testing.T) {
	vf := loadVectors(t, "scan.json")
	for _, raw := range vf.Cases {
		var c struct {
			ID    string `json:"id"`
			Input struct {
				Turns  []vectorTurn    `json:"turns"`
				Prompt string          `json:"prompt"`
				Policy json.RawMessage `json:"policy"`
			} `json:"input"`
			Expected []struct {
				StepID       int      `json:"step_id"`
				MatchedTerms []string `json:"matched_terms"`
			} `json:"expected"`
			Aux struct {
				QueryTerms []string `json:"query_terms"`
			} `json:"aux"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		t.Run(c.ID, func(t *testing.T) {
			s := vectorStore(t, vf.FixedTimestamp, c.Input.Policy)
			foldTurns(t, s, c.Input.Turns)
			res, err := s.Scan(c.Input.Prompt)
			if err != nil {
				t.Fatal(err)
			}
			if c.Aux.QueryTerms != nil && !reflect.DeepEqual(res.QueryTerms, c.Aux.QueryTerms) && !(len(res.QueryTerms) == 0 && len(c.Aux.QueryTerms) == 0) {
				t.Errorf("query terms:\n got %q\nwant %q", res.QueryTerms, c.Aux.QueryTerms)
			}
			type row struct {
				StepID int
				Terms  []string
			}
			got := []row{}
			for _, p := range res.Selected {
				got = append(got, row{p.StepID, p.MatchedTerms})
			}
			want := []row{}
			for _, p := range c.Expected {
				want = append(want, row{p.StepID, p.MatchedTerms})
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("scan %q:\n got %+v\nwant %+v", c.Input.Prompt, got, want)
			}
		})
	}
}

// TestConformanceHydrate covers CONF-05 (verbatim retrieval) and CONF-06
// (per-call cap, truncation on code points).
func TestConformanceHydrate(t *testing.T) {
	vf := loadVectors(t, "hydrate.json")
	for _, raw := range vf.Cases {
		var c struct {
			ID    string `json:"id"`
			Input struct {
				Turn   vectorTurn      `json:"turn"`
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
			s := vectorStore(t, vf.FixedTimestamp, c.Input.Policy)
			foldTurns(t, s, []vectorTurn{c.Input.Turn})
			h, err := s.Hydrate(c.Input.Turn.StepID)
			if err != nil {
				t.Fatal(err)
			}
			if h.Content != c.Expected.Content || h.TokenEstimate != c.Expected.TokenEstimate || h.Truncated != c.Expected.Truncated {
				t.Errorf("hydrate: got (%q, %d, %v), want (%q, %d, %v)", h.Content, h.TokenEstimate, h.Truncated,
					c.Expected.Content, c.Expected.TokenEstimate, c.Expected.Truncated)
			}
			if h.RawContent != c.Input.Turn.turn().Payload() {
				t.Errorf("raw content is not the payload")
			}
		})
	}
}
