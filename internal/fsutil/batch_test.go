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

// TestFileBatchDeferCreates: with DeferCreates, a file no spare is left
// for is held in memory (nothing on disk, Buffered returns its bytes) up to
// the bytes allowed, past them created at once; Commit creates the held
// files (the last file's too), writes them through WrapWriter, passes the
// crash points in order (the first file written before BatchWritten) and
// names each with its exact bytes and permissions; a write that fails
// there is Commit's error and leaves no file; Abort of held files leaves
// nothing either.
func TestFileBatchDeferCreates(t *testing.T) {
	body := func(i int) string { return strings.Repeat(fmt.Sprint(i), 100) }
	add := func(b *FileBatch, dir string, i int, last bool) error {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		write := func(w io.Writer) error { _, err := io.WriteString(w, body(i)); return err }
		if last {
			return b.AddLast(path, 0o640, write)
		}
		return b.Add(path, 0o640, write)
	}
	var points []string
	CrashPoint = func(p string) { points = append(points, p) }
	defer func() { CrashPoint = nil }()

	dir := t.TempDir()
	b := FileBatch{DeferCreates: 350} // three files held, the fourth created at once
	for i := range 4 {
		if err := add(&b, dir, i, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := add(&b, dir, 9, true); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 2 || !strings.HasPrefix(got[0], ".step_000003.json") || !strings.HasPrefix(got[1], ".step_000009.json") {
		t.Fatalf("before Commit: %v on disk, want the temporary files of the fourth and the last file only", got)
	}
	held := b.Buffered()
	if len(held) != 3 || b.Len() != 5 || len(b.Temporaries()) != 1 {
		t.Fatalf("Buffered %d files, Len %d, Temporaries %v: want 3, 5, one", len(held), b.Len(), b.Temporaries())
	}
	for i := range 3 {
		if got := string(held[filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))]); got != body(i) {
			t.Errorf("Buffered step %d: %q", i, got)
		}
	}
	if fmt.Sprint(points) != fmt.Sprint([]string{BatchFirstWritten}) {
		t.Errorf("crash points before Commit %v, want the first write", points)
	}
	points = nil
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 2, 3, 9} {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		data, err := os.ReadFile(path)
		if err != nil || string(data) != body(i) {
			t.Errorf("%s: %q, %v", path, data, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, %v", path, fi.Mode(), err)
		}
	}
	if got := names(t, dir); len(got) != 5 {
		t.Errorf("after Commit: %v", got)
	}
	want := []string{BatchWritten, BatchSynced, BatchRenamedFirst, BatchRenamed, BatchDirSynced, BatchLastRenamed}
	if fmt.Sprint(points) != fmt.Sprint(want) {
		t.Errorf("crash points of Commit %v, want %v", points, want)
	}

	// Held files only: the first write is Commit's.
	dir = t.TempDir()
	b = FileBatch{DeferCreates: 1 << 20}
	points = nil
	for i := range 2 {
		if err := add(&b, dir, i, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := names(t, dir); len(got) != 0 || len(points) != 0 {
		t.Fatalf("held files: %v on disk, crash points %v before Commit", got, points)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if want := []string{BatchFirstWritten, BatchWritten}; len(points) < 2 || fmt.Sprint(points[:2]) != fmt.Sprint(want) {
		t.Errorf("crash points %v, want %v first", points, want)
	}

	// A failing write of a held file: Commit's error, no file left.
	dir = t.TempDir()
	b = FileBatch{DeferCreates: 1 << 20}
	for i := range 2 {
		if err := add(&b, dir, i, false); err != nil {
			t.Fatal(err)
		}
	}
	old := WrapWriter
	WrapWriter = func(io.Writer) io.Writer { return failWriter{} }
	err := b.Commit()
	WrapWriter = old
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit with a failing write returned %v, want ENOSPC", err)
	}
	if got := names(t, dir); len(got) != 0 || b.Len() != 0 {
		t.Fatalf("after a failed Commit: %v, Len %d", got, b.Len())
	}

	// Abort of held files.
	b = FileBatch{DeferCreates: 1 << 20}
	if err := add(&b, dir, 5, false); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if got := names(t, dir); len(got) != 0 || b.Len() != 0 || b.Buffered() != nil {
		t.Fatalf("after Abort: %v, Len %d", got, b.Len())
	}
}
