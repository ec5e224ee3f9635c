package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"sort"
	"testing"
	"time"
)

type slogLogger = slog.Logger

func newDiscardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// conversation500 is a 500-message agent conversation: tool outputs of
// about 2 kB, short assistant turns, a human prompt every 20 messages.
func conversation500() []byte { return conversationN(500) }

// conversationN is conversation500 with n messages.
func conversationN(n int) []byte { return conversationOf(n, true) }

// conversationOf is the first n messages of conversationN's session; with
// ask, the last one is replaced by a question about pkg42 (a new human
// turn), else the session stops where it is (an agent's next request).
func conversationOf(n int, ask bool) []byte {
	var msgs []map[string]any
	msgs = append(msgs, map[string]any{"role": "system", "content": "You are a coding agent."})
	limit := n // the messages before the question (ask), or all n
	if ask {
		limit = n - 1
	}
	for i := 1; len(msgs) < limit; i++ {
		if ask && len(msgs)+2 > limit {
			// No room for a call and its result before the question: a
			// note fills the slot, so the question is the n-th message.
			msgs = append(msgs, map[string]any{"role": "user", "content": "continue"})
			break
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_" + itoa(i), "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_" + itoa(i), "content": bigLog("pkg"+itoa(i), 40)})
		if i%10 == 0 && (!ask || len(msgs) < limit) {
			msgs = append(msgs, map[string]any{"role": "user", "content": "continue with pkg" + itoa(i-5)})
		}
	}
	if ask {
		msgs = append(msgs, map[string]any{"role": "user", "content": "what did pkg42 print?"})
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs[:n]})
	return b
}

// BenchmarkProxyOverhead measures the proxy's added latency per request on a
// 500-message conversation, in steady state (the session already folded):
// p50 and p99 of the time from the request's arrival to handing the
// rewritten body to the transport (body read, parse, dispatch, splice), of
// the same after the body's last byte arrived (-after-body), and of what a
// client feels (-added: its round trip through the proxy minus that of the
// same body sent straight to the same loopback upstream, -direct).
func BenchmarkProxyOverhead(b *testing.B) { benchOverhead(b, conversation500()) }

// BenchmarkProxyOverheadLength is BenchmarkProxyOverhead at 250 to 8,000
// messages: beyond the budget the overhead should stay flat (the unchanged
// prefix is not parsed again, the working set is bounded).
func BenchmarkProxyOverheadLength(b *testing.B) {
	for _, n := range []int{250, 500, 1000, 2000, 4000, 8000} {
		b.Run(itoa(n), func(b *testing.B) { benchOverhead(b, conversationN(n)) })
	}
}

