package ranked

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// The ranked index is kept between processes in the per-user cache
// directory of the store (internal/cachedir), never inside the store, so
// that read-only commands stay read-only (CONF-08). The file is bound to
// what it was derived from: every document records its step and
// artifact_sha256, and the file records the store's index version; on load
// the index is refreshed against the store like an in-memory one (only new
// or changed nodes are read). A file that is truncated, corrupt or of
// another format version is a miss: the index is rebuilt from the cold
// nodes.
//
// Layout (little-endian; uvarint lengths): magic "cfrank2\n", the SHA-256
// of the rest, then the store version string, the vocabulary (count, then
// each term), and the documents (count, then each: step as zig-zag varint,
// artifact, tokens, length×1000, flags, summary, specific term ids, term
// ids with their frequencies).
const (
	cacheName  = "ranked-index.v2"
	cacheMagic = "cfrank2\n"
)

// cachePath returns the cache file of the store at dir ("" when the
// per-user cache is disabled).
func cachePath(dir string, create bool) string {
	d, err := cachedir.For(dir, create)
	if err != nil {
		return ""
	}
	return filepath.Join(d, cacheName)
}

type enc struct{ b []byte }

func (e *enc) u(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i(v int64)  { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) s(v string) { e.u(uint64(len(v))); e.b = append(e.b, v...) }
func (e *enc) bool(v bool) {
	if v {
		e.u(1)
	} else {
		e.u(0)
	}
}
func (e *enc) ids(v []int32) {
	e.u(uint64(len(v)))
	for _, x := range v {
		e.u(uint64(x))
	}
}

type dec struct {
	b   []byte
	bad bool
}

func (d *dec) u() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) s() string {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return ""
	}
	v := string(d.b[:n])
	d.b = d.b[n:]
	return v
}

// count reads a length and checks it against the bytes left (each element
// takes at least one byte).
func (d *dec) count() int {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return 0
	}
	return int(n)
}

// encode serialises the live documents. Callers hold ix.mu.
func (ix *Index) encode() []byte {
	// Only terms that a live doc holds are written, renumbered densely.
	remap := make([]int32, len(ix.post))
	for i := range remap {
		remap[i] = -1
	}
	var vocab []string
	byID := make([]string, len(ix.post))
	for t, id := range ix.vocab {
		byID[id] = t
	}
	perDoc := make([][][2]uint32, len(ix.docs))
	for tid, ps := range ix.post {
		for _, p := range ps {
			if ix.docs[p.doc].dead {
				continue
			}
			if remap[tid] < 0 {
				remap[tid] = int32(len(vocab))
				vocab = append(vocab, byID[tid])
			}
			perDoc[p.doc] = append(perDoc[p.doc], [2]uint32{uint32(remap[tid]), uint32(p.tf)})
		}
	}
	e := &enc{}
	e.s(ix.version)
	e.u(uint64(len(vocab)))
	for _, t := range vocab {
		e.s(t)
	}
	e.u(uint64(ix.live))
	for _, di := range ix.order {
		d := ix.docs[di]
		e.i(int64(d.step))
		e.s(d.artifact)
		e.i(int64(d.tokens))
		e.u(uint64(d.length * 1000))
		e.bool(d.question)
		e.bool(d.evicted)
		e.s(d.summary)
		var spec []int32
		for _, id := range d.specific {
			if remap[id] >= 0 {
				spec = append(spec, remap[id])
			}
		}
		e.ids(spec)
		e.u(uint64(len(perDoc[di])))
		for _, p := range perDoc[di] {
			e.u(uint64(p[0]))
			e.u(uint64(p[1]))
		}
	}
	sum := sha256.Sum256(e.b)
	return append(append([]byte(cacheMagic), sum[:]...), e.b...)
}

var errBadCache = errors.New("ranked: corrupt index cache")

// decodeIndex parses a cache file into a new index.
func decodeIndex(data []byte) (*Index, error) {
	if !bytes.HasPrefix(data, []byte(cacheMagic)) || len(data) < len(cacheMagic)+sha256.Size {
		return nil, errBadCache
	}
	body := data[len(cacheMagic)+sha256.Size:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(cacheMagic):len(cacheMagic)+sha256.Size]) {
		return nil, errBadCache
	}
	d := &dec{b: body}
	ix := NewIndex()
	version := d.s()
	nv := d.count()
	vocab := make([]string, nv)
	for i := range vocab {
		vocab[i] = d.s()
		ix.vocab[vocab[i]] = int32(i)
	}
	ix.post = make([][]posting, nv)
	nd := d.count()
	for i := 0; i < nd && !d.bad; i++ {
		doc := doc{step: int(d.i()), artifact: d.s(), tokens: int(d.i())}
		doc.length = float64(d.u()) / 1000
		doc.question = d.u() == 1
		doc.evicted = d.u() == 1
		doc.summary = d.s()
		ns := d.count()
		for j := 0; j < ns; j++ {
			if id := d.u(); id < uint64(nv) {
				doc.specific = append(doc.specific, int32(id))
			} else {
				d.bad = true
			}
		}
		nt := d.count()
		id := int32(len(ix.docs))
		for j := 0; j < nt; j++ {
			tid, tf := d.u(), d.u()
			if tid >= uint64(nv) || tf > 65535 {
				d.bad = true
				break
			}
			ix.post[tid] = append(ix.post[tid], posting{doc: id, tf: uint16(tf)})
		}
		if doc.length <= 0 {
			doc.length = 1
		}
		ix.docs = append(ix.docs, doc)
		ix.byStep[doc.step] = id
		ix.live++
		ix.total += doc.length
	}
	if d.bad || len(d.b) != 0 || len(ix.byStep) != len(ix.docs) {
		return nil, errBadCache
	}
	ix.reorder()
	ix.version = version
	return ix, nil
}

// load reads the store's cache file; nil when there is none or it is not
// usable.
func load(dir string) *Index {
	path := cachePath(dir, false)
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil
	}
	return ix
}

// save writes the cache file atomically (best effort: a failure costs only
// time on the next process). Callers hold ix.mu.
func (ix *Index) save(dir string) {
	path := cachePath(dir, true)
	if path == "" {
		return
	}
	_ = fsutil.WriteFileAtomic(path, ix.encode(), 0o600)
}
