package fsutil

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileIsOSReadFile: the same bytes for empty, small and large
// files, and the same error for a missing file (a directory is refused as
// not regular: TestReadFileRefusesSpecialFilesAndLargeOnes).
func TestReadFileIsOSReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4095, 4096, 1 << 20} {
		p := filepath.Join(dir, "f")
		want := bytes.Repeat([]byte("ab\x00"), n/3+1)[:n]
		if err := os.WriteFile(p, want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: got %d, %v", n, len(got), err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "missing")} {
		_, werr := os.ReadFile(p)
		_, gerr := ReadFile(p)
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, os.ReadFile %v", p, gerr, werr)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v is not fs.ErrNotExist", err)
	}
}

// TestAppendFileMax: the file's bytes appended after buf's, read into buf's
// spare capacity when the file fits in it (the same array) and into a new
// one when it does not; on an error (missing, too large, not regular) buf
// comes back unchanged.
func TestAppendFileMax(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	want := bytes.Repeat([]byte("node"), 1000)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	buf := append(make([]byte, 0, 64<<10), "head"...)
	got, err := AppendFileMax(buf, p, 1<<20)
	if err != nil || string(got[:4]) != "head" || !bytes.Equal(got[4:], want) {
		t.Fatalf("appended: %d bytes, %v", len(got), err)
	}
	if &got[0] != &buf[0] {
		t.Error("a file that fits in buf's spare capacity was not read into it")
	}
	small := append(make([]byte, 0, 8), "head"...)
	got, err = AppendFileMax(small, p, 1<<20)
	if err != nil || string(got[:4]) != "head" || !bytes.Equal(got[4:], want) {
		t.Fatalf("grown: %d bytes, %v", len(got), err)
	}
	got, err = AppendFileMax(buf[:0], p, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("into an empty buffer: %d bytes, %v", len(got), err)
	}
	for _, c := range []struct {
		path string
		max  int64
		is   error
	}{{filepath.Join(dir, "missing"), 1 << 20, fs.ErrNotExist}, {p, 100, nil}, {dir, 1 << 20, ErrNotRegular}} {
		got, err := AppendFileMax(buf, c.path, c.max)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || len(got) != len(buf) || &got[0] != &buf[0] {
			t.Errorf("%s (max %d): %d bytes, %v; want buf unchanged and an error", c.path, c.max, len(got), err)
		}
		var tl *TooLargeError
		if c.is == nil && !errors.As(err, &tl) {
			t.Errorf("%s over max: %v is no *TooLargeError", c.path, err)
		}
	}
}
