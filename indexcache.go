package contextfold

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/mmapfile"
)

// IndexCacheFile is a binary snapshot of a large recall_index.json (our
// extension), written by every full index write of at least
// IndexCacheThreshold bytes (and by a reader that had to parse such an index
// in our encoding) into the store's per-user cache directory
// (internal/cachedir), outside the store, so that read-only commands never
// write the store (CONF-08). Only a writer without a per-user cache
// directory (CONTEXTFOLD_CACHE_DIR=off, no $HOME) keeps it in the store. It is bound to the exact index file it was made from
// (size, modification time, inode) and checksummed (CRC-32C), so a stale or
// corrupt cache is ignored and the JSON is parsed instead.
//
// The snapshot holds what matching needs, addressed by offsets so that a
// process maps the file and touches only what a query uses: a sorted term
// dictionary, per-term postings, a fixed-width record table in step order,
// the summaries, and per-node signatures of the terms most nodes hold (scan
// reads those instead of their long postings). Entries themselves are not copied: the record table
// gives each entry's byte span in recall_index.json, which is read (from the
// very file the cache is bound to) when an entry is materialised.
//
// Layout (little endian; offsets in bytes from the start of the file):
//
//	head   [0,176)  magic "CFIDXv2\n"; index file size u64, mtime i64 (ns),
//	                inode u64; chunk size u32; section count u32 (8);
//	                8 × (offset u64, length u64); CRC of section 7 u32;
//	                CRC of the head's preceding 172 bytes u32
//	section 0       header: canonical JSON of the top-level keys but "nodes"
//	section 1       records: n × recordSize bytes in ascending step order:
//	                step i64, token_estimate i64, entry offset u64, summary
//	                offset u64 (in section 5), entry length u32, summary
//	                length u32, flags u8 (1: evicted), 7 zero bytes
//	section 2       term table: (terms+1) × (term offset u32 in section 3,
//	                postings offset u32 in section 4); the last row ends the
//	                previous one
//	section 3       the terms, concatenated, in ascending byte order
//	section 4       per term: uvarint count and uvarint gaps (position −
//	                previous position, the first from −1) of the positions
//	                whose matchable terms hold it, then the same for the
//	                positions whose summary identifiers hold it
//	section 5       the summaries, concatenated
//	section 6       dense terms: count d ≤ 128 u32, d × term number u32 (the
//	                terms most nodes hold), then n × 2 u64 signatures: bit
//	                f%64 of word f/64 of position p's signature says it
//	                holds dense term f
//	section 7       CRC-32C of every cacheChunk bytes of [176, section 7)
//
// At load only the head, the header and the record table are verified (they
// are small: 48 bytes a node); other chunks are verified the first time a
// query touches them, and a failure marks the snapshot bad (see baseIndex).
const IndexCacheFile = "recall_index.cache"

// IndexCacheThreshold is the index size in bytes from which the cache is
// kept (a variable for tests).
var IndexCacheThreshold int64 = 1 << 20

const (
	cacheSecs    = 8
	cacheHead    = 40 + 16*cacheSecs + 8
	cacheChunk   = 64 << 10
	recordSize   = 48
	secHeader    = 0
	secRecords   = 1
	secTermTable = 2
	secTerms     = 3
	secPostings  = 4
	secSummaries = 5
	secDense     = 6
	secChunkCRCs = 7
	maxDense     = 128 // dense terms: two signature words a position
)

var cacheMagic = []byte("CFIDXv2\n")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// baseIndex is a loaded snapshot: read-only, shared by nothing but its index.
// Records are addressed by position 0..n-1 (ascending step).
type baseIndex struct {
	data    []byte // the cache file, mapped
	secs    [cacheSecs][]byte
	secOff  [cacheSecs]int  // file offset of each section
	n       int             // records
	nterms  int             // terms in the dictionary
	jsonf   entrySource     // the recall_index.json the snapshot was made of
	checked []uint64        // bitset of chunks whose CRC was verified
	bad     bool            // a lazily verified chunk failed, or an offset was out of range
	dense   map[string]uint // dense term → its signature bit
	sigs    []byte          // n × 2 u64 signatures (section 6), verified at first use
}

