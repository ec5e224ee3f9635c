package contextfold

import (
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

// candidates returns the steps whose terms meet any query term, via the
// inverted index, so the cost grows with the postings of the query's terms.
func (ix *index) candidates(terms []string) []int {
	seen := map[int]bool{}
	var out []int
	for _, t := range terms {
		for _, id := range ix.postings[t] {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// Recall ranks the nodes that hold the query's terms (pull, CONF-04). The
// primary tier holds the nodes of maximum coverage, newest step first,
// labelled latest_chronological, superseded…, historical; every other
// candidate follows, newest first, labelled related. Read-only.
func (s *Store) Recall(query string) ([]RecallHit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	terms := RecallTerms(query)
	var hits []RecallHit
	for _, id := range ix.candidates(terms) {
		e := ix.entries[id]
		h := RecallHit{StepID: id, Summary: e.Summary, Evicted: e.Evicted}
		for _, t := range terms {
			inSummary := contains(e.SummaryTerms(), t)
			inNode := contains(e.Terms(), t)
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

	residual := make(map[string]bool, len(terms))
	for _, t := range terms {
		residual[t] = true
	}
	cands := ix.candidates(terms)
	sort.Sort(sort.Reverse(sort.IntSlice(cands))) // larger step first wins ties
	remaining := budget
	for len(residual) > 0 {
		best, bestCov := 0, 0
		for _, id := range cands {
			cov := 0
			for _, t := range ix.entries[id].Terms() {
				if residual[t] {
					cov++
				}
			}
			if cov > bestCov {
				best, bestCov = id, cov
			}
		}
		if bestCov == 0 {
			break
		}
		e := ix.entries[best]
		var matched []string
		for _, t := range e.Terms() {
			if residual[t] {
				matched = append(matched, t)
				delete(residual, t)
			}
		}
		cost := minFloat(float64(e.TokenEstimate), capTokens, budget)
		pick := ScanPick{StepID: best, MatchedTerms: matched, TokenCost: cost, Summary: e.Summary}
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

func minFloat(a float64, rest ...float64) float64 {
	for _, b := range rest {
		if b < a {
			a = b
		}
	}
	return a
}
