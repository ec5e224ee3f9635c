package match

import (
	"slices"
	"sort"
	"strconv"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match/ranked"
)

// maxNeedleCandidates bounds the nodes the needle stage reads to verify one
// needle (the nodes holding every term of it, ranked.NeedleCandidates):
// past it, the needle's terms are too common for a literal look-up to be
// cheap, and the ranking weighs them. A quoted phrase of common words
// ("x + Poly(x):", "print(None.__doc__)") has a large intersection in the
// session that prints them; 256 covers the 25 long agent sessions' such
// phrases (corpus needles 1348 → 1357 of 1368 from 32) at a worst case of
// about 20 ms of reads on a scan that quotes one.
const maxNeedleCandidates = 256

// maxNeedleReads bounds the nodes one scan reads for all its needles
// (ranked.Needles takes at most 8 of them), so that a prompt pasting a log
// full of tokens costs a bounded number of reads.
const maxNeedleReads = 256

// maxNeedleNodes: a needle held literally by more nodes than this is not
// rare (rule "exact needles" is for a token held once or a few times); the
// ranking weighs it.
const maxNeedleNodes = 5

// needleNode is a node that holds one or more of the prompt's needles
// literally.
type needleNode struct {
	step    int
	tokens  int
	summary string
	held    []string // the needles it holds, in the prompt's needle order
}

// needleNodes is the needle stage of a ranked scan (rule "exact needles",
// ranked.Needles): for each needle of the prompt, the nodes (steps below
// before) holding its own term (ranked.NeedleCandidate.Whole: not read),
// or every word of it (at most maxNeedleCandidates), read from the store (not verified: hydration
// verifies what it pages in) and kept when the raw content holds the
// needle literally,
// ignoring case; a needle so held by more than maxNeedleNodes nodes is
// dropped. The result is ordered by the number of needles a node holds,
// then fullest evidence first (rule "the output, not the echo": the node
// with the most tokens — the tool output over the command that produced
// it and the restatement after it — then the newer step). A node that must
// be read and cannot be is left out (the scan reports nothing for it; a
// hydration would report its error).
//
// Intent ownership (CONF-13) holds: a node the ranked scan superseded
// (superseded[step]) is left out when a node holding the same needle is
// more than echoSpan steps newer — a later update of the fact, not the
// restatement of an output.
func needleNodes(s *contextfold.Store, ix *ranked.Index, prompt string, before int, superseded map[int]bool) []*needleNode {
	needles := ranked.Needles(prompt)
	if len(needles) == 0 {
		return nil
	}
	byStep := map[int]*needleNode{}
	raw := map[int]string{}
	for _, nd := range needles {
		var holders []int
		for _, c := range ix.NeedleCandidates(nd, before, maxNeedleCandidates) {
			if !c.Whole {
				text, ok := raw[c.Step]
				if !ok && len(raw) >= maxNeedleReads {
					continue // a pasted log of tokens: the ranking weighs the rest
				}
				if !ok {
					if n, err := s.ReadColdNode(c.Step); err == nil {
						text = n.RawContent
					}
					raw[c.Step] = text
				}
				if text == "" || !ranked.ContainsFold(text, nd) {
					continue
				}
			}
			if byStep[c.Step] == nil {
				byStep[c.Step] = &needleNode{step: c.Step, tokens: c.Tokens, summary: c.Summary}
			}
			holders = append(holders, c.Step)
		}
		if len(holders) == 0 || len(holders) > maxNeedleNodes {
			continue
		}
		for _, st := range holders {
			byStep[st].held = append(byStep[st].held, nd)
		}
	}
	var out []*needleNode
	for _, n := range byStep {
		if len(n.held) > 0 && !(superseded[n.step] && updated(n, byStep)) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if len(x.held) != len(y.held) {
			return len(x.held) > len(y.held)
		}
		if x.tokens != y.tokens {
			return x.tokens > y.tokens
		}
		return x.step > y.step
	})
	return out
}

// why is the needle pick's explanation.
func (n *needleNode) why() []string {
	out := make([]string, 0, len(n.held))
	for _, nd := range n.held {
		out = append(out, strconv.Quote(nd)+` verbatim (rule "exact needles")`)
	}
	return out
}

// updated reports whether a node holding one of n's needles is more than
// echoSpan steps newer than n.
func updated(n *needleNode, nodes map[int]*needleNode) bool {
	for _, m := range nodes {
		if m.step <= n.step+echoSpan {
			continue
		}
		for _, a := range m.held {
			if slices.Contains(n.held, a) {
				return true
			}
		}
	}
	return false
}
