package ranked

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/testgen"
)

func addTurns(ix *Index, turns []contextfold.Turn, salt string) {
	for _, t := range turns {
		ix.Add(t.StepID, fmt.Sprintf("%s%d", salt, t.StepID), 10+len(t.RawContent)/4, t.Summary, t.Summary+"\n"+t.RawContent)
	}
}

func reopen(t *testing.T, ix *Index) *Index {
	t.Helper()
	ix.mu.Lock()
	data, ok := ix.encodeSnapshot()
	ix.mu.Unlock()
	if !ok {
		t.Fatal("encode failed")
	}
	got, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameAnswers(t *testing.T, stage string, g testgen.Gen, want, got *Index) {
	t.Helper()
	p := DefaultParams()
	for i := range 400 {
		q := g.Prompt(i)
		if i%3 == 0 {
			q = g.Query(i)
		}
		if w, gg := want.Scan(q, p), got.Scan(q, p); !reflect.DeepEqual(w, gg) {
			t.Fatalf("%s: scan %q\nin memory %+v\nsnapshot  %+v", stage, q, w, gg)
		}
		if w, gg := want.Recall(q, p), got.Recall(q, p); !reflect.DeepEqual(w, gg) {
			t.Fatalf("%s: recall %q differs", stage, q)
		}
		if w, gg := want.Weights(q, p), got.Weights(q, p); !reflect.DeepEqual(w, gg) {
			t.Fatalf("%s: weights %q differ", stage, q)
		}
	}
	if want.Len() != got.Len() {
		t.Fatalf("%s: %d vs %d nodes", stage, want.Len(), got.Len())
	}
}

// The snapshot path answers exactly as the in-memory index: opened from a
// snapshot, with a delta of new and replaced nodes on top, and after a
// compaction of that delta.
func TestSnapshotMatchesInMemory(t *testing.T) {
	g := testgen.New(11)
	turns := g.SmallTurns(0, 2500)
	mem := NewIndex()
	addTurns(mem, turns, "a")
	snap := reopen(t, mem)
	if snap.snap == nil || snap.base != 2500 {
		t.Fatal("not a snapshot index")
	}
	sameAnswers(t, "snapshot", g, mem, snap)
	// A delta: new steps, and replaced ones (a new artifact for a step).
	more := g.SmallTurns(2500, 400)
	replaced := g.SmallTurns(0, 300)
	for i := range replaced {
		replaced[i].StepID = turns[i*7].StepID
	}
	addTurns(mem, more, "a")
	addTurns(snap, more, "a")
	addTurns(mem, replaced, "b")
	addTurns(snap, replaced, "b")
	sameAnswers(t, "snapshot+delta", g, mem, snap)
	// Compaction: the delta written into a new snapshot answers as an
	// index built afresh from the live nodes, and so does the in-memory
	// index with its replaced nodes (their postings are not counted).
	final := map[int]contextfold.Turn{}
	salt := map[int]string{}
	for _, set := range []struct {
		turns []contextfold.Turn
		salt  string
	}{{turns, "a"}, {more, "a"}, {replaced, "b"}} {
		for _, tr := range set.turns {
			final[tr.StepID], salt[tr.StepID] = tr, set.salt
		}
	}
	fresh := NewIndex()
	for _, st := range slices.Sorted(maps.Keys(final)) {
		addTurns(fresh, []contextfold.Turn{final[st]}, salt[st])
	}
	sameAnswers(t, "compacted", g, fresh, reopen(t, snap))
	sameAnswers(t, "replaced nodes vs fresh", g, fresh, mem)
}

// A snapshot that is corrupt where a query reads it (chunks are verified
// lazily) is a miss: the index is rebuilt from the store and the answer is
// the one a fresh index gives; a foreign or truncated file is not loaded.
func TestSnapshotCorruptionIsAMiss(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	g := testgen.New(5)
	if _, err := s.FoldBatch(g.SmallTurns(0, 400)); err != nil {
		t.Fatal(err)
	}
	ix := NewIndex()
	ix.dir = dir
	if err := ix.Refresh(s); err != nil {
		t.Fatal(err)
	}
	path := cachePath(dir, false)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no snapshot written: %v", err)
	}
	sf, err := openSnapshot(good)
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	queries := []string{g.Query(1), g.Query(2), g.Prompt(3)}
	var want []*Result
	for _, q := range queries {
		want = append(want, ix.Scan(q, p))
	}
	// Corrupt the dictionary entry every lookup probes first.
	bad := append([]byte(nil), good...)
	off := len(good) - len(sf.body) + sf.secOff[secTermOff] + 4*(sf.nterms/2)
	bad[off] ^= 0x5a
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	ix2 := load(dir)
	if ix2 == nil {
		t.Fatal("lazily verified chunk checked at open")
	}
	ix2.dir = dir
	if err := ix2.Refresh(s); err != nil || ix2.read != 0 {
		t.Fatalf("refresh: %v, read %d", err, ix2.read)
	}
	for i, q := range queries {
		if got := ix2.Scan(q, p); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("corrupt snapshot answered %q: %+v, want %+v", q, got, want[i])
		}
	}
	if ix2.read != 400 || ix2.snap != nil {
		t.Errorf("after corruption: read %d nodes, snapshot %v", ix2.read, ix2.snap != nil)
	}
	// The rebuilt index wrote a good snapshot again.
	if ix3 := load(dir); ix3 == nil || ix3.Len() != 400 {
		t.Error("no good snapshot after the rebuild")
	}
	// A flipped byte anywhere: never a panic, never another answer.
	for i := range 40 {
		bad := append([]byte(nil), good...)
		bad[(i*len(good))/40+i] ^= 0x21
		os.WriteFile(path, bad, 0o600)
		ix := load(dir)
		if ix == nil {
			continue
		}
		ix.dir = dir
		if err := ix.Refresh(s); err != nil {
			t.Fatal(err)
		}
		for j, q := range queries {
			if got := ix.Scan(q, p); !reflect.DeepEqual(got, want[j]) {
				t.Fatalf("byte %d flipped: %q answered %+v, want %+v", (i*len(good))/40+i, q, got, want[j])
			}
		}
	}
	for _, b := range [][]byte{good[:len(good)-1], good[:snapHead], append([]byte("cfrank2\n"), good[8:]...), nil} {
		os.WriteFile(path, b, 0o600)
		if load(dir) != nil {
			t.Errorf("a bad file (%d bytes) was loaded", len(b))
		}
	}
}

