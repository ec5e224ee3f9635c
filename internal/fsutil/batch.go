package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// CrashPoint is a test seam: when set, it is called at each named point of
// a durable write where a crash leaves a distinct state on disk (the
// Batch* and Atomic* constants), so that a test can kill the process there.
// Production code leaves it nil.
var CrashPoint func(point string)

// The points CrashPoint is called at.
const (
	// BatchFirstWritten: the first file of a FileBatch commit group is
	// written to its temporary file (not synced, not named).
	BatchFirstWritten = "batch-first-written"
	// BatchWritten: every file of the group is written, none is named;
	// some may be synced.
	BatchWritten = "batch-written"
	// BatchSynced: every file's bytes are durable, none is named.
	BatchSynced = "batch-synced"
	// BatchRenamedFirst: the first file is named, the others are not
	// (only for a group of two files or more).
	BatchRenamedFirst = "batch-renamed-first"
	// BatchRenamed: every file is named (the last file excepted, see
	// AddLast), the directory is not synced. This point and
	// BatchDirSynced are not passed by a group of a last file alone.
	BatchRenamed = "batch-renamed"
	// BatchDirSynced: the names are durable; the caller's next write (the
	// index that points at them) has not started, or, in a group with a
	// last file (AddLast), that file is synced and not named.
	BatchDirSynced = "batch-dir-synced"
	// BatchLastRenamed: the last file of the group (AddLast) is named,
	// its directory is not synced.
	BatchLastRenamed = "batch-last-renamed"
	// AtomicRenamed: a WriteFileAtomic file is synced and renamed into
	// place, its directory is not synced yet.
	AtomicRenamed = "atomic-renamed"
)

func crashPoint(point string) {
	if f := CrashPoint; f != nil {
		f(point)
	}
}

// MaxUnsynced bounds the files a FileBatch keeps open between their write
// and their sync: once that many are written, they are synced (in
// parallel) and closed, so that a batch of thousands of files holds at most
// this many descriptors. It is MaxSpareFiles, so that a fold event of up to
// that many nodes (a fold event of 50 to 70 is common) pays one wave of
// syncs, not two. A variable for tests.
var MaxUnsynced = MaxSpareFiles

// syncWorkers is the number of files synced at once. Concurrent fsyncs
// share the file system's journal commits and the device's cache flushes
// (ext4, XFS): 50 small new files sync in about the time of a few, where
// one after the other each pays a commit.
const syncWorkers = 16

// FileBatch writes many new files durably with as few syncs as their
// ordering allows (a fold event's cold nodes): each file is written whole
// to a temporary file in its target's directory; Commit then makes every
// temporary file's bytes durable (concurrent fsyncs), renames each into
// place, and syncs each directory once. So no file is ever named before its
// bytes are durable, and once Commit returns every name is durable: the
// caller may then write what points at the files (the index), as bbolt
// writes its data before the root that points at it.
//
// A crash before Commit returns leaves the targets absent or whole (never
// partial) and possibly temporary files, named "." + the target's base name
// + random digits (as WriteFileAtomic's), or spares' names (SparePrefix +
// digits) for files written into spares: no reader takes them for a target.
// Abort removes the temporary files of files not renamed.
//
// A group may end with one last file (AddLast: the index that points at
// the others), whose name must not become durable before theirs: its bytes
// are synced in the same wave as theirs (one wait for the device, not
// two), and it is renamed only once every other file is named and their
// directories synced; then its own directory is synced. So the last file's
// name never points at a file not durable, and once Commit returns the
// whole group is durable.
//
// The targets other than the last file's must not exist (Commit would
// replace them); the last file replaces its target atomically (a reader
// sees the old file or the new one whole). Every write goes through
// WrapWriter, as WriteFileAtomic's. A FileBatch is used by one goroutine
// at a time; the zero value is ready to use.
type FileBatch struct {
	// Spares, when set, provides the temporary files of the files added
	// in its directory: Add writes into a spare (no file created on the
	// write's path) while the pool holds one, else creates a temporary
	// file as without it. A spare written and not committed is a
	// temporary file like the others: Abort removes it.
	Spares *SpareFiles
	// LastSpares, when set, provides the temporary file of the last file
	// (AddLast) when that file is in its directory, as Spares does for
	// the others.
	LastSpares *SpareFiles

	pending  []batchFile // written, not renamed yet (the last file excluded)
	last     *batchFile  // the last file (AddLast), written, not renamed yet
	unsynced []*os.File  // pending files still open: written, not synced
	first    bool        // BatchFirstWritten was passed for this group
}

type batchFile struct {
	tmp, path string
	f         *os.File // open until synced, then nil
}

// Len returns the number of files written and not committed yet, the last
// file (AddLast) included.
func (b *FileBatch) Len() int {
	if b.last != nil {
		return len(b.pending) + 1
	}
	return len(b.pending)
}

// Temporaries returns, for each file added and not renamed yet (the last
// file, AddLast, excluded), its target path and the temporary file that
// holds its whole content until Commit renames it: a reader that finds no
// file at a target while the batch commits may read the temporary file,
// and, should that be gone too (renamed meanwhile), the target again. The
// map is the caller's.
func (b *FileBatch) Temporaries() map[string]string {
	m := make(map[string]string, len(b.pending))
	for _, p := range b.pending {
		m[p.path] = p.tmp
	}
	return m
}

// LastFileError is the error of Commit once every other file of the group
// is durable under its name and the last file (AddLast) could not be: its
// rename or its directory's sync failed. Path is the last file's target.
type LastFileError struct {
	Path string
	Err  error
}

func (e *LastFileError) Error() string {
	return fmt.Sprintf("%s: the batch's other files are durable, this one is not: %v", e.Path, e.Err)
}

