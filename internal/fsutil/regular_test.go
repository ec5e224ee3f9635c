//go:build unix

package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesSpecialFilesAndLargeOnes: a FIFO (no writer), a
// directory and a character device are refused at once with ErrNotRegular
// naming the kind; a sparse file past the limit is refused with a
// TooLargeError before a byte is read; a file at the limit is read.
func TestReadFileRefusesSpecialFilesAndLargeOnes(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct{ path, kind string }{{fifo, "FIFO"}, {dir, "directory"}, {"/dev/zero", "device"}} {
		done := make(chan error, 2)
		go func() { _, err := ReadFileMax(c.path, 1<<20); done <- err }()
		go func() {
			f, _, err := OpenRegular(c.path)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.kind) {
					t.Errorf("%s: %v, want ErrNotRegular naming a %s", c.path, err, c.kind)
				}
			case <-time.After(time.Minute): // only a hang reaches it
				t.Fatalf("%s: still blocked after a minute", c.path)
			}
		}
	}
	big := filepath.Join(dir, "sparse")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 8<<30); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	_, err := ReadFileMax(big, 1<<20)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 8<<30 || !strings.Contains(err.Error(), "8.0 GiB") {
		t.Errorf("8 GiB sparse file: %v, want a TooLargeError naming 8.0 GiB", err)
	}
	os.Truncate(big, 1<<20)
	if data, err := ReadFileMax(big, 1<<20); err != nil || len(data) != 1<<20 {
		t.Errorf("at the limit: %d bytes, %v", len(data), err)
	}
	if _, err := ReadFileMax(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestSocketRefusedByName: a Unix socket given as a file is refused at
// once by every reader with ErrNotRegular saying it is a socket. Before:
// "open …: no such device or address" (open(2)'s ENXIO), which names no
// cause.
func TestSocketRefusedByName(t *testing.T) {
	dir, err := os.MkdirTemp("", "sock") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "it is a socket") {
			t.Errorf("%s: %v; want ErrNotRegular saying it is a socket", name, err)
		}
	}
	_, err = ReadFile(path)
	check("ReadFile", err)
	_, err = ReadInputMax(path, 1<<20)
	check("ReadInputMax", err)
	_, _, err = OpenInputMax(path, 1<<20, 0, func([]byte) error { return nil })
	check("OpenInputMax", err)
	_, _, err = OpenRegular(path)
	check("OpenRegular", err)
}
