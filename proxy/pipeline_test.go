package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
)

// TestPipelinedClientEviction: a client that pipelines (writes its next
// request on the same HTTP/1.1 connection before reading the previous
// response) is served in order — Go's server reads the next request once
// the previous handler has finished — and eviction stays correct: the
// first request's hydration is evicted by its own response's end, before
// the second request's scan, and the second hydrates for its own prompt.
// The exchange is bounded by a connection deadline: a hang fails the test.
func TestPipelinedClientEviction(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000} })
	base := conversationN(60)
	first := bytes.Replace(base, []byte("what did pkg42 print?"), []byte("what did pkg13 print?"), 1)
	second := bytes.Replace(base, []byte("what did pkg42 print?"), []byte("what did pkg15 print?"), 1)
	if bytes.Equal(first, base) || bytes.Equal(second, base) {
		t.Fatal("the prompts were not replaced")
	}
	// Fold the session first (the old turns move to the store).
	if resp, b := post(t, tp.http.URL+PathOpenAI, base, map[string]string{HeaderSession: "pipe"}); resp.StatusCode != 200 {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, b)
	}
	u, _ := url.Parse(tp.http.URL)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, b := range [][]byte{first, second} {
		fmt.Fprintf(&out, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s: pipe\r\nContent-Length: %d\r\n\r\n", PathOpenAI, u.Host, HeaderSession, len(b))
		out.Write(b)
	}
	if _, err := conn.Write(out.Bytes()); err != nil { // both requests before reading anything
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for k := 0; k < 2; k++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", k+1, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), "chatcmpl") {
			t.Fatalf("response %d: status %d, err %v: %s", k+1, resp.StatusCode, err, b)
		}
	}
	// The records of the two pipelined requests (after the warm-up).
	var recs []RequestRecord
	for deadline := time.Now().Add(settleWait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tp.mu.Lock()
		recs = append(recs[:0], tp.recs...)
		tp.mu.Unlock()
		if len(recs) >= 3 {
			break
		}
	}
	if len(recs) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(recs))
	}
	r1, r2 := recs[1], recs[2]
	if len(r1.StepsHydrated) == 0 || len(r2.StepsHydrated) == 0 {
		t.Fatalf("hydrated %v then %v: both prompts should hydrate an old step", r1.StepsHydrated, r2.StepsHydrated)
	}
	if slices.Equal(r1.StepsHydrated, r2.StepsHydrated) {
		t.Fatalf("both turns hydrated %v: the second prompt asks about another step", r1.StepsHydrated)
	}
	evicted := append([]int(nil), r1.Evicted...)
	slices.Sort(evicted)
	hydrated := append([]int(nil), r1.StepsHydrated...) // in the scan's order, not the steps'
	slices.Sort(hydrated)
	if !slices.Equal(evicted, hydrated) || len(r1.EvictedEarlier) != 0 || len(r2.EvictedEarlier) != 0 {
		t.Fatalf("first request hydrated %v, evicted %v at its end and %v earlier; second evicted %v earlier: each turn's hydration must be evicted by its own response, before the next scan",
			r1.StepsHydrated, r1.Evicted, r1.EvictedEarlier, r2.EvictedEarlier)
	}
	// Upstream order and content: the second forwarded body carries the
	// second turn's hydration only.
	up.mu.Lock()
	reqs := append([]recorded(nil), up.reqs...)
	up.mu.Unlock()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	if !bytes.Contains(reqs[1].Body, []byte("pkg13 print")) || !bytes.Contains(reqs[2].Body, []byte("pkg15 print")) {
		t.Fatal("the pipelined requests reached the upstream out of order")
	}
	for _, s := range r1.StepsHydrated {
		if !slices.Contains(r2.StepsHydrated, s) && bytes.Contains(reqs[2].Body, []byte(fmt.Sprintf(`step_id=\"%d\"`, s))) {
			t.Fatalf("step %d of the first turn is still hydrated in the second", s)
		}
	}
}
