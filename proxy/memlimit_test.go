package proxy

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The soft memory limit is set while a request folds a conversation the
// proxy had not read (its estimate on top of the memory in use before) and
// put back once the request is finished; a request repeating a known
// conversation, a proxy with NoSoftMemoryLimit and a process with
// GOMEMLIMIT set leave the limit alone.
func TestSoftMemoryLimitDuringFirstFold(t *testing.T) {
	if prev := debug.SetMemoryLimit(-1); prev != math.MaxInt64 {
		t.Skipf("the process already has a memory limit (%d): the proxy does not set one", prev)
	}
	body := bigConversation(800) // ≈ 1.25 MB, over governMinFresh
	if len(body) < governMinFresh {
		t.Fatalf("body of %d bytes: too small for the test", len(body))
	}
	var during []int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		during = append(during, debug.SetMemoryLimit(-1)) // the request is in flight
		io.WriteString(w, openaiReply)
	}))
	defer up.Close()
	send := func(t *testing.T, opts Options) int64 {
		t.Helper()
		during = nil
		opts.Dir, opts.Upstream, opts.Clock, opts.Logger = t.TempDir(), up.URL, fixedClock, newDiscardLogger()
		srv, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
		px := httptest.NewServer(srv)
		defer px.Close()
		for range 2 { // a first request, then the same conversation again
			resp, err := http.Post(px.URL+PathOpenAI, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			// The handler finishes just after the client has the response.
			after := debug.SetMemoryLimit(-1)
			for end := time.Now().Add(settleWait); after != math.MaxInt64 && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
				after = debug.SetMemoryLimit(-1)
			}
			if after != math.MaxInt64 {
				t.Fatalf("limit after the request: %d, want none (math.MaxInt64)", after)
			}
		}
		if len(during) != 2 {
			t.Fatalf("upstream saw %d requests, want 2", len(during))
		}
		if during[1] != math.MaxInt64 {
			t.Errorf("a request repeating a conversation the proxy read set a limit (%d)", during[1])
		}
		return during[0]
	}
	t.Run("set", func(t *testing.T) {
		lim := send(t, Options{})
		if lim == math.MaxInt64 {
			t.Fatal("no memory limit while the first request folded")
		}
		if est := int64(len(body)) * (RequestMemoryMultiple + FoldMemoryMultiple); lim < est {
			t.Fatalf("limit %d below the request's estimate %d", lim, est)
		}
	})
	t.Run("off", func(t *testing.T) {
		if lim := send(t, Options{NoSoftMemoryLimit: true}); lim != math.MaxInt64 {
			t.Fatalf("NoSoftMemoryLimit: limit %d set", lim)
		}
	})
	t.Run("GOMEMLIMIT", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "8GiB")
		if lim := send(t, Options{}); lim != math.MaxInt64 {
			t.Fatalf("GOMEMLIMIT set: limit %d set by the proxy", lim)
		}
	})
}

// The watchdog raises the limit above a live heap larger than the
// estimates, so that the collector does not run without pause; leaving
// puts the limit back.
func TestSoftMemoryLimitFollowsLiveHeap(t *testing.T) {
	if prev := debug.SetMemoryLimit(-1); prev != math.MaxInt64 {
		t.Skipf("the process already has a memory limit (%d)", prev)
	}
	leave := governor.enter(0, 1<<20)
	start := debug.SetMemoryLimit(-1)
	ballast := make([]byte, 256<<20) // live, far above the 1 MiB estimate
	for i := range ballast {
		if i%4096 == 0 {
			ballast[i] = 1
		}
	}
	runtime.GC()
	deadline := time.Now().Add(settleWait)
	var lim int64
	for time.Now().Before(deadline) {
		if lim = debug.SetMemoryLimit(-1); lim > start+int64(len(ballast)) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(ballast)
	leave()
	if lim <= start+int64(len(ballast)) {
		t.Fatalf("limit %d did not rise above the live heap (start %d + %d live)", lim, start, len(ballast))
	}
	if after := debug.SetMemoryLimit(-1); after != math.MaxInt64 {
		t.Fatalf("limit after leaving: %d", after)
	}
}
