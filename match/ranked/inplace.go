package ranked

import (
	"encoding/binary"
	"sort"
)

// Long posting lists read in place. A scan needs a term's whole list only
// to walk it (Index.walk); for a common term, which the walk leaves out
// (Params.FindCommon), it needs the number of its holders (its idf, the
// FindCommon test) and its frequency in a few dozen candidates
// (Index.detailAll). At 100k nodes such a list is 10,000 to 90,000
// postings, and decoding it from the snapshot for that (Index.postings)
// was most of a process's first scans: 200 of them decoded 13.2M postings
// of 434 common terms and allocated 112 MB for them (with the collector's
// work and the page faults of that memory).
//
// A snapshot list of at least longMin postings is instead read where it
// lies in the snapshot (longList): its length is counted from its bytes
// (varintEnds, no decoding), and the first look-up into it records, in one
// pass that decodes and checks every posting as snapFile.postings does,
// the doc and byte offset of every skipEvery-th posting (8 bytes a mark,
// half a byte a posting); a look-up then decodes at most skipEvery
// postings from the mark before its doc. The list is decoded whole only
// when a scan walks it. The delta's postings of the term (Index.spost,
// docs after the snapshot's) are read from the index at each look-up.
// Only an index whose docs are all live reads lists in place (a dead doc's
// postings are filtered out of a decoded list, Index.postings).

// inPlace turns the in-place reading of long lists on (tests compare
// both ways).
var inPlace = true

// longMin is the fewest postings of a snapshot list read in place.
const longMin = 1024

// skipEvery is the postings between two marks of a long list.
const skipEvery = 16

// skipMark is the doc of a long list's posting and its offset in the
// list's bytes.
type skipMark struct {
	doc int32
	off uint32
}

// longList is a long snapshot posting list read in place (see above).
type longList struct {
	b    []byte     // the list's bytes in the snapshot (its chunks verified)
	n    int        // its postings (varintEnds / 2)
	skip []skipMark // postings 0, skipEvery, 2·skipEvery, …; nil until a look-up
	// dense: each snapshot doc's frequency in it (denseOver: denseOver or
	// more, read from the list); nil when the list has none.
	dense []uint8
}

// The long lists a scan's candidates are looked up in get, while an index
// holds less than denseMax bytes of them, a table of their frequencies by
// doc (one byte a snapshot doc, 100 KB at 100k nodes), written by the
// pass that records the marks: a candidate's frequency is then one read,
// where a look-up from its mark reads a mark and a block of the list at
// random places (about 0.2-0.4 µs each, ~1,000 a scan at 100k nodes). The
// first lists a process looks up are those of the common words of its
// prompts.
const denseOver = 255

// denseMax bounds the bytes of an index's frequency tables (a variable:
// tests set it to 0).
var denseMax = 16 << 20

// longOf returns snapshot term id's list read in place, nil when it is
// shorter than longMin postings (or the snapshot is corrupt: s.bad).
// Callers hold ix.mu and have checked id < ix.nterms.
func (ix *Index) longOf(id int32) *longList {
	if l, ok := ix.long[id]; ok {
		return l
	}
	s := ix.snap
	lo, hi := s.u64(secPostOff, int(id)), s.u64(secPostOff, int(id)+1)
	var l *longList
	// A posting takes at least two bytes: a shorter span is no long list.
	if hi >= lo && hi-lo >= 2*longMin {
		if b := s.slice(secPost, lo, hi-lo); b != nil {
			if n := varintEnds(b) / 2; n >= longMin {
				l = &longList{b: b, n: n}
			}
		}
	}
	if s.bad {
		return nil
	}
	ix.long[id] = l
	return l
}

// list returns term id's live postings: decoded (ps, as Index.postings)
// or, for a long snapshot list not decoded yet in an index whose docs are
// all live, read in place (l). Callers hold ix.mu.
func (ix *Index) list(id int32) (ps []posting, l *longList) {
	if inPlace && id < ix.nterms && ix.live == len(ix.docs) {
		if _, ok := ix.pcache[id]; !ok {
			if l := ix.longOf(id); l != nil {
				return nil, l
			}
		}
	}
	return ix.postings(id), nil
}

// count is len(ix.postings(id)), the live docs holding term id, without
// decoding a long list. Callers hold ix.mu.
func (ix *Index) count(id int32) int {
	ps, l := ix.list(id)
	if l != nil {
		return l.n + len(ix.spost[id])
	}
	return len(ps)
}

