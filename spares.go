package contextfold

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// Spare files. Writing a cold node creates its temporary file in
// cold_nodes/, and creating a file allocates an inode: on ext4 a
// directory whose block group saw many files deleted in the last seconds
// (any machine that runs test suites) makes each creation take a
// millisecond or more, most of a 50-node fold event. A directory store
// therefore keeps spare files: empty files made ahead in cold_nodes/
// (FillSpares, off the request's path), which a fold writes its nodes
// into, so that the fold event creates no file. A spare is named
// ".spare-" + digits: no reader of step_*.json sees it, validate ignores
// an empty one and reports one holding bytes (a fold interrupted before
// its commit) as a temp_file, repair quarantines such a one, and the
// first exclusive lock of another Store removes them (removeTempFiles).
// A spare never becomes a node but through a fold's commit (its bytes
// synced, then renamed to step_NNNNNN.json, then cold_nodes/ synced, then
// the index).
//
// The store root keeps one spare the same way (rootSpares), which the next
// rewrite of recall_index.json writes its temporary file into: a fold event
// that rewrites the index creates no file either. It is named and treated
// as the spares of cold_nodes/ (validate, repair, removeTempFiles); it
// never becomes recall_index.json but through a rename after its bytes are
// synced.

// MaxSpares bounds the spare files a Store keeps in cold_nodes/
// (fsutil.MaxSpareFiles).
const MaxSpares = fsutil.MaxSpareFiles

// rootSpareCount is the spare files a Store keeps in its root: one, for the
// next rewrite of recall_index.json.
const rootSpareCount = 1

// spareTarget is the spares FillSpares keeps for a next fold event of n
// turns: n, or the new nodes of the last fold event if more (the folds
// between the last two FillSpares calls: the folds of one request), at
// most MaxSpares.
func (s *Store) spareTarget(n int) int {
	return min(max(n, int(s.lastFold.Load()), int(s.sinceFill.Load())), MaxSpares)
}

// NeedsSpares reports whether FillSpares(n, ...) would make spare files:
// a directory store whose cold_nodes/ exists holds fewer than it keeps for
// a next fold event of n turns, or lacks its root spare. Cheap (one stat until cold_nodes/ is seen,
// then none): a caller may ask after each response.
func (s *Store) NeedsSpares(n int) bool {
	if s.spares == nil || s.be != nil || s.spares.Len() >= s.spareTarget(n) && s.rootSpares.Len() >= rootSpareCount {
		return false
	}
	if !s.coldSeen.Load() {
		fi, err := os.Stat(s.spares.Dir())
		if err != nil || !fi.IsDir() {
			return false
		}
		s.coldSeen.Store(true)
	}
	return true
}

// FillSpares makes spare files in cold_nodes/ (see above) until the store
// holds enough for a next fold event of n turns (n, or the new nodes of
// the folds since the last FillSpares if more, at most MaxSpares), and the
// store root's one, one at a time, returning early when a fold of this
// Store is writing (it would compete with the fold's own file system work)
// or stop (if not nil) reports true. Call it off the request's path (the proxy does after a
// response, with the turns it may fold next). It makes nothing for a
// backend store or before cold_nodes/ exists (the first fold creates it).
// Safe for concurrent use, with a fold of the store too (a fold takes
// spares as it writes; a spare made meanwhile waits for the next fold).
//
// Errors: cold_nodes/ not writable (the fold then creates its files, and
// reports what it meets).
func (s *Store) FillSpares(n int, stop func() bool) error {
	if s.be != nil || s.spares == nil {
		return nil
	}
	if v := s.sinceFill.Swap(0); v > 0 {
		s.lastFold.Store(v)
	}
	yield := func() bool {
		return s.folding.Load() > 0 || stop != nil && stop()
	}
	_, err := s.spares.Fill(s.spareTarget(n), yield)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// The root's spare once cold_nodes/ exists (the store root does then).
	_, err = s.rootSpares.Fill(rootSpareCount, yield)
	return err
}

// RemoveSpares removes the store's spare files (a session leaving memory,
// a server closing); a later FillSpares makes new ones. A spare left by a
// process that did not call it is harmless and removed by the next
// process's first write.
//
// Errors: a spare that could not be removed (validate ignores it; the next
// writer's first exclusive lock removes it).
func (s *Store) RemoveSpares() error {
	if s.spares == nil {
		return nil
	}
	return errors.Join(s.spares.Remove(), s.rootSpares.Remove())
}

// isSpare reports whether name (in cold_nodes/ or the store root) is a
// spare file's name, and
// its bytes whether it holds any (then it is the node of a fold
// interrupted before its commit: a temporary file left over).
func isSpare(dir, name string) (spare, bytes bool) {
	if !fsutil.SpareNameRE.MatchString(name) {
		return false, false
	}
	fi, err := os.Lstat(filepath.Join(dir, name))
	return true, err == nil && (!fi.Mode().IsRegular() || fi.Size() > 0)
}