// entrySource is where a snapshot's entries are read: the index file it was
// made of (an *os.File), or, for a backend store, the index encoded in
// memory (memEntries).
type entrySource interface {
	ReadAt(p []byte, off int64) (int, error)
	Name() string
}

// decodeCache opens a snapshot made for the index file f with stamp st.
// data is the whole cache file; f stays open for reading entries.
func decodeCache(data []byte, st fileStamp, f entrySource) (*index, error) {
	b, err := openBase(data, st)
	if err != nil {
		return nil, err
	}
	b.jsonf = f
	hv, err := canonjson.Decode(b.secs[secHeader])
	if err != nil {
		return nil, fmt.Errorf("index cache: header: %v", err)
	}
	ix := newIndex("")
	if ix.header, _ = hv.(map[string]any); ix.header == nil {
		return nil, errors.New("index cache: header is not an object")
	}
	ix.base, ix.nb, ix.recs = b, b.n, make([]*record, b.n)
	return ix, nil
}

func openBase(data []byte, st fileStamp) (*baseIndex, error) {
	le := binary.LittleEndian
	if len(data) < cacheHead || !bytes.Equal(data[:len(cacheMagic)], cacheMagic) {
		return nil, errors.New("index cache: not a v2 cache file")
	}
	if crc32.Checksum(data[:cacheHead-4], crcTable) != le.Uint32(data[cacheHead-4:]) {
		return nil, errors.New("index cache: head checksum mismatch")
	}
	if int64(le.Uint64(data[8:])) != st.size || int64(le.Uint64(data[16:])) != st.mtime.UnixNano() || le.Uint64(data[24:]) != st.ino {
		return nil, errors.New("index cache: made for another index file")
	}
	if le.Uint32(data[32:]) != cacheChunk || le.Uint32(data[36:]) != cacheSecs {
		return nil, errors.New("index cache: unknown geometry")
	}
	b := &baseIndex{data: data}
	for i := range b.secs {
		off, n := le.Uint64(data[40+16*i:]), le.Uint64(data[48+16*i:])
		if off < cacheHead || off > uint64(len(data)) || n > uint64(len(data))-off {
			return nil, errors.New("index cache: section out of range")
		}
		b.secs[i], b.secOff[i] = data[off:off+n:off+n], int(off)
	}
	crcs := b.secs[secChunkCRCs]
	chunked := len(data) - cacheHead - len(crcs)
	if chunked < 0 || len(crcs) != 4*((chunked+cacheChunk-1)/cacheChunk) || crc32.Checksum(crcs, crcTable) != le.Uint32(data[cacheHead-8:]) {
		return nil, errors.New("index cache: chunk table mismatch")
	}
	for i := range secChunkCRCs {
		if b.secOff[i]+len(b.secs[i]) > cacheHead+chunked {
			return nil, errors.New("index cache: section overlaps the chunk table")
		}
	}
	b.checked = make([]uint64, (len(crcs)/4+63)/64)
	if len(b.secs[secRecords])%recordSize != 0 || len(b.secs[secTermTable]) < 8 || len(b.secs[secTermTable])%8 != 0 {
		return nil, errors.New("index cache: malformed tables")
	}
	b.n, b.nterms = len(b.secs[secRecords])/recordSize, len(b.secs[secTermTable])/8-1
	if !b.verify(b.secOff[secHeader], len(b.secs[secHeader])) || !b.verify(b.secOff[secRecords], len(b.secs[secRecords])) {
		return nil, errors.New("index cache: checksum mismatch")
	}
	ds := b.secs[secDense]
	if len(ds) < 4 || le.Uint32(ds) > maxDense {
		return nil, errors.New("index cache: malformed dense terms")
	}
	d := int(le.Uint32(ds))
	if len(ds) != 4+4*d+16*b.n || !b.verify(b.secOff[secDense], 4+4*d) {
		return nil, errors.New("index cache: malformed dense terms")
	}
	b.dense, b.sigs = make(map[string]uint, d), ds[4+4*d:]
	for f := range d {
		t, _, _ := b.term(int(le.Uint32(ds[4+4*f:])))
		if t == nil {
			return nil, errors.New("index cache: dense term out of range")
		}
		b.dense[string(t)] = uint(f)
	}
	return b, nil
}

