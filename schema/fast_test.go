package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFastPathsAgreeWithTheSchemas: the fast paths say "valid" for typical
// documents, and never for a document the JSON Schema validator refuses —
// over every single-key damage of a cold node and of an index entry.
func TestFastPathsAgreeWithTheSchemas(t *testing.T) {
	sha := strings.Repeat("a", 64)
	node := map[string]any{"ipcf_version": "1.1", "projection_version": "ipcf-projection-v2", "step_id": 7, "session_id": "s",
		"folded_at": "2026-01-01T00:00:00Z", "summary": "x", "raw_content": "y", "normalized_content": "y", "payload_sha256": sha,
		"projection_sha256": sha, "artifact_sha256": sha, "identifiers": []string{"a"}, "files": []string{}, "commands": []any{"ls"},
		"errors": []string{}, "token_estimate": 1, "sanitized": false, "status": "cold"}
	entry := map[string]any{"step_id": json.Number("7"), "projection_version": "ipcf-projection-v2", "summary": "x", "payload_sha256": sha,
		"projection_sha256": sha, "artifact_sha256": sha, "file_path": ".contextfold/cold_nodes/step_000007.json", "token_estimate": json.Number("3"),
		"folded_at": "2026-01-01T00:00:00Z", "identifiers": []any{"a"}, "files": []any{}, "commands": []any{}, "errors": []any{}, "evicted": true}
	damages := []any{nil, "", "1.2", 0, -1, json.Number("0"), json.Number("1.5"), json.Number("1e3"), true, []any{1}, []string{}, map[string]any{},
		"2026-13-01T00:00:00Z", "2026-01-01 00:00:00", strings.Repeat("A", 64), strings.Repeat("a", 63), "hydrated", "frozen", json.Number("99999999999999999999")}
	for _, tc := range []struct {
		name string
		doc  map[string]any
		sch  string
	}{{"cold node", node, ColdNode}, {"entry", entry, RecallIndex + "#entry"}} {
		check := func(doc map[string]any) error {
			if tc.sch == ColdNode {
				s, _ := get(ColdNode)
				return validate(ColdNode, s, jsonValue(doc))
			}
			compileOnce.Do(load)
			return validate(RecallIndex, compiledEntry, jsonValue(doc))
		}
		if !fastValid(tc.sch, tc.doc) || check(tc.doc) != nil {
			t.Fatalf("%s: the typical document is not fast-valid (%v)", tc.name, check(tc.doc))
		}
		keys := []string{"redactions", "original_prompt", "raw_tool_calls", "extra_key"}
		for k := range tc.doc {
			keys = append(keys, k)
		}
		for _, k := range keys {
			for _, d := range append(damages, "<deleted>") {
				doc := make(map[string]any, len(tc.doc))
				for kk, vv := range tc.doc {
					doc[kk] = vv
				}
				if d == "<deleted>" {
					delete(doc, k)
				} else {
					doc[k] = d
				}
				if fastValid(tc.sch, doc) {
					if err := check(doc); err != nil {
						t.Errorf("%s: %s=%#v is fast-valid but the schema says %v", tc.name, k, d, err)
					}
				}
			}
		}
	}
}