// concatSnapshot is the in-memory encoding save used before it streamed:
// the sections concatenated into one body, the chunk CRCs taken
// over that body, then header, chunk table and body in one slice.
func concatSnapshot(e *snapEncoding) []byte {
	var body []byte
	for _, s := range e.secs {
		body = append(body, s...)
	}
	var crcs []byte
	for lo := 0; lo < len(body); lo += snapChunk {
		crcs = le.AppendUint32(crcs, crc32.Checksum(body[lo:min(lo+snapChunk, len(body))], crcTable))
	}
	head := slices.Clone(e.head)
	le.PutUint32(head[snapHead-8:], crc32.Checksum(crcs, crcTable))
	le.PutUint32(head[snapHead-4:], crc32.Checksum(head[:snapHead-4], crcTable))
	return append(append(head, crcs...), body...)
}

// The snapshot save streams to its file has the bytes of the old in-memory
// encoding, for bodies of one chunk and of many (chunks spanning sections),
// decodes, and its identity is the file's.
func TestSnapshotStreamedEqualsInMemory(t *testing.T) {
	g := testgen.New(5)
	for _, n := range []int{0, 3, 4000} {
		ix := NewIndex()
		addTurns(ix, g.SmallTurns(0, n), "s")
		ix.mu.Lock()
		enc, ok := ix.buildSnapshot()
		ix.mu.Unlock()
		if !ok {
			t.Fatal("build failed")
		}
		want := concatSnapshot(enc)
		if n == 4000 && len(want) < 4*snapChunk {
			t.Fatalf("%d nodes: %d bytes, not several chunks", n, len(want))
		}
		path := filepath.Join(t.TempDir(), snapName)
		if err := fsutil.WriteFileAtomicFunc(path, 0o600, enc.writeTo); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d nodes: streamed file (%d bytes) differs from the in-memory encoding (%d bytes)", n, len(got), len(want))
		}
		if b := enc.bytes(); !bytes.Equal(b, want) {
			t.Fatalf("%d nodes: bytes() differs", n)
		}
		if enc.identity() != identityOf(want) || enc.size() != len(want) {
			t.Fatalf("%d nodes: identity %+v, file's %+v", n, enc.identity(), identityOf(want))
		}
		if _, err := decodeSnapshot(got); err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
	}
}

