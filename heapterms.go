package contextfold

import (
	"container/heap"
	"slices"

	"github.com/contextfold/contextfold/internal/extract"
)

// heapTermMerge yields the terms of the heap records (positions nb..len-1)
// in ascending byte order, each with the positions whose matchable terms
// (matchTerms' set) and whose summary identifiers hold it: a k-way merge
// of every record's sorted lists, so that the cache of a large index is
// built without the postings map or a sorted copy of its terms (
// a node of a 62 MB log has hundreds of thousands of distinct terms).
// A record's identifiers, files and errors are read in place when they are
// sorted, unique and already folded (every folded node's identifiers are,
// and a build log's files mostly); other lists, and the summary's
// identifiers, are folded into small lists of their own.
type heapTermMerge struct {
	all termCursors // every cursor at its start
	cur termCursors // a min-heap on the current term
}

// termCursor is one sorted, unique list of one position.
type termCursor struct {
	terms   []string
	i       int
	pos     int32
	summary bool
}

type termCursors []termCursor

func (c termCursors) Len() int           { return len(c) }
func (c termCursors) Less(i, j int) bool { return c[i].terms[c[i].i] < c[j].terms[c[j].i] }
func (c termCursors) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *termCursors) Push(x any)        { *c = append(*c, x.(termCursor)) }
func (c *termCursors) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// newHeapTermMerge starts a merge over ix's heap records: a k-way merge,
// or, over many lists (a backend store's index read whole: 100k records),
// a flatTermMerge (flatterms.go).
func newHeapTermMerge(ix *index) termMerge {
	m := &heapTermMerge{}
	for p := ix.nb; p < len(ix.recs); p++ {
		r := ix.recs[p]
		idents := r.idents
		if !strictlySorted(idents) {
			idents = extract.SortUnique(append([]string(nil), idents...))
		}
		m.push(idents, int32(p), false)
		for _, l := range [][]string{r.files, r.errors} {
			if strictlySorted(l) && foldedASCII(l) { // a build log's file list: read in place
				m.push(l, int32(p), false)
				continue
			}
			folded := make([]string, len(l))
			for i, f := range l {
				folded[i] = extract.FoldTerm(f)
			}
			m.push(extract.SortUnique(folded), int32(p), false)
		}
		m.push(extract.Identifiers(extract.NFC(r.summary)), int32(p), true)
	}
	if len(m.all) >= flatMergeMin {
		return newFlatTermMerge(m.all)
	}
	m.restart()
	return m
}

func (m *heapTermMerge) push(terms []string, pos int32, summary bool) {
	if len(terms) > 0 {
		m.all = append(m.all, termCursor{terms: terms, pos: pos, summary: summary})
	}
}

// restart rewinds the merge to its first term.
func (m *heapTermMerge) restart() {
	m.cur = append(m.cur[:0], m.all...)
	heap.Init(&m.cur)
}

// peek returns the smallest term not taken yet (false: none left).
func (m *heapTermMerge) peek() (string, bool) {
	if len(m.cur) == 0 {
		return "", false
	}
	c := &m.cur[0]
	return c.terms[c.i], true
}

// take consumes term t (the one peek returned) and appends the positions
// holding it to node (matchable terms) and sum (summary identifiers), each
// ascending and unique.
func (m *heapTermMerge) take(t string, node, sum []int32) ([]int32, []int32) {
	n0, s0 := len(node), len(sum)
	for len(m.cur) > 0 {
		c := &m.cur[0]
		if c.terms[c.i] != t {
			break
		}
		if c.summary {
			sum = append(sum, c.pos)
		} else {
			node = append(node, c.pos)
		}
		if c.i++; c.i == len(c.terms) {
			heap.Pop(&m.cur)
		} else {
			heap.Fix(&m.cur, 0)
		}
	}
	slices.Sort(node[n0:])
	slices.Sort(sum[s0:])
	node = node[:n0+len(slices.Compact(node[n0:]))] // a term both an identifier and a folded file
	return node, sum
}

// skip consumes term t (the one peek returned).
func (m *heapTermMerge) skip(t string) {
	for len(m.cur) > 0 {
		c := &m.cur[0]
		if c.terms[c.i] != t {
			return
		}
		if c.i++; c.i == len(c.terms) {
			heap.Pop(&m.cur)
		} else {
			heap.Fix(&m.cur, 0)
		}
	}
}

// foldedASCII reports whether every string of ss is ASCII without an upper
// case letter (so extract.FoldTerm returns it unchanged).
func foldedASCII(ss []string) bool {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
				return false
			}
		}
	}
	return true
}

// strictlySorted reports whether ss ascends strictly (sorted and unique).
func strictlySorted(ss []string) bool {
	for i := 1; i < len(ss); i++ {
		if ss[i-1] >= ss[i] {
			return false
		}
	}
	return true
}
