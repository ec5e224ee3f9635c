package ranked

import "slices"

// The posting walk of a scan (Index.score): for every posting of a walked
// prompt term, the term's BM25 score in that doc, kept per doc as the best
// of the term's group (rule "a prompt word counts once"). At 100k nodes a
// scan walks a few hundred thousand postings of random docs, so the walk
// reads per posting only a dense per-doc table: the length normalisation
// (Index.norm, 8 bytes a doc, computed once per store state instead of
// two divisions per posting), negated for a question turn (its sign bit is
// the question flag, read with the value; negation is exact). The scores
// are the same bits as Index.sat's (the same operations in the same order:
// lengthNorm is the one place both compute the normalisation).

// generalWalk makes every walk take the general path, and detailAll one
// binary search per doc and term (tests compare both ways).
var generalWalk = false

// normKey is what Index.norm and Index.normSigned were computed for: the
// docs (their number and how many are live) and their total length, which
// fix the mean length, and the scorer's constants.
type normKey struct {
	docs, live         int
	total              float64
	k1, b, maxLenRatio float64
}

// lengthNorm is BM25's length normalisation K1 × (1 − B + B × r) of a doc
// whose length is r × the mean (r already capped at MaxLenRatio). Each
// product is rounded on its own (explicit conversions: no fused
// multiply-add), so that the walk's precomputed value and Index.sat's are
// the same bits on every platform.
func lengthNorm(r float64, p Params) float64 {
	return float64(p.K1 * (1 - p.B + float64(p.B*r)))
}

// norms returns the per-doc table of the walk for the index's current
// state and p, rebuilding it when either changed (after a fold: one pass
// over the docs, about 0.2 ms at 100k nodes): each doc's lengthNorm,
// negated for a question turn. ok is false when a normalisation is not
// above zero (a degenerate Params or store: zero, negative, NaN), where
// the sign would not tell a question turn; the walk then takes the general
// path. Callers hold ix.mu.
func (ix *Index) norms(p Params) (norm []float64, ok bool) {
	key := normKey{docs: len(ix.docs), live: ix.live, total: ix.total, k1: p.K1, b: p.B, maxLenRatio: p.MaxLenRatio}
	if key == ix.normKey && len(ix.norm) == len(ix.docs) {
		return ix.norm, ix.normSigned
	}
	n := len(ix.docs)
	if cap(ix.norm) < n {
		ix.norm = make([]float64, n, n+n/8)
	}
	ix.norm = ix.norm[:n]
	ix.normSigned = true
	avg := ix.total / float64(max(ix.live, 1))
	for d := range ix.hot {
		r := ix.hot[d].length / avg
		if r > p.MaxLenRatio {
			r = p.MaxLenRatio
		}
		v := lengthNorm(r, p)
		if !(v > 0) {
			ix.normSigned = false
		}
		if ix.hot[d].question {
			v = -v
		}
		ix.norm[d] = v
	}
	ix.normKey = key
	return ix.norm, ix.normSigned
}

// walk adds the scores of term t's postings into ix.cells' tmp (the best of the
// group so far per doc), appending every doc it gives a first score to
// groupTouched, and returns it. Only docs of steps below before (every doc
// when before < 0) are scored. A question turn scores Asker × its own
// score and lends Answer × it to the turn after it (rule "a question lends
// its terms to its answer"). Callers hold ix.mu.
func (ix *Index) walk(t qterm, p Params, before int, groupTouched []int32) []int32 {
	cells := ix.cells
	mark := func(d int32, v float32) {
		if d < 0 {
			return
		}
		c := &cells[d]
		if c.tmp == 0 {
			groupTouched = append(groupTouched, d)
		}
		if v > c.tmp {
			c.tmp = v
		}
	}
	ps := ix.postings(t.id)
	var norm []float64
	signed := false
	if !generalWalk && ix.live == len(ix.docs) && !(before >= 0 && ix.maxStep >= before) && t.df > rareDF {
		norm, signed = ix.norms(p)
	}
	// The general walk: dead docs in the lists, steps to leave out, a
	// rare term (Index.sat's rule "rare terms in long nodes"), or a
	// normalisation whose sign cannot flag a question turn.
	if !signed {
		for _, po := range ps {
			if ix.hot[po.doc].dead || (before >= 0 && ix.docs[po.doc].step >= before) {
				continue
			}
			s := float32(t.weight * ix.sat(po.tf, po.doc, &p, t.df))
			if ix.hot[po.doc].question {
				mark(po.doc, s*float32(p.Asker))
				if _, next := ix.neighbours(po.doc); next >= 0 && (before < 0 || ix.docs[next].step < before) {
					mark(next, s*float32(p.Answer))
				}
			} else {
				mark(po.doc, s)
			}
		}
		return groupTouched
	}
	// Every doc is live and below before: the dense table only.
	k1p1, w, delta := p.K1+1, t.weight, p.Delta
	asker, answer := float32(p.Asker), float32(p.Answer)
	for _, po := range ps {
		d := po.doc
		f := float64(po.tf)
		nd := norm[d]
		if nd < 0 { // a question turn
			s := float32(w * (f*k1p1/(f-nd) + delta))
			mark(d, s*asker)
			if _, next := ix.neighbours(d); next >= 0 {
				mark(next, s*answer)
			}
			continue
		}
		s := float32(w * (f*k1p1/(f+nd) + delta))
		c := &cells[d]
		if c.tmp == 0 {
			groupTouched = append(groupTouched, d)
		}
		if s > c.tmp {
			c.tmp = s
		}
	}
	return groupTouched
}

