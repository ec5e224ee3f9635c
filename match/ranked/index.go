package ranked

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/backend"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/parallel"
)

// doc is one cold node as the ranked matcher sees it.
type doc struct {
	step     int
	artifact string // artifact_sha256 of the node it was derived from
	tokens   int    // the node's token_estimate (tokens)
	length   float64
	summary  string
	evicted  bool
	dead     bool // replaced or no longer indexed: skipped by every query
	question bool // a short node with a line ending in a question mark
	lazy     bool // a snapshot node: summary, artifact and specific are read from the snapshot
	// specific holds the node's specific terms (paths, versions, numbers,
	// identifiers with digits, underscores or inner capitals), sorted term
	// ids, at most maxSpecific: two nodes sharing one are about the same
	// entity (intent ownership).
	specific []int32
}

const maxSpecific = 256

// hotDoc holds the fields of a doc that the scoring loop reads for every
// posting it visits, densely (16 bytes a node, where a doc takes about
// 100): at 100k nodes a scan visits tens of thousands of postings of
// random docs, and reading them from docs cost most of its time in cache
// misses. Index.hot[d] mirrors docs[d] (insert, kill, decodeSnapshot).
// The general walk reads it per posting; the dense walk (walk.go) reads
// a table derived from it (Index.norm) instead.
type hotDoc struct {
	length   float64
	dead     bool
	question bool
}

type posting struct {
	doc int32
	tf  uint16
}

// Index is the ranked matcher's inverted index over a store's cold nodes:
// for every analysed term (see Analyze) the nodes holding it and how often.
// It is derived data: built from the cold nodes read through the store's
// public API, bound to each node's artifact_sha256, and brought up to date
// incrementally (a fold adds only the new nodes' postings). Safe for
// concurrent use.
type Index struct {
	mu     sync.Mutex
	vocab  map[string]int32
	post   [][]posting
	docs   []doc
	hot    []hotDoc // docs' length, dead and question flags, densely (see hotDoc)
	byStep map[int]int32
	order  []int32 // live docs in ascending step order
	rank   []int32 // doc → position in order (-1: dead)
	live   int
	total  float64 // sum of live docs' lengths
	// tokensTotal is the sum of live docs' token estimates (tokens), for
	// the mean node cost of rule "cost" (Pick.Long).
	tokensTotal float64
	// chatLive counts the live docs that are chat turns (chatTurn), for
	// agentStore; kept up to date once chatKnown (counted at first use).
	chatLive  int
	chatKnown bool
	version   string // store index version the index was refreshed against
	dir       string // the store directory, for the cache file ("" : none)
	unsaved   int    // nodes changed since the cache file was written
	// deferSaves: a snapshot due after a refresh is not written there but
	// by Compact, which the caller runs off its latency-sensitive path
	// (DeferSaves); compactDue: one is due.
	deferSaves, compactDue bool
	read                   int // cold nodes read and analysed by Refresh (for tests)
	fedUsed                int // nodes Refresh analysed from fed texts (fed.go)

	// The snapshot the index was opened from (nil: none). Docs 0..base-1
	// are its nodes (ascending step) and term ids 0..nterms-1 its
	// dictionary indices; ids from nterms on index post (ids - nterms).
	// spost holds the delta's postings of snapshot terms, pcache the
	// decoded (and delta-merged) postings of the snapshot terms used.
	snap   *snapFile
	base   int32
	nterms int32
	spost  map[int32][]posting
	pcache map[int32][]posting
	// long: the snapshot lists of at least longMin postings, read in
	// place when not in pcache (inplace.go); a nil entry: the list is
	// shorter. At most one entry a term, half a byte a posting once
	// marked.
	long       map[int32]*longList
	denseBytes int              // the long lists' frequency tables (longList.dense), bounded by denseMax
	pcount     int              // postings held in pcache, bounded by pcacheMax
	puse       map[int32]uint64 // when each pcache list was last used (ptick)
	ptick      uint64
	src        *contextfold.Store // the store last refreshed against (to rebuild)
	// snapID identifies the snapshot file this index's delta frames are
	// appended to (the one it was opened from or last wrote; zero: none).
	snapID snapIdentity

	// The shared snapshot (shared.go): where the index came from and why
	// a shared snapshot was refused (Stats); shareDue: the backend has no
	// usable one, write ours at the next save; forceShare: the stored one
	// was refused, replace it whatever its revision. Guarded by mu.
	source, rejected     string
	shareDue, forceShare bool
	verifyRev            *backend.Revision // a shared snapshot's, to verify at the next refresh
	localCopy            []byte            // its bytes, for the per-user cache once verified
	// shareMu guards the background write's state (it runs without mu).
	shareMu     sync.Mutex
	sharing     bool
	shareWrites int
	shareErr    string

	// scratch, reused across queries (guarded by mu)
	cells        []scoreCell // the posting walk's per-doc state (Index.score)
	scoreGen     uint32      // the scan of Index.score under way (scoreCell.gen)
	ctx          []float64
	inSet        []bool       // the topic context's set (Index.score), false between scans
	touched      []touchedDoc // the docs a scan touched and their sums, by slot (Index.score)
	groupTouched []int32
	look         []int32  // detailAll's docs
	lookTF       []uint16 // detailAll's frequencies, by term then doc
	// The posting walk's per-doc tables (walk.go), rebuilt when their key
	// changes.
	norm       []float64 // lengthNorm of each doc's length ratio, negated for a question turn
	normSigned bool      // every lengthNorm in norm is above zero (its sign flags a question)
	normKey    normKey
	maxStep    int // the highest step of any doc, live or dead (-1: none)
	// texts: the text Index.Add indexed each doc from (an index built
	// without a store), for rule "the prompt's words together"
	// (proximity.go); nil otherwise.
	texts map[int32]string
	// typo: the filter of rule "typos" over the terms (typofilter.go),
	// built by its first scan with the rule on (nil: not yet).
	typo      *termFilter
	typoBuild *typoBuild // a large snapshot's filter being built (typoFilter)
	// typoAsks counts the scans that wanted a large snapshot's filter
	// before one was built: the second starts the build (typoFilter).
	typoAsks int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{vocab: map[string]int32{}, byStep: map[int]int32{}, spost: map[int32][]posting{}, pcache: map[int32][]posting{}, long: map[int32]*longList{}, puse: map[int32]uint64{}, maxStep: -1}
}

