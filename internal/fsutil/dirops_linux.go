package fsutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// dirOps renames a FileBatch's files and syncs their directories through
// one descriptor per directory: each rename is a renameat relative to its
// directory's descriptor (no walk of the full paths, and no stat of the
// target, which os.Rename makes first), and the directory's sync reuses
// that descriptor. A rename across directories goes through os.Rename.
// Not safe for concurrent use; close releases the descriptors.
type dirOps struct {
	dirs []string
	fds  []int
}

func (o *dirOps) fd(dir string) (int, error) {
	for i, d := range o.dirs {
		if d == dir {
			return o.fds[i], nil
		}
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	o.dirs, o.fds = append(o.dirs, dir), append(o.fds, fd)
	return fd, nil
}

// rename renames tmp to path (os.Rename's semantics for a file).
func (o *dirOps) rename(tmp, path string) error {
	dir := filepath.Dir(path)
	if filepath.Dir(tmp) != dir {
		return os.Rename(tmp, path)
	}
	fd, err := o.fd(dir)
	if err != nil {
		return err
	}
	for {
		err = syscall.Renameat(fd, filepath.Base(tmp), fd, filepath.Base(path))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return nil
}

// sync fsyncs dir (SyncDir's semantics).
func (o *dirOps) sync(dir string) error {
	fd, err := o.fd(dir)
	if err != nil {
		return err
	}
	for {
		err = syscall.Fsync(fd)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// close closes the descriptors.
func (o *dirOps) close() {
	for _, fd := range o.fds {
		syscall.Close(fd)
	}
	o.dirs, o.fds = nil, nil
}
