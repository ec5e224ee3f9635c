package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// TestParseFileWithFIFO: a path that is a FIFO (bash's <(…) is a pipe
// alike) is parsed as a stream, as the bytes would be (here 2 MB, past the
// spool's first MiB held in memory); one no program writes to is refused
// with fsutil.ErrEmptyPipe. The FIFO's writer is opened before the parse
// (O_RDWR, which Linux allows on a FIFO and which never blocks), so that
// the parse never finds it without one, however the goroutines run.
func TestParseFileWithFIFO(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	data := bigJSONL(15000)
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(data)
		w.Close()
		done <- err
	}()
	got, err := ParseFileWith(p, Options{MaxRecordBytes: -1})
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse(data, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the FIFO's parse differs from the bytes': %d turns, want %d", len(got.Turns), len(want.Turns))
	}
	if _, err := ParseFileWith(p, Options{}); !errors.Is(err, fsutil.ErrEmptyPipe) {
		t.Fatalf("a FIFO without a writer: %v", err)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Fatalf("spool files left in TMPDIR: %v", left)
	}
}
