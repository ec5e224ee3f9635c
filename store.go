package contextfold

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// File and directory names inside a store (spec §1).
const (
	ColdNodesDir       = "cold_nodes"
	IndexFile          = "recall_index.json"
	PolicyFile         = "hydration_policy.json"
	EvictionLogFile    = "eviction_log.json"
	lockFile           = ".lock"
	DefaultStoreDir    = ".contextfold"
	EnvStoreDir        = "CONTEXTFOLD_DIR"
	EnvSourceDateEpoch = "SOURCE_DATE_EPOCH"
)

// Clock returns the current time. Timestamps are written in UTC to the second.
type Clock func() time.Time

// SystemClock is time.Now, unless SOURCE_DATE_EPOCH holds a Unix time in
// seconds, which then fixes every timestamp (reproducible runs).
func SystemClock() time.Time {
	if s := os.Getenv(EnvSourceDateEpoch); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC()
}

// Options configure a Store. The zero value is valid.
type Options struct {
	// Clock stamps folded_at, created_at and evicted_at. nil: SystemClock.
	Clock Clock
	// SessionID is written into new cold nodes. "": DefaultSessionID.
	SessionID string
	// Scrub says whether secrets are redacted before anything reaches disk
	// (default: on, unless CONTEXTFOLD_SCRUB=off or the store's settings turn
	// it off).
	Scrub ScrubMode
	// EvictionLogBatch, when above 1, batches the writes of the eviction
	// log (directory stores): an eviction of a step the index already marks
	// evicted (the same node hydrated again, then evicted: every model call
	// of a human turn through the proxy) is kept in memory, and written
	// with the eviction that brings the batch to this many events, with
	// the next eviction that changes the index (always written at once,
	// log before index), or by Sync. Each write is still the whole log,
	// atomically, with its fsyncs (spec §1). A crash loses at most the last
	// EvictionLogBatch-1 repeated events: never a fold, an index change,
	// nor the log's integrity. 0 or 1: every eviction is written at once.
	// This process reads its own events (EvictionLog) at once; another
	// process sees them once written.
	EvictionLogBatch int
}

// Store is an IPCF store: one directory holding cold_nodes/, the recall
// index, the optional hydration policy and the eviction log (spec §1).
//
// A Store is safe for concurrent use by goroutines, and several processes may
// use one store directory at once: every read-modify-write of the index runs
// under an exclusive file lock, and the in-memory index is reloaded whenever
// the file on disk changed.
type Store struct {
	dir  string // absolute path of the store directory
	opts Options

	mu      sync.Mutex
	ix      *index
	ixStamp fileStamp // of the recall_index.json that ix was read from
	jOff    int64     // journal bytes applied to ix
	jOps    int       // journal operations applied to ix
	// badCache is the stamp of an index file whose cache failed a lazy
	// checksum: that index is read from its JSON instead.
	badCache fileStamp

	// A backend store (OpenBackend; nil for a directory store): be keeps
	// the bytes, beRev is the revision ix was read at, tx the open write
	// transaction while the store lock is held, txWrites whether it wrote.
	be       Backend
	beRev    Revision
	tx       BackendTx
	txWrites bool

	// evLog is the eviction log as this process last wrote it (Evict).
	evLog evictionLogCache
	// evPending are the events Evict kept for the next write of the log
	// (Options.EvictionLogBatch).
	evPending []Eviction
	// evWrite, when not nil, is closed once the write of kept eviction
	// events under way (WriteKeptEvictions, without s.mu, with the store's
	// lock) is done.
	evWrite chan struct{}
	// nodes, while a directory store folds a batch, holds the cold nodes
	// written and not yet committed (writeNode, commitNodes).
	nodes *fsutil.FileBatch
	// swept is whether this Store removed the temporary files of
	// interrupted writes (removeTempFiles, at its first exclusive lock).
	swept bool
	// prep holds turns prepared ahead of their fold (Prepare); it has its
	// own lock.
	prep prepMemo
	// secrets: what the turns folded so far reveal, shared with later
	// fold events (crossturn.go).
	secrets sessionSecrets
	// spares are the empty files made ahead in cold_nodes/ that a fold
	// writes its nodes into (FillSpares; nil for a backend store); the
	// pool has its own lock. sinceFill counts the new nodes folded since
	// the last FillSpares, lastFold the count that call found (a fold
	// event's, when FillSpares runs after each request); coldSeen whether
	// cold_nodes/ was seen to exist; folding counts the folds writing
	// (FillSpares yields to them).
	spares *fsutil.SpareFiles
	// rootSpares are the spare files made ahead in the store root that an
	// index rewrite writes recall_index.json's temporary file into
	// (FillSpares keeps one).
	rootSpares *fsutil.SpareFiles
	// pending is the durable part of a fold batch still running
	// (FoldBatchEachDeferred, deferCommit), nil when none; verAlias the
	// version kept for the index it made durable (IndexVersion). Both
	// guarded by mu. pendingTmp maps the running batch's node paths to
	// the temporary files holding them, pendingBuf to the bytes of those
	// whose file the commit creates (deferCreateBytes), both read by
	// nodeBytes, under pendingMu.
	pending    *FoldCommit
	verAlias   versionAlias
	pendingMu  sync.Mutex
	pendingTmp map[string]string
	pendingBuf map[string][]byte
	sinceFill  atomic.Int64
	lastFold   atomic.Int64
	coldSeen   atomic.Bool
	folding    atomic.Int32
}

