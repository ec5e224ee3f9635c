package contextfold

import (
	"math/bits"
	"path/filepath"
	"sort"

	"github.com/contextfold/contextfold/internal/extract"
)

// Recall labels (CONF-04).
const (
	StatusLatest     = "latest_chronological"
	StatusSuperseded = "superseded"
	StatusHistorical = "historical"
	StatusRelated    = "related"
)

// RecallHit is one ranked recall candidate.
type RecallHit struct {
	StepID   int
	Status   string // one of the Status* labels
	Coverage int    // distinct query terms the node holds
	Score    int    // +2 per term among the summary's identifiers, +1 per term among the node's terms
	Summary  string
	Evicted  bool
}

// RecallTerms returns the query terms of recall: the identifiers of the
// query (spec §5 recall).
func RecallTerms(query string) []string { return extract.Identifiers(extract.NFC(query)) }

// ScanTerms returns the query terms of scan: identifiers ∪ folded files ∪
// folded errors of the prompt (spec §5 scan).
func ScanTerms(prompt string) []string {
	t := extract.Extract(extract.NFC(prompt))
	all := append([]string{}, t.Identifiers...)
	for _, f := range t.Files {
		all = append(all, extract.FoldTerm(f))
	}
	for _, e := range t.Errors {
		all = append(all, extract.FoldTerm(e))
	}
	return extract.SortUnique(all)
}

func contains(sorted []string, t string) bool {
	i := sort.SearchStrings(sorted, t)
	return i < len(sorted) && sorted[i] == t
}

// queryIDs maps sorted query terms to dictionary ids; terms no node holds
// get ok=false.
func (ix *index) queryIDs(terms []string) (ids []uint32, ok []bool) {
	ids, ok = make([]uint32, len(terms)), make([]bool, len(terms))
	for i, t := range terms {
		ids[i], ok[i] = ix.dict.lookup(t)
	}
	return ids, ok
}

// Recall ranks the nodes that hold the query's terms (pull, CONF-04). The
// primary tier holds the nodes of maximum coverage, newest step first,
// labelled latest_chronological, superseded…, historical; every other
// candidate follows, newest first, labelled related. The cost grows with the
// postings of the query's terms, not with the size of the index. Read-only.
func (s *Store) Recall(query string) ([]RecallHit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	terms := RecallTerms(query)
	ids, known := ix.queryIDs(terms)
	seen := map[int32]bool{}
	var hits []RecallHit
	for i, id := range ids {
		if !known[i] {
			continue
		}
		for _, lists := range [][]int32{ix.post[id], ix.spost[id]} {
			for _, p := range lists {
				if seen[p] {
					continue
				}
				seen[p] = true
				r := ix.recs[p]
				h := RecallHit{StepID: r.step, Summary: r.summary, Evicted: r.evicted}
				for j, qid := range ids {
					if !known[j] {
						continue
					}
					inSummary, inNode := hasID(r.summaryTerms, qid), hasID(r.terms, qid)
					if inSummary {
						h.Score += 2
					}
					if inNode {
						h.Score++
					}
					if inSummary || inNode {
						h.Coverage++
					}
				}
				if h.Coverage > 0 {
					hits = append(hits, h)
				}
			}
		}
	}
	return rankRecall(hits), nil
}

func rankRecall(hits []RecallHit) []RecallHit {
	if len(hits) == 0 {
		return []RecallHit{}
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].StepID > hits[j].StepID })
	maxCov := 0
	for _, h := range hits {
		if h.Coverage > maxCov {
			maxCov = h.Coverage
		}
	}
	var primary, rest []RecallHit
	for _, h := range hits {
		if h.Coverage == maxCov {
			primary = append(primary, h)
		} else {
			h.Status = StatusRelated
			rest = append(rest, h)
		}
	}
	for i := range primary {
		switch {
		case i == 0:
			primary[i].Status = StatusLatest
		case i == len(primary)-1:
			primary[i].Status = StatusHistorical
		default:
			primary[i].Status = StatusSuperseded
		}
	}
	return append(primary, rest...)
}

// ScanPick is one node chosen by the scan's greedy set cover.
type ScanPick struct {
	StepID       int
	MatchedTerms []string // residual terms it covered when picked, sorted
	// TokenCost is min(token_estimate, per-call cap, per-turn budget), in
	// tokens; a float only when the policy's numbers are fractional.
	TokenCost float64
	Summary   string
}

