package proxy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/match"
)

// hugeEventStream is an Anthropic stream whose one text delta is n bytes
// long, followed by a tool call and the end of the message.
func hugeEventStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"")
	b.WriteString(strings.Repeat("A", n))
	b.WriteString("\"}}\n\n")
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu1\",\"name\":\"bash\",\"input\":{}}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\":\\\"ls\\\"}\"}}\n\n")
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

// TestObserverBoundsAHugeEvent: an upstream event longer than maxSSEEvent
// is passed on but not kept whole for parsing: the observer's buffer stays
// within the bound, the events after it are still read (the tool call),
// and the skipped event is counted. Before the bound the observer kept the
// whole event and searched it again from its start on every write
// (quadratic: a 1.5 GB event streamed at about 0.6 MB/s through the proxy).
func TestObserverBoundsAHugeEvent(t *testing.T) {
	stream := hugeEventStream(maxSSEEvent + 3<<20)
	o := newObserver(APIAnthropic, true)
	peak := 0
	for off := 0; off < len(stream); off += 64 << 10 {
		o.Write(stream[off:min(off+64<<10, len(stream))])
		peak = max(peak, len(o.buf))
	}
	if peak > maxSSEEvent+64<<10 {
		t.Errorf("observer buffer reached %d bytes, want at most %d", peak, maxSSEEvent+64<<10)
	}
	got := o.result()
	if got.EventsSkipped != 1 {
		t.Errorf("EventsSkipped = %d, want 1", got.EventsSkipped)
	}
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "bash" || got.ToolCalls[0].Input != `{"command":"ls"}` {
		t.Errorf("tool calls after the huge event: %+v", got.ToolCalls)
	}
	// Split anywhere, CRLF included, the same events are seen.
	crlf := bytes.ReplaceAll(hugeEventStream(10), []byte("\n"), []byte("\r\n"))
	for cut := 1; cut < len(crlf); cut += 7 {
		o := newObserver(APIAnthropic, true)
		o.Write(crlf[:cut])
		o.Write(crlf[cut:])
		if r := o.result(); r.Events != 8 || len(r.ToolCalls) != 1 {
			t.Fatalf("cut at %d: %d events, tool calls %+v", cut, r.Events, r.ToolCalls)
		}
	}
}

// TestHugeUpstreamEventPassesThrough: through the proxy, a stream with an
// event longer than maxSSEEvent reaches the client byte for byte, and the
// request record says the event was not read.
func TestHugeUpstreamEventPassesThrough(t *testing.T) {
	stream := hugeEventStream(maxSSEEvent + 1<<20)
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for off := 0; off < len(stream); off += 32 << 10 {
			_, _ = w.Write(stream[off:min(off+32<<10, len(stream))])
		}
	}
	tp := newProxy(t, up, foldAll)
	resp, err := http.Post(tp.http.URL+PathAnthropic, "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || n != int64(len(stream)) || !bytes.Equal(h.Sum(nil), sha256Of(stream)) {
		t.Fatalf("client got %d of %d bytes (err %v), or other bytes", n, len(stream), err)
	}
	rec := tp.record(t, 1)
	if rec.Observed.EventsSkipped != 1 || len(rec.Observed.ToolCalls) != 1 {
		t.Fatalf("observed %+v", rec.Observed)
	}
	found := false
	for _, w := range rec.Warnings {
		found = found || strings.Contains(w, "server-sent event")
	}
	if !found {
		t.Errorf("no warning about the skipped event: %q", rec.Warnings)
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// tinyFold folds every old message whatever its size (no size threshold,
// a hot window of one message): a conversation of thousands of messages of
// a few tokens each is one fold event of thousands of cold nodes.
var tinyFold = harness.Config{HotWindow: 1, FoldBlock: 1, MinFoldTokens: -1, Match: match.Exact}

// TestTinyMessagesWithinEstimate: a first request of thousands of messages
// of a few tokens each folds within its memory estimate, so that the soft
// memory limit (memlimit.go) never has to be raised by the watchdog. When
// the estimate counted body bytes alone (5 × a 1.3 MB body, while folding
// 6,000 such messages holds some 25 × the body), the watchdog raised the
// limit by 10 % steps all through the fold and the collector ran nearly
// without pause (44 % of the CPU, 18 s instead of 6 for 20,000 messages).
// The request runs in a child process (this test binary again), so that
// the heap other tests left does not count; about 5 s on 2 cores; skipped
// under the race detector and with -short.
func TestTinyMessagesWithinEstimate(t *testing.T) {
	const child = "CONTEXTFOLD_PROXY_TINY_CHILD"
	if os.Getenv(child) == "1" {
		m := largeRequestMemory(t, 12000)
		governor.mu.Lock()
		raised := governor.maxRaised
		governor.mu.Unlock()
		fmt.Printf("proxy-tiny %d %d %d %d\n", m.body, m.peak, m.folded, raised)
		return
	}
	if raceEnabled || testing.Short() {
		t.Skip("a memory measure: not under the race detector or -short")
	}
	// The watchdog raises the limit when the heap in use, garbage included,
	// passes the estimate: on a loaded machine the collector can lag behind
	// the fold and the garbage counts. An estimate far below the request's
	// memory raises it in every run; so the child measures up to three
	// times and the test judges the best run.
	var body, peak, folded, raised int64
	for attempt := 1; attempt <= 3; attempt++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTinyMessagesWithinEstimate$", "-test.count=1")
		cmd.Env = append(os.Environ(), child+"=1", "PROXY_BENCH_SHAPE=tiny")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		i := bytes.Index(out, []byte("proxy-tiny "))
		if i < 0 {
			t.Fatalf("child printed no measure:\n%s", out)
		}
		if _, err := fmt.Sscanf(string(out[i:]), "proxy-tiny %d %d %d %d", &body, &peak, &folded, &raised); err != nil {
			t.Fatalf("child's measure: %v\n%s", err, out)
		}
		t.Logf("run %d: body %.2f MB, peak heap %.1f MB, %d steps folded, limit raised by %.1f MB",
			attempt, float64(body)/(1<<20), float64(peak)/(1<<20), folded, float64(raised)/(1<<20))
		if raised <= peak/10 {
			break
		}
	}
	if folded < 5000 {
		t.Fatalf("only %d steps folded: the request did not exercise the fold", folded)
	}
	if raised > peak/10 {
		t.Fatalf("the watchdog raised the soft memory limit by %.1f MB (peak heap %.1f MB): the request's estimate is far below its memory",
			float64(raised)/(1<<20), float64(peak)/(1<<20))
	}
}
