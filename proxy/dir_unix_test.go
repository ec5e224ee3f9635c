//go:build unix

package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDirNotADirectoryRefused: a session stores' directory that is a
// FIFO, a device or a regular file is refused when the proxy starts, with
// the path and the remedy; a missing one is created. Before, the proxy
// started and every request went upstream unfolded, a warning in the log
// its only trace.
func TestDirNotADirectoryRefused(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{fifo, file, "/dev/null", filepath.Join(file, "sub")} {
		srv, err := New(Options{Dir: d, Upstream: up.srv.URL, Logger: newDiscardLogger()})
		if err == nil {
			srv.Close()
			t.Errorf("Dir %s: the proxy started", d)
			continue
		}
		if !strings.Contains(err.Error(), d) || !strings.Contains(err.Error(), "--dir") {
			t.Errorf("Dir %s: error %q names neither the path nor --dir", d, err)
		}
	}
	fresh := filepath.Join(dir, "a", "b")
	srv, err := New(Options{Dir: fresh, Upstream: up.srv.URL, Logger: newDiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if fi, err := os.Stat(fresh); err != nil || !fi.IsDir() {
		t.Fatalf("a missing Dir was not created: %v", err)
	}
}
