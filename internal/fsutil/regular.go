package fsutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
	Size  int64 // the file's size, in bytes (-1: a stream, read past Limit)
	Limit int64 // the reader's limit, in bytes
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("more than the %s allowed", ByteSize(e.Limit))
	}
	return fmt.Sprintf("%s, larger than the %s allowed", ByteSize(e.Size), ByteSize(e.Limit))
}

// ReadInputMax reads an input file the user named (a transcript, a
// payload): a regular file of at most max bytes (a larger one is refused
// before it is read), or a stream — a pipe such as bash's <(…), a terminal,
// /dev/stdin — read up to max bytes (past it: refused with a TooLargeError
// of Size -1, after reading max+1 bytes). A directory or a socket is
// refused with ErrNotRegular. The open never blocks: a FIFO without a
// writer (or any pipe that gives no byte) is refused with ErrEmptyPipe.
func ReadInputMax(path string, max int64) ([]byte, error) {
	return ReadInputMaxHead(path, max, 0, func([]byte) error { return nil })
}

// ReadInputMaxHead is ReadInputMax that passes the input's first headLen
// bytes (all of it when shorter) to check as soon as they are read; an
// error from check ends the read and is returned as is. A stream that is
// plainly not the input wanted (/dev/zero, a pipe of binary data) is then
// refused after headLen bytes rather than after limit bytes held in memory.
// A regular file is read whole first (its size is bounded by limit before
// any read), then checked.
func ReadInputMaxHead(path string, limit int64, headLen int, check func(head []byte) error) ([]byte, error) {
	f, fi, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Mode().IsRegular() {
		f.Close()
		data, err := ReadFileMax(path, limit)
		if err != nil {
			return nil, err
		}
		if err := check(data[:min(len(data), headLen)]); err != nil {
			return nil, err
		}
		return data, nil
	}
	data, checkErr, err := readAllHead(f, limit, headLen, check)
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if len(data) == 0 && fi.Mode()&fs.ModeNamedPipe != 0 {
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrEmptyPipe}
	}
	return data, nil
}

// ReadAllMaxHead is ReadAllMax that passes the first headLen bytes of r (all
// of them when r is shorter) to check as soon as they are read; an error
// from check ends the read and is returned as is.
func ReadAllMaxHead(r io.Reader, limit int64, headLen int, check func(head []byte) error) ([]byte, error) {
	data, checkErr, err := readAllHead(r, limit, headLen, check)
	if checkErr != nil {
		return nil, checkErr
	}
	return data, err
}

// readAllHead reads r up to limit bytes (past it: a TooLargeError of Size
// -1), calling check on the first headLen bytes before reading on.
func readAllHead(r io.Reader, limit int64, headLen int, check func(head []byte) error) (data []byte, checkErr, err error) {
	head := make([]byte, max(0, min(int64(headLen), limit+1)))
	n, err := io.ReadFull(r, head)
	head = head[:n]
	ended := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !ended {
		return nil, nil, err
	}
	if int64(n) > limit {
		return nil, nil, &TooLargeError{Size: -1, Limit: limit}
	}
	if err := check(head); err != nil {
		return nil, err, nil
	}
	if ended {
		return head, nil, nil
	}
	data, err = readRest(r, head, limit)
	return data, nil, err
}

// readRest reads r to its end after the bytes of head, at most limit bytes
// in all (past it: a TooLargeError of Size -1), and returns head and the
// rest in one slice of exactly their length.
//
// Memory: the rest is read in chunks (64 KiB, doubling to 8 MiB) and
// joined once at the end, so a stream of n bytes costs at most about 2n
// (chunks and result) and a refused one at most limit: a growing buffer
// (bytes.Buffer, io.ReadAll) reallocates at each doubling and ends with a
// capacity up to twice the data, up to 4 GiB of resident memory spent on
// refusing a 512 MiB stream.
func readRest(r io.Reader, head []byte, limit int64) ([]byte, error) {
	total := int64(len(head))
	if total > limit {
		return nil, &TooLargeError{Size: -1, Limit: limit}
	}
	lr := io.LimitReader(r, limit+1-total)
	var chunks [][]byte
	size := 64 << 10
	for {
		c := make([]byte, size)
		n, err := io.ReadFull(lr, c)
		if n > 0 {
			chunks = append(chunks, c[:n])
			total += int64(n)
		}
		if total > limit {
			return nil, &TooLargeError{Size: -1, Limit: limit}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, 8<<20)
	}
	if len(chunks) == 0 {
		return head, nil
	}
	out := make([]byte, 0, total)
	out = append(out, head...)
	for i, c := range chunks {
		out = append(out, c...)
		chunks[i] = nil // collectable as soon as copied
	}
	return out, nil
}