// BenchmarkProxyOverheadGrowing is BenchmarkProxyOverheadLength/2000 with
// a conversation that grows as an agent's does: each request is the
// session two messages further (a tool call and its output; a human prompt
// every 21 messages), so that fold events happen on the way (reported as
// fold-events, with the p50, p99 and max of all requests, fold events
// included).
func BenchmarkProxyOverheadGrowing(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, openaiReply)
	}))
	defer up.Close()
	var recs []RequestRecord
	srv, err := New(Options{Dir: b.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: newDiscardLogger(),
		OnRequest: func(r RequestRecord) { recs = append(recs, r) }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	send := func(body []byte) {
		resp, err := http.Post(px.URL+PathOpenAI, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send(conversationOf(2000, false))
	recs = recs[:0]
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		body := conversationOf(2002+2*i, false)
		b.StartTimer()
		send(body)
	}
	b.StopTimer()
	var all []time.Duration
	events := 0
	for _, r := range recs {
		all = append(all, r.Overhead)
		if r.WorkingSet != nil && r.WorkingSet.FoldEvent {
			events++
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if n := len(all); n > 0 {
		b.ReportMetric(float64(all[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[(n*99)/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(all[n-1].Microseconds())/1000, "max-ms")
	}
	b.ReportMetric(float64(events), "fold-events")
}

// BenchmarkProxyOverheadPaced is BenchmarkProxyOverheadLength with a
// client whose body arrives at 1 Gbit/s (125 MB/s, a fast link), through
// the proxy and straight to the upstream alike: what the proxy does while
// the bytes arrive (hashing the body's blocks) is then hidden by their
// arrival, and -added is what it does after the last byte.
func BenchmarkProxyOverheadPaced(b *testing.B) {
	for _, n := range []int{500, 2000, 8000} {
		b.Run(itoa(n), func(b *testing.B) { benchOverheadPaced(b, conversationN(n), 125e6) })
	}
}

// pacedReader hands out its bytes at rate bytes per second at most, in
// reads of at most 64 KiB, from its first read on.
type pacedReader struct {
	b     []byte
	off   int
	rate  float64 // bytes per second
	start time.Time
}

func (p *pacedReader) Read(q []byte) (int, error) {
	if p.off >= len(p.b) {
		return 0, io.EOF
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	if wait := time.Until(p.start.Add(time.Duration(float64(p.off) / p.rate * 1e9))); wait > 0 {
		time.Sleep(wait)
	}
	n := copy(q[:min(len(q), 64<<10)], p.b[p.off:])
	p.off += n
	return n, nil
}

func benchOverhead(b *testing.B, body []byte) { benchOverheadPaced(b, body, 0) }

// benchOverheadPaced is benchOverhead with the client sending its body at
// rate bytes per second (0: as fast as it can).
func benchOverheadPaced(b *testing.B, body []byte, rate float64) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, openaiReply)
	}))
	defer up.Close()
	var overheads, after []time.Duration
	srv, err := New(Options{Dir: b.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: newDiscardLogger(),
		OnRequest: func(r RequestRecord) {
			overheads = append(overheads, r.Overhead)
			after = append(after, r.Overhead-r.BodyRead)
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	px := httptest.NewServer(srv)
	defer px.Close()
	// post sends the body to url and returns the client's latency: from
	// the request's first byte to the response's last.
	post := func(url string) time.Duration {
		var rd io.Reader = bytes.NewReader(body)
		if rate > 0 {
			rd = &pacedReader{b: body, rate: rate}
		}
		req, _ := http.NewRequest("POST", url, rd)
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	proxied := func() time.Duration { return post(px.URL + PathOpenAI) }
	direct := func() time.Duration { return post(up.URL + PathOpenAI) }
	proxied() // first request folds the session
	direct()
	overheads, after = overheads[:0], after[:0]
	var added, alone []time.Duration
	// PROXY_BENCH_CPUPROFILE names a file for a CPU profile of the steady
	// state only (go test -cpuprofile also covers the first fold).
	if f := os.Getenv("PROXY_BENCH_CPUPROFILE"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := range b.N {
		// The same body through the proxy and straight to the upstream,
		// in turn (which goes first alternates, so that neither always
		// follows the other's leftovers: the proxy evicts after the
		// response).
		var via, own time.Duration
		if i%2 == 0 {
			via, own = proxied(), direct()
		} else {
			own, via = direct(), proxied()
		}
		added, alone = append(added, via-own), append(alone, own)
	}
	b.StopTimer()
	report := func(d []time.Duration, unit string) {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		if n := len(d); n > 0 {
			b.ReportMetric(float64(d[n/2].Microseconds())/1000, "p50"+unit)
			b.ReportMetric(float64(d[(n*99)/100].Microseconds())/1000, "p99"+unit)
		}
	}
	report(overheads, "-ms")
	// The same after the last byte of the body arrived: what the proxy
	// adds beyond receiving the bytes (parse, dispatch, splice).
	report(after, "-after-body-ms")
	// What the client feels: its latency through the proxy minus that of
	// the same body sent straight to the same upstream (paired, one
	// request each way per iteration), and the direct latency itself.
	report(added, "-added-ms")
	report(alone, "-direct-ms")
}

// BenchmarkProxyFirstFold measures the first request of a 500-message
// conversation, which folds every cold message into a new store.
func BenchmarkProxyFirstFold(b *testing.B) {
	body := conversation500()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, openaiReply)
	}))
	defer up.Close()
	for range b.N {
		srv, _ := New(Options{Dir: b.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: newDiscardLogger()})
		req := httptest.NewRequest("POST", PathOpenAI, bytes.NewReader(body))
		srv.ServeHTTP(httptest.NewRecorder(), req)
	}
}