// detailAll is detail for each of docs, in that order, with the same
// results: the prompt terms' frequencies in the docs and in the question
// turns just before them are looked up term by term in one forward pass
// over each posting list (the docs in ascending order, a galloping search
// from the last position), instead of one binary search from scratch per
// doc and term: at 100k nodes a term held by 30 % of the nodes has 30,000
// postings, and a scan looks up each of its ~30 terms in ~64 candidates.
// Callers hold ix.mu.
func (ix *Index) detailAll(q *Query, docs []int32, p Params) []*match {
	if generalWalk {
		out := make([]*match, len(docs))
		for k, d := range docs {
			out[k] = ix.detail(q, d, p)
		}
		return out
	}
	look := ix.look[:0]
	for _, d := range docs {
		look = append(look, d)
		if prev, _ := ix.neighbours(d); prev >= 0 && ix.docs[prev].question {
			look = append(look, prev)
		}
	}
	slices.Sort(look)
	look = slices.Compact(look)
	nl := len(look)
	tfs := ix.lookTF[:0]
	tfs = slices.Grow(tfs, nl*len(q.terms))[:nl*len(q.terms)]
	clear(tfs)
	for i, t := range q.terms {
		ps, l := ix.list(t.id)
		row := tfs[i*nl : (i+1)*nl]
		if l != nil {
			ix.longRow(t.id, l, look, row)
			continue
		}
		pos := 0
		for j, d := range look {
			if pos = seek(ps, pos, d); pos == len(ps) {
				break
			}
			if ps[pos].doc == d {
				row[j] = ps[pos].tf
			}
		}
	}
	// detailFrom reads the frequencies of doc d and of the question turn
	// before it from the rows.
	out := make([]*match, len(docs))
	block := newMatches(len(docs), len(q.terms), q.groups)
	pp := &p
	for k, d := range docs {
		jd, _ := slices.BinarySearch(look, d)
		jp := jd
		if prev, _ := ix.neighbours(d); prev >= 0 && ix.docs[prev].question {
			jp, _ = slices.BinarySearch(look, prev)
		}
		out[k] = ix.detailFrom(q, d, pp, tfs, nl, jd, jp, block)
	}
	ix.look, ix.lookTF = look[:0], tfs[:0]
	return out
}

// detailer returns detail(q, d, p) as a function of d, the details of
// docs looked up together (detailAll); each call returns a match of its
// own (the caller may change it), the same as detail's.
func (ix *Index) detailer(q *Query, p Params, docs []int32) func(d int32) *match {
	docs = slices.Compact(slices.Sorted(slices.Values(docs)))
	byDoc := make(map[int32]*match, len(docs))
	for _, m := range ix.detailAll(q, docs, p) {
		byDoc[m.doc] = m
	}
	return func(d int32) *match {
		if m, ok := byDoc[d]; ok {
			delete(byDoc, d)
			return m
		}
		return ix.detail(q, d, p)
	}
}

// seek returns the first position from lo on whose doc is at least d
// (len(ps) when none). Postings ascend by doc and the docs of a long list
// are spread over the whole store, so the position is first guessed by
// interpolation between the ends of the range, then bracketed by a
// galloping search from the guess (steps 1, 2, 4, ... towards d: the
// first probes share the guess's cache lines) and found by bisection in
// the bracket: a term held by most of 100k nodes is found in a few cache
// misses, where a binary search takes 15; the worst case stays O(log n).
func seek(ps []posting, lo int, d int32) int {
	n := len(ps)
	if lo >= n || ps[lo].doc >= d {
		return lo
	}
	if ps[n-1].doc < d {
		return n
	}
	// ps[lo].doc < d <= ps[n-1].doc: the answer is in (lo, n-1].
	a, b := ps[lo].doc, ps[n-1].doc
	m := lo + 1 + int(int64(d-a-1)*int64(n-2-lo)/int64(b-a))
	// Bracket: ps[L].doc < d <= ps[H].doc.
	var L, H int
	if ps[m].doc < d {
		L = m
		for step := 1; ; step *= 2 {
			if H = L + step; H >= n-1 {
				H = n - 1
				break
			}
			if ps[H].doc >= d {
				break
			}
			L = H
		}
	} else {
		H = m
		for step := 1; ; step *= 2 {
			if L = H - step; L <= lo {
				L = lo
				break
			}
			if ps[L].doc < d {
				break
			}
			H = L
		}
	}
	for L++; L < H; {
		mid := int(uint(L+H) >> 1)
		if ps[mid].doc < d {
			L = mid + 1
		} else {
			H = mid
		}
	}
	return L
}
