package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
)

func TestBadBodiesGetClear4xx(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	tp.srv.opts.MaxBodyBytes = 64 << 10
	for _, c := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"model":`, 400, "not valid JSON"},
		{`{"model":"m","messages":[{"role":"user","content":"x"},]}`, 400, "at byte offset 55"},
		{`{"messages":[{"role":"user","content":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}]}`, 400, "nested deeper than"},
		{`[1,2]`, 400, "JSON object"},
		{`{"model":"m"}`, 400, `has no \"messages\" array`},
		{`{"messages":[1]}`, 400, "is not an object"},
		{`{"messages":[{"content":"x"}]}`, 400, "has no role"},
		{`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 70000) + `"}]}`, 413, "larger than 65536 bytes"},
	} {
		resp, b := post(t, tp.http.URL+PathAnthropic, []byte(c.body), nil)
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.msg) || !json.Valid(b) {
			t.Errorf("%.30s: %d %s", c.body, resp.StatusCode, b)
		}
	}
	resp, b := post(t, tp.http.URL+PathOpenAI, []byte(`{"messages":[{"role":"user","content":"hi"}]}`), map[string]string{HeaderSession: "../etc"})
	if resp.StatusCode != 400 || !strings.Contains(string(b), HeaderSession) {
		t.Errorf("bad session header: %d %s", resp.StatusCode, b)
	}
	up.mu.Lock()
	n := len(up.reqs)
	up.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d rejected requests reached the upstream", n)
	}
}

func TestOtherPathsPassThrough(t *testing.T) {
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Up", "1")
		io.WriteString(w, `{"data":[{"id":"gpt-4.1"}]}`)
	}
	tp := newProxy(t, up, foldAll)
	req, _ := http.NewRequest("GET", tp.http.URL+"/v1/models?limit=5", nil)
	req.Header.Set("Authorization", "Bearer sk-SECRET")
	req.Header.Set(HeaderSession, "abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := up.last(t)
	if string(b) != `{"data":[{"id":"gpt-4.1"}]}` || resp.Header.Get("X-Up") != "1" || got.Path != "/v1/models" ||
		got.Header.Get("Authorization") != "Bearer sk-SECRET" || got.Header.Get(HeaderSession) != "" {
		t.Fatalf("pass-through changed: %s %v", b, got)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	up := newUpstream(t)
	cancelled := make(chan struct{})
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(10 * time.Second):
		}
	}
	tp := newProxy(t, up, foldAll)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", tp.http.URL+PathAnthropic, strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(settleWait):
		t.Fatal("upstream call not cancelled")
	}
	tp.record(t, 1)
}

// In an agent loop the requests of one human turn carry identical
// hydration; the next human prompt does not; a rewritten history starts a
// new store.
func TestAgentLoopTurnAndDivergence(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	log := bigLog("zebrafrob", 120)
	msgs := []any{
		map[string]any{"role": "user", "content": "run it"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": "make"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": log}}},
		map[string]any{"role": "assistant", "content": "done"},
		map[string]any{"role": "user", "content": "why did zebrafrob print so much?"},
	}
	send := func(ms []any) []byte {
		b, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 5, "messages": ms})
		post(t, tp.http.URL+PathAnthropic, b, map[string]string{HeaderSession: "loop-1"})
		return up.last(t).Body
	}
	first := send(msgs)
	var blocks []string
	for k := 0; k < 3; k++ { // tool round trips within the same human turn
		id := "t" + itoa(k+2)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "ls"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": bigLog("other", 60)}}})
		fwd := send(msgs)
		p := messages(t, fwd)[4]["content"].(string)
		blocks = append(blocks, p)
	}
	p0 := messages(t, first)[4]["content"].(string)
	for i, b := range blocks {
		if b != p0 {
			t.Fatalf("hydration changed within the turn at request %d", i+2)
		}
	}
	if !strings.Contains(p0, harness.HydrationOpen) {
		t.Fatal("no hydration")
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "next task please"})
	// The next human prompt gets no hydration of its own; the last turn's
	// stays where the model read it, byte for byte (the forwarded
	// conversation only grows between fold events; the node is evicted in
	// the store all the same).
	fwd := send(msgs)
	ms := messages(t, fwd)
	if ms[4]["content"] != p0 {
		t.Fatal("the last turn's hydration changed in its message at the next human prompt")
	}
	if last := ms[len(ms)-1]["content"]; last != "next task please" || strings.Count(string(fwd), harness.HydrationOpen) != strings.Count(p0, harness.HydrationOpen) {
		t.Fatalf("hydration added to the next human prompt: %.200v", last)
	}
	n := len(tp.srv.Stats().Recent)
	// The client compacts: same session header, different history.
	send([]any{map[string]any{"role": "user", "content": "summary of the earlier work " + bigLog("recap", 40)}, map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "go on"}})
	rec := tp.record(t, n+1)
	if rec.Generation != 2 || !strings.Contains(strings.Join(rec.Warnings, ";"), "diverged") {
		t.Fatalf("divergence not detected: %+v", rec)
	}
	// stats endpoint
	resp, err := http.Get(tp.http.URL + PathStats)
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Requests != n+1 || st.FoldedTokens == 0 || st.Sessions != 1 {
		t.Fatalf("stats %+v", st)
	}
}
