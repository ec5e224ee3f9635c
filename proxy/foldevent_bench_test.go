package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/benchlat"
	"github.com/contextfold/contextfold/internal/procmem"
)

// growingSession is an agent session of n messages as JSON message
// objects: a system prompt, then tool calls with outputs of lines lines
// (bigLog: some 9 tokens a line) and a human prompt after every 10 calls.
// Requests take growing prefixes of it.
func growingSession(n, lines int) []json.RawMessage {
	var msgs []json.RawMessage
	add := func(m map[string]any) {
		b, _ := json.Marshal(m)
		msgs = append(msgs, b)
	}
	add(map[string]any{"role": "system", "content": "You are a coding agent."})
	add(map[string]any{"role": "user", "content": "make every package build"})
	for i := 1; len(msgs) < n; i++ {
		add(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_" + itoa(i), "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`}}}})
		add(map[string]any{"role": "tool", "tool_call_id": "call_" + itoa(i), "content": bigLog("pkg"+itoa(i), lines)})
		if i%10 == 0 {
			add(map[string]any{"role": "user", "content": "continue with pkg" + itoa(i-5)})
		}
	}
	return msgs[:n]
}

// BenchmarkFoldEvent measures fold events of about 50 cold nodes through
// the proxy at its defaults (a 40,000-token budget folded down to 50 %):
// every measured request brings foldEventStep new messages (tool calls
// with outputs of some 800 tokens, over 20,000 tokens in all), so that each
// one crosses the budget and is a fold event, as the request that crosses
// it is in a real session. It reports the proxy's overhead on those
// requests (fold-event-p50-ms, fold-event-p99-ms: from the request's
// arrival to the rewritten body handed to the transport, the folds' cold
// nodes and index written, their syncs and renames running while the
// upstream works), the same after the body's last byte arrived
// (-after-body), when the fold event was durable, from the request's
// arrival (fold-event-durable-: the response is held until then), the
// latency the client saw beyond the upstream's own time
// (fold-event-added-: the client's latency minus the time the upstream
// took from the request's arrival to its reply; with this instant
// upstream it holds the whole durable wait, see
// BenchmarkFoldEventUpstream300ms for a realistic one), the cold nodes
// written per fold event (nodes/event) and
// the process's CPU time per fold event, all goroutines (cpu-ms/event: on
// a shared machine the wall time also counts waiting for a CPU), and its
// user part (user-cpu-ms/event: the kernel's part is mostly the file
// system's, which varies with the machine and the directory).
// A session is restarted every 12 fold events (a new session id, whose
// first request, a cold fold of its first messages, is not measured), so
// that bodies stay below 2 MB.
//
//	go test ./proxy -run '^$' -bench 'BenchmarkFoldEvent$' -benchtime 100x
func BenchmarkFoldEvent(b *testing.B) {
	benchFoldEvent(b, newFoldEventRig(b, 0))
}

// BenchmarkFoldEventUpstream300ms is BenchmarkFoldEvent with an upstream
// that takes 300 ms before its reply, as a real model takes hundreds of
// milliseconds to seconds before its first byte: fold-event-added- is what
// the proxy adds to the client's latency when the fold event's durability
// overlaps the upstream's work (the response held until it is durable).
//
//	go test ./proxy -run '^$' -bench 'BenchmarkFoldEventUpstream300ms$' -benchtime 36x
func BenchmarkFoldEventUpstream300ms(b *testing.B) {
	benchFoldEvent(b, newFoldEventRig(b, 300*time.Millisecond))
}

func benchFoldEvent(b *testing.B, rig *foldEventRig) {
	const (
		foldEventStep = 56  // messages per request: 27 tool calls and outputs, 2 or 3 prompts
		first         = 120 // messages of a session's first request
		perSession    = 12  // measured fold events per session
		outputLines   = 90  // lines of a tool output (about 800 tokens)
	)
	msgs := growingSession(first+perSession*foldEventStep, outputLines)
	body := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs[:n]})
		return b
	}
	send, nodes := rig.send, rig.nodes
	session, k, had := "", perSession, 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if k == perSession { // a new session: its first request is not measured
			session, k = "fold-event-"+itoa(rig.events), 0
			send(session, body(first))
			had = nodes(session)
		}
		k++
		req := body(first + k*foldEventStep)
		b.StartTimer()
		cpu0, user0 := procmem.CPU(), procmem.UserCPU()
		r := send(session, req)
		rig.cpu += procmem.CPU() - cpu0
		rig.user += procmem.UserCPU() - user0
		b.StopTimer()
		if r.WorkingSet == nil || !r.WorkingSet.FoldEvent {
			b.Fatalf("request %d of session %s was no fold event", k, session)
		}
		had = rig.measured(r, session, had)
		b.StartTimer()
	}
	b.StopTimer()
	rig.report()
}

// BenchmarkFoldEventGrowing measures fold events as a growing agent
// session meets them: every request brings 2 or 3 new messages (a tool call
// and its output of outputLines lines, some 450 tokens, and after every 10
// calls a human prompt), the agent takes agentPause between requests (it
// runs its tool; a real model takes seconds), and a fold event comes when
// the prompt crosses the budget (40,000 tokens, folded down to 50 %, the
// fold depth pinned there as in BenchmarkFoldEvent), folding some 50
// nodes. Only fold events are measured (one per iteration): the same
// metrics as BenchmarkFoldEvent. Between them the proxy prepares the turns
// it will fold (harness.PrepareAhead) after each response, off the
// request's path; BenchmarkFoldEvent, where the turns a fold event folds
// arrive with it or the request before, measures the cold case. A session
// is restarted every perSession fold events (not measured: its first).
//
//	go test ./proxy -run '^$' -bench 'BenchmarkFoldEventGrowing$' -benchtime 30x
func BenchmarkFoldEventGrowing(b *testing.B) {
	const (
		perSession  = 8
		outputLines = 90 // about 800 tokens, as in BenchmarkFoldEvent
		agentPause  = 3 * time.Millisecond
	)
	msgs := growingSession(3000, outputLines)
	rig := newFoldEventRig(b, 0)
	send := func(session string, n int) RequestRecord {
		body, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs[:n]})
		return rig.send(session, body)
	}
	nodes := rig.nodes
	// next is the length of the request after one of n messages: the next
	// tool call and its output, and the prompt that follows them.
	next := func(n int) int {
		n += 2
		for n < len(msgs) && bytes.Contains(msgs[n], []byte(`"role":"user"`)) {
			n++
		}
		return n
	}
	session, k, n, had := "", perSession, 0, 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if k == perSession { // a new session, up to its first fold event (not measured)
			session, k, n = "fold-growing-"+itoa(rig.events), 0, 2
			for r := send(session, n); r.WorkingSet == nil || !r.WorkingSet.FoldEvent; r = send(session, n) {
				n = next(n)
				time.Sleep(agentPause)
			}
			had = nodes(session)
		}
		k++
		for {
			n = next(n)
			if n >= len(msgs) {
				b.Fatal("the session ran out of messages: raise growingSession's length")
			}
			time.Sleep(agentPause)
			b.StartTimer()
			cpu0, user0 := procmem.CPU(), procmem.UserCPU()
			r := send(session, n)
			c, u := procmem.CPU()-cpu0, procmem.UserCPU()-user0
			b.StopTimer()
			if r.WorkingSet == nil || !r.WorkingSet.FoldEvent {
				continue // not measured: a request between fold events
			}
			rig.cpu, rig.user = rig.cpu+c, rig.user+u
			had = rig.measured(r, session, had)
			break
		}
		b.StartTimer()
	}
	b.StopTimer()
	rig.report()
}

// foldEventRig is the proxy of the fold-event benchmarks: a loopback
// upstream answering every request, the proxy in front of it with the fold
// depth pinned at the fold target (a payback horizon so long that the cost
// rule never folds deeper, so that what is measured is the cost of writing
// a fold event, not the fold policy's cadence), and the measured fold
// events' latencies, nodes and CPU time.
type foldEventRig struct {
	b         *testing.B
	url, dir  string
	mu        sync.Mutex
	last      RequestRecord
	all       benchlat.Latencies   // each measured fold event's overhead
	afterBody benchlat.Latencies   // the same after the body arrived
	durable   benchlat.Latencies   // until the fold event was durable
	added     benchlat.Latencies   // client latency minus the upstream's time
	lastTook  time.Duration        // the last request's client latency minus the upstream's time
	events    int                  // fold events measured
	folded    int                  // cold nodes they wrote
	cpu, user time.Duration        // the process's CPU time (all, user) during them
	upTook    func() time.Duration // the upstream's time on the last request
}

// newFoldEventRig starts the rig; its upstream replies after delay.
func newFoldEventRig(b *testing.B, delay time.Duration) *foldEventRig {
	rig := &foldEventRig{b: b, dir: b.TempDir()}
	var upMu sync.Mutex
	var upTook time.Duration
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		io.Copy(io.Discard, r.Body)
		time.Sleep(delay)
		io.WriteString(w, openaiReply)
		upMu.Lock()
		upTook = time.Since(t0)
		upMu.Unlock()
	}))
	rig.upTook = func() time.Duration { upMu.Lock(); defer upMu.Unlock(); return upTook }
	b.Cleanup(up.Close)
	srv, err := New(Options{Dir: rig.dir, Upstream: up.URL, Clock: fixedClock, Logger: newDiscardLogger(),
		Harness:   harness.Config{PaybackRequests: 1000},
		OnRequest: func(r RequestRecord) { rig.mu.Lock(); rig.last = r; rig.mu.Unlock() }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	b.Cleanup(px.Close)
	rig.url = px.URL
	return rig
}

// send posts body as a Chat Completions request of session and returns its
// record.
func (rig *foldEventRig) send(session string, body []byte) RequestRecord {
	req, _ := http.NewRequest("POST", rig.url+PathOpenAI, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderSession, session)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rig.b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rig.lastTook = time.Since(t0) - rig.upTook()
	if resp.StatusCode != 200 {
		rig.b.Fatalf("status %d", resp.StatusCode)
	}
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.last
}

// nodes counts the cold nodes session's stores hold.
func (rig *foldEventRig) nodes(session string) int {
	m, _ := filepath.Glob(filepath.Join(rig.dir, session, "g*", "cold_nodes", "step_*.json"))
	return len(m)
}

// measured counts fold event r of session, whose stores held had nodes
// before it, and returns the nodes they hold now.
func (rig *foldEventRig) measured(r RequestRecord, session string, had int) int {
	now := rig.nodes(session)
	rig.events, rig.folded = rig.events+1, rig.folded+now-had
	rig.all = append(rig.all, r.Overhead)
	rig.afterBody = append(rig.afterBody, r.Overhead-r.BodyRead)
	rig.durable = append(rig.durable, r.Durable)
	rig.added = append(rig.added, rig.lastTook)
	return now
}

// report reports the measured fold events' metrics.
func (rig *foldEventRig) report() {
	rig.all.Report(rig.b, "fold-event-")
	rig.afterBody.Report(rig.b, "fold-event-after-body-")
	rig.durable.Report(rig.b, "fold-event-durable-")
	rig.added.Report(rig.b, "fold-event-added-")
	if rig.events > 0 {
		n := float64(rig.events)
		rig.b.ReportMetric(float64(rig.folded)/n, "nodes/event")
		rig.b.ReportMetric(float64(rig.cpu.Microseconds())/1000/n, "cpu-ms/event")
		rig.b.ReportMetric(float64(rig.user.Microseconds())/1000/n, "user-cpu-ms/event")
	}
}
