//go:build unix

package fsutil

import (
	"io/fs"
	"syscall"
)

// ReadFile is os.ReadFile for the many small files validate and hydrate read
// (a cold node each): open, fstat, read and close as plain system calls,
// without the runtime poller's registration os.Open attempts for every file
// (four fcntl and an epoll_ctl more per file: issue 12). Errors are the
// *fs.PathError os.ReadFile returns (errors.Is(err, fs.ErrNotExist) holds
// for a missing file). Safe for concurrent use.
func ReadFile(path string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	size := 0
	if syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		size = int(st.Size)
	}
	buf := make([]byte, 0, size+1) // +1: the read that sees the end
	for {
		if len(buf) == cap(buf) {
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
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