// A save whose write fails leaves the previous snapshot in place and no
// temporary file beside it.
func TestSnapshotStreamedWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, snapName)
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	ix := NewIndex()
	addTurns(ix, testgen.New(6).SmallTurns(0, 50), "f")
	ix.mu.Lock()
	enc, _ := ix.buildSnapshot()
	ix.mu.Unlock()
	boom := errors.New("disk full")
	err := fsutil.WriteFileAtomicFunc(path, 0o600, func(w io.Writer) error {
		return enc.writeTo(&failAfter{w: w, left: 100, err: boom})
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("the old snapshot was replaced: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

type failAfter struct {
	w    io.Writer
	left int
	err  error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, f.err
	}
	f.left -= len(p)
	return f.w.Write(p)
}

// varintEnds counts the bytes below 0x80 whatever the length and the
// alignment of the slice (the 8-byte step and the tail agree with a plain
// count).
func TestVarintEnds(t *testing.T) {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i*37 + i*i)
	}
	for lo := 0; lo < 9; lo++ {
		for hi := lo; hi <= len(b); hi += 7 {
			want := 0
			for _, c := range b[lo:hi] {
				if c < 0x80 {
					want++
				}
			}
			if got := varintEnds(b[lo:hi]); got != want {
				t.Fatalf("varintEnds(b[%d:%d]) = %d, want %d", lo, hi, got, want)
			}
		}
	}
}

// A fold adds its node to the cached posting lists of its terms rather
// than dropping them (insert): every list a scan cached is, after more
// folds and after replaced nodes, the list postings computes afresh, and
// the scans are those of the same index with nothing cached. Before, a
// fold dropped them, and the next scan of a 100k store decoded every
// common term's list from the snapshot again.
func TestPostingsCacheFollowsFolds(t *testing.T) {
	g := testgen.New(21)
	mem := NewIndex()
	addTurns(mem, g.SmallTurns(0, 1500), "a")
	ix := reopen(t, mem)
	p := DefaultParams()
	var prompts []string
	for i := range 20 {
		prompts = append(prompts, g.Prompt(i))
	}
	check := func(when string) {
		t.Helper()
		for _, pr := range prompts {
			ix.Scan(pr, p) // caches the prompt's lists
		}
		ix.mu.Lock()
		cached := maps.Clone(ix.pcache)
		if len(cached) == 0 {
			ix.mu.Unlock()
			t.Fatalf("%s: nothing cached", when)
		}
		want := map[int32][]posting{}
		for id := range cached {
			delete(ix.pcache, id)
			want[id] = ix.postings(id)
		}
		ix.mu.Unlock()
		for id, ps := range cached {
			if !slices.Equal(ps, want[id]) {
				t.Fatalf("%s: term %d: cached list of %d postings, computed %d", when, id, len(ps), len(want[id]))
			}
		}
	}
	check("opened")
	addTurns(ix, g.SmallTurns(1500, 60), "a")
	check("after 60 folds")
	replaced := g.SmallTurns(4000, 15)
	for i := range replaced {
		replaced[i].StepID = i * 37
	}
	addTurns(ix, replaced, "b")
	check("after replacing 15 nodes")
	addTurns(ix, g.SmallTurns(1560, 30), "a")
	check("after 30 more folds, with dead docs")
}