type fileStamp struct {
	ok    bool
	size  int64
	mtime time.Time
	ino   uint64
}

// Open returns the store in dir. The directory need not exist yet: it is
// created by the first write. Open reads nothing; errors in store files are
// reported by the operation that reads them.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		dir = DefaultStoreDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckStoreDir(abs); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock
	}
	return &Store{dir: abs, opts: opts, spares: fsutil.NewSpareFiles(filepath.Join(abs, ColdNodesDir)),
		rootSpares: fsutil.NewSpareFiles(abs)}, nil
}

// CheckStoreDir returns the *StoreFileError that Open returns for the
// store directory dir, naming it and the remedy, when dir exists and is
// not a directory, or is a symbolic link that loops; nil otherwise (a
// directory that does not exist yet is created by the first write). A
// caller that makes dir itself (the proxy's --dir, under which each
// session's store is made) checks it first: os.MkdirAll says only "file
// exists" of a link loop. It stats dir and nothing else.
func CheckStoreDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return &StoreFileError{File: dir, Err: errors.New("is not a directory"), Remedy: "give --dir a directory path"}
	case errors.Is(err, syscall.ELOOP):
		// Every later step would say something else (a file that
		// exists, a store that does not, a permission).
		return &StoreFileError{File: dir, Err: errors.New("is a symbolic link that loops (too many levels of symbolic links)"),
			Remedy: "remove the link, or make it point at a directory"}
	}
	return nil
}

// Dir returns the absolute path of the store directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) now() string { return s.opts.Clock().UTC().Format(TimeFormat) }

// stepFileName is "step_NNNNNN.json", the id zero-padded to width 6 with the
// sign counting towards the width (spec §1).
func stepFileName(step int) string { return fmt.Sprintf("step_%06d.json", step) }

// NodePath returns the canonical absolute path of a step's cold node file.
func (s *Store) NodePath(step int) string {
	if s.be != nil {
		return s.storePath(ColdNodesDir + "/" + stepFileName(step))
	}
	return filepath.Join(s.dir, ColdNodesDir, stepFileName(step))
}

// indexFilePath is the file_path recorded in the index: relative to the
// directory that holds the store, '/' separated
// (".contextfold/cold_nodes/step_000137.json").
func (s *Store) indexFilePath(step int) string {
	if s.be != nil {
		return s.be.StoreName() + "/" + ColdNodesDir + "/" + stepFileName(step)
	}
	return filepath.Base(s.dir) + "/" + ColdNodesDir + "/" + stepFileName(step)
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}, nil
}

// loadIndex returns the current index: recall_index.json (from memory when
// unchanged, else from the cache file or the JSON) plus the journal's new
// lines. Callers hold s.mu.
func (s *Store) loadIndex() (*index, error) {
	if s.be != nil {
		return s.loadBackendIndex()
	}
	if s.pending != nil && s.ix != nil {
		// A deferred commit holds the store lock: no other writer changed
		// the disk, and the in-memory index holds the batch it is naming.
		return s.ix, nil
	}
	for attempt := 0; ; attempt++ {
		ix, st, err := s.loadBase()
		if err != nil {
			return nil, err
		}
		if err := s.replayJournal(ix); err != nil {
			return nil, err
		}
		// A compaction between reading the base and the journal would hide
		// journaled entries: if the index changed meanwhile, read again.
		now, _ := stampOf(filepath.Join(s.dir, IndexFile))
		if now == st || attempt == 3 {
			return ix, nil
		}
		s.ix = nil
	}
}

