package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseFile makes a file of size bytes that takes no disk space.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("sparse file: %v", err)
	}
}

// TestSizeLimitsAreClearErrors: inputs and store files past their limits
// are refused with an error naming the size and the limit, before they are
// read (sparse files: nothing is allocated). A 2 GiB cold node in the store
// makes hydrate and validate name it (before: hydrate read all 2 GiB, and 8
// GiB ended in Go's fatal out-of-memory); an 8 GiB transcript and a 100 MiB
// --file are refused by ingest and fold, and nothing is written. The
// transcript's refusal says what to do (before: the limit alone).
func TestSizeLimitsAreClearErrors(t *testing.T) {
	dir := demoDir(t)
	node := filepath.Join(dir, "cold_nodes", "step_000137.json")
	sparseFile(t, node, 2<<30)
	_, errs, code := cli(t, "", "--dir", dir, "hydrate", "137")
	if code == 0 || !strings.Contains(errs, "2.0 GiB") || !strings.Contains(errs, "larger than") {
		t.Errorf("hydrate of a 2 GiB node: exit %d %q", code, errs)
	}
	out, _, code := cli(t, "", "--dir", dir, "validate")
	if code == 0 || !strings.Contains(out, "2.0 GiB") {
		t.Errorf("validate of a 2 GiB node: exit %d %q", code, out)
	}

	tmp := t.TempDir()
	huge := filepath.Join(tmp, "session.jsonl")
	sparseFile(t, huge, 8<<30)
	fresh := filepath.Join(tmp, "store")
	_, errs, code = cli(t, "", "--dir", fresh, "ingest", huge)
	if code != 1 || !strings.Contains(errs, "8.0 GiB") || !strings.Contains(errs, "512.0 MiB") || !strings.Contains(errs, "split it") || !strings.Contains(errs, "a store of its own") {
		t.Errorf("ingest of 8 GiB: exit %d %q", code, errs)
	}
	big := filepath.Join(tmp, "big.log")
	sparseFile(t, big, 100<<20)
	_, errs, code = cli(t, "", "--dir", fresh, "fold", "1", "big", "--file", big)
	if code != 1 || !strings.Contains(errs, "100.0 MiB") || !strings.Contains(errs, "64.0 MiB") {
		t.Errorf("fold --file of 100 MiB: exit %d %q", code, errs)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused input created the store")
	}
}

// TestIngestOfABinaryIsRefused: a binary (the test binary itself: an
// executable holding the Aider marker as a string constant) is refused with
// exit 1, saying it is binary and naming the formats ingest reads, even
// with --format aider; nothing is folded. Before: taken for an Aider
// history, exit 0, millions of tokens folded.
func TestIngestOfABinaryIsRefused(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for _, args := range [][]string{{}, {"--format", "aider"}} {
		store := filepath.Join(t.TempDir(), "store")
		_, errs, code := cli(t, "", append([]string{"--dir", store, "ingest", self}, args...)...)
		if code != 1 || !strings.Contains(errs, "binary") || !strings.Contains(errs, "claude-code") || !strings.Contains(errs, "aider") {
			t.Errorf("ingest %v of a binary: exit %d %q", args, code, errs)
		}
		if _, err := os.Stat(filepath.Join(store, "recall_index.json")); err == nil {
			t.Errorf("ingest %v of a binary wrote an index", args)
		}
	}
}
