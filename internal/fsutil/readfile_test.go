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