// loadBase returns the index as recall_index.json holds it.
func (s *Store) loadBase() (*index, fileStamp, error) {
	path := filepath.Join(s.dir, IndexFile)
	st, err := stampOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		if s.ix == nil || s.ixStamp.ok {
			s.ix, s.ixStamp, s.jOff, s.jOps = newIndex(""), fileStamp{}, 0, 0
		}
		return s.ix, st, nil
	}
	if err != nil {
		return nil, st, &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
	}
	if s.ix != nil && st == s.ixStamp {
		return s.ix, st, nil
	}
	// The snapshot is bound to the file opened here: its entries are read
	// from this very file even if another process replaces the index.
	f, fi, err := fsutil.OpenRegular(path)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, st, &StoreFileError{File: path, Err: err, Remedy: "remove it and run 'contextfold repair --apply' to rebuild the index from cold_nodes/"}
	}
	if err != nil {
		return nil, st, &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
	}
	st = fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
	var ix *index
	if st.size >= IndexCacheThreshold && st != s.badCache {
		ix, _ = readCache(s.cachePaths(), st, f)
	}
	if ix == nil && st.size > MaxIndexBytes {
		f.Close()
		return nil, st, &StoreFileError{File: path, Err: &fsutil.TooLargeError{Size: st.size, Limit: MaxIndexBytes},
			Remedy: "restore it from a backup, or move it away and run 'contextfold repair --apply' to rebuild it from cold_nodes/"}
	}
	if ix == nil {
		data := make([]byte, st.size)
		_, err := f.ReadAt(data, 0)
		f.Close()
		if err != nil {
			return nil, st, &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
		}
		if ix, err = parseIndex(data); err != nil {
			return nil, st, &StoreFileError{File: path, Err: err, Remedy: "restore it from a backup, or run 'contextfold repair --apply' to rebuild it from cold_nodes/"}
		}
		if st.size >= IndexCacheThreshold {
			s.cacheParsed(ix, data, st)
		}
	}
	s.ix, s.ixStamp, s.jOff, s.jOps = ix, st, 0, 0
	return ix, st, nil
}

// cacheParsed writes the cache of an index that had to be parsed from its
// JSON (written by another implementation or an older version, or its cache
// was lost), so that the next process maps it instead. Only an index file in
// our exact encoding gets one: the snapshot locates entries by their byte
// spans in it. The reader may be a read-only command, so the cache goes to
// the per-user cache directory (internal/cachedir), never into the store
// (CONF-08); without one, nothing is written. Best effort, without the store
// lock: the cache is bound to the file's stamp, so a cache of a file
// replaced meanwhile is ignored.
func (s *Store) cacheParsed(ix *index, data []byte, st fileStamp) {
	dir, err := cachedir.For(s.dir, true)
	if err != nil {
		return
	}
	enc, spans, err := ix.encode()
	if err != nil || !bytes.Equal(enc, data) {
		return
	}
	c, err := ix.encodeCache(st, spans)
	if err != nil {
		return
	}
	_ = writeCache(dir, c, func() bool {
		now, _ := stampOf(filepath.Join(s.dir, IndexFile))
		return now == st
	})
}

// distrustCache drops the in-memory index after a query met a corrupt part
// of its snapshot: the index file with that stamp is parsed from JSON from
// now on (and its cache rewritten).
func (s *Store) distrustCache() {
	s.badCache, s.ix = s.ixStamp, nil
}

