package ranked

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// The ranked index snapshot: a term-sorted, memory-mapped file in the
// per-user cache directory (never in the store, CONF-08) from which a query
// decodes only the dictionary entries and postings of its own terms and the
// summaries and specific terms of its candidates. The documents' fixed
// fields (32 bytes a node) are read at open. Nodes folded since the
// snapshot are held in memory on top of it (a delta: docs after the
// snapshot's, postings appended after the snapshot's); Refresh rewrites
// (compacts) the snapshot when the delta grows (see saveEvery).
//
// Layout (little-endian): a header of snapHead bytes (magic "cfrank6\n",
// node count n, term count T, total length (float64 bits), body length,
// ten sections as (offset, length) in the body, the CRC-32C of the chunk
// table, the CRC-32C of the header before it), the chunk table (one
// CRC-32C per snapChunk bytes of the body), then the body. Sections:
//
//	docs     n × 32: step i64, tokens i64, length f64, flags u64 (1 question, 2 evicted), ascending step
//	strOff   (2n+1) × u32 into str: node i's summary, then its artifact_sha256
//	str
//	specOff  (n+1) × u32 into spec (in u32 units)
//	spec     u32 dictionary indices of each node's specific terms, ascending
//	termOff  (T+1) × u32 into term
//	term     the terms, ascending bytewise
//	postOff  (T+1) × u64 into post
//	post     per term: (node position delta, tf) as uvarints, ascending position
//	version  the store index version the snapshot was refreshed against
//
// A chunk is verified the first time a query reads it; a failed chunk
// marks the snapshot bad and the index is rebuilt from the cold nodes (a
// miss, never a wrong answer: see Index.recoverSnapshot).
const (
	snapName  = "ranked-index.v6"
	snapMagic = "cfrank6\n"
	snapChunk = 64 << 10
	snapSecs  = 10
	snapHead  = 8 + 4*8 + snapSecs*16 + 4 + 4
)