// The decoded postings an index keeps (pcache) stay within pcacheMax (or
// one list, when a single list is longer), and emptying the cache at the
// bound changes no scan.
func TestPostingsCacheBounded(t *testing.T) {
	g := testgen.New(22)
	mem := NewIndex()
	addTurns(mem, g.SmallTurns(0, 1500), "a")
	p := DefaultParams()
	var prompts []string
	for i := range 40 {
		prompts = append(prompts, g.Prompt(i))
	}
	scans := func(ix *Index) []string {
		var out []string
		for _, pr := range prompts {
			out = append(out, fmt.Sprint(ix.Scan(pr, p)))
		}
		return out
	}
	want := scans(reopen(t, mem))

	defer func(v int) { pcacheMax = v }(pcacheMax)
	pcacheMax = 3000
	ix := reopen(t, mem)
	got := scans(ix)
	if !slices.Equal(got, want) {
		t.Fatal("scans with the postings cache bounded differ from scans without a bound")
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	held, longest := 0, 0
	for _, ps := range ix.pcache {
		held += len(ps)
		longest = max(longest, len(ps))
	}
	if held != ix.pcount {
		t.Errorf("pcache holds %d postings, pcount says %d", held, ix.pcount)
	}
	if held > max(pcacheMax, longest) {
		t.Errorf("pcache holds %d postings, bound %d (longest list %d)", held, pcacheMax, longest)
	}
	if ix.pcount == 0 {
		t.Error("nothing cached: the test exercises no bound")
	}
}

// At its bound the postings cache drops the least recently used lists
// first: a list used again just before survives one used only earlier.
func TestPostingsCacheKeepsRecent(t *testing.T) {
	g := testgen.New(23)
	mem := NewIndex()
	addTurns(mem, g.SmallTurns(0, 1500), "a")
	ix := reopen(t, mem)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var ids []int32 // snapshot terms held by some nodes, by id
	for id := int32(0); id < ix.nterms && len(ids) < 40; id++ {
		if n := len(ix.rawPostings(id)); n >= 20 && n <= 400 {
			ids = append(ids, id)
		}
	}
	if len(ids) < 40 {
		t.Fatalf("only %d terms with 20-400 holders", len(ids))
	}
	defer func(v int) { pcacheMax = v }(pcacheMax)
	pcacheMax = 1 << 30
	for _, id := range ids[:20] {
		ix.postings(id)
	}
	ix.postings(ids[0])   // used again: the most recent of the first twenty
	pcacheMax = ix.pcount // the next list passes the bound
	ix.postings(ids[20])
	if _, ok := ix.pcache[ids[0]]; !ok {
		t.Error("the list used last before the bound was evicted")
	}
	if _, ok := ix.pcache[ids[1]]; ok {
		t.Error("the least recently used list survived the eviction")
	}
	held := 0
	for _, ps := range ix.pcache {
		held += len(ps)
	}
	if held != ix.pcount || held > pcacheMax {
		t.Errorf("pcache holds %d postings, pcount %d, bound %d", held, ix.pcount, pcacheMax)
	}
}

// Every posting list decodes from a snapshot to the list the index held
// when it wrote it, whatever the widths of its varints: one-byte deltas
// and frequencies (snapFile.postings' fast path), frequencies over 127,
// and gaps between holders of over 127 nodes, where the decoder takes
// binary.Uvarint.
func TestSnapshotPostingsDecode(t *testing.T) {
	const n = 3000
	mem := NewIndex()
	for d := range n {
		text := fmt.Sprintf("node%d", d%97)
		switch {
		case d%3 == 0 && d < 1500: // dense: one-byte deltas, tf 1..200
			text += strings.Repeat(" dense", 1+d%200)
		case d%211 == 0: // sparse: two-byte deltas
			text += " sparse sparse"
		}
		if d == 0 || d == n-1 { // a gap of n-1
			text += " farapart"
		}
		mem.Add(d, fmt.Sprint(d), 10, "s", text)
	}
	snap := reopen(t, mem)
	if snap.snap == nil {
		t.Fatal("not a snapshot index")
	}
	checked := 0
	for text, id := range mem.vocab {
		sid, ok := snap.termID(text)
		if !ok {
			t.Fatalf("term %q not in the snapshot", text)
		}
		want, got := mem.rawPostings(id), snap.snap.postings(int(sid))
		if snap.snap.bad || !slices.Equal(want, got) {
			t.Fatalf("term %q: %d postings decoded (bad %v), want %d", text, len(got), snap.snap.bad, len(want))
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d terms", checked)
	}
	for _, word := range []string{"dense", "sparse", "farapart"} {
		ps := mem.rawPostings(mem.vocab[Analyze(word)[0].Text])
		wide := false
		for i, p := range ps {
			wide = wide || p.tf > 127 || (i > 0 && p.doc-ps[i-1].doc > 128)
		}
		if !wide {
			t.Errorf("%q has no posting of a wide varint: the test checks nothing of the slow path", word)
		}
	}
}
