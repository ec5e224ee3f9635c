package ranked

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// The snapshot's delta file: what changed since the snapshot was written,
// as analysed nodes, so that a process opening the snapshot replays the
// changes instead of reading and analysing those cold nodes again (
// the ranked index kept incremental across processes; a fold appends one
// frame, it never rewrites the snapshot, which Refresh compacts when the
// delta reaches max(saveEvery, 1 %) nodes).
//
// Layout (little-endian): a header of deltaHead bytes — magic "cfrdlt1\n",
// the CRC-32C of the snapshot's header (its last four bytes) and the
// snapshot file's length, binding the delta to that one snapshot — then
// frames appended by Refresh, each one write(2) on a file opened O_APPEND:
//
//	frame   u32 payload length, u32 CRC-32C of the payload, payload
//	payload str base version, str version, uvarint records, records
//	record  0x01 add: varint step, varint tokens, u64 length (float64 bits),
//	        byte flags (1 question, 2 evicted), str artifact_sha256,
//	        str summary, uvarint terms, per term str text + uvarint tf,
//	        uvarint specific, per specific uvarint index into the terms
//	        0x02 drop: varint step
//	        0x03 eviction flag: varint step, byte evicted (0 or 1)
//	str     uvarint length, bytes
//
// A frame moves the index from the store index version "base" to
// "version". Replay starts at the snapshot's version and applies a frame
// only when its base is the version reached so far (frames written by
// processes that were behind are skipped), and stops at the first torn or
// corrupt frame: the index is then the store as of the last frame applied,
// and Refresh reads only what changed after it — never a wrong answer,
// at worst cold nodes read again.
const (
	deltaMagic = "cfrdlt1\n"
	deltaHead  = 8 + 4 + 8
	deltaAdd   = 1
	deltaDrop  = 2
	deltaFlag  = 3
)

// deltaPath is the delta file beside the snapshot at snapPath.
func deltaPath(snapPath string) string { return snapPath + ".delta" }

// snapIdentity is what binds a delta to its snapshot: the CRC-32C of the
// snapshot's header and the snapshot's length in bytes.
type snapIdentity struct {
	crc  uint32
	size uint64
}

func identityOf(data []byte) snapIdentity {
	if len(data) < snapHead {
		return snapIdentity{}
	}
	return snapIdentity{crc: le.Uint32(data[snapHead-4:]), size: uint64(len(data))}
}

func (id snapIdentity) header() []byte {
	h := make([]byte, deltaHead)
	copy(h, deltaMagic)
	le.PutUint32(h[8:], id.crc)
	le.PutUint64(h[12:], id.size)
	return h
}

// deltaRecord is one change: an analysed node added (replacing the step's
// doc, if any), a step dropped, or a step's eviction flag changed.
type deltaRecord struct {
	drop bool
	flag bool // only d.step and d.evicted
	d    doc  // step, tokens, evicted, artifact, summary
	a    analysed
}

// encodeFrame renders one frame moving the index from version base to
// version.
func encodeFrame(base, version string, recs []deltaRecord) []byte {
	p := make([]byte, 8, 256)
	str := func(s string) {
		p = binary.AppendUvarint(p, uint64(len(s)))
		p = append(p, s...)
	}
	str(base)
	str(version)
	p = binary.AppendUvarint(p, uint64(len(recs)))
	for _, r := range recs {
		if r.drop {
			p = append(p, deltaDrop)
			p = binary.AppendVarint(p, int64(r.d.step))
			continue
		}
		if r.flag {
			p = append(p, deltaFlag)
			p = binary.AppendVarint(p, int64(r.d.step))
			if r.d.evicted {
				p = append(p, 1)
			} else {
				p = append(p, 0)
			}
			continue
		}
		p = append(p, deltaAdd)
		p = binary.AppendVarint(p, int64(r.d.step))
		p = binary.AppendVarint(p, int64(r.d.tokens))
		p = le.AppendUint64(p, math.Float64bits(r.a.length))
		fl := byte(0)
		if r.a.question {
			fl |= 1
		}
		if r.d.evicted {
			fl |= 2
		}
		p = append(p, fl)
		str(r.d.artifact)
		str(r.d.summary)
		p = binary.AppendUvarint(p, uint64(len(r.a.terms)))
		nspec := 0
		for _, t := range r.a.terms {
			str(t.text)
			p = binary.AppendUvarint(p, uint64(t.tf))
			if t.specific {
				nspec++
			}
		}
		p = binary.AppendUvarint(p, uint64(nspec))
		for i, t := range r.a.terms {
			if t.specific {
				p = binary.AppendUvarint(p, uint64(i))
			}
		}
	}
	le.PutUint32(p, uint32(len(p)-8))
	le.PutUint32(p[4:], crc32.Checksum(p[8:], crcTable))
	return p
}

var errBadFrame = errors.New("ranked: bad delta frame")

// frameReader decodes a frame's payload.
type frameReader struct {
	b   []byte
	bad bool
}

func (r *frameReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *frameReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *frameReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *frameReader) str() string { return string(r.bytes(r.uvarint())) }