// replayJournal applies the journal lines not applied yet.
func (s *Store) replayJournal(ix *index) error {
	path := filepath.Join(s.dir, JournalFile)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() <= s.jOff) {
		return nil
	}
	if err != nil {
		return &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
	}
	f, fi, err := fsutil.OpenRegular(path)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return &StoreFileError{File: path, Err: err, Remedy: "remove it and run 'contextfold repair --apply' to re-index the cold nodes"}
	}
	if err != nil {
		return &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
	}
	defer f.Close()
	if fi.Size()-s.jOff > MaxIndexBytes {
		return &StoreFileError{File: path, Err: &fsutil.TooLargeError{Size: fi.Size() - s.jOff, Limit: MaxIndexBytes},
			Remedy: "remove the journal and run 'contextfold repair --apply' to re-index the cold nodes"}
	}
	if fi.Size() <= s.jOff {
		return nil
	}
	data := make([]byte, fi.Size()-s.jOff)
	n, err := f.ReadAt(data, s.jOff)
	if err != nil && n < len(data) && !errors.Is(err, io.EOF) {
		return &StoreFileError{File: path, Err: err, Remedy: "check the store's disk"}
	}
	consumed, lines, err := ix.applyJournal(data[:n])
	s.jOff += int64(consumed)
	s.jOps += lines
	if err != nil {
		s.ix = nil
		return &StoreFileError{File: path, Err: err, Remedy: "run 'contextfold compact' after restoring the line, or remove the journal and run 'contextfold repair --apply' to re-index the cold nodes"}
	}
	return nil
}

// commit makes the in-memory changes ops durable: by appending them to the
// journal while the index is large, else by rewriting recall_index.json (and
// its cache) and emptying the journal. Callers hold s.mu and the store lock,
// and loaded ix with loadIndex under that lock.
func (s *Store) commit(ix *index, ops []journalOp) error { return s.commitOps(ix, ops, false) }

// commitOps is commit; midBatch marks a commit in the middle of a long
// batch, which is journaled whenever the index is large (however many
// operations the journal then holds): the batch's last commit rewrites the
// index if the journal grew past JournalMaxOps, so a long ingest rewrites a
// large index once rather than at every intermediate commit.
func (s *Store) commitOps(ix *index, ops []journalOp, midBatch bool) error {
	if len(ops) == 0 {
		return nil
	}
	if s.be != nil {
		return s.commitBackend(ix, ops)
	}
	if s.journals(len(ops), midBatch) {
		lines, err := ix.encodeOps(ops)
		if err != nil {
			return err
		}
		path := filepath.Join(s.dir, JournalFile)
		off, err := appendJournal(path, s.jOff, lines)
		if err != nil {
			s.ix = nil
			return &StoreFileError{File: path, Err: err, Remedy: "free disk space or fix the permissions of the store directory"}
		}
		s.jOff, s.jOps = off, s.jOps+len(ops)
		return nil
	}
	return s.writeIndex(ix)
}

// journals reports whether a commit of n operations (midBatch: not the
// last of its batch) appends them to the journal rather than rewriting
// recall_index.json (commitOps). Callers hold s.mu.
func (s *Store) journals(n int, midBatch bool) bool {
	large := s.ixStamp.ok && s.ixStamp.size >= JournalThreshold
	return large && (midBatch || n <= JournalMaxOps/4 && s.jOps+n <= JournalMaxOps)
}

// writeIndex rewrites recall_index.json durably (and the cache for a large
// index), then empties the journal. Its temporary file is a spare of the
// store root when there is one (FillSpares): no file is created on the
// write's path. Callers hold s.mu and the store lock.
func (s *Store) writeIndex(ix *index) error {
	if s.be != nil {
		return s.replaceBackendIndex(ix)
	}
	b := fsutil.FileBatch{LastSpares: s.rootSpares}
	defer b.Abort()
	w := s.indexWrite(ix)
	defer w.release()
	if err := b.AddLast(w.path, 0o644, w.write); err != nil {
		return w.failed(err)
	}
	if err := b.Commit(); err != nil {
		return w.failed(err)
	}
	return w.done()
}

// pendingIndex is a rewrite of recall_index.json under way: the index is
// streamed into its temporary file by write (a FileBatch's file, never held
// whole in memory); the cache is encoded once the entries' spans are
// known, before the index replaces the old one, and stamped after (done),
// so that readers meet a new index without its cache only briefly.
type pendingIndex struct {
	s      *Store
	ix     *index
	path   string
	cache  *cacheParts // the cache file's parts
	encErr error
}

// indexWrite begins a rewrite of recall_index.json with ix: pass its write
// to a FileBatch (Add or AddLast), then call done once the batch is
// committed, or failed with the error of either, and release in any case.
func (s *Store) indexWrite(ix *index) *pendingIndex {
	if v, _ := ix.header["created_at"].(string); v == "" {
		ix.header["created_at"] = s.now()
	}
	return &pendingIndex{s: s, ix: ix, path: filepath.Join(s.dir, IndexFile)}
}

