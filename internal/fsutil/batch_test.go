package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

// TestFileBatchCommit: files added to a batch are invisible under their
// names (only temporary files, "."-prefixed) until Commit, which names every
// one with its exact bytes and permissions, in groups beyond MaxUnsynced
// too, and passes the crash points in order; nothing temporary is left.
func TestFileBatchCommit(t *testing.T) {
	defer func(m int) { MaxUnsynced = m }(MaxUnsynced)
	MaxUnsynced = 3
	var points []string
	CrashPoint = func(p string) { points = append(points, p) }
	defer func() { CrashPoint = nil }()
	dir := t.TempDir()
	var b FileBatch
	for i := range 7 {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		if err := b.Add(path, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, strings.Repeat(fmt.Sprint(i), 100+i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names(t, dir) {
		if !strings.HasPrefix(n, ".step_") {
			t.Fatalf("%s is named before Commit", n)
		}
	}
	if b.Len() != 7 {
		t.Fatalf("Len %d, want 7", b.Len())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	got := names(t, dir)
	if len(got) != 7 {
		t.Fatalf("after Commit: %v", got)
	}
	for i := range 7 {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		data, err := os.ReadFile(path)
		if err != nil || string(data) != strings.Repeat(fmt.Sprint(i), 100+i) {
			t.Errorf("%s: %q, %v", path, data, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, %v", path, fi.Mode(), err)
		}
	}
	want := []string{BatchFirstWritten, BatchWritten, BatchSynced, BatchRenamedFirst, BatchRenamed, BatchDirSynced}
	if fmt.Sprint(points) != fmt.Sprint(want) {
		t.Errorf("crash points %v, want %v", points, want)
	}
	if b.Len() != 0 || b.Commit() != nil {
		t.Error("a committed batch is not empty")
	}
}

// TestFileBatchFailures: a write that fails leaves no temporary file and
// keeps the batch's other files; Abort removes every temporary file and
// names nothing.
func TestFileBatchFailures(t *testing.T) {
	dir := t.TempDir()
	var b FileBatch
	add := func(name string) error {
		return b.Add(filepath.Join(dir, name), 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, "{}")
			return err
		})
	}
	if err := add("step_000001.json"); err != nil {
		t.Fatal(err)
	}
	old := WrapWriter
	WrapWriter = func(io.Writer) io.Writer { return failWriter{} }
	err := add("step_000002.json")
	WrapWriter = old
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a failing write returned %v, want ENOSPC", err)
	}
	if n := len(names(t, dir)); n != 1 || b.Len() != 1 {
		t.Fatalf("after a failed Add: %v in the directory, Len %d", names(t, dir), b.Len())
	}
	if err := add("step_000003.json"); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if got := names(t, dir); len(got) != 0 || b.Len() != 0 {
		t.Fatalf("after Abort: %v, Len %d", got, b.Len())
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, syscall.ENOSPC }
