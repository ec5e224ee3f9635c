package proxy

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// foldEventBody is a Chat Completions request whose dispatch is a fold
// event at the fold-event benchmarks' settings (120 messages with tool
// outputs of some 800 tokens, over the 40,000-token budget).
func foldEventBody(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": growingSession(120, 90)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// setCrashPoint installs hook as fsutil.CrashPoint for the test. Call it
// before the test starts its servers: their goroutines then start after
// the hook is set (the race detector sees no order through a socket), and
// it is removed after they are closed (cleanups run last-in first-out).
func setCrashPoint(t *testing.T, hook func(point string)) {
	t.Helper()
	fsutil.CrashPoint = hook
	t.Cleanup(func() { fsutil.CrashPoint = nil })
}

// oneGroupFoldEvents makes every fold event of the test commit as one
// group, whatever the machine's speed: a batch also commits mid-way once
// contextfold.FoldCommitInterval (2 s) has passed, and a fold event that
// took that long on a loaded machine under -race committed a first group
// synchronously, so a crash point meant for the fold event's deferred
// commit fired on the request's path instead (the fold failed, and the
// request was forwarded unfolded: TestFoldEventNotDurableAnswersError got
// 200 in 1 of 5 runs beside TestFoldEventOverlapsUpstreamAndHoldsResponse). Set before the servers start and
// restored after they close (t.Cleanup runs last-in first-out).
func oneGroupFoldEvents(t *testing.T) {
	t.Helper()
	every, interval := contextfold.FoldCommitEvery, contextfold.FoldCommitInterval
	contextfold.FoldCommitEvery, contextfold.FoldCommitInterval = 1<<30, time.Hour
	t.Cleanup(func() { contextfold.FoldCommitEvery, contextfold.FoldCommitInterval = every, interval })
}

// TestFoldEventOverlapsUpstreamAndHoldsResponse slows the fold event's
// durable part (after its nodes' fsyncs, before their renames, it waits
// for the upstream to get the request, then 300 ms more) and
// checks both halves of the promise: the request reaches the upstream
// before the fold event is durable (its syncs and renames overlap the
// upstream's work), and the client's response comes only after it is
// durable: when the client reads it, a new reader of the session store
// finds the fold event whole (the index names every node, each verifies).
func TestFoldEventOverlapsUpstreamAndHoldsResponse(t *testing.T) {
	oneGroupFoldEvents(t)
	var mu sync.Mutex
	var upAt, renamedAt time.Time
	const slow = 300 * time.Millisecond
	// The durable part goes on only once the upstream has the request (or
	// after settleWait, when it never comes: a proxy that forwards only
	// after the fold event is durable then fails the order check below).
	// A sleep alone made the order a race: a forward delayed by more than
	// the sleep on a loaded machine came after the renames.
	upstreamGot := make(chan struct{})
	var gotOnce sync.Once
	setCrashPoint(t, func(p string) {
		switch p {
		case fsutil.BatchSynced:
			select {
			case <-upstreamGot:
			case <-time.After(settleWait):
			}
			time.Sleep(slow) // a slow disk
		case fsutil.BatchLastRenamed:
			mu.Lock()
			renamedAt = time.Now()
			mu.Unlock()
		}
	})
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upAt = time.Now()
		mu.Unlock()
		gotOnce.Do(func() { close(upstreamGot) })
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(openaiReply))
	}
	tp := newProxy(t, up, harness.Config{PaybackRequests: 1000})
	resp, out := post(t, tp.http.URL+PathOpenAI, foldEventBody(t), map[string]string{HeaderSession: "held"})
	gotAt := time.Now()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	// Right away, before anything else runs: the store as another
	// process sees it.
	rec := tp.record(t, 1)
	rep, err := tp.store(t, rec).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent || rec.StepsFolded == 0 {
		t.Fatalf("the request was no fold event: %+v", rec)
	}
	if !rep.OK() || rep.Passed < rec.StepsFolded {
		t.Errorf("when the client had its response the store held %d verified nodes (fold event of %d), findings %+v", rep.Passed, rec.StepsFolded, rep.Findings)
	}
	mu.Lock()
	defer mu.Unlock()
	if renamedAt.IsZero() || upAt.IsZero() {
		t.Fatalf("the index was never renamed (%v) or the upstream never called (%v)", renamedAt, upAt)
	}
	if !upAt.Before(renamedAt) {
		t.Errorf("the upstream got the request %v after the fold event's index was named: the durable part did not overlap the upstream call", upAt.Sub(renamedAt))
	}
	if gotAt.Before(renamedAt) {
		t.Errorf("the client had the response %v before the fold event's index was named", renamedAt.Sub(gotAt))
	}
	if rec.Durable < slow || rec.Overhead >= rec.Durable {
		t.Errorf("record: overhead %v, durable %v; want the durable moment after the slow sync (%v) and after the forward", rec.Overhead, rec.Durable, slow)
	}
}

