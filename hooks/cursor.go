package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// StateFile is the file of a store directory where the Stop hook keeps
// where it stopped reading the session's transcript, so that the next Stop
// reads only what was appended since (FoldTranscript). It holds no text of
// the transcript: offsets, counts, the transcript's fstat (size, times,
// inode), and SHA-256 digests (of the transcript's path, of its bytes
// before the offset, of its first and last 4 KiB before it, of record
// uuids and tool_use ids). Written atomically; deleting it costs one read
// of the whole transcript.
const StateFile = "hook_transcript.state"

// stateVersion is the layout of StateFile; another is read as no state.
const stateVersion = 1

// fingerprintBytes is how much of the transcript's start, and of its end
// before the offset, the state's digests cover: a transcript truncated,
// rewritten or replaced (another file at the path) no longer matches them.
const fingerprintBytes = 4096

// maxStateBytes bounds the state file read (a 512 MiB transcript of tiny
// records holds a few million uuids: 33 bytes each).
const maxStateBytes = 1 << 30

// recordBytes is the size of one binary record of the state: a kind, a
// 16-byte key, two big-endian int64.
const recordBytes = 1 + 16 + 8 + 8

// Record kinds of the state.
const (
	recUUID     = 'U' // key: the digest of a record's uuid
	recCall     = 'C' // key: the digest of a tool_use id; a, b: the line that made the call
	recSecret   = 'S' // key: the line of the call naming its tool (two int64, -1 none); a, b: a stored turn's line whose context reveals a secret
	recTooLarge = 'L' // a: the step id of a turn too large to fold; b: its payload's size
)

// lineRange is a line's bytes in the transcript: [start, end).
type lineRange struct{ start, end int64 }

var noLine = lineRange{-1, -1}

// secretLine is a stored turn whose context reveals a secret: its line,
// and the line of the tool call that names its tool (noLine: none).
type secretLine struct{ line, call lineRange }

// tooLarge is a turn not folded because its payload is past
// contextfold.MaxPayloadBytes.
type tooLarge struct {
	step int
	size int64
}

// transcriptState is where the Stop hook stopped reading a transcript
// (StateFile): the ingest cursor, the digests that tell an appended file
// from a rewritten one, and what the parse of the lines before the offset
// carries to the next (the uuids read, the tool calls by id), what the
// store learns from them (the lines of the turns revealing secrets, read
// again when new turns are folded) and the turns too large to fold.
type transcriptState struct {
	Version    int    `json:"version"`
	Transcript string `json:"transcript_sha256"` // of the transcript's path
	Offset     int64  `json:"offset"`
	Line       int    `json:"line"`
	Step       int    `json:"step"`
	Readable   bool   `json:"readable"`
	Head       string `json:"head_sha256"` // of the first min(offset, 4 KiB) bytes
	Tail       string `json:"tail_sha256"` // of the last min(offset, 4 KiB) bytes before offset
	Records    int    `json:"records"`     // binary records after the header line
	// Prefix is the digest of the bytes before Offset ("": a state
	// saved before it was kept; the first and last 4 KiB are checked).
	Prefix string `json:"prefix_sha256,omitempty"`
	// File is the transcript's fstat when the Stop that saved the state
	// opened it, before reading it: the same again says that the file is
	// untouched since, and its bytes before Offset are not read again.
	File fileStamp `json:"file"`
	// OpenKey is the private key the turns folded before Offset left
	// open (nil: none): the next Stop's store redacts its rest. No part
	// of the key, a step and a count.
	OpenKey *contextfold.OpenKey `json:"open_key,omitempty"`

	prefix   hash.Hash // the digest of the bytes before Offset, as this Stop read them; nil: not read (the file is untouched)
	raw      []byte    // the records, as read
	seen     map[[16]byte]bool
	calls    map[[16]byte]lineRange
	secrets  []secretLine
	tooLarge []tooLarge
}

