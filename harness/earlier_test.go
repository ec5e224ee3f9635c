package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/match"
)

// dirBytes maps every file under dir to its bytes.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEarlierStoreHydratesWhenOwnSelectsNothing: a conversation whose
// history was rewritten (a /compact) starts in a new store; a question about
// a turn folded in the old one is answered from it, read-only: the node
// comes with its from attribute, is never evicted there, and the old
// store's files are byte for byte as before. A prompt the new store can
// answer itself does not read the old one.
func TestEarlierStoreHydratesWhenOwnSelectsNothing(t *testing.T) {
	old := newHarness(t, Config{ContextBudget: 3000, Match: match.Ranked, PaybackRequests: -1})
	conv := agentConv(40)
	const out = 2 + 2*5 + 1 // the tool output of pkg5
	conv[out].Parts[0].Text += "frobnicator check: deadline exceeded after 30s\n"
	if _, err := old.PreTurnDispatch(conv); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Store().ReadColdNode(out); err != nil {
		t.Fatalf("the old store did not fold step %d: %v", out, err)
	}
	before := dirBytes(t, old.Store().Dir())

	ask := Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "Did the frobnicator check hit its deadline?"}}}
	compacted := []Message{conv[0], {Role: RoleUser, Human: true, Parts: []Part{{Text: "This session continues an earlier one: the widget parser work."}}},
		{Role: RoleAssistant, Parts: []Part{{Text: "Understood."}}}, ask}
	calls := 0
	cfg := Config{ContextBudget: 3000, Match: match.Ranked, PaybackRequests: -1,
		Earlier: func() []EarlierStore {
			calls++
			return []EarlierStore{{Name: "s-old/g1", Store: old.Store()}}
		}}
	h := newHarness(t, cfg)
	d, err := h.PreTurnDispatch(compacted)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hydrated) == 0 || d.Hydrated[0].StepID != out || d.Hydrated[0].Source != "s-old/g1" {
		t.Fatalf("hydrated %+v, want step %d from s-old/g1", d.Hydrated, out)
	}
	if !strings.Contains(d.HydrationText, `from="s-old/g1"`) || !strings.Contains(d.HydrationText, "deadline exceeded after 30s") {
		t.Fatalf("the hydration text lacks the from attribute or the line: %q", d.HydrationText)
	}
	if got := d.Accounting.StepsHydratedEarlier; len(got) == 0 || got[0] != "s-old/g1:"+strconv.Itoa(out) || len(d.Accounting.StepsHydrated) != 0 {
		t.Fatalf("accounting: earlier %v, own %v", got, d.Accounting.StepsHydrated)
	}
	blocks := HydrationBlocks(d.HydrationText)
	if len(blocks) == 0 || blocks[0].Source != "s-old/g1" {
		t.Fatalf("the block does not parse back with its source: %+v", blocks)
	}
	evs, err := h.PostTurnResponse(d)
	if err != nil || len(evs) != 0 {
		t.Fatalf("evicted %v (%v) from a store read-only to this session", evs, err)
	}
	if after := dirBytes(t, old.Store().Dir()); len(after) != len(before) {
		t.Fatalf("the earlier store's files changed: %d before, %d after", len(before), len(after))
	} else {
		for p, b := range before {
			if after[p] != b {
				t.Fatalf("the earlier store's %s changed", p)
			}
		}
	}

	// The new store holds the answer itself: the earlier one is not read.
	long := append(agentConv(40), ask)
	long[out].Parts[0].Text = conv[out].Parts[0].Text
	h2 := newHarness(t, cfg)
	calls = 0
	d, err = h2.PreTurnDispatch(long)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hydrated) == 0 || d.Hydrated[0].Source != "" || calls != 0 {
		t.Fatalf("own store answering: hydrated %+v, earlier stores asked %d times", d.Hydrated, calls)
	}
}