// breakDir replaces the directory dir by an empty file, its contents kept
// at dir+".away" (putBackDir): writes, syncs and renames into it fail from
// then on. Safe to call from a crash point (it reports with t.Error).
func breakDir(t *testing.T, dir string) {
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Error(err)
	}
}

// putBackDir undoes breakDir; it does nothing when dir was not broken.
func putBackDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir + ".away"); err != nil {
		return
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
}

// TestFoldEventNotDurableAnswersError makes the fold event's durable part
// fail for real, after the request went upstream: cold_nodes/ is replaced
// by a file once the nodes are synced, so their renames fail. The client
// must get a 500 naming the store problem and the remedy, never the
// upstream's answer (which relied on the fold event); once the directory
// is back, the same request folds again and the store validates clean.
func TestFoldEventNotDurableAnswersError(t *testing.T) {
	oneGroupFoldEvents(t)
	var mu sync.Mutex
	var cold string // set once the proxy's directory is known
	var once sync.Once
	setCrashPoint(t, func(p string) {
		if p != fsutil.BatchSynced {
			return
		}
		mu.Lock()
		cold := cold
		mu.Unlock()
		once.Do(func() { breakDir(t, cold) })
	})
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{PaybackRequests: 1000})
	mu.Lock()
	cold = filepath.Join(tp.dir, "broken", "g1", contextfold.ColdNodesDir)
	mu.Unlock()
	body := foldEventBody(t)
	resp, out := post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "broken"})
	if resp.StatusCode != 500 {
		rec := tp.record(t, 1)
		t.Fatalf("status %d, want 500: %s\nrecord: %+v\nwarnings %q", resp.StatusCode, out, rec.WorkingSet, rec.Warnings)
	}
	var e struct {
		Error struct{ Message string }
	}
	if err := json.Unmarshal(out, &e); err != nil || !strings.Contains(e.Error.Message, "durable") ||
		!strings.Contains(e.Error.Message, contextfold.ColdNodesDir) || !strings.Contains(e.Error.Message, "Send the request again") {
		t.Fatalf("error body does not name the store problem and the remedy (%v): %s", err, out)
	}
	if rec := tp.record(t, 1); rec.Status != 500 {
		t.Errorf("record status %d, want 500", rec.Status)
	}
	// The disk is repaired; the client retries.
	putBackDir(t, cold)
	resp, out = post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "broken"})
	if resp.StatusCode != 200 {
		t.Fatalf("retry: status %d: %s", resp.StatusCode, out)
	}
	rec := tp.record(t, 2)
	if rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent || rec.StepsFolded == 0 {
		t.Fatalf("the retry did not fold again: %+v", rec)
	}
	rep, err := tp.store(t, rec).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed < rec.StepsFolded {
		t.Errorf("after the retry: %d verified nodes (fold event of %d), findings %+v", rep.Passed, rec.StepsFolded, rep.Findings)
	}
}

