package scrub

import (
	"strings"
	"sync"
)

// Anchor search of the extra rules.
//
// extraFindings looks, for each rule, for every occurrence of each of its
// anchors (some 90 strings over all rules, most of them 2 to 12 bytes,
// three of one byte: ':', '=', '<'). Looked for one anchor at a time
// (strings.Index) that was some 90 passes over every text scrubbed, about
// two thirds of the extra rules' time on tool output. anchorSet finds
// every anchor's occurrences in one pass instead: a position whose two
// bytes start no anchor (and whose byte is no one-byte anchor) is passed
// over at one table lookup. The occurrences it returns are exactly those
// strings.Index finds (every one, overlapping ones included, ascending);
// extraFindings then walks them rule by rule and anchor by anchor in the
// same order as before, so its findings are the same, finding for finding
// (TestExtraFindingsAnchorScanSame).

// anchorSet is the distinct anchors of extraRules and the tables of their
// one-pass search. Read-only once built (extraAnchors).
type anchorSet struct {
	lits []string // the distinct anchors, in order of first use
	// rule[i] lists the indexes into lits of extraRules[i].anchors, in
	// its order.
	rule [][]int
	// bigram maps two bytes c0<<8|c1 to 1 + an index into groups (0: no
	// anchor starts there): the anchors starting with c0 c1 and the
	// one-byte anchor c0, if any.
	bigram []uint16
	groups [][]int
	// single[c] is 1 + the index of the one-byte anchor c (0: none), for
	// a text's last byte.
	single [256]int
}

// extraAnchors is the anchor set of extraRules, built on first use.
var extraAnchors = sync.OnceValue(func() *anchorSet { return newAnchorSet(extraRules) })

// newAnchorSet builds the anchor set of rules (no anchor may be empty).
func newAnchorSet(rules []extraRule) *anchorSet {
	as := &anchorSet{bigram: make([]uint16, 1<<16), rule: make([][]int, len(rules))}
	index := map[string]int{}
	for i, r := range rules {
		for _, a := range r.anchors {
			k, ok := index[a]
			if !ok {
				if a == "" {
					panic("scrub: an extra rule's anchor is empty")
				}
				k = len(as.lits)
				index[a] = k
				as.lits = append(as.lits, a)
			}
			as.rule[i] = append(as.rule[i], k)
		}
	}
	add := func(pair, k int) {
		if as.bigram[pair] == 0 {
			as.groups = append(as.groups, nil)
			as.bigram[pair] = uint16(len(as.groups))
		}
		g := as.bigram[pair] - 1
		as.groups[g] = append(as.groups[g], k)
	}
	for k, a := range as.lits {
		if len(a) == 1 {
			as.single[a[0]] = k + 1
			for c1 := range 256 {
				add(int(a[0])<<8|c1, k)
			}
			continue
		}
		add(int(a[0])<<8|int(a[1]), k)
	}
	return as
}

// anchorHits is the occurrences of an anchor set's anchors in one text:
// anchor k's positions, ascending, are pos[start[k]:start[k+1]].
type anchorHits struct {
	start []int
	pos   []int
	raw   []int // (anchor, position) pairs in the text's order, flattened
	next  []int // the counting sort's next slot by anchor
}

// positions returns anchor k's positions in the text last found, ascending.
func (h *anchorHits) positions(k int) []int { return h.pos[h.start[k]:h.start[k+1]] }

// anchorHitsPool holds anchorHits for reuse (extraFindings runs per text,
// on several goroutines).
var anchorHitsPool = sync.Pool{New: func() any { return new(anchorHits) }}

// maxPooledHits bounds the occurrences an anchorHits returned to
// anchorHitsPool may hold room for: a text with a huge number of ':' does
// not pin its buffers for the process's lifetime.
const maxPooledHits = 1 << 15

// release returns h to anchorHitsPool unless its buffers grew too large.
func (h *anchorHits) release() {
	if cap(h.raw) <= 2*maxPooledHits {
		anchorHitsPool.Put(h)
	}
}

// find fills h with the occurrences in text of every anchor of as.
func (as *anchorSet) find(text string, h *anchorHits) {
	raw := h.raw[:0]
	for p := 0; p+1 < len(text); p++ {
		g := as.bigram[int(text[p])<<8|int(text[p+1])]
		if g == 0 {
			continue
		}
		for _, k := range as.groups[g-1] {
			if strings.HasPrefix(text[p:], as.lits[k]) {
				raw = append(raw, k, p)
			}
		}
	}
	if n := len(text); n > 0 && as.single[text[n-1]] != 0 {
		raw = append(raw, as.single[text[n-1]]-1, n-1)
	}
	// A counting sort by anchor keeps each anchor's positions ascending.
	start := h.start[:0]
	for range len(as.lits) + 1 {
		start = append(start, 0)
	}
	for i := 0; i < len(raw); i += 2 {
		start[raw[i]+1]++
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	pos := h.pos[:0]
	for range len(raw) / 2 {
		pos = append(pos, 0)
	}
	next := append(h.next[:0], start[:len(as.lits)]...)
	for i := 0; i < len(raw); i += 2 {
		k := raw[i]
		pos[next[k]] = raw[i+1]
		next[k]++
	}
	h.raw, h.start, h.pos, h.next = raw, start, pos, next
}