// termID returns the id of an indexed term (false: unknown).
func (ix *Index) termID(text string) (int32, bool) {
	if id, ok := ix.vocab[text]; ok {
		return id, true
	}
	if ix.snap != nil {
		if k := ix.snap.find(text); k >= 0 {
			ix.vocab[text] = k
			return k, true
		}
	}
	return -1, false
}

// rawPostings returns term id's postings (ascending doc), without caching.
func (ix *Index) rawPostings(id int32) []posting {
	if id >= ix.nterms {
		return ix.post[id-ix.nterms]
	}
	ps := ix.snap.postings(int(id))
	if d := ix.spost[id]; len(d) > 0 {
		ps = append(slices.Clip(ps), d...)
	}
	return ps
}

// postings returns term id's postings of live docs (ascending doc): a
// replaced or dropped node's postings stay in the lists (a kill does not
// know its terms) and are filtered out here, so that every count of a
// term's holders — idf, the Common filter — is of live nodes only. The
// result is cached per term until the next kill (which empties the cache);
// an add of the term appends to it (insert). Callers hold ix.mu.
func (ix *Index) postings(id int32) []posting {
	dead := ix.live < len(ix.docs)
	if id >= ix.nterms && !dead {
		return ix.post[id-ix.nterms]
	}
	if ps, ok := ix.pcache[id]; ok {
		ix.ptick++
		ix.puse[id] = ix.ptick
		return ps
	}
	ps := ix.rawPostings(id)
	if dead {
		live := make([]posting, 0, len(ps))
		for _, p := range ps {
			if !ix.docs[p.doc].dead {
				live = append(live, p)
			}
		}
		ps = live
	}
	if ix.pcount+len(ps) > pcacheMax {
		ix.evictPostings(pcacheMax*3/4 - len(ps))
	}
	ix.ptick++
	ix.pcache[id], ix.puse[id] = ps, ix.ptick
	ix.pcount += len(ps)
	return ps
}

// evictPostings drops the least recently used lists of pcache until it
// holds at most keep postings (the cache is only a shortcut: a long-lived
// index over a large store keeps the lists of the terms its prompts use
// most, not of every term ever asked for). Callers hold ix.mu.
func (ix *Index) evictPostings(keep int) {
	ids := make([]int32, 0, len(ix.pcache))
	for id := range ix.pcache {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int32) int { return cmp.Compare(ix.puse[a], ix.puse[b]) })
	for _, id := range ids {
		if ix.pcount <= max(keep, 0) {
			break
		}
		ix.pcount -= len(ix.pcache[id])
		delete(ix.pcache, id)
		delete(ix.puse, id)
	}
}

// pcacheMax bounds the postings an index keeps decoded in pcache: 16M
// postings, 128 MiB (a posting is 8 bytes): the lists of the terms its
// prompts use, at 100k nodes (some 18M postings in all), without decoding
// the common ones again at every scan; a store of a few thousand nodes
// never reaches it.
var pcacheMax = 16 << 20

