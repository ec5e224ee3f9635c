package proxy

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
)

// TestSessionDroppedAndRebuilt: with MaxSessions 1, two conversations sent
// in turn push each other's session out of memory at every request; each
// comes back from its store and saved state, and every forwarded body is
// byte for byte the one a proxy keeping both sessions in memory forwards —
// through fold events, the page table and hydration. An idle session is
// dropped after SessionIdle the same way.
func TestSessionDroppedAndRebuilt(t *testing.T) {
	cfg := harness.Config{ContextBudget: 4000}
	run := func(set func(*Options)) (bodies [][]byte, tp *testProxy) {
		up := newUpstream(t)
		tp = newProxyWith(t, up, func(o *Options) { o.Harness = cfg; set(o) })
		for n := 6; n <= 70; n += 4 {
			for _, sid := range []string{"alpha", "beta"} {
				body := conversationN(n)
				if sid == "beta" {
					body = bytes.ReplaceAll(body, []byte("coding agent"), []byte("testing agent"))
				}
				if resp, b := post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: sid}); resp.StatusCode != 200 {
					t.Fatalf("%s, %d messages: status %d: %s", sid, n, resp.StatusCode, b)
				}
				bodies = append(bodies, up.last(t).Body)
				// The request's session is released when its record is
				// logged, which may be just after the client read the
				// response: the next request drops it only once it is.
				tp.record(t, len(bodies))
			}
		}
		return bodies, tp
	}
	want, _ := run(func(o *Options) {})
	got, tp := run(func(o *Options) { o.MaxSessions = 1 })
	st := tp.srv.Stats()
	if st.SessionsDropped < 20 || st.Sessions > 2 {
		t.Fatalf("sessions dropped %d, in memory %d: MaxSessions 1 should drop one at nearly every request", st.SessionsDropped, st.Sessions)
	}
	folded := false
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("request %d: forwarded %d bytes after the session was rebuilt, %d without", i, len(got[i]), len(want[i]))
		}
		if bytes.Contains(want[i], []byte(harness.PageTableOpen)) {
			folded = true
		}
	}
	if !folded {
		t.Fatal("no request reached a fold event: the test does not cover the working set")
	}
	// Each session's saved state is beside its store, for its latest
	// generation only (saved after each request, and when it left memory).
	waitBackground(tp.srv)
	if m, _ := filepath.Glob(filepath.Join(tp.dir, "*", SessionStateFilePrefix+"*.json")); len(m) != 2 {
		t.Fatalf("saved states %v, want one per session", m)
	}

	// Idle expiry.
	up := newUpstream(t)
	tp = newProxyWith(t, up, func(o *Options) { o.Harness = cfg; o.SessionIdle = 50 * time.Millisecond })
	post(t, tp.http.URL+PathOpenAI, conversationN(40), map[string]string{HeaderSession: "idle"})
	tp.record(t, 1)                    // released: a session a request holds is never dropped
	time.Sleep(120 * time.Millisecond) // a lower bound: idle for longer than SessionIdle
	post(t, tp.http.URL+PathOpenAI, conversationN(10), map[string]string{HeaderSession: "other"})
	if st := tp.srv.Stats(); st.SessionsDropped != 1 || st.Sessions != 1 {
		t.Fatalf("after the idle time: %d dropped, %d in memory; want the idle session dropped", st.SessionsDropped, st.Sessions)
	}
	if _, err := os.Stat(tp.srv.statePath("idle", 1)); err != nil {
		t.Fatalf("the idle session's state was not saved: %v", err)
	}
	post(t, tp.http.URL+PathOpenAI, conversationN(42), map[string]string{HeaderSession: "idle"})
	// Back in memory, the session's state stays saved beside its store,
	// rewritten after each request, for its latest generation only.
	waitBackground(tp.srv)
	if m, _ := filepath.Glob(filepath.Join(tp.dir, "idle", SessionStateFilePrefix+"*.json")); len(m) != 1 {
		t.Fatalf("saved states of the session back in memory: %v, want its latest generation's", m)
	}
}

// TestEvictionEventsWrittenByCloseAndDrop: every model call of a human turn
// evicts the turn's hydration again; those repeated events wait for the
// eviction-log batch (EvictionLogBatch), and are on disk, one per evicted
// node per response, once the server is closed — or once their session
// leaves memory.
func TestEvictionEventsWrittenByCloseAndDrop(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000}; o.MaxSessions = 1 })
	body := conversationN(200) // its last message asks about pkg42: hydrated by every request
	const calls = 5
	var rec RequestRecord
	for i := 1; i <= calls; i++ {
		post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "turn"})
		rec = tp.record(t, i)
		if len(rec.Evicted) == 0 {
			t.Fatalf("call %d evicted nothing: the test needs a hydrated turn (%+v)", i, rec.Accounting)
		}
	}
	onDisk := func() int {
		evs, err := tp.store(t, rec).EvictionLog() // another Store: the file only
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	want := calls * len(rec.Evicted)
	if got := onDisk(); got >= want || got == 0 {
		t.Fatalf("%d of %d events on disk before Close: the repeated ones should wait for the batch", got, want)
	}
	if err := tp.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(); got != want {
		t.Fatalf("%d events on disk after Close, want %d", got, want)
	}
	// One more call, then another session pushes this one out of memory.
	post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "turn"})
	tp.record(t, calls+1)
	post(t, tp.http.URL+PathOpenAI, conversationN(10), map[string]string{HeaderSession: "other"})
	if got := onDisk(); got != want+len(rec.Evicted) {
		t.Fatalf("%d events on disk after the session left memory, want %d", got, want+len(rec.Evicted))
	}
}

// TestSavedStateFIFONeverBlocks: a FIFO in place of a session's saved state
// (an attacker's, or a mistake) is not opened for a blocking read: the
// session comes back with a new working set and the request is answered.
func TestSavedStateFIFONeverBlocks(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) {
		o.Harness = harness.Config{ContextBudget: 4000}
		o.SessionIdle = 50 * time.Millisecond
	})
	post(t, tp.http.URL+PathOpenAI, conversationN(40), map[string]string{HeaderSession: "idle"})
	tp.record(t, 1)                    // released: a session a request holds is never dropped
	time.Sleep(120 * time.Millisecond) // a lower bound: idle for longer than SessionIdle
	post(t, tp.http.URL+PathOpenAI, conversationN(10), map[string]string{HeaderSession: "other"})
	path := tp.srv.statePath("idle", 1)
	if err := os.Remove(path); err != nil {
		t.Fatalf("the idle session's state was not saved: %v", err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, tp.http.URL+PathOpenAI, conversationN(42), map[string]string{HeaderSession: "idle"})
		done <- resp.StatusCode
	}()
	select {
	case code := <-done:
		if code != 200 {
			t.Fatalf("status %d with a FIFO in place of the saved state, want 200", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request blocked on a FIFO in place of the saved session state")
	}
}