// verify checks the CRC of every not yet verified chunk that the file bytes
// [off, off+n) overlap. A mismatch marks b bad.
func (b *baseIndex) verify(off, n int) bool {
	if n == 0 || b.bad {
		return !b.bad
	}
	off -= cacheHead
	crcs := b.secs[secChunkCRCs]
	for c := off / cacheChunk; c <= (off+n-1)/cacheChunk; c++ {
		if b.checked[c/64]&(1<<(c%64)) != 0 {
			continue
		}
		lo := cacheHead + c*cacheChunk
		hi := min(lo+cacheChunk, len(b.data)-len(crcs))
		if crc32.Checksum(b.data[lo:hi], crcTable) != binary.LittleEndian.Uint32(crcs[4*c:]) {
			b.bad = true
			return false
		}
		b.checked[c/64] |= 1 << (c % 64)
	}
	return true
}

// verifyAll verifies every chunk (tests, tools).
func (b *baseIndex) verifyAll() bool {
	return b.verify(cacheHead, len(b.data)-cacheHead-len(b.secs[secChunkCRCs]))
}

// slice returns section sec's bytes [off, off+n), verified, or nil (and b
// marked bad) when out of range or corrupt.
func (b *baseIndex) slice(sec int, off, n uint64) []byte {
	s := b.secs[sec]
	if off > uint64(len(s)) || n > uint64(len(s))-off {
		b.bad = true
		return nil
	}
	if !b.verify(b.secOff[sec]+int(off), int(n)) {
		return nil
	}
	return s[off : off+n : off+n]
}

// failed reports whether a query met a corrupt part of the snapshot; its
// answers since loading may then be wrong.
func (b *baseIndex) failed() bool { return b != nil && b.bad }

func (b *baseIndex) row(p int32) []byte { return b.secs[secRecords][int(p)*recordSize:][:recordSize] }

func (b *baseIndex) step(p int32) int     { return int(int64(binary.LittleEndian.Uint64(b.row(p)))) }
func (b *baseIndex) tokens(p int32) int   { return int(int64(binary.LittleEndian.Uint64(b.row(p)[8:]))) }
func (b *baseIndex) evicted(p int32) bool { return b.row(p)[40]&1 != 0 }

func (b *baseIndex) summary(p int32) string {
	r := b.row(p)
	return string(b.slice(secSummaries, binary.LittleEndian.Uint64(r[24:]), uint64(binary.LittleEndian.Uint32(r[36:]))))
}

// find returns the position of a step by binary search of the record table.
func (b *baseIndex) find(step int) (int32, bool) {
	if b == nil {
		return 0, false
	}
	i := sort.Search(b.n, func(i int) bool { return b.step(int32(i)) >= step })
	return int32(i), i < b.n && b.step(int32(i)) == step
}

// entrySpan returns where position p's entry lies in the index file.
func (b *baseIndex) entrySpan(p int32) entrySpan {
	r := b.row(p)
	return entrySpan{int64(binary.LittleEndian.Uint64(r[16:])), binary.LittleEndian.Uint32(r[32:])}
}

// readEntry reads position p's entry bytes from the index file.
func (b *baseIndex) readEntry(p int32) ([]byte, error) {
	sp := b.entrySpan(p)
	buf := make([]byte, sp.n)
	if _, err := b.jsonf.ReadAt(buf, sp.off); err != nil {
		return nil, err
	}
	if len(buf) < 2 || buf[0] != '{' || buf[len(buf)-1] != '}' {
		return nil, errors.New("index cache: entry span does not hold an object")
	}
	return buf, nil
}

