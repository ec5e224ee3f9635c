package ranked

// Rule "a chat's topic admits": a conversation stays on a topic for a few
// turns, so the turns around the strongest match are the rest of its
// topic (rule "topic context"): the reply that names the band, two turns
// after the concert, holds fewer of the prompt's words than the cut-off
// asks of a turn elsewhere. In a chat log (the node opens with a speaker
// label, speakerOf: "Caroline: …", "[8 May 2023] Caroline: …") a
// candidate whose own score is at least Params.Near × the cut-off (Ratio
// × the best node's score) passes when its topic context alone — the
// weighted scores of the turns around it, without the lifts of the other
// ordering rules — reaches the cut-off. It must still hold prompt terms of
// its own (a filler turn next to the answer scores 0 and never passes).
//
// Agent-session nodes carry no speaker label (their summaries open with
// "user:", "tool Bash $ …"): there the nodes beside a match are its call
// and acknowledgements, which the cut-off keeps out (tried without the
// label condition: the agent probes hydrated 902 → 926 tokens each).

// topicAdmits reports whether rule "a chat's topic admits" lets c pass a
// cut-off of threshold, and marks c (Pick.Why) when it does. Callers hold
// ix.mu.
func (ix *Index) topicAdmits(c *match, threshold float64, p Params) bool {
	// The context is summed from the walk's float32 scores, the cut-off
	// from the detail's float64 ones: a turn whose context is the best
	// match two steps away (Context2 = Ratio) reaches the cut-off exactly,
	// and "reaches" must not depend on their rounding.
	if p.Near <= 0 || c.score <= 0 || c.score < p.Near*threshold || c.ctx-c.lifted < threshold*(1-1e-6) {
		return false
	}
	if speakerOf(ix.summaryOf(c.doc)) == "" {
		return false
	}
	c.lift |= liftTopic
	return true
}
