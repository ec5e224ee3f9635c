package contextfold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/contextfold/contextfold/backend"
	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// Backend is the storage seam of a Store: see package backend,
// which defines it (a leaf package, so that implementations need not import
// this one). The directory store (Open) is the built-in default; a Store
// opened with OpenBackend keeps exactly the same bytes through a Backend
// (package pgstore: PostgreSQL). Every piece of protocol logic stays here and
// is shared by both.
type (
	Backend     = backend.Backend
	BackendTx   = backend.Tx
	Revision    = backend.Revision
	IndexDelta  = backend.IndexDelta
	NodeChecker = backend.NodeChecker
	StoredEntry = backend.StoredEntry
	// BackendError is a backend's failure: the Store reports it as a
	// *StoreFileError with the same Location (as File), Err and Remedy.
	BackendError = backend.Error
)

// OpenBackend returns a Store that keeps its state in be. Like Open it reads
// nothing: errors are reported by the operations.
func OpenBackend(be Backend, opts Options) (*Store, error) {
	if be == nil {
		return nil, errors.New("contextfold: OpenBackend needs a backend")
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock
	}
	return &Store{dir: be.Location(), opts: opts, be: be}, nil
}

// Backend returns the store's backend, nil for a directory store.
func (s *Store) Backend() Backend { return s.be }

// storePath names a store file in messages: its path in a directory store,
// Location#name in a backend.
func (s *Store) storePath(name string) string {
	if s.be != nil {
		return s.dir + "#" + name
	}
	return filepath.Join(s.dir, name)
}

// readStoreFile reads a store file's bytes (fs.ErrNotExist when absent).
func (s *Store) readStoreFile(name string) ([]byte, error) {
	if s.be != nil {
		return s.be.ReadFile(name)
	}
	return fsutil.ReadFileMax(filepath.Join(s.dir, name), MaxFileBytes)
}

// writeStoreFile writes a store file durably (directory: atomic replace;
// backend: in the open write transaction). Callers hold the store lock.
func (s *Store) writeStoreFile(name string, data []byte) error {
	if s.be != nil {
		if s.tx == nil {
			return errors.New("contextfold: write outside the store lock (a bug)")
		}
		s.txWrites = true
		return s.tx.WriteFile(name, data)
	}
	return fsutil.WriteFileAtomic(filepath.Join(s.dir, name), data, 0o644)
}

// storeErr wraps a write or read failure of a store file: a backend's own
// error keeps its location and remedy (it names the database).
func (s *Store) storeErr(path string, err error, remedy string) error {
	var sf *StoreFileError
	if s.be != nil && errors.As(err, &sf) {
		return err
	}
	var be *BackendError
	if errors.As(err, &be) {
		return &StoreFileError{File: be.Location, Err: be.Err, Remedy: be.Remedy}
	}
	if s.be != nil {
		remedy = "check the database connection and try again"
	}
	return &StoreFileError{File: path, Err: err, Remedy: remedy}
}

// nodeBytes reads a cold node's bytes at path (directory) or from the
// backend.
// While a deferred commit names the nodes of a fold batch
// (FoldBatchEachDeferred), a node not named yet is read from its temporary
// file, whole since its write; renamed meanwhile, from its name again.
// A node whose file the commit creates (deferCreateBytes) is read from the
// bytes the commit writes, held in memory until the commit ends.
func (s *Store) nodeBytes(step int, path string) ([]byte, error) {
	if s.be != nil {
		return s.be.ReadNode(step)
	}
	data, err := fsutil.ReadFileMax(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		tmp, held := s.pendingTemp(path)
		if held != nil {
			return bytes.Clone(held), nil
		}
		if tmp != "" {
			if data, err = fsutil.ReadFileMax(tmp, MaxFileBytes); errors.Is(err, fs.ErrNotExist) {
				data, err = fsutil.ReadFileMax(path, MaxFileBytes)
			}
		}
	}
	return data, err
}

// txLock is the lock of a backend store: its write transaction. Unlock
// rolls back whatever was not committed by flush.
type txLock struct{ s *Store }

