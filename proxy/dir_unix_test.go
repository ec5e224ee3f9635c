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

// TestDirNotWritableRefused: a session stores' directory that exists but
// cannot be written (here /proc, where not even root can make a file; and,
// when the tests do not run as root, a directory of mode 0500) is refused
// when the proxy starts, naming the path and --dir. Before, the proxy
// started, and every request of every session went upstream unfolded,
// its "fold failed" warning in the request's log line the only trace
// (found by hand with a read-only mount as --dir). Nothing is left in a
// writable directory by the check.
func TestDirNotWritableRefused(t *testing.T) {
	up := newUpstream(t)
	var dirs []string
	if fi, err := os.Stat("/proc/self"); err == nil && fi.IsDir() {
		dirs = append(dirs, "/proc")
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(ro, 0o700) })
		dirs = append(dirs, ro)
	}
	if len(dirs) == 0 {
		t.Skip("no directory here that cannot be written")
	}
	for _, d := range dirs {
		srv, err := New(Options{Dir: d, Upstream: up.srv.URL, Logger: newDiscardLogger()})
		if err == nil {
			srv.Close()
			t.Errorf("Dir %s: the proxy started", d)
			continue
		}
		if !strings.Contains(err.Error(), d) || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "--dir") {
			t.Errorf("Dir %s: error %q does not say the path cannot be written, nor --dir", d, err)
		}
	}
	ok := t.TempDir()
	srv, err := New(Options{Dir: ok, Upstream: up.srv.URL, Logger: newDiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	// The write check leaves nothing; the marker (DirMarkerFile) stays.
	if ents, _ := os.ReadDir(ok); len(ents) != 1 || ents[0].Name() != DirMarkerFile {
		t.Errorf("the directory holds %v after the start; want the marker %s alone", ents, DirMarkerFile)
	}
}
