package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// newProxyWith runs the proxy on loopback in front of up with options
// adjusted by set.
func newProxyWith(t *testing.T, up *upstream, set func(*Options)) *testProxy {
	t.Helper()
	tp := &testProxy{dir: t.TempDir(), log: &bytes.Buffer{}}
	opts := Options{Dir: tp.dir, Upstream: up.srv.URL, Clock: fixedClock, Logger: newDiscardLogger(),
		OnRequest: func(r RequestRecord) {
			tp.mu.Lock()
			tp.recs = append(tp.recs, r)
			tp.mu.Unlock()
		}}
	set(&opts)
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	tp.srv = srv
	tp.http = httptest.NewServer(srv)
	t.Cleanup(tp.http.Close)
	return tp
}

// chatBody is an OpenAI body of about size bytes.
func chatBody(size int) []byte {
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": []any{
		map[string]any{"role": "user", "content": strings.Repeat("x", size)}}})
	return b
}

// apiError decodes an error answer in either API's shape and returns its
// message; it fails the test when the body is not in that shape.
func apiError(t *testing.T, api API, b []byte) string {
	t.Helper()
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Error.Message == "" || v.Error.Type == "" || (api == APIAnthropic && v.Type != "error") {
		t.Fatalf("not a %s error body: %s", api, b)
	}
	return v.Error.Message
}

// TestInFlightBudget: while one request holds most of the budget (its
// memory estimate), another that does not fit is answered 503 with
// Retry-After, with a Content-Length or chunked; once the first is done it
// goes through, and the budget is back to zero.
func TestInFlightBudget(t *testing.T) {
	up := newUpstream(t)
	hold := make(chan struct{})
	var closeHold sync.Once
	release := func() { closeHold.Do(func() { close(hold) }) }
	t.Cleanup(release) // a failed check must not leave the upstream waiting
	arrived := make(chan struct{}, 4)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		if strings.Contains(r.Header.Get("X-Test"), "hold") {
			<-hold
		}
		io.WriteString(w, openaiReply)
	}
	const size = 600 << 10
	// The held request's estimate: (RequestMemoryMultiple +
	// FoldMemoryMultiple) × its body, all of it new. The budget leaves room
	// for small requests beside it, not for a second one of its size.
	held := int64(size) * (RequestMemoryMultiple + FoldMemoryMultiple)
	tp := newProxyWith(t, up, func(o *Options) { o.MaxBodyBytes = 1 << 20; o.MaxInFlightBytes = held + 400<<10 })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, _ := post(t, tp.http.URL+PathOpenAI, chatBody(size), map[string]string{"X-Test": "hold"})
		if resp.StatusCode != 200 {
			t.Errorf("held request: status %d", resp.StatusCode)
		}
	}()
	<-arrived
	if got := tp.srv.InFlightBytes(); got < held {
		t.Fatalf("in flight %d bytes, want the held request's estimate, at least %d", got, held)
	}
	// A second body that does not fit, with a Content-Length.
	resp, b := post(t, tp.http.URL+PathOpenAI, chatBody(size), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over budget: status %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if msg := apiError(t, APIOpenAI, b); !strings.Contains(msg, "--max-inflight-bytes") {
		t.Fatalf("message does not name the remedy: %s", msg)
	}
	// The same without a Content-Length (chunked), Anthropic shape.
	req, _ := http.NewRequest("POST", tp.http.URL+PathAnthropic, io.MultiReader(bytes.NewReader(chatBody(size))))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("chunked over budget: status %d, want 503 with Retry-After", resp.StatusCode)
	}
	apiError(t, APIAnthropic, b)
	// A small request still fits beside the held one.
	if resp, _ := post(t, tp.http.URL+PathOpenAI, chatBody(1000), nil); resp.StatusCode != 200 {
		t.Fatalf("small request beside the held one: status %d", resp.StatusCode)
	}
	release()
	wg.Wait()
	if resp, _ := post(t, tp.http.URL+PathOpenAI, chatBody(size), nil); resp.StatusCode != 200 {
		t.Fatalf("after the held request finished: status %d", resp.StatusCode)
	}
	// The handler releases its share as it returns, just after the client
	// has the last byte.
	for deadline := time.Now().Add(settleWait); tp.srv.InFlightBytes() != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := tp.srv.InFlightBytes(); got != 0 {
		t.Fatalf("budget not released: %d bytes in flight", got)
	}
	if _, err := New(Options{Dir: t.TempDir(), Upstream: up.srv.URL, MaxBodyBytes: 2 << 20, MaxInFlightBytes: 1 << 20}); err == nil || !strings.Contains(err.Error(), "MaxInFlightBytes") {
		t.Fatalf("a budget below the body limit was accepted: %v", err)
	}
}

// TestBodyTooLargeByHeader: a Content-Length over the limit is refused
// before any of the body is read.
func TestBodyTooLargeByHeader(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.MaxBodyBytes = 1 << 20 })
	resp, b := post(t, tp.http.URL+PathAnthropic, chatBody(2<<20), nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	apiError(t, APIAnthropic, b)
}

