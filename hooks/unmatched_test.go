package hooks

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// TestUnmatchedIDsAreOnlyThoseNotArchived: an id-like term of the prompt
// that archived nodes hold is never reported "not in the archive", even when
// the scan picked none of those nodes; one no node holds is.
func TestUnmatchedIDsAreOnlyThoseNotArchived(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, _ := contextfold.Open(dir, contextfold.Options{})
	turns := []contextfold.Turn{
		{StepID: 1, Summary: "applied migration 0003_add_ledger", RawContent: "$ go run ./cmd/migrate up\nmigration 0003 applied in 12ms"},
		{StepID: 2, Summary: "deadlock in ledger_entries", RawContent: "ERROR: deadlock detected (SQLSTATE 40P01) on ledger_entries during migrate\nledger balance check failed"},
		{StepID: 3, Summary: "ledger balance test", RawContent: "--- FAIL: TestLedgerBalance deadlock ledger_entries SQLSTATE 40P01"},
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	prompt := "why did the ledger_entries deadlock SQLSTATE 40P01 happen after 0003, and what about build 7741?"
	scan, err := s.Scan(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var diag bytes.Buffer
	if _, err := UserPromptSubmit(&Input{HookEventName: EventUserPromptSubmit, Prompt: prompt, SessionID: "s1"}, Options{Dir: dir, Diag: &diag}); err != nil {
		t.Fatal(err)
	}
	picked := false
	for _, p := range append(scan.Selected, scan.Dropped...) {
		picked = picked || p.StepID == 1
	}
	t.Logf("picked step 1: %v; diag: %s", picked, diag.String())
	for _, line := range strings.Split(diag.String(), "\n") {
		if strings.Contains(line, "not in the archive") && strings.Contains(line, "0003") {
			t.Errorf("0003 is archived (step 1) but reported missing: %s", line)
		}
	}
	if !strings.Contains(diag.String(), "not in the archive: 7741\n") {
		t.Errorf("7741 is in no node but not reported: %q", diag.String())
	}
	for _, line := range strings.Split(diag.String(), "\n") {
		if strings.Contains(line, "not in the archive") && strings.Contains(line, "40p01") {
			t.Errorf("40P01 is in steps 2 and 3 but reported missing: %s", line)
		}
	}
	// A term the index does not list but a node's text holds is found there.
	absent, found := inArchivedText(s, []string{"40p01", "7741", "0003"})
	if len(absent) != 1 || absent[0] != "7741" || len(found) != 2 || found[0] != "40p01 (step 3)" || found[1] != "0003 (step 1)" {
		t.Errorf("inArchivedText: absent %v, found %v", absent, found)
	}
}

// TestUnmatchedNeverEchoesASecret: the prompt's id-like terms reported on
// the diagnostics are never those of a secret the prompt shows (a token,
// the pieces of a password the tokenizer cut at its punctuation): the
// report reads the prompt as a fold would store it. Before, "not in the
// archive: ghp_…, kp2, kp2#lx7wv, lx7wv, qq8r" went to stderr.
func TestUnmatchedNeverEchoesASecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, _ := contextfold.Open(dir, contextfold.Options{})
	if _, err := s.FoldBatch([]contextfold.Turn{{StepID: 1, Summary: "build 7740 passed", RawContent: "ok 12 packages"}}); err != nil {
		t.Fatal(err)
	}
	tok := "ghp_" + "Z9rT2vX9kL4mN8pB3cF6hJ1wZ5sD0gY2aE7q"
	pw := "Qq8r!Kp2" + "#Lx7Wv"
	prompt := "is build 7741 using token " + tok + " and DB_PASSWORD=" + pw + "?"
	var diag bytes.Buffer
	if _, err := UserPromptSubmit(&Input{HookEventName: EventUserPromptSubmit, Prompt: prompt, SessionID: "s1"}, Options{Dir: dir, Diag: &diag}); err != nil {
		t.Fatal(err)
	}
	low := strings.ToLower(diag.String())
	for _, piece := range []string{strings.ToLower(tok), "z9rt2vx9", "qq8r", "kp2", "lx7wv"} {
		if strings.Contains(low, piece) {
			t.Errorf("the diagnostics echo %q of a secret: %q", piece, diag.String())
		}
	}
	if !strings.Contains(diag.String(), "7741") {
		t.Errorf("7741 is in no node but not reported: %q", diag.String())
	}
}