// record materialises position p from its entry in the index file. Should
// the entry not read or parse (the file changed in place under the same
// stamp), the record keeps the snapshot's fields only and no longer
// verifies, which hydrate and validate report.
func (b *baseIndex) record(ix *index, p int32) *record {
	step := b.step(p)
	if data, err := b.readEntry(p); err == nil {
		if v, err := canonjson.Decode(data); err == nil {
			if r, err := ix.recordFromDoc(strconv.Itoa(step), v); err == nil {
				return r
			}
		}
	}
	return &record{step: step, summary: b.summary(p), tokenEstimate: b.tokens(p), evicted: b.evicted(p),
		idents: []string{}, files: []string{}, commands: []string{}, errors: []string{}}
}

// copyEntry appends position p's entry bytes, as the index file holds them.
func (b *baseIndex) copyEntry(w io.Writer, p int32) error {
	data, err := b.readEntry(p)
	if err != nil {
		return fmt.Errorf("copying entry %d from %s: %w", b.step(p), b.jsonf.Name(), err)
	}
	w.Write(data)
	return nil
}

// jsonSize is the size in bytes of the index file (0 without a snapshot),
// to size buffers.
func (b *baseIndex) jsonSize() int {
	if b == nil {
		return 0
	}
	return int(binary.LittleEndian.Uint64(b.data[8:]))
}

// term returns dictionary term i (nil when corrupt).
func (b *baseIndex) term(i int) ([]byte, uint64, uint64) {
	row := b.slice(secTermTable, uint64(8*i), 16)
	if row == nil {
		return nil, 0, 0
	}
	le := binary.LittleEndian
	t0, t1 := uint64(le.Uint32(row)), uint64(le.Uint32(row[8:]))
	p0, p1 := uint64(le.Uint32(row[4:])), uint64(le.Uint32(row[12:]))
	if t1 < t0 || p1 < p0 {
		b.bad = true
		return nil, 0, 0
	}
	return b.slice(secTerms, t0, t1-t0), p0, p1 - p0
}

// appendPostings appends the base positions of term t (see index.appendPostings).
func (b *baseIndex) appendPostings(dst []int32, t string, summary bool) []int32 {
	if b == nil {
		return dst
	}
	i := sort.Search(b.nterms, func(i int) bool {
		s, _, _ := b.term(i)
		return string(s) >= t
	})
	if i == b.nterms {
		return dst
	}
	s, off, n := b.term(i)
	if string(s) != t || b.bad {
		return dst
	}
	return b.decodePostings(dst, b.slice(secPostings, off, n), summary)
}

// decodePostings appends one of the two position lists of a term's postings.
func (b *baseIndex) decodePostings(dst []int32, data []byte, summary bool) []int32 {
	for list := 0; list < 2; list++ {
		cnt, k := binary.Uvarint(data)
		if k <= 0 || cnt > uint64(len(data)) {
			b.bad = true
			return dst
		}
		data = data[k:]
		take := summary == (list == 1)
		p := int64(-1)
		for ; cnt > 0; cnt-- {
			var gap uint64
			if len(data) > 0 && data[0] < 0x80 {
				gap, data = uint64(data[0]), data[1:]
			} else {
				g, k := binary.Uvarint(data)
				if k <= 0 {
					b.bad = true
					return dst
				}
				gap, data = g, data[k:]
			}
			p += int64(gap)
			if take {
				if gap == 0 || p >= int64(b.n) {
					b.bad = true
					return dst
				}
				dst = append(dst, int32(p))
			}
		}
		if take {
			return dst
		}
	}
	return dst
}

// encodeCache renders the snapshot of ix for the index file with stamp st,
// whose entries lie at spans (by position). It reads the base snapshot's
// postings rather than re-extracting terms.
func (ix *index) encodeCache(st fileStamp, spans []entrySpan) ([]byte, error) {
	cp, err := ix.encodeCacheParts(st, spans, "")
	if err != nil {
		return nil, err
	}
	defer cp.release()
	return cp.bytes()
}

