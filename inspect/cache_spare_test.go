package inspect

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
)

// An empty spare file in cold_nodes/ (made by a running proxy for its next
// fold event) leaves the fingerprint, and so the cached validate report,
// alone; a spare holding bytes (which validate reports) changes it.
func TestFingerprintIgnoresEmptySpares(t *testing.T) {
	dir := t.TempDir()
	cold := filepath.Join(dir, contextfold.ColdNodesDir)
	if err := os.MkdirAll(cold, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cold, "step_000001.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fingerprint(dir)
	spare := filepath.Join(cold, ".spare-12345")
	if err := os.WriteFile(spare, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(dir); got != before {
		t.Fatalf("an empty spare changed the fingerprint:\n%s\n%s", before, got)
	}
	if err := os.WriteFile(spare, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(dir); got == before {
		t.Fatal("a spare holding bytes left the fingerprint unchanged")
	}
}
