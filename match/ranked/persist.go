package ranked

import (
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/mmapfile"
)

// The ranked index is kept between processes in the per-user cache
// directory of the store (internal/cachedir), never inside the store, so
// that read-only commands stay read-only (CONF-08), as a snapshot (see
// snapshot.go for the layout) bound to what it was derived from: every
// node records its step and artifact_sha256, and the file records the
// store's index version; on load the index is refreshed against the store
// like an in-memory one (only new or changed nodes are read, and held in
// memory on top of the snapshot, and appended to the snapshot's delta file
// so that the next process replays them: see delta.go). A file that is truncated, corrupt, or of
// another format version is a miss: the index is rebuilt from the cold
// nodes.
const cacheName = snapName

// CacheFile is the name of the ranked index's snapshot in a store's
// per-user cache directory (internal/cachedir), and CacheFile + ".delta"
// its delta file. It changes with the snapshot's format and with the
// analysis (a snapshot of an older analysis is a miss, removed when a new
// one is written).
const CacheFile = cacheName

// oldCacheNames are earlier formats' files (or files of an earlier
// analysis: bump snapName and snapMagic whenever Analyze changes), removed
// when a snapshot is written.
var oldCacheNames = []string{"ranked-index.v1", "ranked-index.v2", "ranked-index.v3", "ranked-index.v4", "ranked-index.v5"}

// cachePath returns the cache file of the store at dir ("" when the
// per-user cache is disabled).
func cachePath(dir string, create bool) string {
	d, err := cachedir.For(dir, create)
	if err != nil {
		return ""
	}
	return filepath.Join(d, cacheName)
}

// load maps the store's snapshot; nil when there is none or it is not
// usable.
func load(dir string) *Index {
	path := cachePath(dir, false)
	if path == "" {
		return nil
	}
	data, unmap, err := mmapfile.Map(path)
	if err != nil {
		return nil
	}
	ix, err := decodeSnapshot(data)
	if err != nil {
		unmap()
		return nil
	}
	ix.snap.unmap = unmap
	// The changes since the snapshot, as analysed nodes (delta.go): the
	// nodes folded since are not read again.
	ix.snapID = identityOf(data)
	ix.unsaved = ix.replayDelta(deltaPath(path), ix.snapID)
	return ix
}

// save writes the snapshot atomically (best effort: a failure costs only
// time on the next process), and shares it when the store's backend keeps
// shared snapshots (shared.go; synchronously when built, the index having
// just been built from every cold node). Callers hold ix.mu.
func (ix *Index) save(dir string, built bool) {
	path := cachePath(dir, true)
	ss := sharedStore(ix.src)
	if path == "" && ss == nil {
		return
	}
	enc, ok := ix.buildSnapshot()
	if !ok {
		return
	}
	if ss != nil {
		// The shared store takes the bytes whole (backend.SnapshotStore).
		ix.share(ss, enc.bytes(), built)
	}
	if path == "" {
		return
	}
	// Streamed to the temporary file (the same bytes as encodeSnapshot's),
	// then fsync and rename: a crash leaves the old snapshot or the new.
	if fsutil.WriteFileAtomicFunc(path, 0o600, enc.writeTo) == nil {
		ix.snapID = enc.identity()
		resetDelta(path, ix.snapID)
		for _, old := range oldCacheNames {
			_ = os.Remove(filepath.Join(filepath.Dir(path), old))
			_ = os.Remove(filepath.Join(filepath.Dir(path), old+".delta"))
		}
	}
}