const (
	secDocs = iota
	secStrOff
	secStr
	secSpecOff
	secSpec
	secTermOff
	secTerm
	secPostOff
	secPost
	secVersion
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var errBadCache = errors.New("ranked: corrupt index cache")

// snapFile is an opened snapshot file. Not safe for concurrent use (its
// Index's mutex guards it).
type snapFile struct {
	data    []byte
	unmap   func()
	body    []byte
	crcs    []byte
	secs    [snapSecs][]byte
	secOff  [snapSecs]int
	n       int
	nterms  int
	total   float64
	checked []uint64
	bad     bool
	// users: background readers of the mapping (the filter of rule
	// "typos", typoBuild); close stops them (stop) and waits for them
	// before unmapping.
	users sync.WaitGroup
	stop  atomic.Bool
}

// close unmaps the file once its background readers have stopped.
func (s *snapFile) close() {
	s.stop.Store(true)
	s.users.Wait()
	if s.unmap != nil {
		s.unmap()
	}
}

var le = binary.LittleEndian

func openSnapshot(data []byte) (*snapFile, error) {
	if len(data) < snapHead || !bytes.Equal(data[:8], []byte(snapMagic)) {
		return nil, errBadCache
	}
	if crc32.Checksum(data[:snapHead-4], crcTable) != le.Uint32(data[snapHead-4:]) {
		return nil, errBadCache
	}
	s := &snapFile{data: data}
	n, nt, bodyLen := le.Uint64(data[8:]), le.Uint64(data[16:]), le.Uint64(data[32:])
	s.total = math.Float64frombits(le.Uint64(data[24:]))
	nchunks := (bodyLen + snapChunk - 1) / snapChunk
	if n > 1<<31 || nt > 1<<31 || bodyLen > uint64(len(data)) || uint64(snapHead)+4*nchunks+bodyLen != uint64(len(data)) {
		return nil, errBadCache
	}
	s.crcs = data[snapHead : snapHead+4*int(nchunks)]
	if crc32.Checksum(s.crcs, crcTable) != le.Uint32(data[snapHead-8:]) {
		return nil, errBadCache
	}
	s.body = data[snapHead+4*int(nchunks):]
	s.checked = make([]uint64, (nchunks+63)/64)
	s.n, s.nterms = int(n), int(nt)
	for i := range snapSecs {
		off, ln := le.Uint64(data[40+16*i:]), le.Uint64(data[48+16*i:])
		if off > bodyLen || ln > bodyLen-off {
			return nil, errBadCache
		}
		s.secs[i], s.secOff[i] = s.body[off:off+ln], int(off)
	}
	want := [snapSecs]int{secDocs: 32 * s.n, secStrOff: 4 * (2*s.n + 1), secSpecOff: 4 * (s.n + 1), secTermOff: 4 * (s.nterms + 1), secPostOff: 8 * (s.nterms + 1)}
	for i, w := range want {
		if w != 0 && len(s.secs[i]) != w {
			return nil, errBadCache
		}
	}
	return s, nil
}

// verify checks the CRC of every not yet verified chunk that body bytes
// [off, off+n) overlap; a mismatch marks s bad.
func (s *snapFile) verify(off, n int) bool {
	if n == 0 || s.bad {
		return !s.bad
	}
	for c := off / snapChunk; c <= (off+n-1)/snapChunk; c++ {
		if s.checked[c/64]&(1<<(c%64)) != 0 {
			continue
		}
		lo := c * snapChunk
		hi := min(lo+snapChunk, len(s.body))
		if crc32.Checksum(s.body[lo:hi], crcTable) != le.Uint32(s.crcs[4*c:]) {
			s.bad = true
			return false
		}
		s.checked[c/64] |= 1 << (c % 64)
	}
	return true
}

// slice returns section sec's bytes [off, off+n), verified; nil (and s
// marked bad) when out of range or corrupt.
func (s *snapFile) slice(sec int, off, n uint64) []byte {
	b := s.secs[sec]
	if s.bad || off > uint64(len(b)) || n > uint64(len(b))-off {
		s.bad = true
		return nil
	}
	// Most reads lie in one chunk verified before: checked here, without
	// verify's call and loop (the same answer: verify passes it).
	if o := s.secOff[sec] + int(off); n > 0 {
		if c := o / snapChunk; (o+int(n)-1)/snapChunk == c && s.checked[c/64]&(1<<(c%64)) != 0 {
			return b[off : off+n]
		}
	}
	if !s.verify(s.secOff[sec]+int(off), int(n)) {
		return nil
	}
	return b[off : off+n]
}

func (s *snapFile) u32(sec int, i int) uint32 {
	b := s.slice(sec, 4*uint64(i), 4)
	if b == nil {
		return 0
	}
	return le.Uint32(b)
}

func (s *snapFile) u64(sec int, i int) uint64 {
	b := s.slice(sec, 8*uint64(i), 8)
	if b == nil {
		return 0
	}
	return le.Uint64(b)
}

// span returns the bytes between offsets i and i+1 of table offSec in sec.
func (s *snapFile) span(offSec, sec, i int) []byte {
	lo, hi := s.u32(offSec, i), s.u32(offSec, i+1)
	if hi < lo {
		s.bad = true
		return nil
	}
	return s.slice(sec, uint64(lo), uint64(hi-lo))
}

func (s *snapFile) termBytes(k int) []byte { return s.span(secTermOff, secTerm, k) }

// find returns the dictionary index of term text, -1 when absent.
func (s *snapFile) find(text string) int32 {
	i := sort.Search(s.nterms, func(k int) bool { return string(s.termBytes(k)) >= text })
	if i < s.nterms && string(s.termBytes(i)) == text && !s.bad {
		return int32(i)
	}
	return -1
}

// widePosting decodes the posting at b[i:] that is not one byte of delta
// and one of frequency, after the holder last: its document, frequency and
// the offset after it; false when its uvarints are cut or out of range
// (the caller marks the snapshot bad).
func (s *snapFile) widePosting(b []byte, i, last int) (d int, tf uint64, next int, ok bool) {
	dd, n1 := binary.Uvarint(b[i:])
	if n1 <= 0 {
		return 0, 0, i, false
	}
	tf, n2 := binary.Uvarint(b[i+n1:])
	if n2 <= 0 || tf > 65535 || dd > uint64(s.n) {
		return 0, 0, i, false
	}
	return last + 1 + int(dd), tf, i + n1 + n2, true
}

// postings decodes term k's postings (nil and s bad when corrupt).
func (s *snapFile) postings(k int) []posting {
	lo, hi := s.u64(secPostOff, k), s.u64(secPostOff, k+1)
	if hi < lo {
		s.bad = true
		return nil
	}
	b := s.slice(secPost, lo, hi-lo)
	// Two uvarints a posting: the bytes that end one (high bit clear)
	// count them, so the list is allocated once at its size (appending
	// grew a 90,000-posting list through 20 copies), with a sixteenth
	// more room for the postings folds append to it (Index.insert).
	n := varintEnds(b) / 2
	out := make([]posting, n, n+n/16)
	last, i := -1, 0
	for k := range out {
		// The common case, a delta and a frequency of one byte each (a
		// term held at most 127 times in a node at most 128 positions
		// after the previous holder), is decoded in place; every other
		// posting goes through binary.Uvarint and its checks, so that a
		// list decodes to the same postings, and a corrupt one fails the
		// same way, as with Uvarint alone (a one-byte delta cannot pass
		// s.n unless the position does, which is checked below).
		var d int
		var tf uint64
		if i+1 < len(b) && (b[i]|b[i+1])&0x80 == 0 {
			d, tf = last+1+int(b[i]), uint64(b[i+1])
			i += 2
		} else {
			var ok bool
			if d, tf, i, ok = s.widePosting(b, i, last); !ok {
				s.bad = true
				return nil
			}
		}
		if tf == 0 || d >= s.n {
			s.bad = true
			return nil
		}
		out[k] = posting{doc: int32(d), tf: uint16(tf)}
		last = d
	}
	if i != len(b) {
		s.bad = true
		return nil
	}
	return out
}

// varintEnds counts the bytes of b with the high bit clear: the number of
// uvarints b holds when it is a sequence of them.
func varintEnds(b []byte) int {
	n := 0
	for len(b) >= 8 {
		// The high bit of each of the 8 bytes, moved to bit 0 of its byte:
		// their sum is the count of bytes with it set.
		set := (le.Uint64(b) >> 7) & 0x0101010101010101
		n += 8 - int((set*0x0101010101010101)>>56)
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}

func (s *snapFile) summary(d int) string  { return string(s.span(secStrOff, secStr, 2*d)) }
func (s *snapFile) artifact(d int) string { return string(s.span(secStrOff, secStr, 2*d+1)) }

func (s *snapFile) specific(d int) []int32 {
	lo, hi := s.u32(secSpecOff, d), s.u32(secSpecOff, d+1)
	if hi < lo {
		s.bad = true
		return nil
	}
	b := s.slice(secSpec, 4*uint64(lo), 4*uint64(hi-lo))
	out := make([]int32, 0, len(b)/4)
	for i := 0; i+4 <= len(b); i += 4 {
		k := le.Uint32(b[i:])
		if k >= uint32(s.nterms) {
			s.bad = true
			return nil
		}
		out = append(out, int32(k))
	}
	return out
}

// decodeSnapshot opens a snapshot file's bytes as an index: the documents'
// fixed fields are read and verified now, everything else when used.
func decodeSnapshot(data []byte) (*Index, error) {
	s, err := openSnapshot(data)
	if err != nil {
		return nil, err
	}
	dt := s.slice(secDocs, 0, uint64(32*s.n))
	ver := s.slice(secVersion, 0, uint64(len(s.secs[secVersion])))
	if s.bad {
		return nil, errBadCache
	}
	ix := NewIndex()
	ix.snap, ix.base, ix.nterms = s, int32(s.n), int32(s.nterms)
	ix.docs = make([]doc, s.n)
	ix.hot = make([]hotDoc, s.n)
	sum := 0.0
	for i := range ix.docs {
		r := dt[32*i:]
		d := &ix.docs[i]
		d.step, d.tokens = int(int64(le.Uint64(r))), int(int64(le.Uint64(r[8:])))
		d.length = math.Float64frombits(le.Uint64(r[16:]))
		fl := le.Uint64(r[24:])
		d.question, d.evicted, d.lazy = fl&1 != 0, fl&2 != 0, true
		if d.length < 1 || fl > 3 || (i > 0 && d.step <= ix.docs[i-1].step) {
			return nil, errBadCache
		}
		ix.hot[i] = hotDoc{length: d.length, question: d.question}
		ix.maxStep = max(ix.maxStep, d.step)
		sum += d.length
		ix.tokensTotal += float64(d.tokens)
	}
	if sum != s.total {
		return nil, errBadCache
	}
	ix.live, ix.total = s.n, s.total
	ix.order = make([]int32, s.n)
	ix.rank = make([]int32, s.n)
	for i := range ix.order {
		ix.order[i], ix.rank[i] = int32(i), int32(i)
	}
	ix.version = string(ver)
	return ix, nil
}

// encodeSnapshot serialises the live documents as a snapshot; false when
// the current snapshot turned out corrupt while reading it. Callers hold
// ix.mu. The bytes are snapEncoding.writeTo's (save streams those to the
// file instead).
func (ix *Index) encodeSnapshot() ([]byte, bool) {
	enc, ok := ix.buildSnapshot()
	if !ok {
		return nil, false
	}
	return enc.bytes(), true
}

// snapEncoding is a snapshot laid out but not concatenated: the header,
// the chunk table and the body's sections, whose concatenation is the
// file (head, crcs, secs[0], …, secs[snapSecs-1]). Streaming it to the
// file (writeTo) holds the sections once, where concatenating held them
// three times (sections, body, file bytes: ≈ 1.75× a proxy request's body
// at the largest live heap).
type snapEncoding struct {
	head []byte
	crcs []byte
	secs [snapSecs][]byte
}

// size is the file's length in bytes.
func (e *snapEncoding) size() int {
	n := len(e.head) + len(e.crcs)
	for _, s := range e.secs {
		n += len(s)
	}
	return n
}

// identity is the snapshot's identity (delta.go's identityOf of its bytes).
func (e *snapEncoding) identity() snapIdentity {
	return snapIdentity{crc: le.Uint32(e.head[snapHead-4:]), size: uint64(e.size())}
}

// writeTo writes the file's bytes to w; the first error of w.
func (e *snapEncoding) writeTo(w io.Writer) error {
	if _, err := w.Write(e.head); err != nil {
		return err
	}
	if _, err := w.Write(e.crcs); err != nil {
		return err
	}
	for _, s := range e.secs {
		if len(s) == 0 {
			continue
		}
		if _, err := w.Write(s); err != nil {
			return err
		}
	}
	return nil
}

// bytes returns the file's bytes in one slice.
func (e *snapEncoding) bytes() []byte {
	b := bytes.NewBuffer(make([]byte, 0, e.size()))
	_ = e.writeTo(b) // a bytes.Buffer does not fail
	return b.Bytes()
}

// buildSnapshot lays out the live documents as a snapshot (see
// encodeSnapshot). Callers hold ix.mu.
func (ix *Index) buildSnapshot() (*snapEncoding, bool) {
	newPos := make([]int32, len(ix.docs))
	for i := range newPos {
		newPos[i] = -1
	}
	for i, d := range ix.order {
		newPos[d] = int32(i)
	}
	type term struct {
		text string
		id   int32
	}
	terms := make([]term, 0, int(ix.nterms)+len(ix.post))
	for k := range int(ix.nterms) {
		terms = append(terms, term{string(ix.snap.termBytes(k)), int32(k)})
	}
	for text, id := range ix.vocab {
		if id >= ix.nterms {
			terms = append(terms, term{text, id})
		}
	}
	if ix.snap != nil && ix.snap.bad {
		return nil, false
	}
	slices.SortFunc(terms, func(a, b term) int { return cmpString(a.text, b.text) })
	newID := make([]int32, int(ix.nterms)+len(ix.post))
	var termB, postB []byte
	termOff := []uint32{0}
	postOff := []uint64{0}
	var ps []posting
	nt := 0
	for _, t := range terms {
		ps = ps[:0]
		for _, p := range ix.rawPostings(t.id) {
			if np := newPos[p.doc]; np >= 0 {
				ps = append(ps, posting{doc: np, tf: p.tf})
			}
		}
		if ix.snap != nil && ix.snap.bad {
			return nil, false
		}
		if len(ps) == 0 {
			newID[t.id] = -1
			continue
		}
		newID[t.id] = int32(nt)
		nt++
		slices.SortFunc(ps, func(a, b posting) int { return int(a.doc) - int(b.doc) })
		last := int32(-1)
		for _, p := range ps {
			postB = binary.AppendUvarint(postB, uint64(p.doc-last-1))
			postB = binary.AppendUvarint(postB, uint64(p.tf))
			last = p.doc
		}
		termB = append(termB, t.text...)
		termOff = append(termOff, uint32(len(termB)))
		postOff = append(postOff, uint64(len(postB)))
	}
	var docB, strOffB, strB, specOffB, specB []byte
	strOffB = le.AppendUint32(strOffB, 0)
	specOffB = le.AppendUint32(specOffB, 0)
	nspec := uint32(0)
	var spec []int32
	for _, di := range ix.order {
		d := &ix.docs[di]
		docB = le.AppendUint64(docB, uint64(int64(d.step)))
		docB = le.AppendUint64(docB, uint64(int64(d.tokens)))
		docB = le.AppendUint64(docB, math.Float64bits(d.length))
		fl := uint64(0)
		if d.question {
			fl |= 1
		}
		if d.evicted {
			fl |= 2
		}
		docB = le.AppendUint64(docB, fl)
		strB = append(strB, ix.summaryOf(di)...)
		strOffB = le.AppendUint32(strOffB, uint32(len(strB)))
		strB = append(strB, ix.artifactOf(di)...)
		strOffB = le.AppendUint32(strOffB, uint32(len(strB)))
		spec = spec[:0]
		for _, id := range ix.specificOf(di) {
			if k := newID[id]; k >= 0 {
				spec = append(spec, k)
			}
		}
		slices.Sort(spec)
		for _, k := range spec {
			specB = le.AppendUint32(specB, uint32(k))
		}
		nspec += uint32(len(spec))
		specOffB = le.AppendUint32(specOffB, nspec)
	}
	if ix.snap != nil && ix.snap.bad {
		return nil, false
	}
	var termOffB, postOffB []byte
	for _, o := range termOff {
		termOffB = le.AppendUint32(termOffB, o)
	}
	for _, o := range postOff {
		postOffB = le.AppendUint64(postOffB, o)
	}
	e := &snapEncoding{secs: [snapSecs][]byte{docB, strOffB, strB, specOffB, specB, termOffB, termB, postOffB, postB, []byte(ix.version)}}
	head := make([]byte, snapHead)
	copy(head, snapMagic)
	le.PutUint64(head[8:], uint64(ix.live))
	le.PutUint64(head[16:], uint64(nt))
	le.PutUint64(head[24:], math.Float64bits(ix.total))
	bodyLen := 0
	for i, sec := range e.secs {
		le.PutUint64(head[40+16*i:], uint64(bodyLen))
		le.PutUint64(head[48+16*i:], uint64(len(sec)))
		bodyLen += len(sec)
	}
	le.PutUint64(head[32:], uint64(bodyLen))
	// One CRC-32C per snapChunk bytes of the body, the body being the
	// sections one after another (a chunk may span sections).
	crcs := make([]byte, 0, 4*((bodyLen+snapChunk-1)/snapChunk))
	var crc uint32
	fill := 0 // bytes of the current chunk so far
	for _, sec := range e.secs {
		for len(sec) > 0 {
			k := min(snapChunk-fill, len(sec))
			crc = crc32.Update(crc, crcTable, sec[:k])
			sec, fill = sec[k:], fill+k
			if fill == snapChunk {
				crcs = le.AppendUint32(crcs, crc)
				crc, fill = 0, 0
			}
		}
	}
	if fill > 0 {
		crcs = le.AppendUint32(crcs, crc)
	}
	le.PutUint32(head[snapHead-8:], crc32.Checksum(crcs, crcTable))
	le.PutUint32(head[snapHead-4:], crc32.Checksum(head[:snapHead-4], crcTable))
	e.head, e.crcs = head, crcs
	return e, true
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