// write streams the index into w (and encodes its cache for a large index).
func (p *pendingIndex) write(w io.Writer) error {
	var iw indexWriter
	var spans []entrySpan
	var err error
	if hb, ok := w.(*fsutil.HeldBuffer); ok {
		// Held in memory (a deferred fold's commit writes it): encoded
		// straight into the batch's buffer, sized once from the index it
		// replaces (and the entries a fold event adds), rather than
		// through a 256 KiB write buffer into one that doubles as it
		// grows (on the fold event's path, 0.9 MB of garbage an event at
		// 600 entries).
		if p.s.ixStamp.ok {
			n := p.s.ixStamp.size
			hb.Grow(int(n + n/8 + 64<<10))
		}
		iw = hb
		spans, err = p.ix.encodeTo(hb)
	} else {
		ow := newOffsetWriter(w)
		iw = ow
		if spans, err = p.ix.encodeTo(ow); err == nil {
			if ferr := ow.flush(); ferr != nil {
				return ferr
			}
		}
	}
	if err != nil {
		p.encErr = err
		return err
	}
	if int64(iw.Len()) >= IndexCacheThreshold {
		// A large section is spilled beside the cache (same file
		// system), in the per-user cache directory or else the store.
		spill, cerr := cachedir.For(p.s.dir, true)
		if cerr != nil {
			spill = p.s.dir
		}
		p.cache.release() // a write retried
		p.cache, _ = p.ix.encodeCacheParts(fileStamp{}, spans, spill)
	}
	return nil
}

// release frees the cache's parts.
func (p *pendingIndex) release() { p.cache.release() }

// failed returns the error of a rewrite that failed with err: the
// in-memory index is dropped (it may be ahead of the disk).
func (p *pendingIndex) failed(err error) error {
	p.s.ix = nil
	if p.encErr != nil {
		return p.encErr
	}
	return &StoreFileError{File: p.path, Err: err, Remedy: "free disk space or fix the permissions of the store directory"}
}

// done finishes a rewrite whose file is durable under its name: the cache
// is stamped and written, the journal (whose operations the index now
// holds) removed, and ix becomes the store's in-memory index.
func (p *pendingIndex) done() error {
	s, cache := p.s, p.cache
	st, err := stampOf(p.path)
	if err != nil {
		s.ix = nil
		return nil
	}
	// The cache goes to the per-user cache directory; only without one does
	// this writer (which writes the store anyway) keep it in the store.
	cacheDir, cerr := cachedir.For(s.dir, cache != nil)
	if cerr != nil {
		cacheDir = s.dir
	} else {
		_ = os.Remove(filepath.Join(s.dir, IndexCacheFile)) // a cache an older version kept in the store
	}
	if cache != nil {
		stampCache(cache.head(), st)
		_ = writeCacheParts(cacheDir, cache, nil) // derived data: a failure costs only time
	} else {
		_ = os.Remove(filepath.Join(cacheDir, IndexCacheFile))
	}
	// The index now holds every journaled operation.
	jpath := filepath.Join(s.dir, JournalFile)
	if err := os.Remove(jpath); err == nil {
		_ = syncDir(s.dir)
	}
	s.ix, s.ixStamp, s.jOff, s.jOps = p.ix, st, 0, 0
	return nil
}

// cachePaths lists where a snapshot of the index may be: the per-user cache
// directory, then the store itself (where an older version, or a writer
// without a per-user cache directory, kept it). Reading either changes
// nothing.
func (s *Store) cachePaths() []string {
	var out []string
	if dir, err := cachedir.For(s.dir, false); err == nil {
		out = append(out, filepath.Join(dir, IndexCacheFile))
	}
	return append(out, filepath.Join(s.dir, IndexCacheFile))
}

// indexCounts counts the index's nodes, the evicted ones and the archived
// tokens (sum of token_estimate) without materialising entries: Status can
// use it instead of Entries, which reads every entry of a large index.
func (s *Store) indexCounts() (total, evicted, tokens int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return 0, 0, 0, err
	}
	for p := range int32(ix.len()) {
		if ix.evictedAt(p) {
			evicted++
		}
		tokens += ix.tokensAt(p)
	}
	return ix.len(), evicted, tokens, nil
}