func (ix *Index) summaryOf(d int32) string {
	if ix.docs[d].lazy {
		return ix.snap.summary(int(d))
	}
	return ix.docs[d].summary
}

func (ix *Index) artifactOf(d int32) string {
	if ix.docs[d].lazy {
		return ix.snap.artifact(int(d))
	}
	return ix.docs[d].artifact
}

func (ix *Index) specificOf(d int32) []int32 {
	if ix.docs[d].lazy && ix.docs[d].specific == nil {
		ix.docs[d].specific = ix.snap.specific(int(d))
	}
	return ix.docs[d].specific
}

// stepDoc returns the live doc of a step.
func (ix *Index) stepDoc(step int) (int32, bool) {
	if d, ok := ix.byStep[step]; ok {
		return d, true
	}
	b := int(ix.base)
	i := sort.Search(b, func(i int) bool { return ix.docs[i].step >= step })
	if i < b && ix.docs[i].step == step && !ix.docs[i].dead {
		return int32(i), true
	}
	return -1, false
}

// recoverSnapshot: when a lazily verified snapshot chunk failed, the index
// is rebuilt from the store's cold nodes (the snapshot is a miss) and true
// is returned so that the caller runs its query again. Callers hold ix.mu.
func (ix *Index) recoverSnapshot() bool {
	if ix.snap == nil || !ix.snap.bad {
		return false
	}
	if ix.dir != "" {
		if p := cachePath(ix.dir, false); p != "" {
			_ = os.Remove(p)
		}
	}
	ix.reset()
	ix.forceShare = true // a shared copy of the snapshot may be the corrupt one
	if ix.src != nil {
		_ = ix.refresh(ix.src)
	}
	return true
}

// reset empties the index: everything but the mutex, the store, the
// counters and the shared snapshot's state starts afresh. Callers hold
// ix.mu.
func (ix *Index) reset() {
	if ix.snap != nil {
		ix.snap.close()
	}
	fresh := NewIndex()
	ix.vocab, ix.byStep, ix.spost, ix.pcache, ix.puse = fresh.vocab, fresh.byStep, fresh.spost, fresh.pcache, fresh.puse
	ix.long, ix.denseBytes = fresh.long, 0
	ix.post, ix.docs, ix.hot, ix.order, ix.rank = nil, nil, nil, nil, nil
	ix.live, ix.total, ix.tokensTotal, ix.version, ix.unsaved, ix.pcount = 0, 0, 0, "", 0, 0
	ix.chatLive, ix.chatKnown = 0, false
	ix.cells, ix.ctx, ix.touched, ix.groupTouched, ix.look, ix.lookTF = nil, nil, nil, nil, nil, nil
	ix.inSet = nil
	ix.norm, ix.normSigned, ix.normKey, ix.maxStep = nil, false, normKey{}, -1
	ix.snap, ix.base, ix.nterms = nil, 0, 0
	ix.snapID = snapIdentity{}
	ix.texts = nil
	ix.typo, ix.typoBuild = nil, nil
}

// Scan ranks the store's nodes for a prompt and chooses the ones to
// hydrate, best first, before any budget (the caller admits them against
// the per-turn budget). Deterministic: ties go to the newer step.
// Safe for concurrent use. It is ScanBefore(prompt, p, -1).
func (ix *Index) Scan(prompt string, p Params) *Result { return ix.ScanBefore(prompt, p, -1) }

// ScanBefore is Scan among the nodes of steps below before (every node
// when before < 0): rule "the prompt's past" — a prompt can only ask
// about what existed when it was written, so the nodes a session folded
// after it (the calls and outputs of the turn it started) are neither
// picked nor companions. The terms' rarity is still the whole store's.
// Safe for concurrent use.
func (ix *Index) ScanBefore(prompt string, p Params, before int) *Result {
	return ix.scanBefore(prompt, p, before, true)
}

// ScanPicksBefore is ScanBefore for a caller that uses only the picks and
// the steps left out as superseded (package match's scan): Terms and Picks
// are ScanBefore's, Superseded names the same steps in the same order
// (each Pick holds only its Step), and CutOff is nil. It skips building
// the terms, reasons and summaries of the nodes left out, which only an
// explanation shows (ExplainRanked reads them from ScanBefore). Safe for
// concurrent use.
func (ix *Index) ScanPicksBefore(prompt string, p Params, before int) *Result {
	return ix.scanBefore(prompt, p, before, false)
}

func (ix *Index) scanBefore(prompt string, p Params, before int, explain bool) *Result {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r := ix.scanLocked(prompt, p, before, explain)
	if ix.recoverSnapshot() {
		r = ix.scanLocked(prompt, p, before, explain)
	}
	return r
}

