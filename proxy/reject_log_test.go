package proxy

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// TestUnreachableUpstreamNamesTheURL: a 502 for an upstream that refuses the
// connection names the upstream URL of that API and the flags that set it
// (before: only "upstream unreachable: dial tcp …", which does not say
// which URL the proxy was given, nor where to change it).
func TestUnreachableUpstreamNamesTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		api  API
		set  func(*Options)
		path string
		body string
		flag string
	}{
		{APIAnthropic, func(o *Options) { o.Upstream = dead }, PathAnthropic, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "--anthropic-upstream"},
		{APIOpenAI, func(o *Options) { o.Upstream = ""; o.OpenAIUpstream = dead }, PathOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "--openai-upstream"},
	} {
		tp := newProxyWith(t, newUpstream(t), c.set)
		resp, body := post(t, tp.http.URL+c.path, []byte(c.body), nil)
		msg := apiError(t, c.api, body)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(msg, dead) || !strings.Contains(msg, c.flag) || !strings.Contains(msg, "--upstream") {
			t.Errorf("%s: %d %q; want 502 naming %s, %s and --upstream", c.api, resp.StatusCode, msg, dead, c.flag)
		}
	}
}

// TestRejectedRequestIsLogged: a request the proxy answers itself with an
// error (here 400, a body that is not JSON) gets its line in the request
// log on stderr, with the status and the reason, like every forwarded one
// (before: only stats.rejected counted it; the log said nothing).
func TestRejectedRequestIsLogged(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	tp := newProxyWith(t, newUpstream(t), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
		o.Harness = harness.Config{}
	})
	resp, _ := post(t, tp.http.URL+PathAnthropic, []byte(`{not json`), nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	mu.Lock()
	log := buf.String()
	mu.Unlock()
	if !strings.Contains(log, "contextfold proxy rejected a request") || !strings.Contains(log, "status=400") ||
		!strings.Contains(log, "api=anthropic") || !strings.Contains(log, "not valid JSON") {
		t.Errorf("log: %q; want a line with status=400, api=anthropic and the reason", log)
	}
}

// TestUnreachableUpstreamIsLogged: a request the proxy answers 502 because
// the upstream refused the connection gets a request-log line at level
// WARN that says why (before: level=INFO status=502 and no reason, which the
// client, showing only "API Error: 502", did not give either).
func TestUnreachableUpstreamIsLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	var buf bytes.Buffer
	var mu sync.Mutex
	tp := newProxyWith(t, newUpstream(t), func(o *Options) {
		o.Upstream = dead
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	})
	resp, _ := post(t, tp.http.URL+PathAnthropic, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	mu.Lock()
	log := buf.String()
	mu.Unlock()
	if !strings.Contains(log, `level=WARN msg="contextfold proxy request"`) || !strings.Contains(log, "status=502") ||
		!strings.Contains(log, "upstream unreachable: ") || !strings.Contains(log, "connection refused") {
		t.Errorf("log: %q; want a WARN request line with status=502 and the reason", log)
	}
}
