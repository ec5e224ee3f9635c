package contextfold

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold/internal/canonjson"
)

// IndexCacheFile is a binary snapshot of a large recall_index.json (our
// extension), written next to it by every full index write of at least
// IndexCacheThreshold bytes. It is bound to the exact index file it was made
// from (size, modification time, inode) and checksummed (CRC-32C), so a stale
// or torn cache is ignored and the JSON is parsed instead. It lets a one-shot
// command load a 100k-node index in milliseconds rather than seconds.
const IndexCacheFile = "recall_index.cache"

// IndexCacheThreshold is the index size in bytes from which the cache is
// kept (a variable for tests).
var IndexCacheThreshold int64 = 1 << 20

var cacheMagic = []byte("CFIDXv1\n")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type cacheWriter struct{ bytes.Buffer }

func (w *cacheWriter) uvarint(v uint64) { w.Write(binary.AppendUvarint(nil, v)) }
func (w *cacheWriter) varint(v int64)   { w.Write(binary.AppendVarint(nil, v)) }
func (w *cacheWriter) str(s string)     { w.uvarint(uint64(len(s))); w.WriteString(s) }
func (w *cacheWriter) strs(ss []string) {
	w.uvarint(uint64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}
func (w *cacheWriter) ids(ids []uint32) {
	w.uvarint(uint64(len(ids)))
	for _, id := range ids {
		w.uvarint(uint64(id))
	}
}

// encodeCache renders the snapshot of ix for the index file with stamp st.
func (ix *index) encodeCache(st fileStamp) ([]byte, error) {
	var w cacheWriter
	w.Write(cacheMagic)
	w.uvarint(uint64(st.size))
	w.varint(st.mtime.UnixNano())
	w.uvarint(st.ino)
	hdr, err := canonjson.Canonical(ix.header)
	if err != nil {
		return nil, err
	}
	w.str(string(hdr))
	w.strs(ix.dict.terms)
	w.uvarint(uint64(len(ix.recs)))
	var cold cacheWriter
	for _, r := range ix.recs {
		ix.full(r)
		w.varint(int64(r.step))
		w.varint(int64(r.tokenEstimate))
		if r.evicted {
			w.WriteByte(1)
		} else {
			w.WriteByte(0)
		}
		w.str(r.summary)
		w.ids(r.terms)
		w.ids(r.summaryTerms)
		cold.Reset()
		cold.str(r.payload)
		cold.str(r.projection)
		cold.str(r.artifact)
		cold.str(r.filePath)
		cold.str(r.foldedAt)
		cold.ids(r.idents)
		cold.strs(r.files)
		cold.strs(r.commands)
		cold.strs(r.errors)
		extra := ""
		if r.extra != nil {
			c, err := canonjson.Canonical(r.extra)
			if err != nil {
				return nil, err
			}
			extra = string(c)
		}
		cold.str(extra)
		w.str(cold.String())
	}
	sum := crc32.Checksum(w.Bytes(), crcTable)
	w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return w.Bytes(), nil
}

type cacheReader struct {
	b   []byte
	err error
}

var errCacheShort = errors.New("index cache: truncated")

func (r *cacheReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCacheShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCacheShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) bytesN() []byte {
	n := r.uvarint()
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errCacheShort
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *cacheReader) str() string { return string(r.bytesN()) }

func (r *cacheReader) strs() []string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCacheShort
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *cacheReader) ids(max int) []uint32 {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCacheShort
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		v := r.uvarint()
		if v >= uint64(max) {
			r.err = errors.New("index cache: term id out of range")
			return nil
		}
		out[i] = uint32(v)
	}
	return out
}

func (r *cacheReader) byte1() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errCacheShort
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// decodeCache reads a snapshot made for the index file with stamp st. Cold
// fields stay encoded until a record is materialised.
func decodeCache(data []byte, st fileStamp) (*index, error) {
	if len(data) < len(cacheMagic)+4 || !bytes.Equal(data[:len(cacheMagic)], cacheMagic) {
		return nil, errors.New("index cache: not a cache file")
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, errors.New("index cache: checksum mismatch")
	}
	r := &cacheReader{b: body[len(cacheMagic):]}
	if int64(r.uvarint()) != st.size || r.varint() != st.mtime.UnixNano() || r.uvarint() != st.ino || r.err != nil {
		return nil, errors.New("index cache: made for another index file")
	}
	hv, err := canonjson.Decode(r.bytesN())
	if err != nil {
		return nil, fmt.Errorf("index cache: header: %v", err)
	}
	ix := newIndex("")
	ix.header, _ = hv.(map[string]any)
	terms := r.strs()
	ix.dict.terms = terms
	ix.dict.ids = make(map[string]uint32, len(terms))
	for i, t := range terms {
		ix.dict.ids[t] = uint32(i)
	}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		return nil, errCacheShort
	}
	ix.recs = make([]*record, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		rec := &record{}
		rec.step = int(r.varint())
		rec.tokenEstimate = int(r.varint())
		rec.evicted = r.byte1() == 1
		rec.summary = r.str()
		rec.terms = r.ids(len(terms))
		rec.summaryTerms = r.ids(len(terms))
		rec.cold = r.bytesN()
		if r.err == nil {
			ix.add(rec)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return ix, nil
}

// full decodes the cold fields of a record loaded from the cache. A cache
// that passed its checksum decodes; should it not, the fields stay empty and
// the record no longer verifies, which hydrate and validate report.
func (ix *index) full(rec *record) {
	if rec.cold == nil {
		return
	}
	r := &cacheReader{b: rec.cold}
	rec.cold = nil
	rec.payload = r.str()
	rec.projection = r.str()
	rec.artifact = r.str()
	rec.filePath = r.str()
	rec.foldedAt = r.str()
	rec.idents = r.ids(len(ix.dict.terms))
	rec.files = r.strs()
	rec.commands = r.strs()
	rec.errors = r.strs()
	if extra := r.bytesN(); len(extra) > 0 {
		if v, err := canonjson.Decode(extra); err == nil {
			rec.extra, _ = v.(map[string]any)
		}
	}
}

// writeCache writes the snapshot without fsync: it is derived data, bound to
// its index file and checksummed, so a lost or torn cache costs only time.
func writeCache(dir string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+IndexCacheFile+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, IndexCacheFile)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
