package proxy

import (
	"net/http"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// TestStatsPending: Stats.Pending counts a request while the proxy serves
// it (held at the upstream here), and is 0 once its record is logged and
// the work after its response (the session state saved, spare node files)
// has ended, which a supervisor or a crash test waits for before a kill.
// No timing: the upstream holds the request until the test releases it.
func TestStatsPending(t *testing.T) {
	up := newUpstream(t)
	got, goOn := make(chan struct{}), make(chan struct{})
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		close(got)
		<-goOn
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(openaiReply))
	}
	tp := newProxyWith(t, up, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000} })
	if p := tp.srv.Stats().Pending; p != 0 {
		t.Fatalf("pending %d before any request", p)
	}
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, tp.http.URL+PathOpenAI, conversationN(200), map[string]string{HeaderSession: "pending"})
		done <- resp.StatusCode
	}()
	<-got
	if p := tp.srv.Stats().Pending; p != 1 {
		t.Errorf("pending %d while the upstream holds the request, want 1", p)
	}
	close(goOn)
	if code := <-done; code != 200 {
		t.Fatalf("status %d", code)
	}
	if rec := tp.record(t, 1); rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent {
		t.Fatalf("the request was no fold event (the test wants work after the response): %+v", rec.WorkingSet)
	}
	waitBackground(tp.srv)
	if p := tp.srv.Stats().Pending; p != 0 {
		t.Errorf("pending %d once the request is recorded and its work ended, want 0", p)
	}
}
