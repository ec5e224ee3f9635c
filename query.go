package contextfold

import (
	"encoding/binary"
	"math/bits"
	"slices"
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

// work returns the index's per-position work array, n*words long and all
// zero; callers leave it all zero again.
func (ix *index) work(words int) []uint64 {
	if need := ix.len() * words; len(ix.scratch) < need {
		ix.scratch = make([]uint64, need)
	}
	return ix.scratch
}

// Recall ranks the nodes that hold the query's terms (pull, CONF-04). The
// primary tier holds the nodes of maximum coverage, newest step first,
// labelled latest_chronological, superseded…, historical; every other
// candidate follows, newest first, labelled related. The cost grows with the
// postings of the query's terms, not with the size of the index. Read-only.
func (s *Store) Recall(query string) ([]RecallHit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	terms := RecallTerms(query)
	for {
		ix, err := s.loadIndex()
		if err != nil {
			return nil, err
		}
		hits := ix.recall(terms)
		if !ix.base.failed() {
			return rankRecall(hits), nil
		}
		s.distrustCache() // the snapshot is corrupt: read the JSON
	}
}

// recall scores every node that holds a query term in its matchable terms
// or its summary's identifiers: +2 per term among the summary's
// identifiers, +1 per term among the node's terms; coverage counts the terms
// found in either.
func (ix *index) recall(terms []string) []RecallHit {
	acc := ix.work(1) // per position: score<<32 | coverage
	var cand, node, sum []int32
	for _, t := range terms {
		node = ix.appendPostings(node[:0], t, false)
		sum = ix.appendPostings(sum[:0], t, true)
		// Both lists ascend (base positions, then heap positions above
		// them): merge them.
		for i, j := 0, 0; i < len(node) || j < len(sum); {
			var p int32
			var add uint64
			switch {
			case j == len(sum) || (i < len(node) && node[i] < sum[j]):
				p, add = node[i], 1
				i++
			case i == len(node) || sum[j] < node[i]:
				p, add = sum[j], 2
				j++
			default:
				p, add = node[i], 3
				i, j = i+1, j+1
			}
			if acc[p] == 0 {
				cand = append(cand, p)
			}
			acc[p] += add<<32 | 1
		}
	}
	hits := make([]RecallHit, 0, len(cand))
	for _, p := range cand {
		hits = append(hits, RecallHit{StepID: ix.stepAt(p), Summary: ix.summaryAt(p), Evicted: ix.evictedAt(p),
			Score: int(acc[p] >> 32), Coverage: int(uint32(acc[p]))})
		acc[p] = 0
	}
	return hits
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
	// Score is the ranked matcher's marginal score when it picked the node
	// (BM25-like units; package match/ranked); 0 in exact mode.
	Score float64 `json:",omitempty"`
	// Why lists, in ranked mode, what matched: "term", "term~stem",
	// "term(part)", "term@neighbour:STEP"; nil in exact mode.
	Why []string `json:",omitempty"`
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
		return nil, &StoreFileError{File: s.storePath(PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_call to a number"}
	}
	budget, err := policy.MaxTokensPerTurn()
	if err != nil {
		return nil, &StoreFileError{File: s.storePath(PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_turn to a number"}
	}
	terms := ScanTerms(prompt)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		ix, err := s.loadIndex()
		if err != nil {
			return nil, err
		}
		res := ix.scan(terms, capTokens, budget)
		if !ix.base.failed() {
			return res, nil
		}
		s.distrustCache() // the snapshot is corrupt: read the JSON
	}
}

// scan runs the residual greedy set cover of Scan; costs are in tokens.
func (ix *index) scan(terms []string, capTokens, budget float64) *ScanResult {
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
			if cov > bestCov || (cov == bestCov && cov > 0 && g.step > groups[best].step) {
				best, bestCov = gi, cov
			}
		}
		if bestCov == 0 {
			break
		}
		g := groups[best]
		var matched []string
		for i := range terms {
			if g.mask[i/64]&residual[i/64]&(1<<(i%64)) != 0 {
				matched = append(matched, terms[i])
			}
		}
		for w := 0; w < words; w++ {
			residual[w] &^= g.mask[w]
		}
		cost := minFloat(float64(ix.tokensAt(g.pos)), capTokens, budget)
		pick := ScanPick{StepID: g.step, MatchedTerms: matched, TokenCost: cost, Summary: ix.summaryAt(g.pos)}
		if len(res.Selected) == 0 || cost <= remaining {
			res.Selected = append(res.Selected, pick)
			remaining -= cost
			res.UsedTokens += cost
		} else {
			res.Dropped = append(res.Dropped, pick)
		}
	}
	return res
}

// coverGroup is the newest node among those that hold exactly one set of the
// query's terms: for set cover only that node of each set can ever be picked
// (coverage depends only on the set; ties go to the larger step id).
type coverGroup struct {
	mask []uint64 // bit i: the node holds query term i
	pos  int32
	step int
}

// coverGroups computes, from the postings of the query's terms only, the
// distinct term sets the nodes hold and the newest node of each. Masks are
// built in the index's dense work array. With up to 64 terms and a snapshot,
// the snapshot's dense terms (held by most nodes) are read from its
// per-position signatures rather than their long postings: base positions
// are then visited newest first, and one whose mask holds dense terms only is
// settled by a lookup of its signature bits.
func (ix *index) coverGroups(terms []string) []coverGroup {
	words := max(1, (len(terms)+63)/64)
	masks := ix.work(words)
	var sigs []byte
	if words == 1 {
		sigs = ix.base.denseSigs()
	}
	// The query's dense terms as signature bits, folded into one word: word
	// 1 is rotated by rot so that its bits miss word 0's (else the dense
	// terms are read from their postings like the others).
	var qf [2]uint64
	var cterm [64]int // folded signature bit → query term index
	rot := 0
	if sigs != nil {
		for _, t := range terms {
			if f, ok := ix.base.denseBit(t); ok {
				qf[f/64] |= 1 << (f % 64)
			}
		}
		for rot < 64 && qf[0]&bits.RotateLeft64(qf[1], rot) != 0 {
			rot++
		}
		if rot == 64 {
			sigs = nil
		}
	}
	var cand []int32
	ix.postPending()
	post := ix.postBuf[:0] // reused across scans (callers hold the store's mutex)
	defer func() { ix.postBuf = post[:0] }()
	for i, t := range terms {
		if f, ok := ix.base.denseBit(t); ok && sigs != nil {
			cterm[(int(f%64)+rot*int(f/64))%64] = i
			post = ix.post.appendTo(post[:0], t) // heap positions only
		} else {
			post = ix.appendPostings(post[:0], t, false)
		}
		bit, w := uint64(1)<<(i%64), i/64
		for _, p := range post {
			m := masks[int(p)*words:][:words]
			if sigs == nil && m[0] == 0 && isZero(m[1:]) {
				cand = append(cand, p)
			}
			m[w] |= bit
		}
	}
	var groups []coverGroup
	var byMask maskTable       // words == 1: full mask → group
	var byKey map[string]int32 // words > 1
	add := func(m []uint64, p int32) int32 {
		groups = append(groups, coverGroup{mask: append([]uint64(nil), m...), pos: p, step: ix.stepAt(p)})
		return int32(len(groups) - 1)
	}
	// visit files position p under its mask, the newest node winning, and
	// clears the mask. newerFirst: p is older than every position visited
	// before it that has the same mask.
	visit := func(p int32, newerFirst bool) {
		m := masks[int(p)*words:][:words]
		var gi int32
		var ok bool
		var key string
		if words == 1 {
			gi, ok = byMask.get(m[0])
		} else {
			key = maskKey(m)
			if byKey == nil {
				byKey = map[string]int32{}
			}
			gi, ok = byKey[key]
		}
		switch {
		case !ok:
			gi = add(m, p)
			if words == 1 {
				byMask.put(m[0], gi)
			} else {
				byKey[key] = gi
			}
		case newerFirst:
		case int(p) < ix.nb: // base positions ascend in step: p is newer
			groups[gi].pos, groups[gi].step = p, ix.stepAt(p)
		default:
			if st := ix.stepAt(p); st > groups[gi].step {
				groups[gi].pos, groups[gi].step = p, st
			}
		}
		clear(m)
	}
	switch {
	case sigs != nil:
		// Base positions newest first: a position that holds no term but
		// dense ones, with a dense key seen before, is older than the group
		// already made for its mask.
		ix.visitBuf = denseVisits(sigs[:16*ix.nb], masks[:ix.nb], qf, rot, &cterm, ix.visitBuf[:0])
		for _, p := range ix.visitBuf {
			visit(p, true)
		}
		for p := ix.nb; p < ix.len(); p++ {
			if masks[p] != 0 {
				visit(int32(p), false)
			}
		}
	case len(cand)*16 > ix.len(): // many candidates: one pass over the array
		for p := range ix.len() {
			if masks[p*words] != 0 || !isZero(masks[p*words+1:p*words+words]) {
				visit(int32(p), false)
			}
		}
	default:
		slices.Sort(cand)
		for _, p := range cand {
			visit(p, false)
		}
	}
	return groups
}

// denseVisits is the hot loop of coverGroups over the base positions with
// signatures: newest first, it returns the positions to visit (one for each
// dense key not seen before among positions holding dense terms only, and
// every position marked in masks) and sets their masks to the query-term
// masks they hold. qf and rot fold a signature's query bits into one word;
// cterm maps a folded bit to its query term.
func denseVisits(sigs []byte, masks []uint64, qf [2]uint64, rot int, cterm *[64]int, out []int32) []int32 {
	var seen maskTable
	le := binary.LittleEndian
	full := qf[0] | bits.RotateLeft64(qf[1], rot) // every dense query term
	key := func(p int) uint64 {
		sig := sigs[16*p : 16*p+16]
		return le.Uint64(sig)&qf[0] | bits.RotateLeft64(le.Uint64(sig[8:])&qf[1], rot)
	}
	mark := func(p int, k uint64) {
		other := masks[p]
		for ; k != 0; k &= k - 1 {
			other |= 1 << cterm[bits.TrailingZeros64(k)]
		}
		masks[p] = other
		out = append(out, int32(p))
	}
	p := len(masks) - 1
	for ; p >= 0; p-- {
		k := key(p)
		if masks[p] == 0 {
			if k == 0 || seen.has(k) {
				continue
			}
			seen.put(k, 0)
		}
		mark(p, k)
		if k == full {
			// This node holds every dense query term: any older node that
			// holds dense terms only holds a subset of its terms and is older,
			// so the greedy never picks it (never more coverage, ties to the
			// newer step; nothing left once this node's terms are covered).
			// Only the older nodes that hold a rare term remain to visit.
			break
		}
	}
	// The older nodes marked by a rare term's postings, newest first: a
	// sequential sweep of the mask array, cheaper than sorting them.
	// A node whose whole query mask a newer node already showed adds no
	// group (the newer node owns it): skip it before any further work.
	var shown maskTable
	for _, v := range out {
		shown.put(masks[v], 0)
	}
	for q := p - 1; q >= 0; q-- {
		if masks[q] == 0 {
			continue
		}
		k := key(q)
		m := masks[q]
		for kk := k; kk != 0; kk &= kk - 1 {
			m |= 1 << cterm[bits.TrailingZeros64(kk)]
		}
		if shown.has(m) {
			masks[q] = 0 // not visited: keep the work array clear
			continue
		}
		shown.put(m, 0)
		masks[q] = m
		out = append(out, int32(q))
	}
	return out
}

// maskTable maps non-zero masks to group numbers (open addressing, load at
// most 1/2). The zero value is an empty table.
type maskTable struct {
	keys []uint64 // 0: free
	vals []int32
	n    int
}

func (t *maskTable) slot(k uint64) int {
	mask := len(t.keys) - 1
	// The top bits of the product depend on every bit of k.
	for i := int((k * 0x9E3779B97F4A7C15) >> (64 - bits.Len(uint(mask)))); ; i++ {
		if t.keys[i&mask] == k || t.keys[i&mask] == 0 {
			return i & mask
		}
	}
}

func (t *maskTable) get(k uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	i := t.slot(k)
	return t.vals[i], t.keys[i] == k
}

func (t *maskTable) has(k uint64) bool {
	return t.n != 0 && t.keys[t.slot(k)] == k
}

func (t *maskTable) put(k uint64, v int32) {
	if 2*(t.n+1) > len(t.keys) {
		old, oldv := t.keys, t.vals
		t.keys, t.vals = make([]uint64, max(256, 4*len(old))), make([]int32, max(256, 4*len(old)))
		for i, k := range old {
			if k != 0 {
				j := t.slot(k)
				t.keys[j], t.vals[j] = k, oldv[i]
			}
		}
	}
	i := t.slot(k)
	if t.keys[i] == 0 {
		t.n++
	}
	t.keys[i], t.vals[i] = k, v
}

func isZero(m []uint64) bool {
	for _, w := range m {
		if w != 0 {
			return false
		}
	}
	return true
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