// marks records l's skip marks, decoding every posting with the checks of
// snapFile.postings; false (and s marked bad) when the list is corrupt.
// With t, it writes each posting's frequency (capped at denseOver) at its
// doc in t (len(t) == s.n).
// A block of skipEvery postings whose deltas and frequencies are all one
// byte (nearly every block) is checked and summed a word at a time
// (fastBlock); any other posting is decoded one by one.
func (l *longList) marks(s *snapFile, t []uint8) bool {
	if l.skip != nil {
		return true
	}
	b := l.b
	skip := make([]skipMark, 0, (l.n+skipEvery-1)/skipEvery)
	last, i := -1, 0
	for k := 0; k < l.n; k++ {
		if k%skipEvery == 0 && k+skipEvery <= l.n && i+blockBytes <= len(b) {
			if d, ok := fastBlock(b[i:i+blockBytes], last); ok {
				if d >= s.n {
					s.bad = true
					return false
				}
				skip = append(skip, skipMark{doc: int32(last + 1 + int(b[i])), off: uint32(i)})
				if t != nil {
					oneByteTable(t, b[i:i+blockBytes], int32(last))
				}
				last, i = d, i+blockBytes
				k += skipEvery - 1
				continue
			}
		}
		start := i
		var d int
		var tf uint64
		if i+1 < len(b) && (b[i]|b[i+1])&0x80 == 0 {
			d, tf = last+1+int(b[i]), uint64(b[i+1])
			i += 2
		} else {
			var ok bool
			if d, tf, i, ok = s.widePosting(b, i, last); !ok {
				s.bad = true
				return false
			}
		}
		if tf == 0 || d >= s.n {
			s.bad = true
			return false
		}
		if k%skipEvery == 0 {
			skip = append(skip, skipMark{doc: int32(d), off: uint32(start)})
		}
		if t != nil {
			t[d] = uint8(min(tf, denseOver))
		}
		last = d
	}
	if i != len(b) {
		s.bad = true
		return false
	}
	l.skip = skip
	return true
}

// fastBlock decodes the skipEvery postings of bytes b (2·skipEvery of
// them) after the posting of doc last when each delta and frequency is one
// byte and no frequency is 0: the doc of the last posting, true. Otherwise
// false (the caller decodes them one by one). A word holds four postings:
// their bytes' high bits all clear, the frequency bytes (odd) none zero,
// and the deltas (even) summed in 16-bit lanes by one multiplication. The
// block's four words are read at once (one bounds check, the constants
// held in registers).
func fastBlock(b []byte, last int) (int, bool) {
	const (
		high  = 0x8080808080808080
		lanes = 0x00ff00ff00ff00ff
		seven = 0x007f007f007f007f
		eight = 0x0080008000800080
		sum   = 0x0001000100010001
	)
	b = b[:blockBytes]
	w0, w1, w2, w3 := le.Uint64(b[0:]), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	// A frequency lane plus 0x7f has bit 7 set when the frequency is 1 to
	// 0x80 (a larger one has its high bit set, which fails the block too).
	tfs := ((w0>>8)&lanes + seven) & ((w1>>8)&lanes + seven) & ((w2>>8)&lanes + seven) & ((w3>>8)&lanes + seven)
	// A high bit set anywhere fails the block; when none is, every delta
	// lane is under 128, their sum over the block's words under 2^16.
	if tfs&eight != eight || (w0|w1|w2|w3)&high != 0 {
		return 0, false
	}
	lanesSum := w0&lanes + w1&lanes + w2&lanes + w3&lanes
	return last + skipEvery + int((lanesSum*sum)>>48), true
}

// blockBytes is the bytes of a block of skipEvery one-byte postings: four
// words (fastBlock and oneByteTable read four).
const blockBytes = 2 * skipEvery

var _ [blockBytes - 32]struct{} // skipEvery is 16: fastBlock reads 4 words
var _ [32 - blockBytes]struct{}

// wide decodes the posting at b[i:] of a list marks checked, after the
// posting of doc last, one of whose varints is wider than a byte: its
// doc, frequency and the offset after it.
func wide(b []byte, i int, last int32) (int32, uint16, int) {
	dd, n1 := binary.Uvarint(b[i:])
	tf, n2 := binary.Uvarint(b[i+n1:])
	return last + 1 + int32(dd), uint16(tf), i + n1 + n2
}

// tfFrom returns the frequency of doc d in l (0: not held), looking from
// mark k on (d at least that mark's doc, or k == 0), and the mark the
// look-up ended in, from which a look-up of a later doc may start.
// l.marks has succeeded.
func (l *longList) tfFrom(k int, d int32) (uint16, int) {
	sk := l.skip
	if d < sk[k].doc {
		k = 0
	}
	if d < sk[0].doc {
		return 0, 0
	}
	lo := pastMark(sk, k, d) - 1 // the last mark at or before d
	// Decode from mark lo: its first posting's doc is the mark's.
	b, j := l.b, int(sk[lo].off)
	end := len(b)
	if lo+1 < len(sk) {
		end = int(sk[lo+1].off)
	}
	// The mark's posting: its doc is the mark's (its delta is not read).
	doc := sk[lo].doc
	var tf uint16
	if (b[j]|b[j+1])&0x80 == 0 {
		tf, j = uint16(b[j+1]), j+2
	} else {
		_, tf, j = wide(b, j, 0)
	}
	for doc < d && j < end {
		if (b[j]|b[j+1])&0x80 == 0 {
			doc, tf, j = doc+1+int32(b[j]), uint16(b[j+1]), j+2
		} else {
			doc, tf, j = wide(b, j, doc)
		}
	}
	if doc == d {
		return tf, lo
	}
	return 0, lo
}

