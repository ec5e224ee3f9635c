package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestIngestStandardInput: PATH "-" reads the transcript from standard
// input, as fold --input - does, with the same result as the file; binary
// or empty input is refused with nothing written. Before: "cannot read -:
// stat -: no such file or directory".
func TestIngestStandardInput(t *testing.T) {
	const path = "../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fromFile := filepath.Join(t.TempDir(), "s")
	if _, errs, code := cli(t, "", "--dir", fromFile, "ingest", path); code != 0 {
		t.Fatalf("ingest the file: %d %s", code, errs)
	}
	fromStdin := filepath.Join(t.TempDir(), "s")
	out, errs, code := cli(t, string(data), "--dir", fromStdin, "--json", "ingest", "-")
	if code != 0 {
		t.Fatalf("ingest -: %d %s", code, errs)
	}
	var rep ingestJSON
	mustJSON(t, out, &rep)
	if rep.Format != "claude-code" || rep.Folded != 47 {
		t.Fatalf("ingest -: %+v", rep)
	}
	node := func(dir string) map[string]any {
		var n map[string]any
		raw, err := os.ReadFile(filepath.Join(dir, "cold_nodes", "step_000046.json"))
		if err != nil {
			t.Fatal(err)
		}
		mustJSON(t, string(raw), &n)
		delete(n, "folded_at") // the time of the fold, and the hash over it
		delete(n, "artifact_sha256")
		return n
	}
	if a, b := node(fromFile), node(fromStdin); !reflect.DeepEqual(a, b) {
		t.Fatalf("step 46 from the file and from standard input differ:\n%v\n%v", a, b)
	}
	for _, in := range []string{"", "\x00\x01binary"} {
		dir := filepath.Join(t.TempDir(), "s")
		if _, errs, code := cli(t, in, "--dir", dir, "ingest", "-"); code != 1 || !strings.Contains(errs, "standard input") {
			t.Errorf("ingest - of %q: %d %s", in, code, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("ingest - of %q left a store: %v", in, err)
		}
	}
}