func (l txLock) Unlock() error {
	if tx := l.s.tx; tx != nil {
		l.s.tx, l.s.txWrites = nil, false
		l.s.ix = nil // the in-memory index may hold the discarded writes
		return tx.Rollback()
	}
	return nil
}

// beginTx takes a backend store's write transaction. Callers hold s.mu.
func (s *Store) beginTx() (unlocker, error) {
	tx, err := s.be.Begin()
	if err != nil {
		return nil, s.storeErr(s.dir, err, "")
	}
	s.tx, s.txWrites = tx, false
	return txLock{s}, nil
}

// unlocker releases the store lock.
type unlocker interface{ Unlock() error }

// flush commits a backend store's write transaction (a no-op for a
// directory store, whose writes are durable as they are made). A
// transaction that wrote nothing is rolled back, so readers see no new
// revision. Callers hold s.mu and the store lock.
func (s *Store) flush() error {
	tx := s.tx
	if tx == nil {
		return nil
	}
	wrote := s.txWrites
	s.tx, s.txWrites = nil, false
	if !wrote {
		return tx.Rollback()
	}
	if err := tx.Commit(); err != nil {
		s.ix = nil
		return s.storeErr(s.dir, err, "")
	}
	if s.ix != nil {
		s.beRev = tx.Rev()
	}
	return nil
}

// loadBackendIndex is loadIndex for a backend store: the changes since the
// revision held are applied to the in-memory index (a replica learns of
// other replicas' folds by reading only the entries written after its
// revision). Callers hold s.mu.
func (s *Store) loadBackendIndex() (*index, error) {
	since := s.beRev
	if s.ix == nil {
		since = Revision{}
	}
	d, err := s.be.ReadIndex(since)
	if err != nil {
		return nil, s.storeErr(s.storePath(IndexFile), err, "")
	}
	bad := func(err error) error {
		s.ix = nil
		return &StoreFileError{File: s.storePath(IndexFile), Err: err,
			Remedy: "run 'contextfold repair --apply' to rebuild the index from the cold nodes (the entry is kept in quarantine)"}
	}
	ix := s.ix
	if d.Full || ix == nil {
		ix = newIndex("")
	}
	if d.Header != nil {
		v, err := canonjson.Decode(d.Header)
		h, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, bad(fmt.Errorf("the index header is not a JSON object"))
		}
		ix.header = h
	}
	for _, se := range d.Entries {
		v, err := canonjson.Decode(se.Doc)
		if err != nil {
			return nil, bad(fmt.Errorf("entry %d: %v", se.StepID, err))
		}
		r, err := ix.recordFromDoc(strconv.Itoa(se.StepID), v)
		if err != nil {
			return nil, bad(err)
		}
		if old, ok := ix.get(r.step); ok {
			// Within a generation an entry changes by eviction only.
			old.evicted = r.evicted
			continue
		}
		ix.add(r)
	}
	if heap := ix.len() - ix.nb; s.tx == nil && heap >= BackendSnapshotMin && heap >= ix.nb/4 {
		// Matching over a large heap index costs time per scan: the index
		// is re-based on an in-memory snapshot, the same one a directory
		// store maps (dense-term signatures, compact postings).
		if snap, err := snapshotInMemory(ix, s.dir); err == nil {
			ix = snap
		}
	}
	s.ix, s.beRev = ix, d.Rev
	return ix, nil
}

// BackendSnapshotMin is the number of index entries read from a backend
// (not yet in a snapshot) from which a backend store rebuilds its in-memory
// snapshot: once the whole index is read (a cold replica), and again
// whenever the entries read since reach a quarter of the snapshot's; never
// inside a write transaction (a fold does not pay for it).
// Changing it only changes speed (a variable for tests and benchmarks).
var BackendSnapshotMin = 4096

// memEntries is a backend index encoded in memory, the entry source of its
// snapshot.
type memEntries struct {
	*bytes.Reader
	name string
}

func (m memEntries) Name() string { return m.name }

