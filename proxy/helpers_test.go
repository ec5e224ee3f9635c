package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
)

var fixedClock = func() time.Time { return time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC) }

// recorded is one request the upstream received.
type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// upstream is a local provider on loopback that records exactly what it
// receives and answers with canned bodies and real SSE streams.
type upstream struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	sse     []byte // stream to answer with (nil: the API's default)
	handler http.HandlerFunc
}

const anthropicReply = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}`
const openaiReply = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"ok","refusal":null},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func newUpstream(t *testing.T) *upstream {
	u := &upstream{t: t}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
		h, sse := u.handler, u.sse
		u.mu.Unlock()
		if h != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h(w, r)
			return
		}
		var probe struct {
			Stream bool `json:"stream"`
		}
		json.Unmarshal(body, &probe)
		if probe.Stream {
			if sse == nil {
				sse = readFile(t, "field-reports/15-sse-event-lines-ping.txt")
				if strings.HasSuffix(r.URL.Path, PathOpenAI) {
					sse = readFile(t, "field-reports/12-openai-stream-upstream.sse.txt")
				}
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			writeEvents(w, sse)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, PathOpenAI) {
			io.WriteString(w, openaiReply)
		} else {
			io.WriteString(w, anthropicReply)
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// writeEvents writes an SSE stream event by event, flushing each.
func writeEvents(w http.ResponseWriter, sse []byte) {
	for _, ev := range splitEvents(sse) {
		w.Write(ev)
		w.(http.Flusher).Flush()
	}
}

// splitEvents cuts a stream after each blank line, keeping every byte.
func splitEvents(sse []byte) [][]byte {
	var out [][]byte
	rest := sse
	for len(rest) > 0 {
		_, next := eventEnd(rest, 0)
		if next < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:next])
		rest = rest[next:]
	}
	return out
}

func (u *upstream) last(t *testing.T) recorded {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("upstream received nothing")
	}
	return u.reqs[len(u.reqs)-1]
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testProxy runs the proxy on loopback in front of up.
type testProxy struct {
	srv  *Server
	http *httptest.Server
	dir  string
	log  *bytes.Buffer
	mu   sync.Mutex
	recs []RequestRecord
}

func newProxy(t *testing.T, up *upstream, cfg harness.Config) *testProxy {
	t.Helper()
	tp := &testProxy{dir: t.TempDir(), log: &bytes.Buffer{}}
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, tp.log}, nil))
	srv, err := New(Options{Dir: tp.dir, Upstream: up.srv.URL, Harness: cfg, Clock: fixedClock, Logger: logger,
		OnRequest: func(r RequestRecord) {
			tp.mu.Lock()
			tp.recs = append(tp.recs, r)
			tp.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	tp.srv = srv
	tp.http = httptest.NewServer(srv)
	t.Cleanup(tp.http.Close)
	return tp
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lastRecord waits for the record of the n-th request (1-based).
func (tp *testProxy) record(t *testing.T, n int) RequestRecord {
	t.Helper()
	deadline := time.Now().Add(settleWait)
	for time.Now().Before(deadline) {
		tp.mu.Lock()
		if len(tp.recs) >= n {
			r := tp.recs[n-1]
			tp.mu.Unlock()
			return r
		}
		tp.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no record for request %d", n)
	return RequestRecord{}
}

func (tp *testProxy) store(t *testing.T, rec RequestRecord) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(filepath.Join(tp.dir, rec.Session, "g"+itoa(rec.Generation)), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func post(t *testing.T, url string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// decode parses a forwarded body generically.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("forwarded body is not valid JSON: %v", err)
	}
	return m
}

func messages(t *testing.T, b []byte) []map[string]any {
	var out []map[string]any
	for _, m := range decode(t, b)["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// bigLog is a verbose tool output mentioning term.
func bigLog(term string, lines int) string {
	var b strings.Builder
	for i := range lines {
		b.WriteString("line ")
		b.WriteString(itoa(i))
		b.WriteString(": compiled " + term + " module ok\n")
	}
	return b.String()
}

// recordOf extracts the folded-step record from a replaced text.
func recordOf(t *testing.T, text string) harness.FoldedStep {
	t.Helper()
	if !strings.HasPrefix(text, "[contextfold folded step ") {
		t.Fatalf("not a folded-step record: %.120q", text)
	}
	_, js, _ := strings.Cut(text, "\n")
	var st harness.FoldedStep
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	return st
}

// hydrationOf returns the content of the single hydration element in text.
func hydrationOf(t *testing.T, text string) (step string, content string) {
	t.Helper()
	i := strings.Index(text, harness.HydrationOpen)
	if i < 0 {
		t.Fatalf("no hydration in %.200q", text)
	}
	rest := text[i:]
	gt := strings.Index(rest, ">\n")
	head := rest[:gt]
	step = head[strings.Index(head, `step_id="`)+9:]
	step = step[:strings.IndexByte(step, '"')]
	body := rest[gt+2:]
	end := strings.LastIndex(body, "\n"+harness.HydrationClose)
	return step, body[:end]
}
