package harness

import (
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// TestVerbatimMessageHoldsItsNode: under a budget the conversation still
// fits, a message another writer folded into the session's store (a Stop
// hook, an ingest) is forwarded verbatim; a question about it must not
// hydrate the node again beside it (promptHolds' verbatim branch): the
// step is reported as already in the prompt. Once the working set folds
// the message out, the same question hydrates it.
func TestVerbatimMessageHoldsItsNode(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 100_000, Match: match.Ranked})
	conv := agentConv(12)
	const out = 2 + 2*5 + 1 // the tool output of pkg5
	conv[out].Parts[0].Text += "frobnicator check: deadline exceeded after 30s\n"
	payload, ok := conv[out].storePayload()
	if !ok {
		t.Fatal("the tool output has no store payload")
	}
	if _, err := h.Store().FoldBatch([]contextfold.Turn{h.turnOf(conv, out, payload)}); err != nil {
		t.Fatal(err)
	}
	ask := Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "Did the frobnicator check hit its deadline?"}}}
	d, err := h.PreTurnDispatch(append(conv, ask))
	if err != nil {
		t.Fatal(err)
	}
	if d.WorkingSet != nil && d.WorkingSet.FoldEvent {
		t.Fatal("a fold event under a budget the conversation fits: the test does not cover the verbatim branch")
	}
	if len(d.Hydrated) != 0 || len(d.Accounting.StepsInPrompt) != 1 || d.Accounting.StepsInPrompt[0] != out {
		t.Fatalf("hydrated %v, in the prompt %v; want step %d reported as already in the prompt, nothing hydrated",
			d.Accounting.StepsHydrated, d.Accounting.StepsInPrompt, out)
	}

	// The same store and question, the message folded out by a budget the
	// conversation no longer fits: now the node is hydrated.
	h2 := New(h.Store(), Config{ContextBudget: 3000, Match: match.Ranked, PaybackRequests: -1})
	conv2 := append(agentConv(40), ask)
	conv2[out].Parts[0].Text = conv[out].Parts[0].Text
	d, err = h2.PreTurnDispatch(conv2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hydrated) == 0 || d.Hydrated[0].StepID != out || !strings.Contains(d.HydrationText, "deadline exceeded after 30s") {
		t.Fatalf("folded out, the question hydrated %v (in the prompt %v), want step %d with its line", d.Accounting.StepsHydrated, d.Accounting.StepsInPrompt, out)
	}
}