// fileStamp is what fstat says of a file: any write to it, a rename over
// it, a truncation or a chmod changes it (the change time; on Linux since
// 6.13 a change just after a stat is given a finer time than the stat
// saw). The zero value is unknown: equal to none.
type fileStamp struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns,omitempty"`
	Dev   uint64 `json:"dev,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
}

// same reports whether s and o are the same known stamp.
func (s fileStamp) same(o fileStamp) bool { return s != fileStamp{} && s == o }

// transcriptStamp is the stamp of the file src reads (unknown when it
// reads no file).
func transcriptStamp(src *io.SectionReader) fileStamp {
	r, _, _ := src.Outer()
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			return stampOf(fi)
		}
	}
	return fileStamp{}
}

// prefixDigest writes the bytes [from, to) of src to h (a new SHA-256
// when nil), and returns it.
func prefixDigest(h hash.Hash, src io.ReaderAt, from, to int64) (hash.Hash, error) {
	if h == nil {
		h = sha256.New()
	}
	buf := make([]byte, min(1<<20, max(to-from, 1)))
	if _, err := io.CopyBuffer(h, io.NewSectionReader(src, from, to-from), buf); err != nil {
		return nil, err
	}
	return h, nil
}

func digest16(s string) [16]byte {
	h := sha256.Sum256([]byte(s))
	return [16]byte(h[:16])
}

func hexDigest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// appendRecord appends one binary record to b.
func appendRecord(b []byte, kind byte, key [16]byte, x, y int64) []byte {
	b = append(b, kind)
	b = append(b, key[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(x))
	return binary.BigEndian.AppendUint64(b, uint64(y))
}

// rangeKey packs a line range into a record's key.
func rangeKey(r lineRange) [16]byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:8], uint64(r.start))
	binary.BigEndian.PutUint64(k[8:], uint64(r.end))
	return k
}

// fingerprint returns the digests of the first and of the last
// fingerprintBytes of src before off.
func fingerprint(src io.ReaderAt, off int64) (head, tail string, err error) {
	n := min(off, fingerprintBytes)
	buf := make([]byte, n)
	if _, err := src.ReadAt(buf, 0); err != nil && !(err == io.EOF && n == 0) {
		return "", "", err
	}
	head = hexDigest(buf)
	if _, err := src.ReadAt(buf, off-n); err != nil && !(err == io.EOF && n == 0) {
		return "", "", err
	}
	return head, hexDigest(buf), nil
}

// loadState returns the state of dir for the transcript at path, open as
// src with the stamp now, or nil when there is none usable: no file,
// another layout or transcript, a damaged file, or a transcript that is no
// longer the one read to the state's offset with bytes appended (shorter,
// or its bytes before the offset changed: truncated, rewritten anywhere,
// rotated). Those bytes are read again (their digest) unless the file is
// untouched since the state was saved (now is its stamp then): about
// 0.2 s for 100 MB.
func loadState(dir, path string, src *io.SectionReader, now fileStamp) *transcriptState {
	data, err := fsutil.ReadFileMax(filepath.Join(dir, StateFile), maxStateBytes)
	if err != nil {
		return nil
	}
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return nil
	}
	var st transcriptState
	if err := json.Unmarshal(data[:i], &st); err != nil || st.Version != stateVersion || st.Transcript != hexDigest([]byte(path)) {
		return nil
	}
	st.raw = data[i+1:]
	if st.Records < 0 || len(st.raw) != st.Records*recordBytes || st.Offset < 0 || st.Offset > src.Size() {
		return nil
	}
	head, tail, err := fingerprint(src, st.Offset)
	if err != nil || head != st.Head || tail != st.Tail {
		return nil
	}
	if st.Prefix != "" && !now.same(st.File) {
		h, err := prefixDigest(nil, src, 0, st.Offset)
		if err != nil || hex.EncodeToString(h.Sum(nil)) != st.Prefix {
			return nil
		}
		st.prefix = h
	}
	for r := st.raw; len(r) > 0; r = r[recordBytes:] {
		switch r[0] {
		case recUUID, recCall, recSecret:
		case recTooLarge:
			st.tooLarge = append(st.tooLarge, tooLarge{step: int(binary.BigEndian.Uint64(r[17:25])), size: int64(binary.BigEndian.Uint64(r[25:33]))})
		default:
			return nil
		}
	}
	return &st
}

// decode fills st's uuids, tool calls and secret lines from its records:
// only a Stop that has lines to read needs them.
func (st *transcriptState) decode() {
	st.seen = map[[16]byte]bool{}
	st.calls = map[[16]byte]lineRange{}
	for r := st.raw; len(r) > 0; r = r[recordBytes:] {
		key := [16]byte(r[1:17])
		x, y := int64(binary.BigEndian.Uint64(r[17:25])), int64(binary.BigEndian.Uint64(r[25:33]))
		switch r[0] {
		case recUUID:
			st.seen[key] = true
		case recCall:
			st.calls[key] = lineRange{x, y}
		case recSecret:
			call := lineRange{int64(binary.BigEndian.Uint64(key[:8])), int64(binary.BigEndian.Uint64(key[8:]))}
			st.secrets = append(st.secrets, secretLine{line: lineRange{x, y}, call: call})
		}
	}
}

// cursor is the ingest cursor of st, reading the lines of src before its
// offset for the tool calls they made; a call that cannot be read again
// sets *stale.
func (st *transcriptState) cursor(src *io.SectionReader, stale *bool) ingest.ClaudeCodeCursor {
	if src.Size() > st.Offset {
		st.decode()
	}
	return ingest.ClaudeCodeCursor{
		Offset: st.Offset, Line: st.Line, Step: st.Step, Readable: st.Readable,
		Seen: func(uuid string) bool { return st.seen[digest16(uuid)] },
		Tool: func(id string) (string, string, bool) {
			at, ok := st.calls[digest16(id)]
			if !ok {
				return "", "", false
			}
			name, command, ok := toolCallAt(src, at, id)
			if !ok {
				*stale = true
			}
			return name, command, ok
		},
	}
}

// toolCallAt returns the tool call with id that the line at r of src
// makes; ok is false when it makes none (the file changed).
func toolCallAt(src io.ReaderAt, r lineRange, id string) (name, command string, ok bool) {
	line, err := readLine(src, r)
	if err != nil {
		return "", "", false
	}
	return ingest.ClaudeCodeToolCall(line, id)
}

// readLine reads the line at r of src, without its newline.
func readLine(src io.ReaderAt, r lineRange) ([]byte, error) {
	if r.start < 0 || r.end < r.start || r.end-r.start > ingest.MaxTranscriptBytes {
		return nil, errStale
	}
	buf := make([]byte, r.end-r.start)
	if _, err := src.ReadAt(buf, r.start); err != nil {
		return nil, errStale
	}
	return bytes.TrimSuffix(buf, []byte{'\n'}), nil
}

// errStale says that the lines the state points to are no longer what
// they were: the transcript is read again whole.
var errStale = errors.New("hooks: the transcript's state is stale")

// saveState writes st (its cursor at, the records raw, the key left open)
// for the transcript
// at path, open as src with the stamp now, atomically. h, when not nil, is
// the digest of src's bytes before hashed (the last state's offset), as
// read by this Stop: only the bytes after are read for the new one.
func saveState(dir, path string, src io.ReaderAt, now fileStamp, h hash.Hash, hashed int64, at ingest.ClaudeCodeCursor, raw []byte, open *contextfold.OpenKey) error {
	head, tail, err := fingerprint(src, at.Offset)
	if err != nil {
		return err
	}
	if h == nil {
		hashed = 0
	}
	if h, err = prefixDigest(h, src, hashed, at.Offset); err != nil {
		return err
	}
	st := transcriptState{Version: stateVersion, Transcript: hexDigest([]byte(path)), Offset: at.Offset, Line: at.Line,
		Step: at.Step, Readable: at.Readable, Head: head, Tail: tail, Records: len(raw) / recordBytes,
		Prefix: hex.EncodeToString(h.Sum(nil)), File: now, OpenKey: open}
	hdr, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomicFunc(filepath.Join(dir, StateFile), 0o600, func(w io.Writer) error {
		if _, err := w.Write(append(hdr, '\n')); err != nil {
			return err
		}
		_, err := w.Write(raw)
		return err
	})
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
