package ranked

import (
	"math"
	"sort"
	"strings"
)

// Rule "pseudo-relevance feedback" (RM3-style; Params.Feedback): a
// paraphrase shares few words with the turn it asks about, but the turns
// that do match the prompt best share their topic's other words with it.
// After the first ranking, the FeedbackDocs best candidates (by rank) are
// taken as relevant, each weighted by its share of their scores; every
// term they hold that the prompt lacks is scored by the relevance model
// Σ_d w_d × tf(t, d) / len(d), times its idf (a word every turn holds
// tells nothing); the Feedback best, held by at least two live nodes (a
// term only one feedback node holds can find nothing new), join the query
// as secondary terms (never counted for coverage, information or intent
// ownership) of weight FeedbackWeight × idf × their model score over the
// best one's, and the store is ranked again. Only when the first ranking
// passes the cut-off: a prompt that finds nothing is not expanded into
// one that does. Deterministic: ties go to the term text.

// fwdTerm is one distinct term of a node and how often the node holds it.
type fwdTerm struct {
	id int32
	tf uint16
}

// appendFeedbackTerm adds term text (id, frequency tf) to a node's
// feedback terms: words and compounds, not the fuzzy prefixes (a part of
// another word).
func appendFeedbackTerm(fwd []fwdTerm, text string, id int32, tf int) []fwdTerm {
	if strings.HasPrefix(text, fuzzyPrefix) {
		return fwd
	}
	return append(fwd, fwdTerm{id: id, tf: uint16(min(tf, 65535))})
}

// termText returns the text of term id.
func (ix *Index) termText(id int32) string {
	if id >= ix.nterms {
		return ix.names[id-ix.nterms]
	}
	return string(ix.snap.termBytes(int(id)))
}

// feedback returns q expanded by rule "pseudo-relevance feedback" from
// the ranked candidates cands (best first), or nil when it adds nothing.
// Callers hold ix.mu.
func (ix *Index) feedback(q *Query, cands []*match, p Params) *Query {
	if p.Feedback <= 0 || p.FeedbackDocs <= 0 || p.FeedbackWeight <= 0 || len(cands) == 0 {
		return nil
	}
	top := cands[:min(len(cands), p.FeedbackDocs)]
	sum := 0.0
	for _, c := range top {
		sum += c.score
	}
	if sum <= 0 {
		return nil
	}
	inQuery := make(map[int32]bool, len(q.terms))
	for _, t := range q.terms {
		inQuery[t.id] = true
	}
	rel := map[int32]float64{}
	var order []int32
	for _, c := range top {
		d := ix.docs[c.doc]
		w := c.score / sum / math.Max(ix.hot[c.doc].length, 1)
		for _, ft := range d.fwd {
			if inQuery[ft.id] {
				continue
			}
			if _, ok := rel[ft.id]; !ok {
				order = append(order, ft.id)
			}
			rel[ft.id] += w * float64(ft.tf)
		}
	}
	type cand struct {
		id         int32
		text       string
		score, idf float64
		df         int
	}
	cs := make([]cand, 0, len(order))
	for _, id := range order {
		df := ix.liveDF(id)
		if df < 2 {
			continue
		}
		idf := ix.idf(df)
		cs = append(cs, cand{id: id, text: ix.termText(id), score: rel[id] * idf, idf: idf, df: df})
	}
	if len(cs) == 0 {
		return nil
	}
	sort.Slice(cs, func(a, b int) bool {
		if cs[a].score != cs[b].score {
			return cs[a].score > cs[b].score
		}
		return cs[a].text < cs[b].text
	})
	if len(cs) > p.Feedback {
		cs = cs[:p.Feedback]
	}
	x := *q
	x.terms = append(make([]qterm, 0, len(q.terms)+len(cs)), q.terms...)
	best := cs[0].score
	for _, c := range cs {
		x.terms = append(x.terms, qterm{id: c.id, text: c.text, src: c.text, kind: KindWord,
			weight: p.FeedbackWeight * c.idf * c.score / best, group: x.groups, df: c.df, feedback: true})
		x.groups++
	}
	return &x
}