// Policy returns the hydration policy in force: hydration_policy.json when
// present, else DefaultPolicy (spec §7).
func (s *Store) Policy() (*Policy, error) {
	path := s.storePath(PolicyFile)
	data, err := s.readStoreFile(PolicyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultPolicy(), nil
	}
	if err != nil {
		return nil, s.storeErr(path, err, "make it a readable file, or remove it to use the default policy")
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "fix the JSON object, or remove the file to use the default policy"}
	}
	return p, nil
}

// lock takes the store's exclusive inter-process lock, creating the store
// directory and cold_nodes/ as needed; a cold_nodes/ that is a symlink is
// refused (writes through it would leave the store). It first waits for a
// deferred commit of this Store (FoldBatchEachDeferred), releasing s.mu
// meanwhile: state read under s.mu before the call may be stale. For a backend store
// the lock is its write transaction (Backend.Begin), committed by flush.
// Callers hold s.mu.
func (s *Store) lock() (unlocker, error) {
	s.waitPending() // a deferred commit holds the lock until it is done
	if s.be != nil {
		return s.beginTx()
	}
	cold := filepath.Join(s.dir, ColdNodesDir)
	if fi, err := os.Lstat(cold); err == nil && !fi.IsDir() {
		return nil, &StoreFileError{File: cold, Err: fmt.Errorf("is not a directory of the store (it resolves to %s)", resolvePath(cold)),
			Remedy: "replace it by a plain directory (move the link away, then move the cold nodes it holds back in)"}
	}
	if err := os.MkdirAll(cold, 0o755); err != nil {
		return nil, &StoreFileError{File: s.dir, Err: err, Remedy: "check that the store directory can be created and written"}
	}
	l, err := fsutil.LockFile(filepath.Join(s.dir, lockFile))
	if err != nil {
		remedy := "check the permissions of the store directory"
		if errors.Is(err, fsutil.ErrNotRegular) {
			remedy = "remove it: it is the store's lock file, an empty regular file contextfold creates again"
		}
		return nil, &StoreFileError{File: filepath.Join(s.dir, lockFile), Err: err, Remedy: remedy}
	}
	if !s.swept {
		s.swept = true
		s.removeTempFiles()
	}
	return l, nil
}

// removeTempFiles removes the temporary files that interrupted atomic writes
// of this implementation left in cold_nodes/ and the store root (the names
// tempFileRE and rootTempFileRE match; validate reports them as temp_file),
// and the spare files in cold_nodes/ and the root that are not this
// Store's (FillSpares:
// left by a process gone, or by another Store, which then creates its
// nodes' temporary files instead).
// It runs once per Store, under the exclusive lock: every such file is
// written and renamed into place by a writer that holds this lock, so while
// we hold it no writer is midway and a temporary file still present is one
// whose rename never happened — an uncommitted copy that no operation reads
// and the store never held. Removing it loses nothing folded (a fold is
// durable only once its index commit is; an orphan node is a renamed file
// and stays for repair). So a proxy or hook restarted after a crash leaves
// a store that validates clean. Only regular files are removed; a failure
// to remove one is left for validate to report.
func (s *Store) removeTempFiles() {
	sweep := func(dir string, match func(name string) bool) {
		des, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		removed := false
		for _, d := range des {
			if d.Type().IsRegular() && match(d.Name()) && os.Remove(filepath.Join(dir, d.Name())) == nil {
				removed = true
			}
		}
		if removed {
			_ = syncDir(dir)
		}
	}
	sweep(filepath.Join(s.dir, ColdNodesDir), func(name string) bool {
		// A spare file of another Store or of a process gone; this
		// Store's own spares stay.
		return tempFileRE.MatchString(name) || fsutil.SpareNameRE.MatchString(name) && !s.spares.Has(name)
	})
	sweep(s.dir, func(name string) bool {
		return rootTempFileRE.MatchString(name) || fsutil.SpareNameRE.MatchString(name) && !s.rootSpares.Has(name)
	})
}

func syncDir(dir string) error { return fsutil.SyncDir(dir) }

// Compact rewrites recall_index.json with every journaled operation and
// empties the journal, so that the index file alone describes the store (as
// another IPCF implementation expects). A no-op for a store without a journal.
func (s *Store) Compact() error {
	if s.be != nil {
		return nil // a backend has no journal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(s.dir, JournalFile)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	l, err := s.lock()
	if err != nil {
		return err
	}
	defer l.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return err
	}
	return s.writeIndex(ix)
}
