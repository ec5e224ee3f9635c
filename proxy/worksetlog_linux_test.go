package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
)

// openDescriptors returns how many of the process's open file descriptors
// lead to path.
func openDescriptors(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestWorkingSetLogKeptOpen: a session's working-set log is opened once
// and kept open across its requests (each request's line is one write, not
// an open and a close): after three requests one descriptor leads to it and
// it holds three lines; Close closes it, and a request after Close opens it
// again and appends its line.
func TestWorkingSetLogKeptOpen(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	srv, err := New(Options{Dir: dir, Upstream: up.srv.URL, Clock: fixedClock, Logger: newDiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	px := httptest.NewServer(srv)
	defer px.Close()
	send := func(n int) {
		t.Helper()
		req, _ := http.NewRequest("POST", px.URL+PathOpenAI, bytes.NewReader(conversationOf(n, false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderSession, "kept-open")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, n := range []int{20, 22, 24} {
		send(n)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*", harness.WorkingSetLogName))
	if len(logs) != 1 {
		t.Fatalf("logs: %v", logs)
	}
	// lines waits (at most settleWait) for want lines: a line is logged once its
	// response is done, which may be just after the client read it.
	lines := func(want int) int {
		got := 0
		for deadline := time.Now().Add(settleWait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			data, err := os.ReadFile(logs[0])
			if err != nil {
				t.Fatal(err)
			}
			if got = bytes.Count(data, []byte("\n")); got >= want {
				break
			}
		}
		return got
	}
	if got := lines(3); got != 3 {
		t.Fatalf("%d lines after 3 requests", got)
	}
	if n := openDescriptors(t, logs[0]); n != 1 {
		t.Fatalf("%d descriptors lead to the working-set log between requests, want 1 (kept open)", n)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openDescriptors(t, logs[0]); n != 0 {
		t.Fatalf("%d descriptors lead to the working-set log after Close", n)
	}
	send(26)
	if got := lines(4); got != 4 {
		t.Fatalf("%d lines after a request after Close, want 4", got)
	}
}
