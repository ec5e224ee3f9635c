package harness

import (
	"strconv"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/match"
)

// A question whose hydration takes the request over the budget starts a
// fold event after the scan. That fold event folds the oldest verbatim
// messages, which the scan could not pick (they were in the prompt); when
// the answer is among them, the turn is scanned again and the answer is
// hydrated instead of leaving the prompt unseen.
func TestFoldAfterScanRescans(t *testing.T) {
	const budget = 6000
	build := func(steps int) []Message {
		conv := agentConv(steps)
		for i := 3; i < len(conv); i += 2 { // every tool output holds a build id of its own
			conv[i].Parts[0].Text += "build id zq" + strconv.Itoa(i) + "frob\n"
		}
		return conv
	}
	h := newHarness(t, Config{ContextBudget: budget, Match: match.Ranked})
	for steps := 5; steps <= 200; steps++ {
		conv := build(steps)
		d, err := h.DispatchRequest(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		ws := d.WorkingSet
		if ws.Events == 0 || ws.Estimate+budget*DefaultHydrationShare/100 <= budget+100 || ws.Estimate+150 > budget {
			continue // no old nodes yet, or a question's hydration would fit, or it would not fit without it
		}
		k := -1 // the oldest tool output still verbatim
		for i := 3; i < ws.TailStart && i < len(conv); i += 2 {
			if !h.ws.folded.has(i) && !h.ws.removed.has(i) {
				k = i
				break
			}
		}
		if k < 0 {
			continue
		}
		needle := "zq" + strconv.Itoa(k) + "frob"
		q := append(conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "What did the widget pkg test output lines say, and which step printed build id " + needle + "?"}}})
		d, err = h.DispatchRequest(q, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ws.folded.has(k) && !h.ws.removed.has(k) {
			continue // the fold after the scan left the answer in the prompt
		}
		if !strings.Contains(d.HydrationText, needle) {
			t.Fatalf("%d steps: the fold after the scan folded step %d, which holds %s, and it was not hydrated (hydrated %v)", steps, k, needle, d.Accounting.StepsHydrated)
		}
		return
	}
	t.Fatal("no request reached the case (a fold event after the scan folding the answer)")
}
