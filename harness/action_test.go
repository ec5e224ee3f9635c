package harness

import (
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
)

// The demo session's turns carry no tool or command metadata: their action
// types come from their text and lists.
func TestActionTypeOfTheDemo(t *testing.T) {
	want := map[int]string{
		37: ActionCommandExecution, 91: ActionCommandExecution, 137: ActionCommandExecution,
		200: ActionRefactor, 318: ActionCommandExecution, 342: ActionOther,
		447: ActionCodeModification, 499: ActionVerification,
	}
	s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	for _, turn := range contextfold.DemoTurns() {
		e, err := s.Entry(turn.StepID)
		if err != nil {
			t.Fatal(err)
		}
		if got := ProjectEntry(e, turn.Payload()).ActionType; got != want[turn.StepID] {
			t.Errorf("step %d: %s, want %s", turn.StepID, got, want[turn.StepID])
		}
	}
}

func TestTextActionType(t *testing.T) {
	diff := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b"
	for _, tc := range []struct {
		summary, payload string
		files, cmds      []string
		want             string
	}{
		{"Apply patch", diff, []string{"x.go"}, nil, ActionCodeModification},
		{"Run the suite", "", nil, []string{"go test ./..."}, ActionCommandExecution},
		{"Looked around", "read the README", nil, nil, ActionExploration},
		{"Opened main.go", "package main", []string{"main.go"}, nil, ActionExploration},
		{"All tests passing", "", nil, nil, ActionVerification},
		{"Thinking", "hmm", nil, nil, ActionOther},
		{"", "", nil, nil, ActionOther},
	} {
		if got := textActionType(tc.summary, tc.payload, tc.files, tc.cmds); got != tc.want {
			t.Errorf("textActionType(%q): %s, want %s", tc.summary, got, tc.want)
		}
	}
}
