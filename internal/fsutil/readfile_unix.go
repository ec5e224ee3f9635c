//go:build unix

package fsutil

import (
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// ReadFile is os.ReadFile for the many small files validate and hydrate read
// (a cold node each): open, fstat, read and close as plain system calls,
// without the runtime poller's registration os.Open attempts for every file
// (four fcntl and an epoll_ctl more per file). Errors are the
// *fs.PathError os.ReadFile returns (errors.Is(err, fs.ErrNotExist) holds
// for a missing file), and for a path that is not a regular file one
// wrapping ErrNotRegular, returned without blocking (see ReadFileMax).
// Safe for concurrent use.
func ReadFile(path string) ([]byte, error) { return ReadFileMax(path, -1) }

// ReadFileMax is ReadFile for a file of at most max bytes (max < 0: no
// limit): a larger regular file is refused before it is read, with an
// *fs.PathError wrapping *TooLargeError, so that its size costs no memory.
// The file is opened O_NONBLOCK: a FIFO in its place returns at once (and is
// refused as ErrNotRegular, as a device, socket or directory is). A file
// that grows past max while it is read is refused too.
func ReadFileMax(path string, max int64) ([]byte, error) { return appendFileMax(nil, path, max) }

// AppendFileMax is ReadFileMax appending the file's bytes to buf (into its
// spare capacity when it has room for the file: a caller reading many
// small files, such as the ranked scan's needle stage, reuses one buffer
// instead of allocating one a file). It returns the extended buffer; on
// an error, buf unchanged and ReadFileMax's error. Safe for concurrent
// use (on distinct buffers).
func AppendFileMax(buf []byte, path string, max int64) ([]byte, error) {
	out, err := appendFileMax(buf, path, max)
	if err != nil {
		return buf, err
	}
	return out, nil
}

// appendFileMax is AppendFileMax returning nil on an error.
func appendFileMax(buf []byte, path string, max int64) ([]byte, error) {
	fd, err := openNonblock(path)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, notRegular("open", path, modeOf(uint32(st.Mode)))
	}
	size := int64(st.Size)
	if max >= 0 && size > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: size, Limit: max}}
	}
	start := len(buf)
	switch {
	case buf == nil:
		buf = make([]byte, 0, size+1) // +1: the read that sees the end
	case int64(cap(buf)-start) < size+1:
		buf = slices.Grow(buf, int(size)+1) // amortised: a buffer reused for many files
	}
	for {
		if len(buf) == cap(buf) {
			if max >= 0 && int64(len(buf)-start) > max {
				return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: int64(len(buf) - start), Limit: max}}
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			if max >= 0 && int64(len(buf)-start) > max {
				return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: int64(len(buf) - start), Limit: max}}
			}
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// OpenRegular opens path for reading only if it is a regular file: the open
// is non-blocking (a FIFO returns at once) and the opened file's type is
// checked with fstat (no race with a rename between a stat and the open).
// Anything else is closed and refused with an *fs.PathError wrapping
// ErrNotRegular. The caller closes the file; fi is its fstat.
func OpenRegular(path string) (f *os.File, fi fs.FileInfo, err error) {
	fd, err := openNonblock(path)
	if err != nil {
		return nil, nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, nil, notRegular("open", path, modeOf(uint32(st.Mode)))
	}
	// A regular file ignores O_NONBLOCK; clear it anyway so that the
	// descriptor behaves as os.Open's.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f = os.NewFile(uintptr(fd), path)
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func openNonblock(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.ENXIO {
			// open(2) of a Unix socket fails with ENXIO ("no such device
			// or address"), which does not say what the path is.
			var st syscall.Stat_t
			if syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK {
				return -1, notRegular("open", path, fs.ModeSocket)
			}
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// modeOf maps a stat mode's type bits to an fs.FileMode.
func modeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	}
	return fs.ModeIrregular
}

// openInput opens a user's input: anything but a directory or a socket,
// opened without blocking and then set blocking (a pipe's reads wait for its
// writer). fi is the opened file's fstat.
func openInput(path string) (*os.File, fs.FileInfo, error) {
	fd, err := openNonblock(path)
	if err != nil {
		return nil, nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if m := st.Mode & syscall.S_IFMT; m == syscall.S_IFDIR || m == syscall.S_IFSOCK {
		syscall.Close(fd)
		return nil, nil, notRegular("open", path, modeOf(uint32(st.Mode)))
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
