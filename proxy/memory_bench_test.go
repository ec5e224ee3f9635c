package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bigConversation is an OpenAI Chat Completions body of n messages, each
// about 1.5 kB (tool outputs and assistant turns), ending in a human prompt:
// the shape of the 62.5 MB, 40,000-message request of issue 12.
func bigConversation(n int) []byte {
	msgs := make([]map[string]any, 0, n)
	msgs = append(msgs, map[string]any{"role": "system", "content": "You are a coding agent."},
		map[string]any{"role": "user", "content": "Make the test suite pass."})
	for i := 1; len(msgs) < n-1; i++ {
		if os.Getenv("PROXY_BENCH_SHAPE") == "chat" {
			msgs = append(msgs, map[string]any{"role": "user", "content": bigLog("ask"+itoa(i), 40)},
				map[string]any{"role": "assistant", "content": bigLog("answer"+itoa(i), 40)})
			continue
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": bigLog("step"+itoa(i)+"a", 40), "tool_calls": []any{map[string]any{
			"id": "call_" + itoa(i), "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_" + itoa(i), "content": bigLog("pkg"+itoa(i), 40)})
	}
	msgs = append(msgs[:n-1], map[string]any{"role": "user", "content": "what did pkg42 print?"})
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs})
	return b
}

// heapPeak samples the live heap every 5 ms until stop is called and
// returns the peak above the baseline (bytes).
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-exited
		if p := peak.Load(); p > base {
			return p - base
		}
		return 0
	}
}

// liveHeap returns the bytes of live and not yet swept heap objects.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// vmHWM returns the process's peak resident set (bytes), 0 off Linux.
func vmHWM() uint64 { return procStatus("VmHWM:") }

// vmRSS returns the process's resident set now (bytes), 0 off Linux.
func vmRSS() uint64 { return procStatus("VmRSS:") }

func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkProxyLargeRequest sends one large first request (the old
// messages folded into a new store) through a real loopback proxy and
// reports the peak heap above the baseline (live and not yet collected
// objects) in MB and as a multiple of the body (heap-x), the process's
// peak RSS (rss-MB), its RSS half a second after the response (rss-after-MB:
// the proxy hands the memory of a request of 8 MiB or more back at once),
// the live heap the session keeps (kept-MB), and the steps folded or
// collapsed (steps-folded).
// PROXY_BENCH_MESSAGES sets the message count (default 10,000 ≈ 15 MB;
// issue 12's request was 40,000 ≈ 62 MB).
func BenchmarkProxyLargeRequest(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("PROXY_BENCH_MESSAGES")); err == nil && v > 2 {
		n = v
	}
	body := bigConversation(n)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, openaiReply)
	}))
	defer up.Close()
	b.SetBytes(int64(len(body)))
	var worst uint64
	var kept int64
	var rssAfter uint64
	var folded int
	var warnings []string
	for range b.N {
		srv, err := New(Options{Dir: b.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: newDiscardLogger(),
			OnRequest: func(r RequestRecord) { folded = r.StepsFolded + r.StepsCollapsed; warnings = r.Warnings }})
		if err != nil {
			b.Fatal(err)
		}
		px := httptest.NewServer(srv)
		runtime.GC()
		base := liveHeap()
		stop := heapPeak()
		resp, err := http.Post(px.URL+PathOpenAI, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		worst = max(worst, stop())
		time.Sleep(500 * time.Millisecond) // the proxy hands freed memory back
		rssAfter = max(rssAfter, vmRSS())
		// What the proxy keeps once the request is done (the session's
		// state), the server still referenced.
		runtime.GC()
		kept = max(kept, int64(liveHeap())-int64(base))
		px.Close()
		runtime.KeepAlive(srv)
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(worst)/float64(len(body)), "heap-x")
	b.ReportMetric(float64(worst)/(1<<20), "heap-MB")
	b.ReportMetric(float64(len(body))/(1<<20), "body-MB")
	b.ReportMetric(float64(vmHWM())/(1<<20), "rss-MB")
	b.ReportMetric(float64(kept)/(1<<20), "kept-MB")
	b.ReportMetric(float64(rssAfter)/(1<<20), "rss-after-MB")
	b.ReportMetric(float64(folded), "steps-folded")
	if len(warnings) > 0 {
		b.Logf("warnings: %.300q", warnings)
	}
}