// ScanResult is the outcome of a scan: the nodes to hydrate in pick order,
// and the picks that did not fit the per-turn budget.
type ScanResult struct {
	QueryTerms []string
	Selected   []ScanPick
	Dropped    []ScanPick
	// BudgetTokens is the per-turn budget, UsedTokens the cost of Selected.
	BudgetTokens float64
	UsedTokens   float64
}

// Scan is the software MMU (push, CONF-13): it matches the prompt against the
// recall index and chooses the nodes to hydrate by residual greedy set cover
// (spec §5 scan). The first pick is always admitted; a later pick only if its
// cost fits the remaining per-turn budget; either way its terms leave the
// residual (intent ownership). Read-only.
func (s *Store) Scan(prompt string) (*ScanResult, error) {
	policy, err := s.Policy()
	if err != nil {
		return nil, err
	}
	capTokens, err := policy.MaxTokensPerCall()
	if err != nil {
		return nil, &StoreFileError{File: filepath.Join(s.dir, PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_call to a number"}
	}
	budget, err := policy.MaxTokensPerTurn()
	if err != nil {
		return nil, &StoreFileError{File: filepath.Join(s.dir, PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_turn to a number"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	terms := ScanTerms(prompt)
	res := &ScanResult{QueryTerms: terms, Selected: []ScanPick{}, Dropped: []ScanPick{}, BudgetTokens: budget}
	groups := ix.coverGroups(terms)
	words := (len(terms) + 63) / 64
	residual := make([]uint64, words)
	for i := range terms {
		residual[i/64] |= 1 << (i % 64)
	}
	remaining := budget
	for {
		best, bestCov := -1, 0
		for gi, g := range groups {
			cov := 0
			for w := 0; w < words; w++ {
				cov += bits.OnesCount64(g.mask[w] & residual[w])
			}
			if cov > bestCov || (cov == bestCov && cov > 0 && ix.recs[g.pos].step > ix.recs[groups[best].pos].step) {
				best, bestCov = gi, cov
			}
		}
		if bestCov == 0 {
			break
		}
		g := groups[best]
		r := ix.recs[g.pos]
		var matched []string
		for i := range terms {
			if g.mask[i/64]&residual[i/64]&(1<<(i%64)) != 0 {
				matched = append(matched, terms[i])
			}
		}
		for w := 0; w < words; w++ {
			residual[w] &^= g.mask[w]
		}
		cost := minFloat(float64(r.tokenEstimate), capTokens, budget)
		pick := ScanPick{StepID: r.step, MatchedTerms: matched, TokenCost: cost, Summary: r.summary}
		if len(res.Selected) == 0 || cost <= remaining {
			res.Selected = append(res.Selected, pick)
			remaining -= cost
			res.UsedTokens += cost
		} else {
			res.Dropped = append(res.Dropped, pick)
		}
	}
	return res, nil
}

// coverGroup is the newest node among those that hold exactly one set of the
// query's terms: for set cover only that node of each set can ever be picked
// (coverage depends only on the set; ties go to the larger step id).
type coverGroup struct {
	mask []uint64 // bit i: the node holds query term i
	pos  int32
}

// coverGroups computes, from the postings of the query's terms only, the
// distinct term sets the nodes hold and the newest node of each.
func (ix *index) coverGroups(terms []string) []coverGroup {
	ids, known := ix.queryIDs(terms)
	words := (len(terms) + 63) / 64
	slot := map[int32]int{}
	var masks []uint64
	var order []int32
	for i, id := range ids {
		if !known[i] {
			continue
		}
		for _, p := range ix.post[id] {
			k, ok := slot[p]
			if !ok {
				k = len(order)
				slot[p] = k
				order = append(order, p)
				masks = append(masks, make([]uint64, words)...)
			}
			masks[k*words+i/64] |= 1 << (i % 64)
		}
	}
	byMask := map[string]int{}
	var groups []coverGroup
	for k, p := range order {
		m := masks[k*words : (k+1)*words]
		key := maskKey(m)
		if gi, ok := byMask[key]; ok {
			if ix.recs[p].step > ix.recs[groups[gi].pos].step {
				groups[gi].pos = p
			}
			continue
		}
		byMask[key] = len(groups)
		groups = append(groups, coverGroup{mask: m, pos: p})
	}
	return groups
}

func maskKey(m []uint64) string {
	b := make([]byte, 8*len(m))
	for i, w := range m {
		for j := 0; j < 8; j++ {
			b[i*8+j] = byte(w >> (8 * j))
		}
	}
	return string(b)
}

func minFloat(a float64, rest ...float64) float64 {
	for _, b := range rest {
		if b < a {
			a = b
		}
	}
	return a
}