// snapshotInMemory returns ix as a snapshot-based index: encoded as
// recall_index.json in memory, with the snapshot of that encoding; records
// are materialised from the encoding when used.
func snapshotInMemory(ix *index, name string) (*index, error) {
	data, spans, err := ix.encode()
	if err != nil {
		return nil, err
	}
	c, err := ix.encodeCache(fileStamp{}, spans)
	if err != nil {
		return nil, err
	}
	return decodeCache(c, fileStamp{}, memEntries{bytes.NewReader(data), name + "#" + IndexFile})
}

// storedEntry renders a record as a backend entry document.
func (ix *index) storedEntry(r *record) (StoredEntry, error) {
	doc, err := canonjson.Canonical(ix.entry(r).Doc)
	return StoredEntry{StepID: r.step, Doc: doc}, err
}

// commitBackend writes the entries ops changed into the open transaction.
// Callers hold s.mu and the store lock.
func (s *Store) commitBackend(ix *index, ops []journalOp) error {
	seen := make(map[int]bool, len(ops))
	entries := make([]StoredEntry, 0, len(ops))
	for _, op := range ops {
		step := op.evict
		if op.fold != nil {
			step = op.fold.step
		}
		if seen[step] {
			continue
		}
		seen[step] = true
		r, ok := ix.get(step)
		if !ok {
			continue
		}
		se, err := ix.storedEntry(r)
		if err != nil {
			return err
		}
		entries = append(entries, se)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].StepID < entries[j].StepID })
	hdr, err := canonjson.Canonical(ix.header)
	if err != nil {
		return err
	}
	s.txWrites = true
	if err := s.tx.PutEntries(hdr, entries); err != nil {
		s.ix = nil
		return s.storeErr(s.storePath(IndexFile), err, "")
	}
	return nil
}

// replaceBackendIndex writes the whole index ix into the open transaction.
func (s *Store) replaceBackendIndex(ix *index) error {
	if v, _ := ix.header["created_at"].(string); v == "" {
		ix.header["created_at"] = s.now()
	}
	entries := make([]StoredEntry, 0, ix.len())
	for _, p := range ix.sortedPositions() {
		se, err := ix.storedEntry(ix.recs[p])
		if err != nil {
			return err
		}
		entries = append(entries, se)
	}
	hdr, err := canonjson.Canonical(ix.header)
	if err != nil {
		return err
	}
	s.txWrites = true
	if err := s.tx.ReplaceIndex(hdr, entries); err != nil {
		s.ix = nil
		return s.storeErr(s.storePath(IndexFile), err, "")
	}
	s.ix = ix
	return nil
}

// backendOrphans lists the cold nodes a backend holds that indexed does not
// report (CONF-12).
func (s *Store) backendOrphans(indexed func(int) bool) []Finding {
	steps, err := s.be.NodeSteps()
	if err != nil {
		return []Finding{{File: s.storePath(ColdNodesDir), Kind: KindStoreFile, Message: err.Error(), Err: err}}
	}
	var out []Finding
	for _, id := range steps {
		if indexed(id) {
			continue
		}
		step := id
		oe := &OrphanedNodeError{StepID: id, File: s.NodePath(id)}
		out = append(out, Finding{StepID: &step, File: oe.File, Kind: KindOrphan, Message: oe.Error(), Err: oe})
	}
	return out
}

// exportFiles are the store files export and import carry, besides the index
// and the cold nodes.
var exportFiles = []string{PolicyFile, EvictionLogFile, SettingsFile, RepairLogFile, PolicyHistoryFile}

// rewriteFilePaths returns ix with every canonical file_path under store
// name from renamed to store name to (entries that point elsewhere are kept
// as they are, so that validate still reports them). ix itself is unchanged.
func rewriteFilePaths(ix *index, from, to string) (*index, error) {
	if from == to {
		return ix, nil
	}
	out := newIndex("")
	out.header = ix.header
	for _, p := range ix.sortedPositions() {
		e := ix.entry(ix.recs[p])
		if e.FilePath == from+"/"+ColdNodesDir+"/"+stepFileName(e.StepID) {
			e.Doc["file_path"] = to + "/" + ColdNodesDir + "/" + stepFileName(e.StepID)
		}
		// Through canonical JSON, so that the record reads exactly as one
		// loaded from a file would.
		c, err := canonjson.Canonical(e.Doc)
		if err != nil {
			return nil, err
		}
		v, err := canonjson.Decode(c)
		if err != nil {
			return nil, err
		}
		r, err := out.recordFromDoc("", v)
		if err != nil {
			return nil, err
		}
		out.add(r)
	}
	return out, nil
}