// pastMark returns the first mark from lo on whose doc is over d
// (len(sk) when none), sk[lo].doc being at most d: as seek, a guess by
// interpolation (a long list's docs are spread over the store), a
// galloping search from the guess and bisection.
func pastMark(sk []skipMark, lo int, d int32) int {
	n := len(sk)
	if sk[n-1].doc <= d {
		return n
	}
	// sk[lo].doc <= d < sk[n-1].doc: the answer is in (lo, n-1].
	a, b := sk[lo].doc, sk[n-1].doc
	m := lo + 1 + int(int64(d-a)*int64(n-2-lo)/int64(b-a))
	// Bracket: sk[L].doc <= d < sk[H].doc.
	var L, H int
	if sk[m].doc <= d {
		L = m
		for step := 1; ; step *= 2 {
			if H = L + step; H >= n-1 {
				H = n - 1
				break
			}
			if sk[H].doc > d {
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
			if sk[L].doc <= d {
				break
			}
			H = L
		}
	}
	for L+1 < H {
		mid := int(uint(L+H) >> 1)
		if sk[mid].doc <= d {
			L = mid
		} else {
			H = mid
		}
	}
	return H
}

// longTF is the frequency of doc d in term id's long list l (its delta
// postings included); false when the list is corrupt (s.bad). Callers
// hold ix.mu.
func (ix *Index) longTF(id int32, l *longList, d int32) (uint16, bool) {
	if d >= ix.base {
		return tfIn(ix.spost[id], d), true
	}
	if !ix.marked(l) {
		return 0, false
	}
	if l.dense != nil {
		if tf := l.dense[d]; tf < denseOver {
			return uint16(tf), true
		}
	}
	tf, _ := l.tfFrom(0, d)
	return tf, true
}

// marked makes l's marks (longList.marks) and, while the index holds less
// than denseMax bytes of them, its table of frequencies in the same pass:
// whichever look-up comes first (the needle stage's, Index.longTF, now
// runs before the scan's, Index.longRow), the list is read once. False
// when the list is corrupt. Callers hold ix.mu.
func (ix *Index) marked(l *longList) bool {
	if l.dense == nil && ix.denseBytes+int(ix.base) <= denseMax {
		// The pass that writes the table records the marks (again, when
		// they were made without one: the table's budget was spent then).
		t := make([]uint8, ix.base)
		l.skip = nil
		if !l.marks(ix.snap, t) {
			return false
		}
		l.dense = t
		ix.denseBytes += len(t)
		return true
	}
	return l.marks(ix.snap, nil)
}

// tfIn is the frequency of doc d in ps (ascending doc; 0: not held).
func tfIn(ps []posting, d int32) uint16 {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= d })
	if i < len(ps) && ps[i].doc == d {
		return ps[i].tf
	}
	return 0
}

// longRow sets row[j] to the frequency of look[j] (ascending docs) in term
// id's long list l, for the docs l holds (row is zero before); false when
// the list is corrupt. Callers hold ix.mu.
func (ix *Index) longRow(id int32, l *longList, look []int32, row []uint16) bool {
	if !ix.marked(l) {
		return false
	}
	k := 0
	for j, d := range look {
		if d >= ix.base {
			if tf := tfIn(ix.spost[id], d); tf > 0 {
				row[j] = tf
			}
			continue
		}
		if l.dense != nil {
			if tf := l.dense[d]; tf < denseOver {
				row[j] = uint16(tf)
				continue
			}
		}
		row[j], k = l.tfFrom(k, d)
	}
	return true
}

// oneByteTable writes into t the frequencies of the block of postings b
// (blockBytes), deltas and frequencies of one byte each (fastBlock), after
// the posting of doc last: four postings a word.
func oneByteTable(t []uint8, b []byte, last int32) {
	b = b[:blockBytes]
	doc := tableWord(t, le.Uint64(b[0:]), last)
	doc = tableWord(t, le.Uint64(b[8:]), doc)
	doc = tableWord(t, le.Uint64(b[16:]), doc)
	tableWord(t, le.Uint64(b[24:]), doc)
}

// tableWord writes into t the frequencies of the four one-byte postings
// of word w after the posting of doc, and returns the last one's doc.
func tableWord(t []uint8, w uint64, doc int32) int32 {
	doc += 1 + int32(w&0x7f)
	t[doc] = uint8(w >> 8)
	doc += 1 + int32(w>>16&0x7f)
	t[doc] = uint8(w >> 24)
	doc += 1 + int32(w>>32&0x7f)
	t[doc] = uint8(w >> 40)
	doc += 1 + int32(w>>48&0x7f)
	t[doc] = uint8(w >> 56)
	return doc
}
