package proxy

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A client that hangs up once the stream's last event has arrived (Codex
// exec ends the moment it reads response.completed) lost nothing: the
// request record carries no "response interrupted" warning. One that hangs
// up before the last event still gets it.
func TestHangUpAfterLastEventIsNoInterruption(t *testing.T) {
	cases := []struct {
		name, path, body, last string
		complete               bool
	}{
		{"responses completed", PathResponses, `{"model":"m","stream":true,"input":[{"role":"user","content":"hi"}]}`,
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[]}}\n\n", true},
		{"anthropic message_stop", PathAnthropic, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", true},
		{"chat done", PathOpenAI, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", true},
		{"anthropic cut before message_stop", PathAnthropic, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t)
			up.handler = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				_, _ = w.Write([]byte(c.last))
				w.(http.Flusher).Flush()
				// The upstream holds the connection open after its
				// last event, as a server may before it ends the chunked
				// body: the client hangs up first.
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}
			tp := newProxy(t, up, foldAll)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", tp.http.URL+c.path, strings.NewReader(c.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			// Read up to the last event's blank line, then hang up.
			br := bufio.NewReader(resp.Body)
			want := strings.Count(c.last, "\n\n")
			for seen := 0; seen < want; {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("reading the stream: %v", err)
				}
				if line == "\n" {
					seen++
				}
			}
			cancel()
			resp.Body.Close()
			rec := tp.record(t, 1)
			interrupted := false
			for _, w := range rec.Warnings {
				interrupted = interrupted || strings.HasPrefix(w, "response interrupted")
			}
			if interrupted == c.complete {
				t.Errorf("complete stream %v: warnings %q (want an interruption warning only for an incomplete stream)", c.complete, rec.Warnings)
			}
		})
	}
}