// MeanTokens returns the mean token_estimate of the live nodes (tokens; 0
// for an empty index). Safe for concurrent use.
func (ix *Index) MeanTokens() float64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.tokensTotal / float64(max(ix.live, 1))
}

// Weights returns, for focused hydration, the prompt's matchable terms and
// their weights (idf × kind weight). Safe for concurrent use.
func (ix *Index) Weights(prompt string, p Params) map[string]float64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	w := ix.weightsLocked(prompt, p)
	if ix.recoverSnapshot() {
		w = ix.weightsLocked(prompt, p)
	}
	return w
}

// Recall ranks every node that scores at least 10 % of the best one (at
// most p.Candidates), best first, ties to the newer step; nothing when the
// best node does not pass the scan's cut-off (Floor, MinShare). Safe for
// concurrent use.
func (ix *Index) Recall(query string, p Params) []Hit {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	h := ix.recallLocked(query, p)
	if ix.recoverSnapshot() {
		h = ix.recallLocked(query, p)
	}
	return h
}

var registry = struct {
	sync.Mutex
	m       map[string]*Index
	opening map[string]*sync.Mutex // one opener per store, outside the registry's lock
}{m: map[string]*Index{}, opening: map[string]*sync.Mutex{}}

// For returns the process-wide ranked index of the store, refreshed to the
// store's current recall index. Read-only towards the store: it never
// writes a file inside it (CONF-08). The first use in a process opens the
// local snapshot, or a backend store's shared one (shared.go).
func For(s *contextfold.Store) (*Index, error) {
	key := s.Dir()
	registry.Lock()
	ix := registry.m[key]
	if ix == nil {
		// Opening may read a shared snapshot from the database (seconds):
		// other stores' indexes are not held up meanwhile.
		l := registry.opening[key]
		if l == nil {
			l = &sync.Mutex{}
			registry.opening[key] = l
		}
		registry.Unlock()
		l.Lock()
		registry.Lock()
		if ix = registry.m[key]; ix == nil {
			registry.Unlock()
			ix = openFor(s)
			ix.dir = key
			registry.Lock()
			registry.m[key] = ix
		}
		registry.Unlock()
		l.Unlock()
	} else {
		registry.Unlock()
	}
	if err := ix.Refresh(s); err != nil {
		return nil, err
	}
	return ix, nil
}

// saveEvery: the cache file is rewritten when at least this many nodes
// (or 1 % of the index, whichever is more) changed since it was written,
// so that a fold per turn does not rewrite it per turn; the few nodes
// folded since are read again by the next process.
const saveEvery = 32

// Refresh brings the index up to date with the store: nodes not seen yet,
// or whose artifact_sha256 changed, are read and analysed; nodes no longer
// indexed are dropped; eviction flags are copied. Cost: one pass over the
// index entries plus the new nodes, nothing when the store's index did not
// change since the last refresh.
func (ix *Index) Refresh(s *contextfold.Store) error {
	ver, err := s.IndexVersion()
	if err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ver == ix.version && ix.version != "" && ix.verifyRev == nil {
		ix.src = s
		return nil
	}
	err = ix.refresh(s)
	if ix.recoverSnapshot() {
		err = ix.refresh(s)
	}
	return err
}

