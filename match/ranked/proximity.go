package ranked

import "math"

// Rule "the prompt's words together" (Params.Proximity): term proximity
// in the manner of Büttcher, Clarke and Lushman ("Term proximity scoring
// for ad-hoc retrieval on very large text collections", SIGIR 2006),
// itself after Rasolofo and Savoy (ECIR 2003). Two different words of the
// prompt that a node holds close together (within proximityWindow words)
// are likelier to be said about one thing than two words far apart in a
// long message. The index keeps no positions, so the best proximityTop
// candidates by rank are analysed again from their text (the cold node
// read back through the store, or the text Index.Add was given); every
// other candidate keeps its rank. The bonus is added to the candidate's
// ranking score only (match.ctx, like rule "a when-question is answered by
// a time"): it is never negative, so no node loses for it, and the
// cut-off still judges a node's own score, so no node passes on it.

// proximityTop is how many candidates, best first by rank, are re-scored
// for proximity (each one read back and analysed again).
const proximityTop = 32

// proximityWindow is the largest distance, in analysed words, at which
// two prompt words count as close (Rasolofo and Savoy's five).
const proximityWindow = 5

// proximityRank applies rule "the prompt's words together" to the
// candidates (best first by rank) and orders them again. Callers hold
// ix.mu.
func (ix *Index) proximityRank(q *Query, cands []*match, p Params) {
	if p.Proximity <= 0 || q.groups < 2 || len(cands) == 0 {
		return
	}
	// byText: the query terms by text (a node's term finds its group).
	byText := make(map[string]int, len(q.terms))
	for i, t := range q.terms {
		byText[t.text] = i
	}
	gw := make([]float64, q.groups) // a group's weight: its heaviest term's
	for _, t := range q.terms {
		gw[t.group] = math.Max(gw[t.group], t.weight)
	}
	avg := ix.total / float64(max(ix.live, 1))
	lifted := false
	for k, c := range cands {
		if k == proximityTop {
			break
		}
		held := 0
		seen := make([]bool, q.groups)
		for i, t := range q.terms {
			if c.own[i] > 0 && !seen[t.group] {
				seen[t.group] = true
				held++
			}
		}
		if held < 2 {
			continue
		}
		text, ok := ix.textOf(c.doc)
		if !ok {
			continue
		}
		r := math.Min(ix.hot[c.doc].length/avg, p.MaxLenRatio)
		if b := p.Proximity * proximityScore(text, q, byText, gw, lengthNorm(r, p), p.K1); b > 0 {
			c.raise(b, liftNear)
			lifted = true
		}
	}
	if lifted {
		ix.sortByRank(cands)
	}
}

// proximityScore is Büttcher et al.'s proximity score of one text for the
// query: walking the text's occurrences of the query's word groups in
// order, each two adjacent occurrences of different groups d words apart
// (d ≤ proximityWindow) add the other group's weight / d² to each group's
// accumulator; a group's accumulator is then saturated as BM25 saturates
// a frequency (k1, with norm the node's length normalisation) and weighed
// by min(1, its weight). norm is the node's lengthNorm (k1 included). Deterministic: a pure function of its inputs.
func proximityScore(text string, q *Query, byText map[string]int, gw []float64, norm, k1 float64) float64 {
	acc := make([]float64, q.groups)
	pos, lastPos, lastGroup := 0, -1, -1
	analyzeInto(text, func(t Term) {
		if t.Kind != KindFuzzy && t.Kind != KindCompound && t.Kind != KindPlain {
			pos++ // the counted words, as analyseDoc counts a node's length
		}
		i, ok := byText[t.Text]
		if !ok {
			return
		}
		g := q.terms[i].group
		if g == lastGroup {
			lastPos = pos
			return
		}
		if lastGroup >= 0 {
			if d := max(pos-lastPos, 1); d <= proximityWindow {
				v := 1 / float64(d*d)
				acc[g] += gw[lastGroup] * v
				acc[lastGroup] += gw[g] * v
			}
		}
		lastPos, lastGroup = pos, g
	})
	s := 0.0
	for g, a := range acc { // a fixed order: the same bits every time
		if a > 0 {
			s += math.Min(1, gw[g]) * a * (k1 + 1) / (a + norm)
		}
	}
	return s
}

// textOf returns the text rule "the prompt's words together" reads of doc
// d: the text Index.Add was given, else the payload of its cold node read
// back through the store the index was refreshed against, when that node
// still has the artifact the index recorded (false: neither). The payload
// without the summary: a chat turn's summary is its first 100 characters
// again, and its word pairs would count twice.
func (ix *Index) textOf(d int32) (string, bool) {
	if t, ok := ix.texts[d]; ok {
		return t, true
	}
	if ix.src == nil {
		return "", false
	}
	n, err := ix.src.ReadColdNode(ix.docs[d].step)
	if err != nil || n.ArtifactSHA256 != ix.artifactOf(d) {
		return "", false
	}
	return n.RawContent, true
}
