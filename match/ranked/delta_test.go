package ranked

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
)

// TestReplacedNodesDoNotCountAsCommon: an index in which nodes were
// replaced answers exactly as one built from the final nodes alone. The
// Common filter (a term held by over Common × N live nodes only scores the
// candidates found by rarer terms) must count the live holders of a term,
// not the postings a replaced node left behind: here "zircon" is in 35 % of
// the nodes before 10 % of them are replaced by text without it (25 %
// after), so only a filter that counts dead postings treats it as common.
func TestReplacedNodesDoNotCountAsCommon(t *testing.T) {
	const n = 2400
	text := func(i int, zircon bool) string {
		s := fmt.Sprintf("node%d handled quokka%d request on worker%d", i, i%7, i%13)
		if zircon {
			s += " zircon"
		}
		return s
	}
	final := NewIndex()
	replaced := NewIndex()
	for i := range n {
		replaced.Add(i, fmt.Sprint("a", i), 20, fmt.Sprint("turn ", i), text(i, i < 840))
	}
	for i := range 240 { // the first 240 zircon nodes lose the term
		replaced.Add(i, fmt.Sprint("b", i), 20, fmt.Sprint("turn ", i), text(i, false))
	}
	for i := range n {
		art := fmt.Sprint("a", i)
		if i < 240 {
			art = fmt.Sprint("b", i)
		}
		final.Add(i, art, 20, fmt.Sprint("turn ", i), text(i, i >= 240 && i < 840))
	}
	p := DefaultParams()
	for _, q := range []string{"zircon quokka3", "zircon worker5 request", "which node had zircon and quokka2?", "zircon node700"} {
		w, g := final.Scan(q, p), replaced.Scan(q, p)
		if !reflect.DeepEqual(w, g) {
			t.Errorf("scan %q: fresh index %+v\nwith replaced nodes %+v", q, w, g)
		}
		if w, g := final.Recall(q, p), replaced.Recall(q, p); !reflect.DeepEqual(w, g) {
			t.Errorf("recall %q differs", q)
		}
	}
}