// slowClient opens a raw loopback connection, sends the request head for
// a body of n bytes, then one byte of it every gap. It returns the status
// line and how long the proxy took to answer.
func slowClient(t *testing.T, addr, path string, n int, gap time.Duration) (status string, took time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * settleWait)) // the test's own bound
	// Taken before the head is sent: the proxy's body deadline starts
	// after it, so took is at least BodyReadTimeout however the client
	// is scheduled.
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, n)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < n; i++ {
			select {
			case <-stop:
				return
			case <-time.After(gap):
			}
			if _, err := c.Write([]byte{' '}); err != nil {
				return
			}
		}
	}()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: no answer to a slow body after %s: %v", path, time.Since(start), err)
	}
	return strings.TrimSpace(line), time.Since(start)
}

// TestBodyReadTimeout: a client trickling its body is answered 408 once
// BodyReadTimeout has passed, on an API path and on a passed-through path,
// while a slow streamed response after a quick body is not cut.
func TestBodyReadTimeout(t *testing.T) {
	up := newUpstream(t)
	const timeout = 600 * time.Millisecond
	tp := newProxyWith(t, up, func(o *Options) { o.BodyReadTimeout = timeout })
	addr := strings.TrimPrefix(tp.http.URL, "http://")
	// The 1,000-byte body takes at least 100 s to trickle (each gap is a
	// lower bound), so a 408 before settleWait (60 s) is the body deadline's,
	// however late a loaded machine fires its timer; a 408 before the
	// timeout is impossible (start is taken before the head is sent).
	for _, path := range []string{PathAnthropic, PathOpenAI} {
		status, took := slowClient(t, addr, path, 1000, 100*time.Millisecond)
		if !strings.Contains(status, " 408 ") || took < timeout || took > settleWait {
			t.Fatalf("%s: %q after %s, want 408 after about %s", path, status, took, timeout)
		}
	}
	// A passed-through body is cut too: the client is answered 408 (not
	// an empty 200: the reverse proxy hands its error handler a wrapped
	// body, and the failed read cancels the request's context) and the
	// upstream never got the whole body.
	for range 3 {
		status, took := slowClient(t, addr, "/v1/files", 1000, 100*time.Millisecond)
		if !strings.Contains(status, " 408 ") || took > settleWait {
			t.Fatalf("pass-through: %q after %s, want 408 after about %s", status, took, timeout)
		}
	}
	up.mu.Lock()
	for _, r := range up.reqs {
		if r.Path == "/v1/files" && len(r.Body) >= 1000 {
			t.Errorf("the upstream received the whole slow body (%d bytes)", len(r.Body))
		}
	}
	up.mu.Unlock()
	// A response that streams for longer than the timeout is delivered
	// whole: the deadline covers the body only.
	up.mu.Lock()
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 5 {
			fmt.Fprintf(w, "event: ping\ndata: {\"type\":\"ping\",\"n\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(timeout / 2)
		}
	}
	up.mu.Unlock()
	body := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	resp, b := post(t, tp.http.URL+PathAnthropic, body, nil)
	if resp.StatusCode != 200 || strings.Count(string(b), "event: ping") != 5 {
		t.Fatalf("long stream cut: status %d, %d events", resp.StatusCode, strings.Count(string(b), "event: ping"))
	}
	// And a passed-through GET that takes longer than the timeout.
	up.mu.Lock()
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(timeout * 2)
		io.WriteString(w, "slow ok")
	}
	up.mu.Unlock()
	gresp, err := http.Get(tp.http.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := io.ReadAll(gresp.Body)
	gresp.Body.Close()
	if string(gb) != "slow ok" {
		t.Fatalf("slow pass-through GET cut: %d %q", gresp.StatusCode, gb)
	}
}

// TestInvalidUTF8Refused: a JSON body holding bytes that are not UTF-8 is
// answered 400 in the API's error shape and never reaches the upstream.
func TestInvalidUTF8Refused(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(*Options) {})
	for _, c := range []struct {
		api  API
		path string
		body string
	}{
		{APIAnthropic, PathAnthropic, "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}"},
		{APIOpenAI, PathOpenAI, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"ok\"}],\"user\":\"\xff\xfe\"}"},
		{APIOpenAI, PathOpenAI, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80 surrogate\"}]}"},
	} {
		resp, b := post(t, tp.http.URL+c.path, []byte(c.body), nil)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%q: status %d, want 400", c.body, resp.StatusCode)
		}
		if msg := apiError(t, c.api, b); !strings.Contains(msg, "UTF-8") {
			t.Fatalf("message does not say UTF-8: %s", msg)
		}
	}
	up.mu.Lock()
	n := len(up.reqs)
	up.mu.Unlock()
	if n != 0 {
		t.Fatalf("the upstream received %d invalid bodies", n)
	}
}