// TestFoldEventNotDurableRetryForwardedVerbatim is a full disk that stays
// full: every fold event's durable part fails (cold_nodes/ is replaced by
// a file once the nodes are synced, so their renames fail; the test puts
// the directory back after each response, so that only the durable part
// fails, as on a disk with room for the small files and not for the
// nodes). The first request went upstream before its failure and is
// answered 500. The client retries, as SDKs and agents do on a 500: the
// retry commits its fold event before it goes out, the commit fails there,
// and the request is forwarded with those messages verbatim and a
// warning: answered 200. Before, every retry failed the same way after
// reaching the upstream, until the agent gave up. Once the disk is
// repaired the session folds again.
func TestFoldEventNotDurableRetryForwardedVerbatim(t *testing.T) {
	oneGroupFoldEvents(t)
	var mu sync.Mutex
	var cold string // set once the proxy's directory is known
	full := true
	setCrashPoint(t, func(p string) {
		if p != fsutil.BatchSynced {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if full && cold != "" {
			breakDir(t, cold)
		}
	})
	// putBack undoes the crash point's damage, if any.
	putBack := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		putBackDir(t, cold)
	}
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{PaybackRequests: 1000})
	mu.Lock()
	cold = filepath.Join(tp.dir, "full", "g1", contextfold.ColdNodesDir)
	mu.Unlock()
	body := foldEventBody(t)
	hdr := map[string]string{HeaderSession: "full"}
	if resp, out := post(t, tp.http.URL+PathOpenAI, body, hdr); resp.StatusCode != 500 {
		t.Fatalf("status %d, want 500 (the fold event was not durable): %s", resp.StatusCode, out)
	}
	putBack()
	// The disk is still full; the client retries.
	resp, out := post(t, tp.http.URL+PathOpenAI, body, hdr)
	putBack()
	if resp.StatusCode != 200 {
		t.Fatalf("retry with the disk still full: status %d, want 200 (forwarded verbatim): %s", resp.StatusCode, out)
	}
	rec := tp.record(t, 2)
	// Nothing was stored by either request: the counters say so (before:
	// the withheld fold event's tokens counted as folded).
	if st := tp.srv.Stats(); st.FoldedTokens != 0 || tp.record(t, 1).FoldedTokens != 0 || rec.FoldedTokens != 0 {
		t.Errorf("folded tokens %d in the stats (records %d, %d), want 0: no fold event was stored", st.FoldedTokens, tp.record(t, 1).FoldedTokens, rec.FoldedTokens)
	}
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), "fold failed, those messages stay verbatim") ||
		!strings.Contains(resp.Header.Get("X-Contextfold-Warning"), "fold failed") {
		t.Errorf("the retry does not say its fold failed: record warnings %q, header %q", rec.Warnings, resp.Header.Get("X-Contextfold-Warning"))
	}
	// One fold attempt, one warning: not one per pass of the fold event
	// (there were 24, each writing the same nodes again), and the
	// over-budget warning blames the store, not the budget.
	failed := 0
	for _, w := range rec.Warnings {
		if strings.HasPrefix(w, "fold failed") {
			failed++
		}
		if strings.HasPrefix(w, "over the context budget") && strings.Contains(w, "raise --context-budget") {
			t.Errorf("the over-budget warning of a failed fold event names the budget as the remedy: %q", w)
		}
	}
	if failed != 1 {
		t.Errorf("%d fold-failed warnings, want 1: %q", failed, rec.Warnings)
	}
	up.mu.Lock()
	last := up.reqs[len(up.reqs)-1].Body
	up.mu.Unlock()
	if len(last) < len(body)*9/10 {
		t.Errorf("the retry forwarded %d bytes of a %d-byte request: messages left the prompt with nothing stored", len(last), len(body))
	}
	// The disk is repaired: the next request folds, durably.
	mu.Lock()
	full = false
	mu.Unlock()
	if resp, out := post(t, tp.http.URL+PathOpenAI, body, hdr); resp.StatusCode != 200 {
		t.Fatalf("after the repair: status %d: %s", resp.StatusCode, out)
	}
	rec = tp.record(t, 3)
	if rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent || rec.StepsFolded+rec.StepsCollapsed == 0 {
		t.Fatalf("after the repair the session did not fold: %+v", rec)
	}
	rep, err := tp.store(t, rec).Validate()
	if err != nil {
		t.Fatal(err)
	}
	// The node files the failed commits had synced and not named are
	// left as a crash leaves them (validate names them, repair --apply
	// quarantines them); anything else is a finding.
	for _, f := range rep.Findings {
		if f.Kind != contextfold.KindTempFile {
			t.Errorf("after the repair: %s: %s", f.Kind, f.Message)
		}
	}
	if rep.Passed == 0 {
		t.Errorf("after the repair no node verifies")
	}
}

