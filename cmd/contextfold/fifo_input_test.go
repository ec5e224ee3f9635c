//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFoldFromFIFO: fold --file FIFO with no program writing to it is an
// error naming the FIFO and the remedy, and nothing is folded (before: it
// read as empty, folded the summary as the payload with exit 0, and a later
// fold of the same step with the real output was "already indexed", left
// alone). A FIFO whose writer was there first is read as any input.
func TestFoldFromFIFO(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	dir := filepath.Join(tmp, ".contextfold")
	_, errs, code := cliWithin(t, hangWait, "--dir", dir, "fold", "7", "pytest output", "--file", fifo)
	if code != 1 || !strings.Contains(errs, "FIFO") || !strings.Contains(errs, "start the writer first") {
		t.Errorf("fold from a FIFO without a writer: exit %d, %q; want exit 1 naming the FIFO and the remedy", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "cold_nodes", "step_000007.json")); err == nil {
		t.Error("a cold node was written from a FIFO nothing was written to")
	}
	// A writer first: a reader held open by the test keeps the data in the
	// pipe after the writer closes, so the fold reads it deterministically.
	rfd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(rfd)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("FAILED tests/test_api.py::test_login - AssertionError\n")
	w.Close()
	out, errs, code := cliWithin(t, hangWait, "--dir", dir, "fold", "7", "pytest output", "--file", fifo)
	if code != 0 {
		t.Fatalf("fold from a FIFO with data: exit %d %s %s", code, out, errs)
	}
	page, _, _ := cli(t, "", "--dir", dir, "hydrate", "7", "--raw")
	if !strings.Contains(page, "test_login - AssertionError") {
		t.Errorf("the FIFO's data is not the payload: %q", page)
	}
}
