package proxy

import (
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// TestFloorOverBudgetFoldsWhenItPays replays a real session under a
// context budget smaller than what cannot fold (the system prompt, the task,
// the latest message and the tool call it answers, the page table): every
// request is over the budget, and a fold event cannot bring one under it.
// Such a fold event is made only when it pays for itself within
// --payback-requests at the depth it can actually reach (harness
// Config.PaybackRequests), so fold events stay few (not one per request, as
// when the over-budget request alone decided) and the session's
// cache-adjusted input cost is at most the client's at both price
// structures.
func TestFloorOverBudgetFoldsWhenItPays(t *testing.T) {
	skipReplayUnderRace(t)
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	bundled, _ := rawSessions(t)
	for _, rs := range bundled {
		const budget = 2_000
		pts := replay(t, rs, harness.Config{ContextBudget: budget})
		events, over := 0, 0
		for _, p := range pts {
			if p.Forwarded > budget {
				over++
			}
			if p.FoldEvent {
				events++
			}
		}
		t.Logf("%s: %d requests, %d over the budget %d, %d fold events", rs.name, len(pts), over, budget, events)
		if over < len(pts)/2 {
			t.Fatalf("%s: only %d of %d requests over the budget %d: the budget does not put the floor over it", rs.name, over, len(pts), budget)
		}
		for _, pr := range replayPricings {
			cc, fc := replayCosts(pts, pr)
			t.Logf("%s prices: %.1f %% of the client's cost", pr.Name, 100*fc/cc)
			if fc > cc*1.0001 {
				t.Errorf("%s, %s prices: cost %.0f through the proxy, above the client's %.0f", rs.name, pr.Name, fc, cc)
			}
		}
		// Before the rule every request over the budget was a fold event
		// (48 of 49 here); a fold event that pays is one whose removed part
		// outweighs what it rewrites, which the session's small requests
		// reach about every other request.
		if 4*events > 3*over {
			t.Errorf("%s: %d fold events in %d requests over the budget: fold events that cannot reach the budget were made without paying for themselves", rs.name, events, over)
		}
	}
}
