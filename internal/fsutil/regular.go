package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrNotRegular is wrapped (in an *fs.PathError) by the readers of this
// package for a path that is not a regular file: a FIFO, a device, a
// socket or a directory. Such a path is refused before any read, without
// blocking: a FIFO is opened non-blocking (a reader of a FIFO otherwise
// waits for a writer forever), a device is never read (/dev/zero never
// ends). Every file a store, its caches or a transcript reader opens goes
// through ReadFile, ReadFileMax or OpenRegular.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError reports a regular file larger than the limit its reader
// allows; nothing of it was read. It is wrapped in an *fs.PathError.
type TooLargeError struct {
	Size  int64 // the file's size, in bytes
	Limit int64 // the reader's limit, in bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s, larger than the %s allowed", ByteSize(e.Size), ByteSize(e.Limit))
}

// ByteSize formats n bytes for a message: "2.0 GiB (2147483648 bytes)".
func ByteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}

// notRegular is the error of a path whose file type is mode.
func notRegular(op, path string, mode fs.FileMode) error {
	kind := "a special file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "a FIFO (named pipe)"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	case mode.IsDir():
		kind = "a directory"
	}
	return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind)}
}