// TestStatsGuard: /contextfold/stats answers only loopback Host names (or
// the allowed ones), and never shows a tool call's arguments.
func TestStatsGuard(t *testing.T) {
	up := newUpstream(t)
	const secret = "sk-ant-api03-NOT-A-REAL-KEY-but-still-private"
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"curl -H 'x-api-key: %s' https://example.com"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`, secret)
	}
	tp := newProxyWith(t, up, func(o *Options) { o.AllowedHosts = []string{"devbox.lan"} })
	post(t, tp.http.URL+PathAnthropic, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), nil)
	if rec := tp.record(t, 1); len(rec.Observed.ToolCalls) != 1 || !strings.Contains(rec.Observed.ToolCalls[0].Input, secret) {
		t.Fatalf("the in-process record lost the tool call: %+v", rec.Observed)
	}
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", tp.http.URL+PathStats, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, h := range []string{"evil.example", "evil.example:80", "127.0.0.1.nip.io", "localhost.evil.example"} {
		if code, body := get(h); code != http.StatusForbidden || strings.Contains(body, "requests") {
			t.Fatalf("Host %q: status %d, want 403 without counters", h, code)
		}
	}
	for _, h := range []string{strings.TrimPrefix(tp.http.URL, "http://"), "localhost:1234", "devbox.lan:8787"} {
		code, body := get(h)
		if code != 200 || !strings.Contains(body, `"requests": 1`) {
			t.Fatalf("Host %q: status %d %s", h, code, body)
		}
		if strings.Contains(body, secret) || strings.Contains(body, "curl") {
			t.Fatalf("stats echo a tool call's arguments: %s", body)
		}
		if !strings.Contains(body, `"name": "bash"`) || !strings.Contains(body, "withheld") {
			t.Fatalf("stats lost the tool call's name or the withheld marker: %s", body)
		}
	}
}

// TestInFlightMemoryEstimate: the budget counts a request's memory, not its
// body: a conversation the proxy read before (the prefix cache) is
// estimated at RequestMemoryMultiple × its body, a new one at
// FoldMemoryMultiple more per new byte (each new message FoldMessageMemory
// at least); and a request whose estimate
// exceeds the whole budget is served when it is alone, not refused forever.
func TestInFlightMemoryEstimate(t *testing.T) {
	body := conversationN(60)
	n := len(body)
	req, err := parseRequestCached(APIOpenAI, body, newParseCache())
	if err != nil {
		t.Fatal(err)
	}
	small := int64(0) // each message counts as FoldMessageMemory at least
	for _, e := range req.elems {
		small += int64(max(FoldMessageMemory-FoldMemoryMultiple*(e.end-e.start), 0))
	}
	if got, want := memoryEstimate(n, req), int64(n)*(RequestMemoryMultiple+FoldMemoryMultiple)+small; got != want {
		t.Fatalf("a new conversation is estimated at %d bytes, want %d", got, want)
	}
	c := newParseCache()
	first, _ := parseRequestCached(APIOpenAI, body, c)
	first.measure(nil, true, "heuristic")
	c.remember(first, "heuristic")
	again, _ := parseRequestCached(APIOpenAI, body, c)
	if again.known != len(again.msgs) {
		t.Fatalf("the repeated conversation took %d of %d messages from the prefix cache", again.known, len(again.msgs))
	}
	if got, max := memoryEstimate(n, again), int64(n)*(RequestMemoryMultiple+1); got > max {
		t.Fatalf("a conversation read before is estimated at %d bytes, want at most %d", got, max)
	}

	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.MaxBodyBytes = int64(n); o.MaxInFlightBytes = int64(n) * 2 })
	if resp, b := post(t, tp.http.URL+PathOpenAI, body, nil); resp.StatusCode != 200 {
		t.Fatalf("a request over the budget but alone: status %d: %s", resp.StatusCode, b)
	}
	for deadline := time.Now().Add(settleWait); tp.srv.InFlightBytes() != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := tp.srv.InFlightBytes(); got != 0 {
		t.Fatalf("budget not released: %d", got)
	}
}

// TestTooManyMessages: a request with more messages than MaxMessages is
// answered 413 in the API's error shape and never reaches the upstream
// (nothing of it is folded); one at the limit is served.
func TestTooManyMessages(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.MaxMessages = 10 })
	body := func(n int) []byte {
		msgs := make([]any, n)
		for i := range msgs {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs[i] = map[string]any{"role": role, "content": fmt.Sprintf("message %d", i)}
		}
		b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": msgs})
		return b
	}
	resp, b := post(t, tp.http.URL+PathAnthropic, body(11), nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("11 messages: status %d, want 413", resp.StatusCode)
	}
	if msg := apiError(t, APIAnthropic, b); !strings.Contains(msg, "--max-messages") || !strings.Contains(msg, "11 messages") {
		t.Errorf("413 message %q does not name the count and the flag", msg)
	}
	up.mu.Lock()
	n := len(up.reqs)
	up.mu.Unlock()
	if n != 0 {
		t.Errorf("the upstream saw %d requests, want 0", n)
	}
	if resp, _ := post(t, tp.http.URL+PathAnthropic, body(9), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("9 messages: status %d, want 200", resp.StatusCode)
	}
}
