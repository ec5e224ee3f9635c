// Package backend defines the storage seam of contextfold stores (issue
// 13): the interface a non-directory store implements (package pgstore,
// PostgreSQL). It is a leaf package (it imports nothing of contextfold) so
// that implementations and the core's tests can use it without import
// cycles; package contextfold re-exports its types (contextfold.Backend …).
package backend

// DefaultStoreName is the store directory name the index's file_path values
// start with in a store that is not a directory (".contextfold", as
// contextfold.DefaultStoreDir).
const DefaultStoreName = ".contextfold"

// Backend is the storage seam of a Store: where a store keeps its
// bytes when it is not a directory. The directory store (Open) is the
// built-in default and keeps its own specialised paths (the memory-mapped
// index snapshot, the journal, file locks); a Store opened with OpenBackend
// keeps exactly the same bytes through a Backend instead (package pgstore:
// PostgreSQL). Every piece of protocol logic — hashing, verification
// (CONF-09/12), the hydration policy, matching (CONF-13), fold idempotence
// (CONF-01..03), validate and repair — stays in the Store and is shared by
// both.
//
// The seam is at the level of bytes and transactions:
//
//   - store files by name (PolicyFile, SettingsFile, EvictionLogFile,
//     RepairLogFile, PolicyHistoryFile): their exact bytes;
//   - cold nodes by step_id: the exact bytes of the file the directory store
//     writes (pretty JSON, spec §1), verified by the Store on every hydrate
//     and validate exactly as files are;
//   - the recall index as one entry document per step (canonical JSON of the
//     entry, spec §5) plus the header (the top-level keys but "nodes"),
//     read incrementally by Revision;
//   - one exclusive write transaction per store (Tx), in which a
//     fold, an eviction or a repair becomes visible whole or not at all.
//
// A Backend value serves one store (one session). Its methods are called
// with the Store's mutex held or from several goroutines at once (reads):
// implementations must be safe for concurrent use. Errors should be
// *Error (Location, Err, Remedy), which the Store reports as
// a *contextfold.StoreFileError; a missing file or node is an error satisfying
// errors.Is(err, fs.ErrNotExist).
type Backend interface {
	// Location names the store in messages, findings and Store.Dir():
	// for PostgreSQL "postgres://USER@HOST:PORT/DB?session=NAME". It never
	// holds a password.
	Location() string
	// StoreName is the directory name the index's file_path values start
	// with ("NAME/cold_nodes/step_000137.json"): DefaultStoreName unless
	// the backend says otherwise.
	StoreName() string
	// ReadIndex returns the changes of the recall index since revision
	// since, read in one consistent snapshot: every entry document
	// written after since (Full false), or the whole index when since is the
	// zero Revision or of another generation (Full true). Header is nil when
	// the store has no index yet.
	ReadIndex(since Revision) (*IndexDelta, error)
	// ReadNode returns the stored bytes of a step's cold node
	// (fs.ErrNotExist when there is none).
	ReadNode(step int) ([]byte, error)
	// NodeSteps lists, ascending, the steps that have cold node bytes,
	// indexed or not (an unindexed one is an orphan, CONF-12).
	NodeSteps() ([]int, error)
	// ReadFile returns the bytes of a store file by name (fs.ErrNotExist
	// when absent).
	ReadFile(name string) ([]byte, error)
	// Begin starts the store's exclusive write transaction: it blocks until
	// no other writer (goroutine, process or host) holds it. The Store calls
	// it with its mutex held and reads the index again after it returns.
	Begin() (Tx, error)
}

// NodeChecker is implemented by a Backend that can tell in one call which
// of many steps have cold node bytes: a fold event checks its new steps for
// unindexed nodes (orphans) with one query instead of one ReadNode per
// node. Without it the Store calls ReadNode per new step. Safe for
// concurrent use.
type NodeChecker interface {
	// HasNodes returns, ascending, those of steps that have cold node
	// bytes, indexed or not. steps may be in any order and hold repeats.
	HasNodes(steps []int) ([]int, error)
}