// TestFoldEventsOverlapAgainOnceTheDiskIsFreed: a full disk that fails a
// fold event's durable part after its request went upstream turns the
// session to committing its fold events before forwarding (the retry is
// forwarded verbatim while the disk stays full); once the disk is freed,
// the first fold event that commits (still before its request goes out)
// ends that mode, and the next fold event's syncs and renames overlap the
// upstream call again: the upstream has the request before the fold
// event's index is renamed, and the response still waits for it. Before,
// the session committed before forwarding until the proxy restarted.
func TestFoldEventsOverlapAgainOnceTheDiskIsFreed(t *testing.T) {
	oneGroupFoldEvents(t)
	var mu sync.Mutex
	var cold string // set once the proxy's directory is known
	full, watch := true, false
	var upAt, renamedAt time.Time
	upstreamGot := make(chan struct{})
	setCrashPoint(t, func(p string) {
		mu.Lock()
		full, watch, cold := full, watch, cold
		mu.Unlock()
		switch {
		case p == fsutil.BatchSynced && full && cold != "":
			breakDir(t, cold)
		case p == fsutil.BatchSynced && watch:
			// Overlapped, the upstream gets the request meanwhile;
			// committed before forwarding, it never comes.
			select {
			case <-upstreamGot:
			case <-time.After(settleWait):
			}
		case p == fsutil.BatchLastRenamed && watch:
			mu.Lock()
			renamedAt = time.Now()
			mu.Unlock()
		}
	})
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if watch && upAt.IsZero() {
			upAt = time.Now()
			close(upstreamGot)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(openaiReply))
	}
	tp := newProxy(t, up, harness.Config{PaybackRequests: 1000})
	mu.Lock()
	cold = filepath.Join(tp.dir, "freed", "g1", contextfold.ColdNodesDir)
	mu.Unlock()
	putBack := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		putBackDir(t, cold)
	}
	hdr := map[string]string{HeaderSession: "freed"}
	body := foldEventBody(t)
	if resp, out := post(t, tp.http.URL+PathOpenAI, body, hdr); resp.StatusCode != 500 {
		t.Fatalf("status %d, want 500 (the fold event was not durable): %s", resp.StatusCode, out)
	}
	putBack()
	if resp, out := post(t, tp.http.URL+PathOpenAI, body, hdr); resp.StatusCode != 200 {
		t.Fatalf("retry with the disk still full: status %d, want 200 (forwarded verbatim): %s", resp.StatusCode, out)
	}
	putBack()
	if rec := tp.record(t, 2); rec.StepsFolded != 0 {
		t.Fatalf("the retry on a full disk folded %d steps", rec.StepsFolded)
	}
	// The disk is freed: this fold event commits before its request goes
	// out (the session cannot know yet), and ends that mode.
	mu.Lock()
	full = false
	mu.Unlock()
	if resp, out := post(t, tp.http.URL+PathOpenAI, body, hdr); resp.StatusCode != 200 {
		t.Fatalf("after the disk was freed: status %d: %s", resp.StatusCode, out)
	}
	if rec := tp.record(t, 3); rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent || rec.StepsFolded == 0 || rec.Durable != rec.Overhead {
		t.Fatalf("after the disk was freed: not a fold event committed before forwarding: %+v", rec)
	}
	// The next fold event overlaps the upstream call.
	mu.Lock()
	watch = true
	mu.Unlock()
	b, err := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": growingSession(200, 90)})
	if err != nil {
		t.Fatal(err)
	}
	resp, out := post(t, tp.http.URL+PathOpenAI, b, hdr)
	gotAt := time.Now()
	if resp.StatusCode != 200 {
		t.Fatalf("next fold event: status %d: %s", resp.StatusCode, out)
	}
	rec := tp.record(t, 4)
	if rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent || rec.StepsFolded == 0 {
		t.Fatalf("the next request was no fold event: %+v", rec)
	}
	mu.Lock()
	defer mu.Unlock()
	if renamedAt.IsZero() || upAt.IsZero() {
		t.Fatalf("the index was never renamed (%v) or the upstream never called (%v)", renamedAt, upAt)
	}
	if !upAt.Before(renamedAt) {
		t.Errorf("the upstream got the request %v after the fold event's index was renamed: the session still commits before forwarding", upAt.Sub(renamedAt))
	}
	if gotAt.Before(renamedAt) {
		t.Errorf("the client had the response %v before the fold event's index was renamed", renamedAt.Sub(gotAt))
	}
	rep, err := tp.store(t, rec).Validate()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Kind != contextfold.KindTempFile {
			t.Errorf("%s: %s", f.Kind, f.Message)
		}
	}
}