// encodeCacheParts is encodeCache as the parts of the file, in order (the
// head, the sections, the chunk checksums), which writeCache writes one
// after the other: the snapshot is not copied into one buffer.
//
// With spillDir set, the term table, terms and postings sections are kept
// in temporary files there when they reach CacheSpillBytes (see
// cacheSection); the caller releases them once the parts are written.
func (ix *index) encodeCacheParts(st fileStamp, spans []entrySpan, spillDir string) (cp *cacheParts, err error) {
	le := binary.LittleEndian
	order := ix.stepOrder()
	newPos := make([]int32, len(ix.recs))
	for np, p := range order {
		newPos[p] = int32(np)
	}
	var secs [cacheSecs]cacheSection
	cp = &cacheParts{}
	defer func() {
		if err != nil {
			cp.release()
			cp = nil
		}
	}()
	hdr, err := canonjson.Canonical(ix.header)
	if err != nil {
		return nil, err
	}
	secs[secHeader].Write(hdr)
	secs[secRecords].Grow(recordSize * len(order))
	row := make([]byte, recordSize)
	for _, p := range order {
		summary := ix.summaryAt(p)
		clear(row)
		le.PutUint64(row, uint64(int64(ix.stepAt(p))))
		le.PutUint64(row[8:], uint64(int64(ix.tokensAt(p))))
		le.PutUint64(row[16:], uint64(spans[p].off))
		le.PutUint64(row[24:], uint64(secs[secSummaries].Len()))
		le.PutUint32(row[32:], spans[p].n)
		le.PutUint32(row[36:], uint32(len(summary)))
		if ix.evictedAt(p) {
			row[40] = 1
		}
		secs[secRecords].Write(row)
		secs[secSummaries].WriteString(summary)
	}
	// Terms: the base dictionary (sorted) merged with the heap records'
	// terms, read from the records themselves (no postings map, no sorted
	// copy of the terms). A first pass counts the heap's terms, so
	// that the sections are sized once (growing by doubling left up to half
	// of each unused and copied the rest).
	heapTerms, heapBytes := 0, 0
	m := newHeapTermMerge(ix)
	for {
		t, ok := m.peek()
		if !ok {
			break
		}
		heapTerms, heapBytes = heapTerms+1, heapBytes+len(t)
		m.skip(t)
	}
	termBytes, tableBytes := ix.base.secLen(secTerms)+heapBytes, 8*(ix.base.termCount()+heapTerms+1)
	postBytes := ix.base.secLen(secPostings) + 4*heapTerms + 2*len(ix.recs)
	if spillDir != "" && termBytes+tableBytes+postBytes >= CacheSpillBytes {
		for _, sec := range []int{secTermTable, secTerms, secPostings} {
			if err := secs[sec].spill(spillDir); err != nil {
				return nil, err
			}
			cp.spill = append(cp.spill, &secs[sec])
		}
	}
	secs[secTerms].Grow(termBytes)
	secs[secTermTable].Grow(tableBytes)
	secs[secPostings].Grow(postBytes)
	var lists [2][]int32
	var buf []byte
	trow := make([]byte, 0, 8)                              // a term table row
	dfs := make([]uint32, 0, ix.base.termCount()+heapTerms) // by term number: nodes holding the term
	// emit writes term t: its base postings (baseTerm >= 0) and its heap
	// positions (node: matchable terms, sum: summary identifiers).
	emit := func(t string, baseTerm int, node, sum []int32) {
		trow = le.AppendUint32(le.AppendUint32(trow[:0], uint32(secs[secTerms].Len())), uint32(secs[secPostings].Len()))
		secs[secTermTable].Write(trow)
		secs[secTerms].WriteString(t)
		for k, summary := range []bool{false, true} {
			l := lists[k][:0]
			if baseTerm >= 0 {
				_, off, n := ix.base.term(baseTerm)
				l = ix.base.decodePostings(l, ix.base.slice(secPostings, off, n), summary)
			}
			if summary {
				l = append(l, sum...)
			} else {
				l = append(l, node...)
			}
			for i, p := range l {
				l[i] = newPos[p]
			}
			slices.Sort(l) // no allocation per term
			buf = binary.AppendUvarint(buf[:0], uint64(len(l)))
			prev := int32(-1)
			for _, p := range l {
				buf = binary.AppendUvarint(buf, uint64(p-prev))
				prev = p
			}
			secs[secPostings].Write(buf)
			lists[k] = l
			if !summary {
				dfs = append(dfs, uint32(len(l)))
			}
		}
	}
	m.restart()
	var hnode, hsum []int32
	heapOnly := func(below string, bounded bool) {
		for {
			t, ok := m.peek()
			if !ok || bounded && t >= below {
				return
			}
			hnode, hsum = m.take(t, hnode[:0], hsum[:0])
			emit(t, -1, hnode, hsum)
		}
	}
	for i := 0; i < ix.base.termCount(); i++ {
		bt, _, _ := ix.base.term(i)
		t := string(bt)
		heapOnly(t, true)
		hnode, hsum = hnode[:0], hsum[:0]
		if ht, ok := m.peek(); ok && ht == t {
			hnode, hsum = m.take(t, hnode, hsum)
		}
		emit(t, i, hnode, hsum)
	}
	heapOnly("", false)
	if ix.base.failed() {
		return nil, errors.New("index cache: the snapshot read is corrupt")
	}
	var end [8]byte
	le.PutUint32(end[:], uint32(secs[secTerms].Len()))
	le.PutUint32(end[4:], uint32(secs[secPostings].Len()))
	secs[secTermTable].Write(end[:])
	if secs[secTerms].Len() >= 1<<32 || secs[secPostings].Len() >= 1<<32 {
		return nil, errors.New("index cache: too large for 32-bit offsets")
	}
	for _, sec := range cp.spill {
		if err := sec.finish(); err != nil {
			return nil, err
		}
	}
	if err := writeDense(&secs[secDense].buf, dfs, &secs[secTermTable], &secs[secPostings], len(order)); err != nil {
		return nil, err
	}
	secs[secDense].n = secs[secDense].buf.Len()

	head := make([]byte, cacheHead)
	copy(head, cacheMagic)
	le.PutUint32(head[32:], cacheChunk)
	le.PutUint32(head[36:], cacheSecs)
	cp.parts = []cachePart{{b: head}}
	off := cacheHead
	for i := range secChunkCRCs {
		le.PutUint64(head[40+16*i:], uint64(off))
		le.PutUint64(head[48+16*i:], uint64(secs[i].Len()))
		cp.parts = append(cp.parts, secs[i].part())
		off += secs[i].Len()
	}
	crcs, err := chunkCRCsOf(cp.parts[1:], cacheChunk)
	if err != nil {
		return nil, err
	}
	le.PutUint64(head[40+16*secChunkCRCs:], uint64(off))
	le.PutUint64(head[48+16*secChunkCRCs:], uint64(len(crcs)))
	cp.parts = append(cp.parts, cachePart{b: crcs})
	le.PutUint32(head[cacheHead-8:], crc32.Checksum(crcs, crcTable))
	stampCache(head, st)
	return cp, nil
}