func (e *LastFileError) Unwrap() error { return e.Err }

// Add writes a new file's content (streamed by write, which must return the
// first error of the writer it is given) to a temporary file beside path,
// with permissions perm (or to one of Spares), which Commit names path. On
// an error the temporary file is removed and the batch's other files are
// kept.
func (b *FileBatch) Add(path string, perm os.FileMode, write func(w io.Writer) error) error {
	f, err := b.write(b.Spares, path, perm, write)
	if err != nil {
		return err
	}
	b.pending = append(b.pending, batchFile{tmp: f.Name(), path: path, f: f})
	return b.written(f)
}

// AddLast writes the group's last file, as Add does (into one of
// LastSpares when its directory is theirs): Commit syncs its bytes with the
// other files' and names it after them (see FileBatch). Add may still be
// called after it (those files are named before it too). A group has at
// most one last file: a second AddLast before Commit is an error and writes
// nothing.
func (b *FileBatch) AddLast(path string, perm os.FileMode, write func(w io.Writer) error) error {
	if b.last != nil {
		return fmt.Errorf("write %s: the batch already has a last file (%s) not committed", path, b.last.path)
	}
	f, err := b.write(b.LastSpares, path, perm, write)
	if err != nil {
		return err
	}
	b.last = &batchFile{tmp: f.Name(), path: path, f: f}
	return b.written(f)
}

// written records f, written and still open, for the next sync.
func (b *FileBatch) written(f *os.File) error {
	b.unsynced = append(b.unsynced, f)
	if !b.first {
		b.first = true
		crashPoint(BatchFirstWritten)
	}
	if len(b.unsynced) >= MaxUnsynced {
		return b.syncOpen()
	}
	return nil
}

// write writes a file's temporary file (a spare of spares, or a new one)
// and returns it open; on an error it is removed.
func (b *FileBatch) write(spares *SpareFiles, path string, perm os.FileMode, write func(w io.Writer) error) (_ *os.File, err error) {
	dir := filepath.Dir(path)
	f, ok := spares.take(dir)
	if !ok {
		if f, err = os.CreateTemp(dir, "."+filepath.Base(path)); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return nil, err
	}
	cw := &checkedWriter{w: WrapWriter(f), path: path}
	if err := write(cw); err != nil {
		return nil, err
	}
	if cw.err != nil {
		return nil, cw.err
	}
	return f, nil
}

// syncOpen syncs and closes the open files, concurrently.
func (b *FileBatch) syncOpen() error {
	files := b.unsynced
	b.unsynced = nil
	err := syncFiles(files)
	for i := range b.pending {
		b.pending[i].f = nil // closed by syncFiles
	}
	if b.last != nil {
		b.last.f = nil
	}
	return err
}

// syncFiles fsyncs and closes files (concurrently when there are several)
// and returns the first error, naming its file.
func syncFiles(files []*os.File) error {
	errs := make([]error, len(files))
	one := func(i int) {
		f := files[i]
		if err := f.Sync(); err != nil {
			errs[i] = fmt.Errorf("fsync %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil && errs[i] == nil {
			errs[i] = err
		}
	}
	if n := min(len(files), syncWorkers); n <= 1 {
		for i := range files {
			one(i)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
					one(i)
				}
			}()
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

// Commit makes every file added since the last Commit durable under its
// name: their bytes are synced (the last file's with them), then each is
// renamed into place in the order added, then each directory is synced
// once; then the last file (AddLast), if any, is renamed into place and its
// directory synced. On an error the files not renamed yet are removed
// (Abort) and the error returned (a *LastFileError when only the last
// file's rename or directory sync failed); files already renamed stay
// (whole: their bytes were durable before their rename).
func (b *FileBatch) Commit() (err error) {
	if b.Len() == 0 {
		return nil
	}
	defer func() {
		if err != nil {
			b.Abort()
		}
	}()
	crashPoint(BatchWritten)
	if err := b.syncOpen(); err != nil {
		return err
	}
	crashPoint(BatchSynced)
	var ops dirOps
	defer ops.close()
	var dirs []string
	for i, p := range b.pending {
		if err := ops.rename(p.tmp, p.path); err != nil {
			b.pending = b.pending[i:]
			return err
		}
		if i == 0 && len(b.pending) > 1 {
			crashPoint(BatchRenamedFirst)
		}
		if d := filepath.Dir(p.path); len(dirs) == 0 || dirs[len(dirs)-1] != d {
			dirs = appendNew(dirs, d)
		}
	}
	b.pending, b.first = b.pending[:0], false
	if len(dirs) > 0 {
		crashPoint(BatchRenamed)
		for _, d := range dirs {
			if err := ops.sync(d); err != nil {
				return err
			}
		}
		crashPoint(BatchDirSynced)
	}
	last := b.last
	if last == nil {
		return nil
	}
	if err := ops.rename(last.tmp, last.path); err != nil {
		return &LastFileError{Path: last.path, Err: err}
	}
	b.last = nil
	crashPoint(BatchLastRenamed)
	if err := ops.sync(filepath.Dir(last.path)); err != nil {
		return &LastFileError{Path: last.path, Err: err}
	}
	return nil
}

func appendNew(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// Abort removes the temporary files of the files not committed (closing
// those still open) and empties the batch. Safe to call after Commit (it
// then does nothing) and more than once.
func (b *FileBatch) Abort() {
	if b.last != nil {
		b.pending = append(b.pending, *b.last)
	}
	for _, p := range b.pending {
		if p.f != nil {
			p.f.Close()
		}
		os.Remove(p.tmp)
	}
	b.pending, b.last, b.unsynced, b.first = b.pending[:0], nil, nil, false
}
