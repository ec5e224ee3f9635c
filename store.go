package contextfold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

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
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, &StoreFileError{File: abs, Err: errors.New("is not a directory"), Remedy: "give --dir a directory path"}
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock
	}
	return &Store{dir: abs, opts: opts}, nil
}

// Dir returns the absolute path of the store directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) now() string { return s.opts.Clock().UTC().Format(TimeFormat) }

// stepFileName is "step_NNNNNN.json", the id zero-padded to width 6 with the
// sign counting towards the width (spec §1).
func stepFileName(step int) string { return fmt.Sprintf("step_%06d.json", step) }

// NodePath returns the canonical absolute path of a step's cold node file.
func (s *Store) NodePath(step int) string {
	return filepath.Join(s.dir, ColdNodesDir, stepFileName(step))
}

// indexFilePath is the file_path recorded in the index: relative to the
// directory that holds the store, '/' separated
// (".contextfold/cold_nodes/step_000137.json").
func (s *Store) indexFilePath(step int) string {
	return filepath.Base(s.dir) + "/" + ColdNodesDir + "/" + stepFileName(step)
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}, nil
}

// loadIndex returns the current index, reloading it when the file changed.
// Callers hold s.mu.
func (s *Store) loadIndex() (*index, error) {
	path := filepath.Join(s.dir, IndexFile)
	st, err := stampOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.ix, s.ixStamp = nil, fileStamp{}
		return newIndex(""), nil
	}
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
	}
	if s.ix != nil && st == s.ixStamp {
		return s.ix, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "check the permissions of the store directory"}
	}
	ix, err := parseIndex(data)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "restore it from a backup, or run 'contextfold repair --apply' to rebuild it from cold_nodes/"}
	}
	s.ix, s.ixStamp = ix, st
	return ix, nil
}

// writeIndex writes ix durably and remembers it as current. Callers hold
// s.mu and the store lock.
func (s *Store) writeIndex(ix *index) error {
	if ix.header["created_at"] == "" || ix.header["created_at"] == nil {
		ix.header["created_at"] = s.now()
	}
	data, err := ix.encode()
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, IndexFile)
	if err := fsutil.WriteFileAtomic(path, data, 0o644); err != nil {
		s.ix = nil // the in-memory copy may be ahead of the disk
		return fmt.Errorf("write %s: %w", path, err)
	}
	st, err := stampOf(path)
	if err != nil {
		s.ix = nil
		return nil
	}
	s.ix, s.ixStamp = ix, st
	return nil
}

// Policy returns the hydration policy in force: hydration_policy.json when
// present, else DefaultPolicy (spec §7).
func (s *Store) Policy() (*Policy, error) {
	path := filepath.Join(s.dir, PolicyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultPolicy(), nil
	}
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "make it a readable file, or remove it to use the default policy"}
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "fix the JSON object, or remove the file to use the default policy"}
	}
	return p, nil
}

// lock takes the store's exclusive inter-process lock, creating the store
// directory and cold_nodes/ as needed.
func (s *Store) lock() (*fsutil.Lock, error) {
	if err := os.MkdirAll(filepath.Join(s.dir, ColdNodesDir), 0o755); err != nil {
		return nil, &StoreFileError{File: s.dir, Err: err, Remedy: "check that the store directory can be created and written"}
	}
	l, err := fsutil.LockFile(filepath.Join(s.dir, lockFile))
	if err != nil {
		return nil, &StoreFileError{File: filepath.Join(s.dir, lockFile), Err: err, Remedy: "check the permissions of the store directory"}
	}
	return l, nil
}