// chunkCRCs is the CRC-32C of every chunk bytes of the concatenation of
// parts (the last chunk may be shorter), as little-endian u32s.
func chunkCRCs(parts [][]byte, chunk int) []byte {
	var crcs []byte
	var crc uint32
	n := 0
	for _, p := range parts {
		for len(p) > 0 {
			k := min(chunk-n, len(p))
			crc = crc32.Update(crc, crcTable, p[:k])
			n, p = n+k, p[k:]
			if n == chunk {
				crcs = binary.LittleEndian.AppendUint32(crcs, crc)
				crc, n = 0, 0
			}
		}
	}
	if n > 0 {
		crcs = binary.LittleEndian.AppendUint32(crcs, crc)
	}
	return crcs
}

// secLen is the length of a section of the snapshot (0 without one).
func (b *baseIndex) secLen(sec int) int {
	if b == nil {
		return 0
	}
	return len(b.secs[sec])
}

// stampCache binds an encoded snapshot to the index file with stamp st (a
// snapshot can be encoded before its index file is written).
func stampCache(c []byte, st fileStamp) {
	le := binary.LittleEndian
	le.PutUint64(c[8:], uint64(st.size))
	le.PutUint64(c[16:], uint64(st.mtime.UnixNano()))
	le.PutUint64(c[24:], st.ino)
	le.PutUint32(c[cacheHead-4:], crc32.Checksum(c[:cacheHead-4], crcTable))
}