// ExportDir writes the store as a directory store in dir, which must not
// exist or be empty (`contextfold export`): every cold node's
// exact bytes (orphans included), recall_index.json in the reference's
// encoding (spec §1) with file_path values naming dir, and the store files
// (policy, eviction log, settings, repair log, policy history) byte for
// byte. The quarantine is not exported. Read-only towards s. A directory
// store with a journal is exported compacted.
//
// Errors: *StoreFileError (dir not empty or not writable, a store read).
func (s *Store) ExportDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if names, err := os.ReadDir(abs); err == nil && len(names) > 0 {
		return &StoreFileError{File: abs, Err: errors.New("is not empty"), Remedy: "export into a new or empty directory"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return err
	}
	from := filepath.Base(s.dir)
	if s.be != nil {
		from = s.be.StoreName()
	}
	out, err := rewriteFilePaths(ix, from, filepath.Base(abs))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(abs, ColdNodesDir), 0o755); err != nil {
		return &StoreFileError{File: abs, Err: err, Remedy: "check that the directory can be created and written"}
	}
	var steps []int
	if s.be != nil {
		if steps, err = s.be.NodeSteps(); err != nil {
			return s.storeErr(s.storePath(ColdNodesDir), err, "")
		}
	} else {
		names, _ := os.ReadDir(filepath.Join(s.dir, ColdNodesDir))
		for _, d := range names {
			if m := stepFileRE.FindStringSubmatch(d.Name()); m != nil && d.Type().IsRegular() {
				if id, err := strconv.Atoi(m[1]); err == nil && stepFileName(id) == d.Name() {
					steps = append(steps, id)
				}
			}
		}
	}
	for _, step := range steps {
		data, err := s.nodeBytes(step, s.NodePath(step))
		if err != nil {
			return s.storeErr(s.NodePath(step), err, "check the store and export again")
		}
		path := filepath.Join(abs, ColdNodesDir, stepFileName(step))
		if err := fsutil.WriteFileAtomic(path, data, 0o644); err != nil {
			return &StoreFileError{File: path, Err: err, Remedy: "free disk space or fix the permissions of the directory"}
		}
	}
	for _, name := range exportFiles {
		data, err := s.readStoreFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return s.storeErr(s.storePath(name), err, "check the store and export again")
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(abs, name), data, 0o644); err != nil {
			return &StoreFileError{File: filepath.Join(abs, name), Err: err, Remedy: "free disk space or fix the permissions of the directory"}
		}
	}
	if _, ok := out.header["created_at"]; ok || out.len() > 0 {
		data, _, err := out.encode()
		if err != nil {
			return err
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(abs, IndexFile), data, 0o644); err != nil {
			return &StoreFileError{File: filepath.Join(abs, IndexFile), Err: err, Remedy: "free disk space or fix the permissions of the directory"}
		}
	}
	return fsutil.SyncDir(abs)
}

