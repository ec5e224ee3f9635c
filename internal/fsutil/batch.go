package fsutil

import (
	"bytes"
	"cmp"
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
	// DeferCreates, when positive, is the bytes a batch may hold in
	// memory: a file Add or AddLast finds no spare for is rendered into
	// memory, and its temporary file created and written by Commit,
	// before any sync, while the files so held stay within these bytes
	// (past them a file is created at once, as without it). Creating a
	// file allocates an inode, kernel CPU time that a caller overlapping
	// Commit with other work (a deferred fold commit: with the upstream
	// call) takes off its path this way. Until Commit writes it such a
	// file exists nowhere on disk (a crash leaves nothing of it); Buffered
	// returns its bytes for a reader. A write error of its content (the
	// disk full) is then Commit's.
	DeferCreates int
	// HoldAll, with DeferCreates, holds every file Add or AddLast writes
	// in memory while the held files stay within DeferCreates bytes, a
	// spare left or not: Commit then writes each into a spare of its pool
	// (Spares, LastSpares) or, when none is left, a temporary file it
	// creates, before any sync. So the caller's
	// path does no file system call for the batch at all (opening a
	// spare, its chmod and its write all change its inode, and each may
	// wait for the file system's journal): a caller that overlaps Commit
	// with other work (a deferred fold commit: with the upstream call)
	// leaves all of it to Commit. What a crash leaves is what DeferCreates
	// leaves of a held file: nothing.
	HoldAll bool

	pending  []batchFile // written, not renamed yet (the last file excluded)
	last     *batchFile  // the last file (AddLast), written, not renamed yet
	unsynced []*os.File  // pending files still open: written, not synced
	first    bool        // BatchFirstWritten was passed for this group
	held     int         // bytes of the files held in memory (DeferCreates)
}

type batchFile struct {
	tmp, path string
	f         *os.File    // open until synced, then nil
	buf       []byte      // held in memory, not created yet (DeferCreates); tmp is "" until created
	perm      os.FileMode // the file's permissions, for one held in memory
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
		if p.tmp != "" {
			m[p.path] = p.tmp
		}
	}
	return m
}