// refresh is Refresh under ix.mu.
func (ix *Index) refresh(s *contextfold.Store) error {
	ix.src = s
	ver, err := s.IndexVersion()
	if err != nil {
		return err
	}
	entries, err := s.EntriesShared() // read only (no copy of every entry)
	if err != nil {
		return err
	}
	if ix.verifyRev != nil {
		ix.checkShared(s, entries, ver) // shared.go
	}
	fedNodes := takeFed(s.Dir())
	present := make(map[int]bool, len(entries))
	changed := false
	var recs []deltaRecord // the changes, for the snapshot's delta file
	// The changes are kept for the delta file only while the refresh may
	// still end without a whole snapshot: once unsaved has reached what
	// makes the save below certain (the live docs at the end are at most
	// these), every analysis is dropped as soon as it is inserted (
	// a first fold of 40,000 nodes kept them all, and their texts, until
	// the snapshot that replaced the delta anyway).
	liveMax := ix.live + len(entries)
	keepRecs := func() bool {
		if ix.dir == "" || ix.unsaved >= ix.saveBound(liveMax) {
			recs = nil
			return false
		}
		return true
	}
	var pre []newDoc
	for k, e := range entries {
		if k%analyseChunk == 0 {
			pre = ix.analyseNew(s, entries[k:min(len(entries), k+analyseChunk)], fedNodes, pre)
		}
		present[e.StepID] = true
		if d, ok := ix.stepDoc(e.StepID); ok {
			if ix.artifactOf(d) == e.ArtifactSHA256 {
				if ix.docs[d].evicted != e.Evicted {
					ix.docs[d].evicted = e.Evicted
					if keepRecs() {
						recs = append(recs, deltaRecord{flag: true, d: doc{step: e.StepID, evicted: e.Evicted}})
					}
				}
				continue
			}
			ix.kill(d)
		}
		nd := pre[k%analyseChunk]
		if !nd.ok { // not foreseen by analyseNew (it is, for every entry not indexed as it is)
			nd = newDocOf(s, e, fedNodes)
			nd.analyse()
		}
		if nd.fed {
			ix.fedUsed++
		} else {
			ix.read++
		}
		d := doc{step: e.StepID, artifact: e.ArtifactSHA256, tokens: e.TokenEstimate, summary: e.Summary, evicted: e.Evicted}
		a := nd.a
		ix.insert(d, a)
		if ix.snapID != (snapIdentity{}) && keepRecs() {
			recs = append(recs, deltaRecord{d: d, a: a})
		}
		changed = true
		ix.unsaved++
	}
	drop := func(d int32) {
		if keepRecs() {
			recs = append(recs, deltaRecord{drop: true, d: doc{step: ix.docs[d].step}})
		}
		ix.kill(d)
		changed = true
		ix.unsaved++
	}
	for step, d := range ix.byStep {
		if !present[step] {
			drop(d)
		}
	}
	for d := range ix.base {
		if !ix.docs[d].dead && !present[ix.docs[d].step] {
			drop(d)
		}
	}
	if changed {
		ix.reorder()
	}
	base := ix.version
	ix.version = ver
	built := changed && ix.unsaved == ix.live // from every cold node
	due := ix.unsaved >= max(saveEvery, ix.live/100)
	deferred := due && ix.deferSaves && !built && !ix.shareDue && len(recs) > 0 && ix.snapID != (snapIdentity{})
	if ix.dir != "" && (due && !deferred || built || (ix.shareDue && ix.live > 0)) {
		ix.save(ix.dir, built) // compaction: the delta starts empty
		ix.unsaved, ix.compactDue = 0, false
	} else if ix.dir != "" && len(recs) > 0 {
		if p := cachePath(ix.dir, false); p != "" {
			ix.appendDelta(p, base, recs)
		}
		ix.compactDue = ix.compactDue || deferred
	}
	return nil
}

// deferLimit is how many changed nodes an index that defers its saves
// (DeferSaves) holds in its delta before a refresh writes the snapshot
// itself all the same: Compact not run for a long while costs a longer
// delta to replay, never an unbounded one.
const deferLimit = 4096

// saveBound is the number of changed nodes from which a refresh writes the
// snapshot whatever else (its changes then need no delta records); liveMax
// bounds the live nodes at the refresh's end.
func (ix *Index) saveBound(liveMax int) int {
	if ix.deferSaves {
		return max(deferLimit, liveMax/100)
	}
	return max(saveEvery, liveMax/100)
}

// DeferSaves makes the index leave the snapshot a refresh finds due (the
// per-user cache file, rewritten once max(32 nodes, 1 %) changed since it
// was written: a file create, a write of the whole index and two fsyncs) to
// Compact, and append the refresh's changes to the snapshot's delta file
// meanwhile (an append, no sync). A proxy calls it so that a fold event's
// refresh writes no snapshot on the request's path, and runs Compact after
// the response. Snapshots made from every cold node (a first build) and
// shared snapshots are still written at once. Safe for concurrent use.
func (ix *Index) DeferSaves() {
	ix.mu.Lock()
	ix.deferSaves = true
	ix.mu.Unlock()
}

// CompactDue reports whether a deferred snapshot is due (DeferSaves). Safe
// for concurrent use.
func (ix *Index) CompactDue() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.compactDue
}

