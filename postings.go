package contextfold

// postings maps a term to the heap positions that hold it, ascending. Most
// terms of a large node occur in that node only, so a term with one
// position keeps it in the map's value (a 24-byte slot instead of 40 and no
// slice per term); a term with more keeps -(k+1), k indexing
// many. The zero value is empty and ready. Not safe for concurrent use (the
// index is guarded by the store's mutex).
type postings struct {
	one  map[string]int32
	many [][]int32
}

func newPostings() postings { return postings{one: map[string]int32{}} }

// add appends pos to t's list unless pos is already its last position
// (positions are added in ascending order, so that skips duplicates).
func (ps *postings) add(t string, pos int32) {
	v, ok := ps.one[t]
	switch {
	case !ok:
		ps.one[t] = pos
	case v >= 0:
		if v != pos {
			ps.many = append(ps.many, []int32{v, pos})
			ps.one[t] = -int32(len(ps.many))
		}
	default:
		l := &ps.many[-v-1]
		if (*l)[len(*l)-1] != pos {
			*l = append(*l, pos)
		}
	}
}

// appendTo appends t's positions to dst.
func (ps *postings) appendTo(dst []int32, t string) []int32 {
	v, ok := ps.one[t]
	switch {
	case !ok:
		return dst
	case v >= 0:
		return append(dst, v)
	default:
		return append(dst, ps.many[-v-1]...)
	}
}

// has reports whether any position holds t.
func (ps *postings) has(t string) bool { _, ok := ps.one[t]; return ok }

// len is the number of terms.
func (ps *postings) len() int { return len(ps.one) }
