package contextfold_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// TestFoldRefusesAPayloadPastTheLimit: a payload one byte past
// MaxPayloadBytes is refused with a *PayloadTooLargeError naming the step
// and the limit, nothing of its batch is written, and the store folds on.
func TestFoldRefusesAPayloadPastTheLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	over := strings.Repeat("x", contextfold.MaxPayloadBytes+1)
	_, err = s.FoldBatch([]contextfold.Turn{{StepID: 1, Summary: "small", RawContent: "ok"}, {StepID: 2, Summary: "huge", RawContent: over}})
	var pe *contextfold.PayloadTooLargeError
	if !errors.As(err, &pe) || pe.StepID != 2 || !strings.Contains(err.Error(), "64.0 MiB") {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cold_nodes", "step_000001.json")); err == nil {
		t.Error("a refused batch wrote a node")
	}
	if _, err := s.Fold(contextfold.Turn{StepID: 3, Summary: "small", RawContent: "fits"}); err != nil {
		t.Fatalf("a small payload after a refusal: %v", err)
	}
}