// ImportDir loads the directory store at dir into s, which must be a
// backend store that holds nothing yet (`contextfold import`):
// every canonical cold node file's exact bytes (orphans included), the
// index (journal applied) with its file_path values renamed to the
// backend's StoreName, and the store files byte for byte, in one write
// transaction: all of it or nothing. Exporting the result into a directory
// of dir's name gives back dir's bytes (recall_index.json in our encoding,
// which is the reference's; the .lock file, the journal and quarantine/
// aside). It returns the number of cold nodes imported.
//
// Errors: *StoreFileError (dir unreadable or not a store, s not empty,
// a write).
func (s *Store) ImportDir(dir string) (int, error) {
	if s.be == nil {
		return 0, errors.New("contextfold: import needs a database store (--store postgres://…); copy the directory instead")
	}
	src, err := Open(dir, Options{})
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(filepath.Join(src.dir, IndexFile)); err != nil {
		if _, cerr := os.Stat(filepath.Join(src.dir, ColdNodesDir)); cerr != nil {
			return 0, &StoreFileError{File: src.dir, Err: errors.New("holds no recall_index.json and no cold_nodes/"), Remedy: "give the directory of a store"}
		}
	}
	src.mu.Lock()
	six, err := src.loadIndex()
	src.mu.Unlock()
	if err != nil {
		return 0, err
	}
	ix, err := rewriteFilePaths(six, filepath.Base(src.dir), s.be.StoreName())
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	cur, err := s.loadIndex()
	if err != nil {
		return 0, err
	}
	steps, err := s.be.NodeSteps()
	if err != nil {
		return 0, s.storeErr(s.dir, err, "")
	}
	if cur.len() > 0 || len(steps) > 0 {
		return 0, &StoreFileError{File: s.dir, Err: fmt.Errorf("already holds %d indexed and %d stored cold nodes", cur.len(), len(steps)),
			Remedy: "import into a new session (?session=NAME), or export this one first"}
	}
	names, err := os.ReadDir(filepath.Join(src.dir, ColdNodesDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, &StoreFileError{File: filepath.Join(src.dir, ColdNodesDir), Err: err, Remedy: "check the permissions of the store directory"}
	}
	n := 0
	for _, d := range names {
		m := stepFileRE.FindStringSubmatch(d.Name())
		if m == nil || !d.Type().IsRegular() {
			continue
		}
		id, err := strconv.Atoi(m[1])
		if err != nil || stepFileName(id) != d.Name() {
			continue
		}
		data, err := fsutil.ReadFileMax(filepath.Join(src.dir, ColdNodesDir, d.Name()), MaxFileBytes)
		if err != nil {
			return 0, &StoreFileError{File: filepath.Join(src.dir, ColdNodesDir, d.Name()), Err: err, Remedy: "check the permissions of the store directory"}
		}
		s.txWrites = true
		if err := s.tx.WriteNode(id, data); err != nil {
			return 0, s.storeErr(s.NodePath(id), err, "")
		}
		n++
	}
	for _, name := range exportFiles {
		data, err := fsutil.ReadFileMax(filepath.Join(src.dir, name), MaxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, &StoreFileError{File: filepath.Join(src.dir, name), Err: err, Remedy: "check the permissions of the store directory"}
		}
		if err := s.writeStoreFile(name, data); err != nil {
			return 0, s.storeErr(s.storePath(name), err, "")
		}
	}
	if _, ok := ix.header["created_at"]; ok || ix.len() > 0 {
		entries := make([]StoredEntry, 0, ix.len())
		for _, p := range ix.sortedPositions() {
			se, err := ix.storedEntry(ix.recs[p])
			if err != nil {
				return 0, err
			}
			entries = append(entries, se)
		}
		hdr, err := canonjson.Canonical(ix.header)
		if err != nil {
			return 0, err
		}
		s.txWrites = true
		if err := s.tx.ReplaceIndex(hdr, entries); err != nil {
			return 0, s.storeErr(s.storePath(IndexFile), err, "")
		}
	}
	s.ix = nil
	if err := s.flush(); err != nil {
		return 0, err
	}
	return n, nil
}

// IndexJSON returns the recall index as recall_index.json holds it: the
// file's bytes for a directory store (journaled updates not applied: see
// Compact), the index in the same encoding for a backend store (spec §1).
// An error satisfying errors.Is(err, fs.ErrNotExist) says there is no index
// yet. Read-only; safe for concurrent use.
func (s *Store) IndexJSON() ([]byte, error) {
	if s.be == nil {
		return fsutil.ReadFileMax(filepath.Join(s.dir, IndexFile), MaxIndexBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	if _, ok := ix.header["created_at"]; !ok && ix.len() == 0 {
		return nil, fmt.Errorf("%s: %w", s.storePath(IndexFile), fs.ErrNotExist)
	}
	data, _, err := ix.encode()
	return data, err
}