// Buffered returns, for each file added and held in memory, not created
// yet (DeferCreates; the last file excluded), its target path and its
// whole content: a reader that finds no file at a target while the batch
// commits reads these bytes (the same bytes Commit writes). The map is the
// caller's; the byte slices are shared and must not be modified.
func (b *FileBatch) Buffered() map[string][]byte {
	var m map[string][]byte
	for _, p := range b.pending {
		if p.tmp == "" && p.buf != nil {
			if m == nil {
				m = make(map[string][]byte)
			}
			m[p.path] = p.buf
		}
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
	return b.add(path, perm, write, nil)
}

// AddBytes is Add for a file whose bytes are rendered already (content):
// a file the batch holds in memory (DeferCreates, HoldAll) holds content
// itself, not a copy, so the caller must not change it afterwards. The
// files and their bytes are those of Add with a write of content.
func (b *FileBatch) AddBytes(path string, perm os.FileMode, content []byte) error {
	return b.add(path, perm, func(w io.Writer) error { _, err := w.Write(content); return err }, content)
}

// add is Add, with the file's bytes when they are rendered already (ready,
// nil: write renders them).
func (b *FileBatch) add(path string, perm os.FileMode, write func(w io.Writer) error, ready []byte) error {
	f, buf, err := b.write(b.Spares, path, perm, write, ready)
	if err != nil {
		return err
	}
	if f == nil {
		b.pending = append(b.pending, batchFile{path: path, buf: buf, perm: perm})
		return nil
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
	f, buf, err := b.write(b.LastSpares, path, perm, write, nil)
	if err != nil {
		return err
	}
	if f == nil {
		b.last = &batchFile{path: path, buf: buf, perm: perm}
		return nil
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

// HeldBuffer is what a FileBatch passes to a file's write function when
// it holds the file's bytes in memory (HoldAll, DeferCreates) rather than
// writing them to the file: a bytes.Buffer, so that the function may write
// into it directly, without a buffer of its own in between, and size it
// at once (Grow) when it knows about how large the file will be. Its
// writes never fail. Not safe for concurrent use.
type HeldBuffer struct{ bytes.Buffer }

// write writes a file's temporary file (a spare of spares, or a new one)
// and returns it open; on an error it is removed. A file that finds no
// spare (with HoldAll: any file) while the batch may hold more in memory
// (DeferCreates) is returned as its bytes instead (f nil), written by
// Commit.
func (b *FileBatch) write(spares *SpareFiles, path string, perm os.FileMode, write func(w io.Writer) error, ready []byte) (_ *os.File, _ []byte, err error) {
	dir := filepath.Dir(path)
	var f *os.File
	ok := false
	if !b.HoldAll || b.DeferCreates <= b.held {
		f, ok = spares.take(dir)
	}
	var content []byte // rendered ahead of its file (DeferCreates)
	if !ok {
		if b.DeferCreates > b.held {
			content = ready
			if content == nil {
				var buf HeldBuffer // a memory write is never short
				if err := write(&buf); err != nil {
					return nil, nil, err
				}
				content = buf.Bytes()
			}
			if b.held+len(content) <= b.DeferCreates {
				b.held += len(content)
				return nil, content, nil
			}
			// past the bytes held: its file now
			if b.HoldAll {
				f, ok = spares.take(dir)
			}
		}
		if !ok {
			if f, err = os.CreateTemp(dir, "."+filepath.Base(path)); err != nil {
				return nil, nil, err
			}
		}
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return nil, nil, err
	}
	cw := &checkedWriter{w: WrapWriter(f), path: path}
	if content != nil {
		_, err = cw.Write(content)
	} else {
		err = write(cw)
	}
	if err != nil {
		return nil, nil, err
	}
	if cw.err != nil {
		return nil, nil, cw.err
	}
	return f, nil, nil
}

// create writes p, a file held in memory (DeferCreates, HoldAll), to a
// spare of spares (HoldAll) or, when none is left, a temporary file it
// creates, and returns it open (not recorded: createHeld does). On an error
// the file is removed.
func (b *FileBatch) create(p *batchFile, spares *SpareFiles) (*os.File, error) {
	dir := filepath.Dir(p.path)
	var f *os.File
	ok := false
	if b.HoldAll {
		f, ok = spares.take(dir)
	}
	if !ok {
		var err error
		if f, err = os.CreateTemp(dir, "."+filepath.Base(p.path)); err != nil {
			return nil, err
		}
	}
	err := f.Chmod(p.perm)
	if err == nil {
		cw := &checkedWriter{w: WrapWriter(f), path: p.path}
		if _, err = cw.Write(p.buf); err == nil {
			err = cw.err
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// createHeld writes the files held in memory (DeferCreates, HoldAll) to
// their temporary files, in the order added, the last file's last, and
// records each as written (open, for the next sync), one after the other
// (creations in one directory wait for its lock: done at once they burn
// CPU spinning on it), at most MaxUnsynced between two sync waves (the
// descriptors the batch holds open stay bounded). On an error the
// files written are recorded (Abort removes them) and the first error,
// in the order added, is returned.
func (b *FileBatch) createHeld() error {
	type heldFile struct {
		p      *batchFile
		spares *SpareFiles
	}
	var todo []heldFile
	for i := range b.pending {
		if p := &b.pending[i]; p.tmp == "" {
			todo = append(todo, heldFile{p, b.Spares})
		}
	}
	if b.last != nil && b.last.tmp == "" {
		todo = append(todo, heldFile{b.last, b.LastSpares})
	}
	for len(todo) > 0 {
		chunk := todo[:min(len(todo), max(MaxUnsynced-len(b.unsynced), 1))]
		todo = todo[len(chunk):]
		files := make([]*os.File, len(chunk))
		errs := make([]error, len(chunk))
		for k, h := range chunk {
			files[k], errs[k] = b.create(h.p, h.spares)
		}
		var first error
		for k, h := range chunk {
			if errs[k] != nil {
				first = cmp.Or(first, errs[k])
				continue
			}
			h.p.tmp, h.p.f = files[k].Name(), files[k]
			b.held -= len(h.p.buf)
			if first != nil {
				b.unsynced = append(b.unsynced, files[k]) // closed by Abort
				continue
			}
			if err := b.written(files[k]); err != nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
	}
	return nil
}

// each calls f(0) … f(n-1) on up to syncWorkers goroutines (on the
// caller's alone when n is 1) and returns when every call has.
func each(n int, f func(k int)) {
	if w := min(n, syncWorkers); w <= 1 {
		for k := range n {
			f(k)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, syncWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				f(k)
			}
		}()
	}
	wg.Wait()
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
	each(len(files), func(i int) {
		f := files[i]
		if err := f.Sync(); err != nil {
			errs[i] = fmt.Errorf("fsync %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil && errs[i] == nil {
			errs[i] = err
		}
	})
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
	if err := b.createHeld(); err != nil {
		return err
	}
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
		if p.tmp != "" {
			os.Remove(p.tmp)
		}
	}
	b.pending, b.last, b.unsynced, b.first, b.held = b.pending[:0], nil, nil, false, 0
}