// A new process replays the snapshot's delta instead of reading the nodes
// folded since the snapshot: process B reads the 5 new cold nodes and
// appends them to the delta; process C reads none and answers as an index
// built from the store afresh. The snapshot itself is rewritten only when
// the delta reaches saveEvery nodes (compaction), which empties the delta.
func TestDeltaSparesTheNextProcessTheNewNodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	g := testgen.New(5)
	if _, err := s.FoldBatch(g.SmallTurns(0, 300)); err != nil {
		t.Fatal(err)
	}
	process := func() *Index {
		t.Helper()
		ix := load(dir)
		if ix == nil {
			ix = NewIndex()
		}
		ix.dir = dir
		if err := ix.Refresh(s); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	if a := process(); a.read != 300 {
		t.Fatalf("first process read %d nodes", a.read)
	}
	snapPath := cachePath(dir, false)
	snapBytes, _ := os.ReadFile(snapPath)
	fold := func(from, n int) {
		t.Helper()
		for _, tr := range g.SmallTurns(from, n) {
			if _, err := s.Fold(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	fold(300, 5)
	if b := process(); b.read != 5 {
		t.Fatalf("process B read %d nodes, want the 5 new ones", b.read)
	}
	if _, err := s.Evict(302); err != nil {
		t.Fatal(err)
	}
	fold(305, 3)
	if c := process(); c.read != 3 {
		t.Fatalf("process C read %d nodes, want the 3 new ones", c.read)
	}
	d := process()
	if d.read != 0 {
		t.Fatalf("process D read %d nodes, want none", d.read)
	}
	if now, _ := os.ReadFile(snapPath); !bytes.Equal(now, snapBytes) {
		t.Fatal("a fold rewrote the snapshot before the delta reached saveEvery nodes")
	}
	fresh := NewIndex()
	if err := fresh.Refresh(s); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "replayed delta", g, fresh, d)
	// Compaction: enough folds rewrite the snapshot and empty the delta.
	fold(308, saveEvery)
	e := process()
	if e.read != saveEvery || e.unsaved != 0 {
		t.Fatalf("compacting process read %d, unsaved %d", e.read, e.unsaved)
	}
	if dl, err := os.ReadFile(deltaPath(snapPath)); err != nil || len(dl) != deltaHead {
		t.Fatalf("delta after compaction: %d bytes, %v", len(dl), err)
	}
	f := process()
	fresh = NewIndex()
	if err := fresh.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if f.read != 0 {
		t.Fatalf("after compaction a process read %d nodes", f.read)
	}
	sameAnswers(t, "compacted", g, fresh, f)
}

// The delta is never a wrong answer: a frame that does not chain from the
// version reached (written by a process that was behind) is skipped, a torn
// or corrupt frame ends the replay, and a delta bound to another snapshot
// is ignored; whatever is not replayed is read from the cold nodes.
func TestDeltaChainTornAndForeign(t *testing.T) {
	g := testgen.New(9)
	turns := g.SmallTurns(0, 400)
	mem := NewIndex()
	addTurns(mem, turns, "a")
	mem.mu.Lock()
	data, _ := mem.encodeSnapshot()
	mem.mu.Unlock()
	snap, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	snap.version = "v0"
	id := identityOf(data)
	rec := func(tr contextfold.Turn, salt string) deltaRecord {
		return deltaRecord{d: doc{step: tr.StepID, artifact: fmt.Sprintf("%s%d", salt, tr.StepID), tokens: 10 + len(tr.RawContent)/4, summary: tr.Summary},
			a: analyseDoc(tr.Summary + "\n" + tr.RawContent)}
	}
	more := g.SmallTurns(400, 20)
	replaced := g.SmallTurns(0, 10)
	for i := range replaced {
		replaced[i].StepID = turns[i*3].StepID
	}
	var f1, f2 []deltaRecord
	for _, tr := range more[:10] {
		f1 = append(f1, rec(tr, "a"))
	}
	for _, tr := range replaced {
		f1 = append(f1, rec(tr, "b"))
	}
	f1 = append(f1, deltaRecord{drop: true, d: doc{step: turns[1].StepID}}, deltaRecord{flag: true, d: doc{step: turns[2].StepID, evicted: true}})
	for _, tr := range more[10:] {
		f2 = append(f2, rec(tr, "a"))
	}
	stale := []deltaRecord{{drop: true, d: doc{step: turns[5].StepID}}} // based on an older version: must be skipped
	file := append(id.header(), encodeFrame("v0", "v1", f1)...)
	file = append(file, encodeFrame("v-old", "v9", stale)...)
	file = append(file, encodeFrame("v1", "v2", f2)...)
	path := filepath.Join(t.TempDir(), "snap.delta")
	replay := func(b []byte, id snapIdentity) *Index {
		t.Helper()
		ix, err := decodeSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		ix.version = "v0"
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		ix.replayDelta(path, id)
		return ix
	}
	addTurns(mem, more, "a")
	addTurns(mem, replaced, "b")
	if d, ok := mem.stepDoc(turns[1].StepID); ok {
		mem.kill(d)
		mem.reorder()
	}
	if d, ok := mem.stepDoc(turns[2].StepID); ok {
		mem.docs[d].evicted = true
	}
	got := replay(file, id)
	if got.version != "v2" || got.Len() != mem.Len() {
		t.Fatalf("replayed to %q with %d nodes, want v2 and %d", got.version, got.Len(), mem.Len())
	}
	sameAnswers(t, "replayed", g, mem, got)
	// Torn inside the last frame: replay stops at v1.
	if got := replay(file[:len(file)-5], id); got.version != "v1" || got.Len() != 400+10-1 {
		t.Fatalf("torn: %q, %d nodes", got.version, got.Len())
	}
	// A flipped byte in the first frame: nothing replayed.
	bad := bytes.Clone(file)
	bad[deltaHead+20] ^= 0xff
	if got := replay(bad, id); got.version != "v0" || got.Len() != 400 {
		t.Fatalf("corrupt: %q, %d nodes", got.version, got.Len())
	}
	// Bound to another snapshot: ignored.
	if got := replay(file, snapIdentity{crc: id.crc + 1, size: id.size}); got.version != "v0" || got.Len() != 400 {
		t.Fatalf("foreign: %q, %d nodes", got.version, got.Len())
	}
	// Every decoder path refuses damaged payloads without a panic.
	payload := encodeFrame("v0", "v1", f1)[8:]
	for i := range payload {
		for _, cut := range []bool{false, true} {
			p := bytes.Clone(payload)
			if cut {
				p = p[:i]
			} else {
				p[i] ^= 0x5a
			}
			decodeFrame(p)
		}
	}
}

// An index that defers its saves (DeferSaves, as the proxy's) writes no
// snapshot when a refresh finds one due: the changes go to the delta, and
// Compact writes the snapshot later, after which a new process reads
// nothing and answers as an index built afresh. Without DeferSaves the
// same refresh rewrites the snapshot at once.
func TestDeferredSavesWaitForCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	g := testgen.New(7)
	if _, err := s.FoldBatch(g.SmallTurns(0, 300)); err != nil {
		t.Fatal(err)
	}
	ix := NewIndex()
	ix.dir = dir
	if err := ix.Refresh(s); err != nil { // a first build: written at once
		t.Fatal(err)
	}
	snapPath := cachePath(dir, false)
	snapBytes, err := os.ReadFile(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	ix.DeferSaves()
	if _, err := s.FoldBatch(g.SmallTurns(300, 2*saveEvery)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(snapPath); !bytes.Equal(now, snapBytes) {
		t.Fatal("a refresh of an index deferring its saves rewrote the snapshot")
	}
	if !ix.CompactDue() {
		t.Fatal("no compaction is due after 2×saveEvery new nodes")
	}
	if dl, _ := os.ReadFile(deltaPath(snapPath)); len(dl) <= deltaHead {
		t.Fatalf("the deferred changes are not in the delta (%d bytes)", len(dl))
	}
	ix.Compact()
	if ix.CompactDue() {
		t.Fatal("still due after Compact")
	}
	if now, _ := os.ReadFile(snapPath); bytes.Equal(now, snapBytes) {
		t.Fatal("Compact did not rewrite the snapshot")
	}
	checkCompacted(t, "compacted snapshot", dir, snapPath, s, g)

	// The same refresh without DeferSaves writes the snapshot itself.
	plain := load(dir)
	plain.dir = dir
	if err := plain.Refresh(s); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(snapPath)
	if _, err := s.FoldBatch(g.SmallTurns(300+2*saveEvery, 2*saveEvery)); err != nil {
		t.Fatal(err)
	}
	if err := plain.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(snapPath); bytes.Equal(now, before) || plain.CompactDue() {
		t.Fatal("an index not deferring its saves left the snapshot to Compact")
	}
}

// A refresh that changes the index while Compact writes its files (without
// the index's lock) makes Compact drop them: the snapshot on disk and its
// delta, which holds the refresh's changes, stay as they were, no
// temporary file is left, the compaction stays due, and the next Compact
// writes a snapshot from which a new process reads nothing and answers as
// an index built afresh.
func TestCompactRacedByRefresh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	g := testgen.New(11)
	if _, err := s.FoldBatch(g.SmallTurns(0, 300)); err != nil {
		t.Fatal(err)
	}
	ix := NewIndex()
	ix.dir = dir
	if err := ix.Refresh(s); err != nil { // a first build: written at once
		t.Fatal(err)
	}
	ix.DeferSaves()
	if _, err := s.FoldBatch(g.SmallTurns(300, 2*saveEvery)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if !ix.CompactDue() {
		t.Fatal("no compaction is due after 2×saveEvery new nodes")
	}
	snapPath := cachePath(dir, false)
	snapBytes, _ := os.ReadFile(snapPath)
	var deltaBytes []byte
	defer func() { compactWritten = nil }()
	compactWritten = func() {
		compactWritten = nil
		if _, err := s.FoldBatch(g.SmallTurns(300+2*saveEvery, 3)); err != nil {
			t.Error(err)
		}
		if err := ix.Refresh(s); err != nil { // not blocked: Compact holds no lock here
			t.Error(err)
		}
		deltaBytes, _ = os.ReadFile(deltaPath(snapPath))
	}
	ix.Compact()
	if !ix.CompactDue() {
		t.Fatal("a compaction raced by a refresh is no longer due")
	}
	if now, _ := os.ReadFile(snapPath); !bytes.Equal(now, snapBytes) {
		t.Fatal("a compaction raced by a refresh replaced the snapshot")
	}
	if now, _ := os.ReadFile(deltaPath(snapPath)); !bytes.Equal(now, deltaBytes) || len(now) <= deltaHead {
		t.Fatalf("the delta changed under a dropped compaction (%d bytes, %d after the refresh)", len(now), len(deltaBytes))
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(snapPath), ".*.tmp*")); len(tmp) > 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
	ix.Compact()
	if ix.CompactDue() {
		t.Fatal("still due after a second Compact")
	}
	checkCompacted(t, "compacted after a raced compaction", dir, snapPath, s, g)
}

// checkCompacted checks the store's snapshot at snapPath after a Compact:
// its delta is empty (its header alone), a new process (load) refreshing
// from s reads no node, and it answers as an index built afresh.
func checkCompacted(t *testing.T, stage, dir, snapPath string, s *contextfold.Store, g testgen.Gen) {
	t.Helper()
	if dl, err := os.ReadFile(deltaPath(snapPath)); err != nil || len(dl) != deltaHead {
		t.Fatalf("%s: delta after Compact: %d bytes, %v", stage, len(dl), err)
	}
	next := load(dir)
	if next == nil {
		t.Fatalf("%s: the compacted snapshot does not load", stage)
	}
	next.dir = dir
	if err := next.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if next.read != 0 {
		t.Fatalf("%s: the next process read %d nodes, want none", stage, next.read)
	}
	fresh := NewIndex()
	if err := fresh.Refresh(s); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, stage, g, fresh, next)
}
