package match_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// Rule "focus long picks" (ranked.Params.FocusOver): a long message of
// twenty lines, one of them about the kayak on the lake, and a short turn
// about the kayak both match the question. Whole, the long message spends
// the per-turn budget and only one of them is hydrated; focused on its
// matched line it costs what that window costs, both are hydrated, the
// long one holds the line, and the scan's cost of it is the hydration's
// token estimate.
func TestFocusLongPicks(t *testing.T) {
	s := newStore(t, `{"max_rehydration_tokens_per_turn": 150}`)
	topics := []string{"bread", "garden", "concert", "puppy", "painting", "marathon", "library", "recipe", "museum", "bicycle"}
	var turns []contextfold.Turn
	for i := range 30 {
		text := fmt.Sprintf("Ana: I spent the afternoon on the %s again, number %d", topics[i%len(topics)], i)
		if i == 25 {
			text = "Ben: we should rent the kayak again and paddle across the lake"
		}
		if i == 10 {
			var lines []string
			for k := range 20 {
				if k == 12 {
					lines = append(lines, "Ben: last sunday we finally took the kayak out on the lake at dawn")
					continue
				}
				lines = append(lines, fmt.Sprintf("Ana: the %s story keeps going, part %d of the long update", topics[k%len(topics)], k))
			}
			text = strings.Join(lines, "\n")
		}
		turns = append(turns, contextfold.Turn{StepID: i, Summary: text[:min(len(text), 100)], RawContent: text})
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	const q = "when did they take the kayak out on the lake?"
	defer match.SetRankedParams(ranked.DefaultParams())
	off := ranked.DefaultParams()
	off.FocusOver = 0
	on := ranked.DefaultParams()
	if on.FocusOver == 0 {
		on.FocusOver = 4
	}
	match.SetRankedParams(off)
	res, err := match.Scan(s, q, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(res.Selected); len(got) != 1 {
		t.Fatalf("whole: selected %v (used %v of %v), want one of steps 10 and 25: the long message spends the budget", got, res.UsedTokens, res.BudgetTokens)
	}
	match.SetRankedParams(on)
	res, err = match.Scan(s, q, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]contextfold.ScanPick{}
	for _, p := range res.Selected {
		got[p.StepID] = p
	}
	long, ok := got[10]
	if _, short := got[25]; !ok || !short {
		t.Fatalf("focused: selected %v (used %v of %v), dropped %+v, want steps 10 and 25", steps(res.Selected), res.UsedTokens, res.BudgetTokens, res.Dropped)
	}
	h, err := match.Hydrate(s, 10, q, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Content, "we finally took the kayak out on the lake") || len(h.Windows) == 0 || !h.Truncated {
		t.Fatalf("the long message hydrated without its kayak line: %q", h.Content)
	}
	if float64(h.TokenEstimate) != long.TokenCost {
		t.Errorf("scan cost %v tokens, hydration %d: the budget must hold what is injected", long.TokenCost, h.TokenEstimate)
	}
	// A short node is hydrated whole.
	if h, err := match.Hydrate(s, 25, q, match.Ranked); err != nil || h.Truncated || h.Windows != nil {
		t.Errorf("short node: %+v, %v", h, err)
	}
}
