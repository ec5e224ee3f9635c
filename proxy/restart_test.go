package proxy

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// TestRestartKeepsTheWorkingSet: a proxy stopped (Close) and started again
// on the same directory forwards a session's next requests byte for byte as
// one that kept running — the same working set, page table and turn
// hydration — instead of rebuilding the working set with a fold event that
// rewrites the provider's cached prefix from the first folded message (and
// invalidates the reasoning after it). Before: the restarted proxy's first
// request was a new fold event (here 24,121 bytes forwarded instead of the
// running proxy's 28,483, a different page table).
func TestRestartKeepsTheWorkingSet(t *testing.T) { restartKeepsTheWorkingSet(t, false) }

// TestCrashKeepsTheWorkingSet is TestRestartKeepsTheWorkingSet with the
// first proxy abandoned instead of closed, as after SIGKILL: Close never
// runs, so what the next proxy finds is what each request saved after its
// response (Server.saveState). Before: the state was written only when a
// session left memory, and the request after the crash was a fold event
// (a different page table, fewer bytes forwarded).
func TestCrashKeepsTheWorkingSet(t *testing.T) { restartKeepsTheWorkingSet(t, true) }

func restartKeepsTheWorkingSet(t *testing.T, crash bool) {
	cfg := harness.Config{ContextBudget: 8000}
	up := newUpstream(t)
	start := func(dir string) (*Server, *httptest.Server) {
		srv, err := New(Options{Dir: dir, Upstream: up.srv.URL, Harness: cfg, Clock: fixedClock, Logger: newDiscardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return srv, httptest.NewServer(srv)
	}
	var sizes []int // an agent's requests between fold events grow by a call and its result
	for n := 6; n <= 70; n += 2 {
		sizes = append(sizes, n)
	}
	const restartAt = 23 // the index in sizes of the first request after the restart (52 messages)
	send := func(hs *httptest.Server, n int) []byte {
		if resp, b := post(t, hs.URL+PathOpenAI, conversationOf(n, false), map[string]string{HeaderSession: "restart"}); resp.StatusCode != 200 {
			t.Fatalf("%d messages: status %d: %s", n, resp.StatusCode, b)
		}
		return up.last(t).Body
	}

	srv, hs := start(t.TempDir())
	var want [][]byte
	for _, n := range sizes {
		want = append(want, send(hs, n))
	}
	hs.Close()
	srv.Close()
	if !bytes.Contains(want[restartAt-1], []byte(harness.PageTableOpen)) {
		t.Fatal("no fold event before the restart: the test does not cover the working set")
	}

	dir := t.TempDir()
	srv, hs = start(dir)
	var got [][]byte
	for _, n := range sizes[:restartAt] {
		got = append(got, send(hs, n))
	}
	hs.Close()
	if crash {
		// The work after the responses ends (no request is in flight
		// when a crash between two requests comes); Close never runs.
		waitBackground(srv)
	} else if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv, hs = start(dir)
	for _, n := range sizes[restartAt:] {
		got = append(got, send(hs, n))
	}
	hs.Close()
	srv.Close()

	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("request %d (%d messages; the proxy restarted before request %d): forwarded %d bytes, %d without the restart",
				i, sizes[i], restartAt, len(got[i]), len(want[i]))
		}
	}
}

// waitBackground waits until srv runs no work off the requests' paths.
func waitBackground(srv *Server) {
	srv.mu.Lock()
	for srv.bg > 0 {
		srv.bgIdle.Wait()
	}
	srv.mu.Unlock()
}
