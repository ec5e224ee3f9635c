package ranked

// Rule "a budget left is filled from below the cut-off" (Params.Fill).

import (
	"cmp"
	"slices"
)

// below lists the candidates of alive whose own score is in [lo, hi) —
// under the cut-off hi, over the rule's bar lo — and that no pick or
// companion took (picked), best own score first, ties by newest step, at
// most maxBelow. Callers hold ix.mu.
func (ix *Index) below(q *Query, alive []*match, picked map[int32]bool, lo, hi float64) []Pick {
	var under []*match
	for _, c := range alive {
		if c.score >= lo && c.score < hi && !picked[c.doc] {
			under = append(under, c)
		}
	}
	slices.SortStableFunc(under, func(a, b *match) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(ix.docs[b.doc].step, ix.docs[a.doc].step)
	})
	if len(under) > maxBelow {
		under = under[:maxBelow]
	}
	out := make([]Pick, 0, len(under))
	for _, c := range under {
		out = append(out, ix.pick(q, c, c.score, nil))
	}
	return out
}
