//go:build !unix

package fsutil

import (
	"io"
	"io/fs"
	"os"
)

// ReadFile is os.ReadFile for a regular file (see the unix version).
func ReadFile(path string) ([]byte, error) { return ReadFileMax(path, -1) }

// AppendFileMax is ReadFileMax appending the file's bytes to buf (see the
// unix version); on an error, buf unchanged.
func AppendFileMax(buf []byte, path string, max int64) ([]byte, error) {
	data, err := ReadFileMax(path, max)
	if err != nil {
		return buf, err
	}
	return append(buf, data...), nil
}

// ReadFileMax reads a regular file of at most max bytes (see the unix
// version).
func ReadFileMax(path string, max int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max >= 0 && fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: fi.Size(), Limit: max}}
	}
	r := io.Reader(f)
	if max >= 0 {
		r = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if max >= 0 && int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: int64(len(data)), Limit: max}}
	}
	return data, nil
}

// OpenRegular opens path for reading only if it is a regular file (see the
// unix version).
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular("open", path, fi.Mode())
	}
	return f, fi, nil
}

// openInput opens a user's input: anything but a directory.
func openInput(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, notRegular("open", path, fi.Mode())
	}
	return f, fi, nil
}