// Compact writes the snapshot a refresh left due (DeferSaves), which
// empties the delta; nothing when none is due. Best effort, as every
// snapshot write: a failure costs only time in the next process. It holds
// the index's lock while it lays the snapshot out, not while it writes and
// syncs the snapshot's file and its new empty delta (their temporary
// files): a refresh or a scan (a fold event's, which may arrive meanwhile)
// waits only for the layout and the renames. When a refresh changed the
// index meanwhile, the files are dropped and the compaction stays due (the
// delta holds the refresh's changes, bound to the snapshot on disk). A
// crash leaves the old snapshot and delta, or the new snapshot with either
// delta (an old delta bound to another snapshot is ignored), as a
// compaction under the lock does. Safe for concurrent use.
func (ix *Index) Compact() {
	ix.mu.Lock()
	if !ix.compactDue || ix.dir == "" {
		ix.compactDue = false
		ix.mu.Unlock()
		return
	}
	path := cachePath(ix.dir, true)
	if path == "" || sharedStore(ix.src) != nil {
		// A shared snapshot goes to its store whole, under the lock.
		ix.save(ix.dir, false)
		ix.unsaved, ix.compactDue = 0, false
		ix.mu.Unlock()
		return
	}
	enc, ok := ix.buildSnapshot()
	if !ok {
		ix.unsaved, ix.compactDue = 0, false // as save: nothing written
		ix.mu.Unlock()
		return
	}
	version, live, unsaved := ix.version, ix.live, ix.unsaved
	ix.mu.Unlock()

	id := enc.identity()
	snapTmp, err := syncedTemp(path, enc.writeTo)
	if err != nil {
		return // best effort: still due
	}
	deltaTmp, err := syncedTemp(deltaPath(path), func(w io.Writer) error { _, err := w.Write(id.header()); return err })
	if err != nil {
		_ = os.Remove(snapTmp)
		return
	}
	if compactWritten != nil {
		compactWritten()
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.compactDue || ix.version != version || ix.live != live || ix.unsaved != unsaved {
		// A refresh (or another compaction) changed the index meanwhile.
		_ = os.Remove(snapTmp)
		_ = os.Remove(deltaTmp)
		return
	}
	if os.Rename(snapTmp, path) != nil {
		_ = os.Remove(snapTmp)
		_ = os.Remove(deltaTmp)
		return
	}
	ix.snapID = id
	if os.Rename(deltaTmp, deltaPath(path)) != nil {
		_ = os.Remove(deltaTmp)
		_ = os.Remove(deltaPath(path))
	}
	_ = fsutil.SyncDir(filepath.Dir(path))
	for _, old := range oldCacheNames {
		_ = os.Remove(filepath.Join(filepath.Dir(path), old))
		_ = os.Remove(filepath.Join(filepath.Dir(path), old+".delta"))
	}
	ix.unsaved, ix.compactDue = 0, false
}

// compactWritten, when set (tests), is called by Compact between the
// writes of its temporary files and the renames, without the lock.
var compactWritten func()

// syncedTemp writes a temporary file beside path with write's bytes,
// syncs and closes it, and returns its name (removed on an error).
func syncedTemp(path string, write func(w io.Writer) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return "", err
	}
	name := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		err = write(f)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// analyseChunk is the number of entries refresh reads and analyses ahead
// (the analyses are held until inserted).
const analyseChunk = 256

// newDoc is a node refresh is about to insert: its text (fed or read back)
// and its analysis.
type newDoc struct {
	text string
	a    analysed
	fed  bool     // the text was fed (fed.go), not read from disk
	from *fedNode // the fed node, whose analysis may be under way
	ok   bool
}

// newDocOf returns the text refresh indexes for entry e: the fed text of
// the node just folded (fed.go) or, else, the cold node read back (its
// summary alone when it cannot be read).
func newDocOf(s *contextfold.Store, e *contextfold.Entry, fedNodes map[int]fedNode) newDoc {
	n := fedNodes[e.StepID]
	if text, ok := n.text(e); ok {
		return newDoc{text: text, fed: true, from: &n, ok: true}
	}
	text := e.Summary
	if n, err := s.ReadColdNode(e.StepID); err == nil {
		text = n.Summary + "\n" + n.RawContent
	}
	return newDoc{text: text, ok: true}
}

// analyse sets nd.a: the fed node's analysis when one was started for its
// text (fed.go), else analyseDoc of the text.
func (nd *newDoc) analyse() {
	if nd.from != nil {
		nd.a = nd.from.analysis(nd.text)
		return
	}
	nd.a = analyseDoc(nd.text)
}

// analyseNew reads (in order, on the caller's goroutine) and analyses (on
// up to GOMAXPROCS goroutines: each analysis is a pure function of its
// text) the nodes of chunk that refresh will insert: those not indexed
// with the same artifact. It returns them by position in chunk, in buf's
// storage; the other positions are zero (ok false). The inserts stay in
// entry order, so the index is the same as analysed one by one.
func (ix *Index) analyseNew(s *contextfold.Store, chunk []*contextfold.Entry, fedNodes map[int]fedNode, buf []newDoc) []newDoc {
	out := append(buf[:0], make([]newDoc, len(chunk))...)
	var todo []int
	for k, e := range chunk {
		if d, ok := ix.stepDoc(e.StepID); ok && ix.artifactOf(d) == e.ArtifactSHA256 {
			continue
		}
		out[k] = newDocOf(s, e, fedNodes)
		todo = append(todo, k)
	}
	parallel.Each(len(todo), func(j int) { out[todo[j]].analyse() })
	return out
}

// Add indexes one node's text (summary and payload) under its step; a step
// already indexed is replaced. For tests and evaluations that build an
// index without a store.
func (ix *Index) Add(step int, artifact string, tokens int, summary, text string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if d, ok := ix.stepDoc(step); ok {
		ix.kill(d)
	}
	if ix.texts == nil {
		ix.texts = map[int32]string{}
	}
	ix.texts[int32(len(ix.docs))] = text
	ix.add(doc{step: step, artifact: artifact, tokens: tokens, summary: summary}, text)
	ix.reorder()
}

func (ix *Index) kill(d int32) {
	if ix.docs[d].dead {
		return
	}
	ix.docs[d].dead = true
	ix.hot[d].dead = true
	clear(ix.pcache) // cached postings may hold d
	clear(ix.puse)
	ix.pcount = 0
	ix.live--
	ix.total -= ix.docs[d].length
	ix.tokensTotal -= float64(ix.docs[d].tokens)
	if ix.chatKnown && ix.chatTurn(d) {
		ix.chatLive--
	}
	delete(ix.byStep, ix.docs[d].step)
}

func (ix *Index) add(d doc, text string) {
	ix.insert(d, analyseDoc(text))
}

// analysedTerm is one distinct term of a node as the index keeps it: its
// text, how often the node holds it, and whether it is one of the node's
// specific terms (at most maxSpecific, in order of first occurrence).
type analysedTerm struct {
	text     string
	tf       int
	specific bool
}

// analysed is a node's analysis: its distinct terms in order of first
// occurrence, its length (counted words) and whether it is a question turn.
// It is what the snapshot's delta file records of a node (delta.go), so
// that a process replays it without reading the cold node again.
type analysed struct {
	terms    []analysedTerm
	length   float64
	question bool
}

// docScratch is analyseDoc's working memory: each distinct term's index
// in terms, and the terms as they are found (copied to a slice of their
// own length at the end). Recycled (docScratches) as countScratch is.
type docScratch struct {
	at    map[string]int
	terms []analysedTerm
}

var docScratches = sync.Pool{New: func() any { return &docScratch{at: make(map[string]int, 256)} }}

// release empties sc and gives it back to the pool unless it grew past
// scratchKeepMax.
func (sc *docScratch) release() {
	if cap(sc.terms) > scratchKeepMax {
		return
	}
	clear(sc.at)
	clear(sc.terms[:cap(sc.terms)])
	sc.terms = sc.terms[:0]
	docScratches.Put(sc)
}

func analyseDoc(text string) analysed {
	var a analysed
	sc := docScratches.Get().(*docScratch)
	defer sc.release()
	at := sc.at
	a.terms = sc.terms[:0]
	n, nspec := 0, 0
	// Each distinct chunk of a long text is analysed once, its terms
	// counted by its occurrences (analyzeCounted): the same terms, order
	// and counts as one term at a time (TestAnalyseDocCountedSame).
	analyzeCounted(text, func(t Term, k int) {
		if t.Kind != KindFuzzy && t.Kind != KindCompound && t.Kind != KindPlain {
			n += k
		}
		i, ok := at[t.Text]
		if !ok {
			i = len(a.terms)
			at[t.Text] = i
			sp := (t.Kind == KindCompound || (t.Kind == KindWord && specific(t.Src))) && nspec < maxSpecific
			if sp {
				nspec++
			}
			a.terms = append(a.terms, analysedTerm{text: t.Text, specific: sp})
		}
		a.terms[i].tf += k
	})
	sc.terms, a.terms = a.terms, nil
	if len(sc.terms) > 0 {
		a.terms = slices.Clone(sc.terms)
	}
	a.length = float64(max(n, 1))
	a.question = n <= maxQuestionWords && isQuestion(text)
	return a
}

// insert adds a node of the given analysis as a new doc (the caller kills
// a doc it replaces).
func (ix *Index) insert(d doc, a analysed) {
	id := int32(len(ix.docs))
	for _, t := range a.terms {
		tid, ok := ix.termID(t.text)
		if !ok {
			tid = ix.nterms + int32(len(ix.post))
			// A copy: the term may be a substring of the node's text,
			// which the vocabulary would otherwise keep whole.
			ix.vocab[strings.Clone(t.text)] = tid
			ix.post = append(ix.post, nil)
			if ix.typo != nil && typoKey(t.text) {
				addTerm(ix.typo, t.text)
			}
		}
		if t.specific {
			d.specific = append(d.specific, tid)
		}
		po := posting{doc: id, tf: uint16(min(t.tf, 65535))}
		if tid >= ix.nterms {
			ix.post[tid-ix.nterms] = append(ix.post[tid-ix.nterms], po)
		} else {
			ix.spost[tid] = append(ix.spost[tid], po)
		}
		// A cached list (postings: its own copy, of live docs) gains the
		// new doc, live and the highest, at its end: a fold of a node
		// holding common terms no longer makes the next scan decode their
		// lists from the snapshot again (100,000 postings each at 100k
		// nodes).
		if ps, ok := ix.pcache[tid]; ok {
			ix.pcache[tid] = append(ps, po)
			ix.pcount++
		}
	}
	slices.Sort(d.specific)
	d.length = a.length
	d.question = a.question
	ix.docs = append(ix.docs, d)
	ix.hot = append(ix.hot, hotDoc{length: d.length, question: d.question})
	ix.byStep[d.step] = id
	ix.maxStep = max(ix.maxStep, d.step)
	ix.live++
	ix.total += d.length
	ix.tokensTotal += float64(d.tokens)
	if ix.chatKnown && ix.chatTurn(id) {
		ix.chatLive++
	}
}

// agentStore reports whether the store is an agent session rather than a
// chat: at most half of its live nodes are chat turns (chatTurn: a
// speaker's label, not an agent role). The count is made at the first
// call (each live node's summary label read once) and kept up to date by
// add and kill after it. The caller holds ix.mu.
func (ix *Index) agentStore() bool {
	if !ix.chatKnown {
		n := 0
		for d := range ix.docs {
			if !ix.docs[d].dead && ix.chatTurn(int32(d)) {
				n++
			}
		}
		ix.chatLive, ix.chatKnown = n, true
	}
	return 2*ix.chatLive <= ix.live
}

// reorder recomputes the step order of the live docs (neighbours).
func (ix *Index) reorder() {
	ix.order = ix.order[:0]
	for i := range ix.docs {
		if !ix.docs[i].dead {
			ix.order = append(ix.order, int32(i))
		}
	}
	sort.Slice(ix.order, func(a, b int) bool { return ix.docs[ix.order[a]].step < ix.docs[ix.order[b]].step })
	if cap(ix.rank) < len(ix.docs) {
		ix.rank = make([]int32, len(ix.docs))
	}
	ix.rank = ix.rank[:len(ix.docs)]
	for i := range ix.rank {
		ix.rank[i] = -1
	}
	for i, d := range ix.order {
		ix.rank[d] = int32(i)
	}
}

// maxStepGap is how many step ids that hold no node may lie between two
// neighbours: the proxy gives each Responses item a step, and the items it
// never folds (a function_call, a reasoning item) lie between the
// assistant's note and the call's output, and between an output and the
// next note.
const maxStepGap = 2

// neighbours returns the live docs of the adjacent steps before and after
// d's (-1 when there is none): the next indexed step in each direction,
// when at most maxStepGap step ids between them hold no node. Neighbour
// credit never crosses a longer gap (an ingested call and its result, a
// question and its answer, are consecutive steps; a Responses note and its
// output are two apart, the call item between; a node 56 steps away is
// another turn).
func (ix *Index) neighbours(d int32) (prev, next int32) {
	prev, next = -1, -1
	r := ix.rank[d]
	if r < 0 {
		return
	}
	step := ix.docs[d].step
	if r > 0 && ix.docs[ix.order[r-1]].step >= step-1-maxStepGap {
		prev = ix.order[r-1]
	}
	if int(r)+1 < len(ix.order) && ix.docs[ix.order[r+1]].step <= step+1+maxStepGap {
		next = ix.order[r+1]
	}
	return
}

// Len returns the number of live nodes indexed.
func (ix *Index) Len() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.live
}

