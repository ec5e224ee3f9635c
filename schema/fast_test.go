package schema

import (
	"encoding/json"
	"fmt"
	"regexp"
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

// TestPatternMatchersAgreeWithTheSchemaPatterns: the hand-written matchers
// of the fast paths accept exactly what the schemas' patterns accept, on
// every two-character damage of valid values and on every valid-looking
// timestamp field combination.
func TestPatternMatchersAgreeWithTheSchemaPatterns(t *testing.T) {
	timestampRE := regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$`)
	sha256RE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	alphabet := "09afAFgZ:-T \n\xff"
	var ts []string
	for _, base := range []string{"2026-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "0000-10-20T19:50:09Z"} {
		ts = append(ts, base, base+"\n", base[:19], "x"+base)
		for i := range base {
			for j := 0; j < len(alphabet); j++ {
				ts = append(ts, base[:i]+alphabet[j:j+1]+base[i+1:])
			}
		}
	}
	for m := 0; m <= 19; m++ {
		for d := 0; d <= 39; d++ {
			for h := 0; h <= 29; h += 1 {
				ts = append(ts, fmt.Sprintf("2026-%02d-%02dT%02d:59:60Z", m, d, h), fmt.Sprintf("2026-%02d-%02dT%02d:60:00Z", m, d, h),
					fmt.Sprintf("2026-%02d-%02dT%02d:05:09Z", m, d, h))
			}
		}
	}
	for _, s := range ts {
		if got, want := isTimestamp(s), timestampRE.MatchString(s); got != want {
			t.Errorf("isTimestamp(%q) = %v, the pattern says %v", s, got, want)
		}
	}
	sha := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	shas := []string{sha, sha[1:], sha + "0", sha + "\n", ""}
	for i := range sha {
		for j := 0; j < len(alphabet); j++ {
			shas = append(shas, sha[:i]+alphabet[j:j+1]+sha[i+1:])
		}
	}
	for _, s := range shas {
		if got, want := isSHA256Hex(s), sha256RE.MatchString(s); got != want {
			t.Errorf("isSHA256Hex(%q) = %v, the pattern says %v", s, got, want)
		}
	}
	if isSHA256Hex(42) || isTimestamp(nil) {
		t.Error("a non-string matched")
	}
}