// decodeFrame parses a payload (its CRC already checked).
func decodeFrame(payload []byte) (base, version string, recs []deltaRecord, err error) {
	r := &frameReader{b: payload}
	base, version = r.str(), r.str()
	n := r.uvarint()
	if n > uint64(len(payload)) {
		return "", "", nil, errBadFrame
	}
	for range n {
		kind := r.bytes(1)
		if r.bad {
			break
		}
		var rec deltaRecord
		rec.d.step = int(r.varint())
		switch kind[0] {
		case deltaDrop:
			rec.drop = true
		case deltaFlag:
			rec.flag = true
			fl := r.bytes(1)
			if r.bad || fl[0] > 1 {
				return "", "", nil, errBadFrame
			}
			rec.d.evicted = fl[0] == 1
		case deltaAdd:
			rec.d.tokens = int(r.varint())
			lb := r.bytes(8)
			fl := r.bytes(1)
			if r.bad {
				return "", "", nil, errBadFrame
			}
			rec.a.length = math.Float64frombits(le.Uint64(lb))
			if fl[0] > 3 || !(rec.a.length >= 1) {
				return "", "", nil, errBadFrame
			}
			rec.a.question, rec.d.evicted = fl[0]&1 != 0, fl[0]&2 != 0
			rec.d.artifact, rec.d.summary = r.str(), r.str()
			nt := r.uvarint()
			if nt > uint64(len(r.b)) {
				return "", "", nil, errBadFrame
			}
			rec.a.terms = make([]analysedTerm, nt)
			for i := range rec.a.terms {
				rec.a.terms[i].text = r.str()
				rec.a.terms[i].tf = int(r.uvarint())
				if rec.a.terms[i].tf < 1 {
					return "", "", nil, errBadFrame
				}
			}
			ns := r.uvarint()
			if ns > nt {
				return "", "", nil, errBadFrame
			}
			for range ns {
				i := r.uvarint()
				if i >= nt {
					return "", "", nil, errBadFrame
				}
				rec.a.terms[i].specific = true
			}
		default:
			return "", "", nil, errBadFrame
		}
		if r.bad {
			return "", "", nil, errBadFrame
		}
		recs = append(recs, rec)
	}
	if r.bad || len(r.b) != 0 {
		return "", "", nil, errBadFrame
	}
	return base, version, recs, nil
}

// maxDeltaBytes bounds the delta file read: past it the delta is a miss
// (its nodes are read again from the store), its size costing no memory.
const maxDeltaBytes = 256 << 20

// replayDelta applies the delta file at path to ix, just opened from the
// snapshot of identity id: the frames that chain from the snapshot's
// version. It returns the records applied.
func (ix *Index) replayDelta(path string, id snapIdentity) int {
	data, err := fsutil.ReadFileMax(path, maxDeltaBytes) // not regular or too large: a miss
	if err != nil || len(data) < deltaHead || !bytes.Equal(data[:deltaHead], id.header()) {
		return 0
	}
	applied := 0
	cur := ix.version
	for off := deltaHead; off+8 <= len(data); {
		n := int(le.Uint32(data[off:]))
		if n > len(data)-off-8 {
			break // torn tail
		}
		payload := data[off+8 : off+8+n]
		if crc32.Checksum(payload, crcTable) != le.Uint32(data[off+4:]) {
			break
		}
		off += 8 + n
		base, version, recs, err := decodeFrame(payload)
		if err != nil {
			break
		}
		if base != cur {
			continue // written by a process that was behind: not on the chain
		}
		for _, r := range recs {
			d, ok := ix.stepDoc(r.d.step)
			if r.flag {
				if ok {
					ix.docs[d].evicted = r.d.evicted
				}
				continue
			}
			if ok {
				ix.kill(d)
			}
			if !r.drop {
				ix.insert(r.d, r.a)
			}
		}
		applied += len(recs)
		cur = version
	}
	if applied > 0 {
		ix.reorder()
	}
	ix.version = cur
	return applied
}

// appendDelta appends one frame to the delta of the snapshot ix is bound to
// (best effort: a failure costs only cold nodes read again by the next
// process). A delta file bound to another snapshot is left alone.
func (ix *Index) appendDelta(snapPath, base string, recs []deltaRecord) {
	if ix.snapID == (snapIdentity{}) || len(recs) == 0 {
		return
	}
	path := deltaPath(snapPath)
	head := ix.snapID.header()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			if _, err = f.Write(head); err != nil {
				f.Close()
				_ = os.Remove(path)
				return
			}
		} else if f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600); err != nil {
			return
		}
	} else if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return // a FIFO or device in its place is never written to
	}
	got := make([]byte, deltaHead)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, deltaHead), got); err != nil || !bytes.Equal(got, head) {
		return
	}
	_, _ = f.Write(encodeFrame(base, ix.version, recs))
}

// resetDelta starts an empty delta bound to the snapshot just written
// (identity id) at snapPath.
func resetDelta(snapPath string, id snapIdentity) {
	path := deltaPath(snapPath)
	if err := fsutil.WriteFileAtomic(path, id.header(), 0o600); err != nil {
		_ = os.Remove(path)
	}
}
