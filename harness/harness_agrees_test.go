package harness

import (
	"errors"
	"strings"
	"testing"
)

// TestAgreesChangesNothing: Agrees tells a conversation that agrees with
// the folded history from one that does not, at the first step that
// differs, and leaves the harness as it was: the next dispatch of the
// agreeing conversation folds and hydrates what it would have without it.
func TestAgreesChangesNothing(t *testing.T) {
	tool := func(term string) Message {
		return Message{Role: RoleTool, Tool: "Bash", Command: "make " + term,
			Parts: []Part{{Text: strings.Repeat("compiled "+term+" module ok\n", 40), Foldable: true, ToolResult: true}}}
	}
	conv := []Message{{Role: RoleUser, Human: true, Parts: []Part{{Text: "run the widget build", Foldable: true}}}}
	for _, term := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} {
		conv = append(conv, tool(term))
	}
	cfg := Config{HotWindow: 2, FoldBlock: 2, MinFoldTokens: 10}
	mk := func() *Harness {
		h := newHarness(t, cfg)
		if d, err := h.PreTurnDispatch(conv); err != nil || len(d.Folded) == 0 {
			t.Fatalf("nothing folded (%v): the test covers nothing", err)
		}
		return h
	}
	h := mk()
	if err := h.Agrees(conv); err != nil {
		t.Fatalf("the folded conversation itself: %v", err)
	}
	other := append([]Message(nil), conv...)
	other[3], other[2] = tool("theta"), tool("iota")
	var de *DivergedError
	if err := h.Agrees(other); !errors.As(err, &de) || de.StepID != 2 {
		t.Fatalf("another conversation: %v, want a divergence at step 2", err)
	}
	if err := h.Agrees(conv[:2]); !errors.Is(err, ErrHistoryDiverged) {
		t.Fatalf("a shorter conversation: %v, want a divergence", err)
	}
	ask := append(append([]Message(nil), conv...), Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "what did alpha print?", Foldable: true}}})
	d1, err := h.PreTurnDispatch(ask)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := mk().PreTurnDispatch(ask)
	if err != nil {
		t.Fatal(err)
	}
	if len(d1.Folded) != len(d2.Folded) || len(d1.Hydrated) != len(d2.Hydrated) || len(d2.Hydrated) == 0 {
		t.Fatalf("after Agrees: %d folded, %d hydrated; without it: %d, %d", len(d1.Folded), len(d1.Hydrated), len(d2.Folded), len(d2.Hydrated))
	}
}
