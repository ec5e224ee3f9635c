// Package fsutil holds the durable-write and locking primitives of a store:
// atomic file replacement with fsync of the file and of its directory, and an
// exclusive inter-process lock.
package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// WrapWriter is a test seam: it wraps the writer of every atomic write, so a
// test can inject ENOSPC or a short write. Production code leaves it alone.
var WrapWriter = func(w io.Writer) io.Writer { return w }

// WriteFileAtomic replaces path with data so that a reader (or a crash) sees
// either the old file or the whole new one, never a part: a temporary file in
// the same directory is written, its length checked, fsynced, renamed over
// path, and the directory fsynced. On any error the temporary file is removed
// and path is untouched. perm applies to a new file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteFileAtomicFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data) // a short write is an error of the checked writer
		return err
	})
}

// WriteFileAtomicFunc is WriteFileAtomic for content that write streams to
// the temporary file (a large cold node is never held whole in memory):
// the same temporary file, fsync, rename and directory fsync, and
// on any error (write's included) the temporary file is removed and path is
// untouched. write must return the first error of the writer it is given.
func WriteFileAtomicFunc(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	t, err := newPendingFile(dir, path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := t.Cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := t.Chmod(perm); err != nil {
		return err
	}
	cw := &checkedWriter{w: WrapWriter(t), path: path}
	if err := write(cw); err != nil {
		return err
	}
	if cw.err != nil { // write swallowed the writer's error
		return cw.err
	}
	if err := t.CloseAtomicallyReplace(); err != nil { // fsync + close + rename
		return err
	}
	crashPoint(AtomicRenamed)
	return SyncDir(dir)
}

// checkedWriter turns a short write into io.ErrShortWrite and remembers the
// first error.
type checkedWriter struct {
	w    io.Writer
	path string // named in the short-write error
	err  error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n != len(p) {
		err = fmt.Errorf("short write to %s: %d of %d bytes: %w", c.path, n, len(p), io.ErrShortWrite)
	}
	c.err = err
	return n, err
}

// SyncDir fsyncs a directory so that a rename or a new entry in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// Lock is an exclusive advisory lock on a file, held across processes.
type Lock struct{ f *flock.Flock }

// LockFile takes the exclusive lock on path (created if needed), blocking
// until it is free. A path that exists and is not a regular file (a FIFO,
// a device or a link to one, a directory, a socket) is refused with an
// *fs.PathError wrapping ErrNotRegular before it is opened: opening a FIFO
// for reading would wait for a writer forever.
func LockFile(path string) (*Lock, error) {
	if err := checkLockTarget(path); err != nil {
		return nil, err
	}
	f := flock.New(path)
	if err := f.Lock(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := checkLocked(f); err != nil {
		return nil, err
	}
	return &Lock{f: f}, nil
}

// checkLockTarget refuses a lock file that exists and is not a regular file.
func checkLockTarget(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return notRegular("lock", path, fi.Mode())
	}
	return nil
}

// checkLocked refuses, and releases, a lock whose file is not a regular
// file (one put in its place between checkLockTarget and the open).
func checkLocked(f *flock.Flock) error {
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() {
		return nil
	}
	f.Close()
	if err != nil {
		return fmt.Errorf("lock %s: %w", f.Path(), err)
	}
	return notRegular("lock", f.Path(), fi.Mode())
}

// RLockExisting takes a shared lock on an existing lock file, opened
// read-only and never created (a read-only command must not create files):
// it waits, at most timeout, until no process holds the exclusive lock. It
// returns an error wrapping fs.ErrNotExist when there is no lock file (no
// writer ever ran), and ok false when the timeout passed.
func RLockExisting(path string, timeout time.Duration) (l *Lock, ok bool, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, false, err
	}
	if err := checkLockTarget(path); err != nil {
		return nil, false, err
	}
	f := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got, err := f.TryRLockContext(ctx, 10*time.Millisecond)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	if !got {
		f.Close()
		return nil, false, nil
	}
	if err := checkLocked(f); err != nil {
		return nil, false, err
	}
	return &Lock{f: f}, true, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Unlock() }

// pendingFile is the temporary file of an atomic write: written, then
// either renamed over its target (CloseAtomicallyReplace: fsync, close,
// rename) or removed (Cleanup, a no-op after a successful replace).
type pendingFile interface {
	Write(p []byte) (int, error)
	Chmod(mode os.FileMode) error
	CloseAtomicallyReplace() error
	Cleanup() error
}
