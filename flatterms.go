package contextfold

import (
	"slices"
	"strings"
)

// termMerge yields the heap records' terms in ascending byte order with the
// positions holding each (see heapTermMerge, which defines the contract:
// peek, take, skip, restart).
type termMerge interface {
	peek() (string, bool)
	take(t string, node, sum []int32) ([]int32, []int32)
	skip(t string)
	restart()
}

// flatMergeMin is the number of term lists from which the heap's terms are
// merged by flatTermMerge rather than by heapTermMerge's k-way merge: a
// k-way merge costs log2(k) string comparisons per term occurrence through
// container/heap, fine for the few lists of one huge node but,
// over the 400,000 lists of a 100k-node backend index read whole (issue
// 13), minutes instead of seconds. Both yield the same terms and positions
// (the cache bytes are the same: TestFlatTermMergeSameCache). A variable
// for tests.
var flatMergeMin = 4096

// flatTermMerge holds every (term, position) occurrence grouped by term:
// the distinct terms sorted once, the occurrences placed by a counting
// sort (positions stay ascending within a term, as the lists are visited
// in position order).
type flatTermMerge struct {
	terms []string // ascending
	start []int32  // term k's occurrences: occ[start[k]:start[k+1]]
	occ   []int32  // position<<1 | 1 for a summary identifier
	i     int      // the next term
}

func newFlatTermMerge(all termCursors) *flatTermMerge {
	ids := map[string]int32{}
	var terms []string
	type item struct{ id, v int32 }
	var raw []item
	for _, c := range all {
		v := c.pos << 1
		if c.summary {
			v |= 1
		}
		for _, t := range c.terms {
			id, ok := ids[t]
			if !ok {
				id = int32(len(terms))
				ids[t] = id
				terms = append(terms, t)
			}
			raw = append(raw, item{id, v})
		}
	}
	ids = nil
	order := make([]int32, len(terms))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(terms[a], terms[b]) })
	rank := make([]int32, len(terms))
	f := &flatTermMerge{terms: make([]string, len(terms)), start: make([]int32, len(terms)+1), occ: make([]int32, len(raw))}
	for r, id := range order {
		rank[id] = int32(r)
		f.terms[r] = terms[id]
	}
	for _, x := range raw {
		f.start[rank[x.id]+1]++
	}
	for k := 1; k < len(f.start); k++ {
		f.start[k] += f.start[k-1]
	}
	next := slices.Clone(f.start[:len(terms)])
	for _, x := range raw {
		r := rank[x.id]
		f.occ[next[r]] = x.v
		next[r]++
	}
	return f
}

func (f *flatTermMerge) restart() { f.i = 0 }

func (f *flatTermMerge) peek() (string, bool) {
	if f.i >= len(f.terms) {
		return "", false
	}
	return f.terms[f.i], true
}

func (f *flatTermMerge) skip(t string) {
	if f.i < len(f.terms) && f.terms[f.i] == t {
		f.i++
	}
}

func (f *flatTermMerge) take(t string, node, sum []int32) ([]int32, []int32) {
	if f.i >= len(f.terms) || f.terms[f.i] != t {
		return node, sum
	}
	n0, s0 := len(node), len(sum)
	for _, v := range f.occ[f.start[f.i]:f.start[f.i+1]] {
		if v&1 != 0 {
			sum = append(sum, v>>1)
		} else {
			node = append(node, v>>1)
		}
	}
	f.i++
	slices.Sort(node[n0:])
	slices.Sort(sum[s0:])
	node = node[:n0+len(slices.Compact(node[n0:]))] // a term both an identifier and a folded file
	return node, sum
}
