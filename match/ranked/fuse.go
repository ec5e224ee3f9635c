package ranked

import (
	"math"
	"slices"
)

// Rule "rank fusion" (Params.Fuse): the ranked scan's picks fused by
// reciprocal rank (Cormack, Clarke and Büttcher, "Reciprocal rank fusion
// outperforms Condorcet and individual rank learning methods", SIGIR
// 2009) with a plain BM25 ranking of the same candidates over the
// prompt's primary terms (words stemmed, compounds, numbers: no fuzzy
// prefixes, parts or aliases, no lower bound, k1 1.2, b 0.75, no rule of
// this scan), so that where the scan's rules have no support it degrades
// toward plain BM25+stem instead of below it.

// plainBM25 is doc d's plain BM25 score over the prompt's primary terms.
func (ix *Index) plainBM25(q *Query, d int32) float64 {
	avg := ix.total / float64(max(ix.live, 1))
	norm := 1.2 * (0.25 + 0.75*ix.hot[d].length/avg)
	s := 0.0
	for _, t := range q.terms {
		if !t.primary {
			continue
		}
		if tf := float64(ix.tf(t.id, d)); tf > 0 {
			s += ix.idf(t.df) * tf * 2.2 / (tf + norm)
		}
	}
	return s
}

// fuse orders picks and the best Params.FuseDepth of the alive candidates
// by plain BM25 by their fused reciprocal rank; ties keep the picks'
// order, then BM25's. Callers hold ix.mu.
func (ix *Index) fuse(q *Query, picks []Pick, alive []*match, p Params) []Pick {
	type scored struct {
		c *match
		s float64
	}
	var bm []scored
	for _, c := range alive {
		if s := ix.plainBM25(q, c.doc); s > 0 {
			bm = append(bm, scored{c, s})
		}
	}
	slices.SortStableFunc(bm, func(a, b scored) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		return ix.docs[b.c.doc].step - ix.docs[a.c.doc].step
	})
	if len(bm) > p.FuseDepth {
		bm = bm[:p.FuseDepth]
	}
	type fused struct {
		pk    Pick
		score float64
		order int
	}
	var out []fused
	at := map[int]int{} // step → index in out
	for i, pk := range picks {
		at[pk.Step] = len(out)
		out = append(out, fused{pk, 1 / (p.FuseK + float64(i+1)), len(out)})
	}
	for i, b := range bm {
		step := ix.docs[b.c.doc].step
		w := p.Fuse / (p.FuseK + float64(i+1))
		if k, ok := at[step]; ok {
			out[k].score += w
			continue
		}
		pk := ix.pick(q, b.c, b.c.score, nil)
		pk.Why = append(pk.Why, `ranked by plain BM25 (rule "rank fusion")`)
		at[step] = len(out)
		out = append(out, fused{pk, w, len(out)})
	}
	slices.SortStableFunc(out, func(a, b fused) int {
		if a.score != b.score && math.Abs(a.score-b.score) > 1e-12 {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return a.order - b.order
	})
	res := make([]Pick, len(out))
	for i, f := range out {
		res[i] = f.pk
	}
	return res
}