// writeDense writes section 6: the maxDense terms held by the most nodes
// (ties: the smaller term number) and every position's signature.
func writeDense(w *bytes.Buffer, dfs []uint32, table, postings *cacheSection, n int) error {
	var top []int // term numbers, by df descending
	for t, df := range dfs {
		if df == 0 || (len(top) == maxDense && df <= dfs[top[maxDense-1]]) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return dfs[top[i]] < df })
		if len(top) < maxDense {
			top = append(top, 0)
		}
		copy(top[i+1:], top[i:])
		top[i] = t
	}
	le := binary.LittleEndian
	sigs := make([]uint64, 2*n)
	b := &baseIndex{n: n}
	for f, t := range top {
		row, err := table.bytesAt(8*t, 16)
		if err != nil {
			return err
		}
		off, end := le.Uint32(row[4:]), le.Uint32(row[12:])
		post, err := postings.bytesAt(int(off), int(end-off))
		if err != nil {
			return err
		}
		for _, p := range b.decodePostings(nil, post, false) {
			sigs[2*int(p)+f/64] |= 1 << (f % 64)
		}
	}
	w.Write(le.AppendUint32(nil, uint32(len(top))))
	for _, t := range top {
		w.Write(le.AppendUint32(nil, uint32(t)))
	}
	for _, s := range sigs {
		w.Write(le.AppendUint64(nil, s))
	}
	return nil
}

// denseBit returns the signature bit of a dense term.
func (b *baseIndex) denseBit(t string) (uint, bool) {
	if b == nil {
		return 0, false
	}
	f, ok := b.dense[t]
	return f, ok
}

// denseSigs returns the signatures, verified (nil when corrupt or absent).
func (b *baseIndex) denseSigs() []byte {
	if b == nil || len(b.dense) == 0 {
		return nil
	}
	return b.slice(secDense, uint64(len(b.secs[secDense])-len(b.sigs)), uint64(len(b.sigs)))
}

func (b *baseIndex) termCount() int {
	if b == nil {
		return 0
	}
	return b.nterms
}

// readCache maps the first of the cache files at paths that was made for
// the index file f (stamp st) and opens its snapshot. The mapping and f are
// released when the index is collected.
func readCache(paths []string, st fileStamp, f *os.File) (*index, error) {
	err := errors.New("index cache: none")
	for _, p := range paths {
		data, unmap, merr := mmapfile.Map(p)
		if merr != nil {
			err = merr
			continue
		}
		ix, derr := decodeCache(data, st, f)
		if derr != nil {
			unmap()
			err = derr
			continue
		}
		runtime.AddCleanup(ix.base, func(f *os.File) { unmap(); f.Close() }, f)
		return ix, nil
	}
	return nil, err
}

// writeCache writes the snapshot durably (fsync before the rename, so that a
// present cache is whole). It is derived data: a failure costs only time.
// valid, when not nil, is asked just before the rename whether the snapshot
// is still wanted (a reader's cache must not replace a newer one).
func writeCache(dir string, data []byte, valid func() bool) error {
	return writeCacheParts(dir, &cacheParts{parts: []cachePart{{b: data}}}, valid)
}

// writeCacheParts is writeCache for a file given as consecutive parts.
func writeCacheParts(dir string, cp *cacheParts, valid func() bool) error {
	f, err := os.CreateTemp(dir, "."+IndexCacheFile+".tmp*")
	if err != nil {
		return err
	}
	for _, p := range cp.parts {
		if _, err = io.Copy(f, p.reader()); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && valid != nil && !valid() {
		err = errors.New("index cache: the index changed meanwhile")
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, IndexCacheFile))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