// Tx is a Backend's exclusive write transaction: nothing it writes is
// visible to any reader before Commit, and all of it is after. It is used by
// one goroutine at a time.
type Tx interface {
	// Rev is the revision the index will have once this transaction commits.
	Rev() Revision
	// WriteNode stores a new cold node's bytes; a step that already has
	// bytes is an error (the Store moves an orphan to quarantine first).
	WriteNode(step int, data []byte) error
	// WriteFile stores a store file's bytes, replacing any previous ones.
	WriteFile(name string, data []byte) error
	// PutEntries inserts or replaces index entries (canonical JSON
	// documents); header, when not nil, replaces the index header.
	PutEntries(header []byte, entries []StoredEntry) error
	// ReplaceIndex replaces the whole index (repair, import): readers
	// holding an older revision read it whole again.
	ReplaceIndex(header []byte, entries []StoredEntry) error
	// QuarantineNode moves a step's cold node bytes to quarantine under
	// name, with the reason; they are never deleted (spec §12).
	QuarantineNode(step int, name, reason string) error
	// Quarantine keeps bytes (an index entry, the index) in quarantine.
	Quarantine(name string, data []byte, reason string) error
	// Commit makes every write visible at once; Rollback discards them.
	// Either ends the transaction and releases the write lock.
	Commit() error
	Rollback() error
}

// Revision identifies a state of a backend's recall index. Seq grows with
// every committed write transaction; Generation changes when the index is
// replaced whole (repair, import), after which deltas do not apply. The
// zero Revision is "nothing read yet".
type Revision struct{ Generation, Seq int64 }

// IndexDelta is what Backend.ReadIndex returns.
type IndexDelta struct {
	Rev     Revision
	Full    bool   // Entries is the whole index
	Header  []byte // canonical JSON object; nil: unchanged (delta) or no index yet (full)
	Entries []StoredEntry
}

// StoredEntry is one recall-index entry as a Backend keeps it.
type StoredEntry struct {
	StepID int
	Doc    []byte // canonical JSON of the entry document (spec §5)
}

// Error is a backend failure, reported by the Store as a
// *contextfold.StoreFileError{File: Location, Err, Remedy}.
type Error struct {
	Location string // the store, as Backend.Location (no password)
	Err      error
	Remedy   string // what to do about it
}

func (e *Error) Error() string {
	msg := e.Location + ": " + e.Err.Error()
	if e.Remedy != "" {
		msg += " (" + e.Remedy + ")"
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// SnapshotStore is implemented by a Backend that keeps derived snapshots
// shared by every process of the store (the ranked matcher's
// index snapshot, so that a replica's first ranked scan of a large session
// does not read and analyse every cold node). A snapshot is opaque bytes,
// tied to the index revision it was derived from; the backend is storage,
// not a trusted party: the reader verifies the bytes (SHA-256, the
// snapshot's own checks, its revision and node identities against the index)
// and rebuilds on any mismatch. It is never written inside a store's write
// transaction (Tx): writing one blocks no fold. Safe for concurrent use.
type SnapshotStore interface {
	// SnapshotInfo describes the stored snapshot of kind (fs.ErrNotExist
	// when there is none), without reading its bytes.
	SnapshotInfo(kind string) (SnapshotInfo, error)
	// ReadSnapshot returns the stored snapshot of kind and its bytes, read
	// in one consistent snapshot of the database (fs.ErrNotExist when there
	// is none). The bytes are as stored: not verified.
	ReadSnapshot(kind string) (SnapshotInfo, []byte, error)
	// WriteSnapshot stores data as the snapshot of kind derived from the
	// index at revision rev, replacing the previous one, unless minLead >= 0
	// and the stored one is of the same generation and at most minLead
	// revisions older than rev (or newer): then nothing is written and
	// false is returned. minLead < 0 always writes (a snapshot found
	// corrupt is replaced).
	WriteSnapshot(kind string, rev Revision, data []byte, minLead int64) (bool, error)
}

// SnapshotInfo is what SnapshotStore keeps beside a snapshot's bytes.
type SnapshotInfo struct {
	Rev    Revision // the index revision the snapshot was derived from
	Size   int64    // bytes
	SHA256 string   // lowercase hex SHA-256 of the bytes, as recorded when written
}