// maxQuestionWords is the longest node (analysed words) that counts as a
// question turn.
const maxQuestionWords = 120

// isQuestion reports whether the last non-blank line of text ends with a
// question mark (ASCII, full-width, Arabic), the mark of a question turn.
// Only the last line counts: a message that asks something and then goes
// on (several chat messages pasted or folded as one, a long message that
// asks in passing and then tells its news) is not waiting for an answer,
// and its own score is not scaled by Params.Asker. Measured with `cfeval
// locomo -undated -uneven` (where a fifth of the nodes are runs of turns):
// ranked recall 53.8 % with any line, 55.1 % with the last; plain LoCoMo
// (one turn, one line) is unchanged at 63.6 %.
func isQuestion(text string) bool {
	text = strings.TrimRight(text, " \t\r\n")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	line := strings.TrimRight(text, " \t\r\"')*_`")
	return strings.HasSuffix(line, "?") || strings.HasSuffix(line, "？") || strings.HasSuffix(line, "؟")
}

// shareSpecific reports whether two docs hold a specific term in common.
func (ix *Index) shareSpecific(a, b int32) bool {
	x, y := ix.specificOf(a), ix.specificOf(b)
	for i, j := 0, 0; i < len(x) && j < len(y); {
		switch {
		case x[i] == y[j]:
			return true
		case x[i] < y[j]:
			i++
		default:
			j++
		}
	}
	return false
}