// ErrEmptyPipe is wrapped (in an *fs.PathError) by ReadInputMax for a FIFO
// or pipe that gave no byte: usually a FIFO no program had open for writing
// when it was read (the open does not wait for a writer), which would
// otherwise pass for an empty input.
var ErrEmptyPipe = errors.New("a FIFO or pipe that gave no data: no program had it open for writing when it was read, and contextfold does not wait for one; start the writer first (e.g. 'producer > FIFO &'), or pipe the data into standard input with - instead")

// ReadAllMax reads r to its end, at most max bytes: past it, a
// TooLargeError of Size -1 (standard input given as "-").
func ReadAllMax(r io.Reader, max int64) ([]byte, error) {
	data, err := readRest(r, nil, max)
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
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

// OpenInputMax opens an input file the user named (a transcript) to be read
// in place, as a section of Size bytes: a regular file of at most limit
// bytes (a larger one is refused before it is read) is read where it lies,
// its size fixed when it is opened (what a writer appends later is not
// read); a stream — a pipe such as bash's <(…), a terminal, /dev/stdin — is
// read into memory up to limit bytes, as ReadInputMaxHead reads it, since
// it cannot be read twice. check gets the input's first headLen bytes (all
// of it when shorter) before anything else is read; its error is returned
// as is. A directory or a socket is refused with ErrNotRegular, a FIFO
// without a writer with ErrEmptyPipe; the open never blocks. The caller
// calls close when done with the section.
func OpenInputMax(path string, limit int64, headLen int, check func(head []byte) error) (sec *io.SectionReader, close func() error, err error) {
	f, fi, err := openInput(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		defer f.Close()
		data, checkErr, err := readAllHead(f, limit, headLen, check)
		if checkErr != nil {
			return nil, nil, checkErr
		}
		if err != nil {
			return nil, nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if len(data) == 0 && fi.Mode()&fs.ModeNamedPipe != 0 {
			return nil, nil, &fs.PathError{Op: "read", Path: path, Err: ErrEmptyPipe}
		}
		return io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), func() error { return nil }, nil
	}
	return sectionOf(f, fi, path, limit, headLen, check)
}

// OpenRegularMax is OpenInputMax for a path that must be a regular file (a
// hook's transcript_path): anything else is refused with ErrNotRegular
// without being opened for a blocking read.
func OpenRegularMax(path string, limit int64, headLen int, check func(head []byte) error) (sec *io.SectionReader, close func() error, err error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	return sectionOf(f, fi, path, limit, headLen, check)
}

// OpenInput opens an input file the user named as OpenInputMax does —
// anything but a directory or a socket, without blocking, then set
// blocking — and returns it with its fstat, for a caller that reads a
// stream (fi not a regular file) its own way and passes a regular file to
// SectionOf. The caller closes f.
func OpenInput(path string) (f *os.File, fi fs.FileInfo, err error) { return openInput(path) }

// SectionOf is the section of the regular file f that OpenInput opened at
// path, checked as OpenInputMax checks it; f is closed on an error, else
// by the close returned.
func SectionOf(f *os.File, fi fs.FileInfo, path string, limit int64, headLen int, check func(head []byte) error) (*io.SectionReader, func() error, error) {
	return sectionOf(f, fi, path, limit, headLen, check)
}

// sectionOf is the section of the open regular file f, checked as
// OpenInputMax says; f is closed on an error.
func sectionOf(f *os.File, fi fs.FileInfo, path string, limit int64, headLen int, check func(head []byte) error) (*io.SectionReader, func() error, error) {
	size := fi.Size()
	if limit >= 0 && size > limit {
		f.Close()
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: size, Limit: limit}}
	}
	head := make([]byte, min(size, int64(max(headLen, 0))))
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if err := check(head[:n]); err != nil {
		f.Close()
		return nil, nil, err
	}
	return io.NewSectionReader(f, 0, size), f.Close, nil
}
