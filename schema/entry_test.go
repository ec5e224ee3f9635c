package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestValidateIndexEntryMatchesTheWholeIndex: validating one entry on its
// own gives the same verdict and pointer as validating an index holding it,
// for a valid entry, Go-typed values, and every kind of damage.
func TestValidateIndexEntryMatchesTheWholeIndex(t *testing.T) {
	good := `{"step_id": 137, "projection_version": "ipcf-projection-v2", "summary": "port", "payload_sha256": "` + strings.Repeat("a", 64) +
		`", "projection_sha256": "` + strings.Repeat("b", 64) + `", "artifact_sha256": "` + strings.Repeat("c", 64) +
		`", "file_path": ".contextfold/cold_nodes/step_000137.json", "token_estimate": 12, "folded_at": "2026-01-01T00:00:00Z", "identifiers": ["port"], "files": [], "commands": [], "errors": [], "evicted": false}`
	muts := []func(m map[string]any){
		func(m map[string]any) {},
		func(m map[string]any) { delete(m, "summary") },
		func(m map[string]any) { m["token_estimate"] = "12" },
		func(m map[string]any) { m["payload_sha256"] = "xyz" },
		func(m map[string]any) { m["identifiers"] = []any{"a", 3} },
		func(m map[string]any) { m["folded_at"] = "2026-13-01T00:00:00Z" },
		func(m map[string]any) { m["evicted"] = "no" },
		func(m map[string]any) { m["future_key"] = map[string]any{"x": 1} },
	}
	for i, mut := range muts {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(good))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		mut(m)
		whole, _ := json.Marshal(map[string]any{"ipcf_version": "1.1", "projection_version": "ipcf-projection-v2", "created_at": "2026-01-01T00:00:00Z", "nodes": map[string]any{"137": m}})
		want := Validate(RecallIndex, whole)
		got := ValidateIndexEntry("137", m)
		if (want == nil) != (got == nil) || (want != nil && fmt.Sprint(want) != fmt.Sprint(got)) {
			t.Errorf("mutation %d: entry alone %v, whole index %v", i, got, want)
		}
	}
	// Go-typed values (as the store builds entries) validate like their JSON.
	typed := map[string]any{"step_id": 137, "projection_version": "ipcf-projection-v2", "summary": "port", "payload_sha256": strings.Repeat("a", 64),
		"projection_sha256": strings.Repeat("b", 64), "artifact_sha256": strings.Repeat("c", 64), "file_path": ".contextfold/cold_nodes/step_000137.json",
		"token_estimate": 12, "folded_at": "2026-01-01T00:00:00Z", "identifiers": []string{"port"}, "files": []string{}, "commands": []string{}, "errors": []string{}, "evicted": false}
	if err := ValidateIndexEntry("137", typed); err != nil {
		t.Errorf("Go-typed entry: %v", err)
	}
	typed["token_estimate"] = -1
	if err := ValidateIndexEntry("137", typed); err == nil || !strings.Contains(err.Error(), "/nodes/137/token_estimate") {
		t.Errorf("negative token estimate: %v", err)
	}
}
