package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

type vectors struct {
	Fold []struct {
		ID            string `json:"id"`
		FileText      string `json:"file_text"`
		IndexFileText string `json:"index_file_text"`
	} `json:"fold"`
	Policies []struct {
		ID     string          `json:"id"`
		Policy json.RawMessage `json:"policy"`
	} `json:"policies"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Fold) < 10 || len(v.Policies) < 10 {
		t.Fatalf("too few vectors: %d fold, %d policies", len(v.Fold), len(v.Policies))
	}
	return v
}

func TestNamesAndSource(t *testing.T) {
	want := []string{"cold_node", "eviction_log", "folded_step", "hydration_policy", "recall_index", "repair_log", "store_settings"}
	got := Names()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Names() = %v", got)
	}
	for _, n := range got {
		src, err := Source(n)
		if err != nil || !json.Valid(src) || !bytes.Contains(src, []byte("2020-12")) {
			t.Errorf("Source(%s): %v", n, err)
		}
	}
	for _, bad := range []string{"nope", "../schema", ""} {
		if _, err := Source(bad); !errors.Is(err, ErrUnknownSchema) {
			t.Errorf("Source(%q) err = %v", bad, err)
		}
		if err := Validate(bad, []byte("{}")); !errors.Is(err, ErrUnknownSchema) {
			t.Errorf("Validate(%q) err = %v", bad, err)
		}
	}
}

func TestVectorsValidate(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.Fold {
		if err := Validate("cold_node", []byte(c.FileText)); err != nil {
			t.Errorf("%s cold node: %v", c.ID, err)
		}
		if err := Validate("recall_index", []byte(c.IndexFileText)); err != nil {
			t.Errorf("%s index: %v", c.ID, err)
		}
	}
	for _, p := range v.Policies {
		if err := Validate("hydration_policy", p.Policy); err != nil {
			t.Errorf("%s policy: %v", p.ID, err)
		}
	}
}

func TestValidDocuments(t *testing.T) {
	docs := map[string]string{
		"eviction_log":     `{"evicted":[{"step_id":-3,"evicted_at":"2026-01-01T00:00:00Z"},{"step_id":3,"evicted_at":"2026-01-01T00:00:01Z"}]}`,
		"folded_step":      `{"step_id":42,"timestamp":"2026-01-01T00:00:00Z","target_files":["a.go"],"action_type":"CODE_MODIFICATION","summary":"` + strings.Repeat("é", 280) + `","status":"SUCCESS","artifacts":{"cold_node_ref":".contextfold/cold_nodes/step_000042.json"}}`,
		"repair_log":       `{"actions":[{"at":"2026-01-01T00:00:00Z","action":"reindex","step_id":null,"file":"cold_nodes/step_000001.json","reason":"orphan","extra":1},{"at":"2026-01-01T00:00:00Z","action":"quarantine","step_id":7,"reason":"torn"}]}`,
		"store_settings":   `{"scrub":true,"token_counter":"o200k_base","future":{"x":1}}`,
		"hydration_policy": `{"max_rehydration_tokens_per_call":1000000000000000000000000000000,"max_rehydration_tokens_per_turn":-0.0,"scope":null,"token_counter":"cl100k_base"}`,
		"cold_node":        coldNode(nil),
	}
	for name, doc := range docs {
		if err := Validate(name, []byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// coldNode returns a valid cold node, changed by edit.
func coldNode(edit func(m map[string]any)) string {
	h := strings.Repeat("ab", 32)
	m := map[string]any{
		"ipcf_version": "1.1", "projection_version": "ipcf-projection-v2", "step_id": -1,
		"session_id": "default-session", "folded_at": "2026-01-01T00:00:00Z", "summary": "s",
		"raw_content": "r", "normalized_content": "r", "payload_sha256": h, "projection_sha256": h,
		"artifact_sha256": h, "identifiers": []any{}, "files": []any{"a.go"}, "commands": []any{},
		"errors": []any{}, "token_estimate": 1, "sanitized": true, "status": "cold", "redactions": 2,
		"original_prompt": "p",
		"raw_tool_calls":  []any{map[string]any{"tool": "Bash", "command": "ls", "exit_code": 0, "stdout": "", "stderr": ""}},
		"code_diffs":      []any{map[string]any{"file": "a.go", "diff": "+x"}},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestInvalidDocuments(t *testing.T) {
	cases := []struct {
		schema, doc, pointer string
	}{
		{"cold_node", coldNode(func(m map[string]any) { m["step_id"] = "7" }), "/step_id"},
		{"cold_node", coldNode(func(m map[string]any) { m["step_id"] = 1.5 }), "/step_id"},
		{"cold_node", coldNode(func(m map[string]any) { delete(m, "payload_sha256") }), ""},
		{"cold_node", coldNode(func(m map[string]any) { m["artifact_sha256"] = strings.Repeat("AB", 32) }), "/artifact_sha256"},
		{"cold_node", coldNode(func(m map[string]any) { m["projection_sha256"] = "abc" }), "/projection_sha256"},
		{"cold_node", coldNode(func(m map[string]any) { m["status"] = "warm" }), "/status"},
		{"cold_node", coldNode(func(m map[string]any) { m["token_estimate"] = 0 }), "/token_estimate"},
		{"cold_node", coldNode(func(m map[string]any) { m["folded_at"] = "2026-01-01T00:00:00.5Z" }), "/folded_at"},
		{"cold_node", coldNode(func(m map[string]any) { m["files"] = []any{"a", 3} }), "/files/1"},
		{"cold_node", coldNode(func(m map[string]any) { m["redactions"] = -1 }), "/redactions"},
		{"cold_node", coldNode(func(m map[string]any) { m["ipcf_version"] = "1.0" }), "/ipcf_version"},
		{"cold_node", coldNode(func(m map[string]any) {
			m["raw_tool_calls"] = []any{map[string]any{"tool": "Bash", "exit_code": "0"}}
		}), "/raw_tool_calls/0/exit_code"},
		{"recall_index", `{"ipcf_version":"1.1","projection_version":"ipcf-projection-v2","created_at":"2026-01-01T00:00:00Z","nodes":{"007":{}}}`, "/nodes"},
		{"recall_index", `{"ipcf_version":"1.1","projection_version":"ipcf-projection-v2","created_at":"2026-01-01T00:00:00Z","nodes":{"7":{"step_id":7}}}`, "/nodes/7"},
		{"hydration_policy", `{"max_rehydration_tokens_per_call":"3000"}`, "/max_rehydration_tokens_per_call"},
		{"hydration_policy", `{"integrity_verification":"yes"}`, "/integrity_verification"},
		{"hydration_policy", `{"token_counter":"gpt2"}`, "/token_counter"},
		{"hydration_policy", `[]`, ""},
		{"eviction_log", `{"evicted":[{"step_id":1,"evicted_at":"2026-01-01T00:00:00Z","why":"x"}]}`, "/evicted/0"},
		{"eviction_log", `{"evicted":[{"step_id":"1","evicted_at":"2026-01-01T00:00:00Z"}]}`, "/evicted/0/step_id"},
		{"folded_step", `{"step_id":1,"timestamp":"2026-01-01T00:00:00Z","summary":"` + strings.Repeat("x", 281) + `","status":"SUCCESS","artifacts":{"cold_node_ref":"a.json"}}`, "/summary"},
		{"folded_step", `{"step_id":1,"timestamp":"2026-01-01T00:00:00Z","summary":"s","status":"DONE","artifacts":{"cold_node_ref":"a.json"}}`, "/status"},
		{"folded_step", `{"step_id":1,"timestamp":"2026-01-01T00:00:00Z","summary":"s","status":"SUCCESS","action_type":"EDIT","artifacts":{"cold_node_ref":"a.json"}}`, "/action_type"},
		{"folded_step", `{"step_id":1,"timestamp":"2026-01-01T00:00:00Z","summary":"s","status":"SUCCESS"}`, ""},
		{"repair_log", `{"actions":[{"at":"2026-01-01T00:00:00Z","action":"delete","reason":"x"}]}`, "/actions/0/action"},
		{"store_settings", `{"scrub":"true"}`, "/scrub"},
	}
	for i, c := range cases {
		err := Validate(c.schema, []byte(c.doc))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("case %d (%s): err = %v, want *ValidationError", i, c.schema, err)
			continue
		}
		if ve.Schema != c.schema || ve.Pointer != c.pointer {
			t.Errorf("case %d (%s): pointer %q, want %q (%v)", i, c.schema, ve.Pointer, c.pointer, ve.Details)
		}
		msg := ve.Error()
		if !strings.Contains(msg, c.schema) || (c.pointer != "" && !strings.Contains(msg, c.pointer)) || ve.Message == "" {
			t.Errorf("case %d: message %q does not name schema, pointer and problem", i, msg)
		}
	}
}

func TestNotJSON(t *testing.T) {
	for _, doc := range []string{"", "{", `{"a":1} {"b":2}`} {
		err := Validate("cold_node", []byte(doc))
		var ve *ValidationError
		if err == nil || errors.As(err, &ve) {
			t.Errorf("Validate(%q) = %v, want a JSON error", doc, err)
		}
	}
}

func TestValidateValue(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"max_rehydration_tokens_per_call": 18446744073709551617, "scope": null}`))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if err := ValidateValue("hydration_policy", v); err != nil {
		t.Fatal(err)
	}
	v.(map[string]any)["integrity_verification"] = json.Number("1")
	var ve *ValidationError
	if err := ValidateValue("hydration_policy", v); !errors.As(err, &ve) || ve.Pointer != "/integrity_verification" {
		t.Fatalf("err = %v", err)
	}
}

func TestConcurrent(t *testing.T) {
	doc := []byte(coldNode(nil))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if err := Validate("cold_node", doc); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
