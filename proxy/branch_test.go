package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// sameStart is a conversation that opens like every other one of the test
// (the same system prompt and first user message, so the same derived
// session id) and goes on with its own tool outputs, named by tag: steps
// calls and results.
func sameStart(tag string, steps int) []any {
	msgs := []any{
		map[string]any{"role": "system", "content": "You are a coding agent."},
		map[string]any{"role": "user", "content": "fix the failing tests"},
	}
	for i := 1; i <= steps; i++ {
		id := "call_" + tag + itoa(i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"make ` + tag + itoa(i) + `"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": bigLog(tag+"mod"+itoa(i), 40)})
	}
	return msgs
}

func sameStartBody(t *testing.T, msgs []any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSameStartConversationsKeepTheirOwnSessions: two clients that send no
// session header and open with the same system prompt and first message
// derive the same session id. Interleaved, each keeps a session of its own
// (a branch of the derived id): one divergence when the second is told
// apart, then no new store, no fold event the conversation would not have
// had alone, and a question of one never hydrates the other's turns.
func TestSameStartConversationsKeepTheirOwnSessions(t *testing.T) {
	cfg := harness.Config{ContextBudget: 4000}
	alone := func(tag string) int {
		up := newUpstream(t)
		tp := newProxy(t, up, cfg)
		for k := 4; k <= 24; k += 4 {
			if resp, b := post(t, tp.http.URL+PathOpenAI, sameStartBody(t, sameStart(tag, k)), nil); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
		}
		events := 0
		for i := 1; i <= 6; i++ {
			if ws := tp.record(t, i).WorkingSet; ws != nil && ws.FoldEvent {
				events++
			}
		}
		return events
	}
	wantEvents := map[string]int{"alpha": alone("alpha"), "beta": alone("beta")}
	if wantEvents["alpha"] == 0 {
		t.Fatal("no fold event in a conversation alone: the test covers nothing")
	}

	up := newUpstream(t)
	tp := newProxy(t, up, cfg)
	n := 0
	sessions := map[string]map[string]bool{"alpha": {}, "beta": {}}
	events := map[string]int{}
	diverged := 0
	var prevOut = map[string][]byte{}
	for k := 4; k <= 24; k += 4 {
		for _, tag := range []string{"alpha", "beta"} {
			if resp, b := post(t, tp.http.URL+PathOpenAI, sameStartBody(t, sameStart(tag, k)), nil); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			n++
			rec := tp.record(t, n)
			sessions[tag][rec.Session] = true
			if ws := rec.WorkingSet; ws != nil && ws.FoldEvent {
				events[tag]++
			} else if prev := prevOut[tag]; prev != nil {
				// No fold event: the forwarded conversation only grew.
				out := up.last(t).Body
				pm, om := messages(t, prev), messages(t, out)
				if len(om) < len(pm) {
					t.Fatalf("%s request %d: %d messages forwarded after %d", tag, n, len(om), len(pm))
				}
				for i := range pm {
					a, _ := json.Marshal(pm[i])
					b, _ := json.Marshal(om[i])
					if !bytes.Equal(a, b) {
						t.Fatalf("%s request %d: forwarded message %d changed with no fold event", tag, n, i)
					}
				}
			}
			prevOut[tag] = up.last(t).Body
			if strings.Contains(strings.Join(rec.Warnings, ";"), "diverged") {
				diverged++
			}
		}
	}
	if len(sessions["alpha"]) != 1 || len(sessions["beta"]) > 2 {
		t.Fatalf("sessions used: alpha %v, beta %v; want one each (beta's first request may go to alpha's before they are told apart)", sessions["alpha"], sessions["beta"])
	}
	for s := range sessions["alpha"] {
		if sessions["beta"][s] && len(sessions["beta"]) == 1 {
			t.Fatal("both conversations ended in one session")
		}
	}
	if diverged > 1 {
		t.Fatalf("%d requests diverged from their session's store; want at most 1 (beta told apart once)", diverged)
	}
	for tag, want := range wantEvents {
		if events[tag] > want+1 {
			t.Fatalf("%s: %d fold events interleaved, %d alone", tag, events[tag], want)
		}
	}

	// A question in beta about alpha's output: nothing of alpha's comes back.
	q := append(sameStart("beta", 24), map[string]any{"role": "user", "content": "what did alphamod3 print?"})
	if resp, b := post(t, tp.http.URL+PathOpenAI, sameStartBody(t, q), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	n++
	if rec := tp.record(t, n); !sessions["beta"][rec.Session] {
		t.Fatalf("beta's question went to session %s, not beta's %v", rec.Session, sessions["beta"])
	}
	if bytes.Contains(up.last(t).Body, []byte("compiled alphamod3 module ok")) {
		t.Fatal("beta's question hydrated alpha's turn")
	}
	// The same question in alpha hydrates it.
	q = append(sameStart("alpha", 24), map[string]any{"role": "user", "content": "what did alphamod3 print?"})
	if resp, b := post(t, tp.http.URL+PathOpenAI, sameStartBody(t, q), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	n++
	if rec := tp.record(t, n); !sessions["alpha"][rec.Session] || len(rec.Hydrated) == 0 {
		t.Fatalf("alpha's question: session %s (alpha's %v), hydrated %+v", rec.Session, sessions["alpha"], rec.Hydrated)
	}
}

// TestSameStartBranchesAfterRestart: after a restart the proxy no longer
// knows the branches' last requests; a conversation that diverges from the
// derived id's first branch goes on in the branch on disk its history
// agrees with (not a new one), and a question hydrates from it.
func TestSameStartBranchesAfterRestart(t *testing.T) {
	up := newUpstream(t)
	cfg := func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000} }
	tp := newProxyWith(t, up, cfg)
	n := 0
	send := func(tp *testProxy, msgs []any) RequestRecord {
		t.Helper()
		if resp, b := post(t, tp.http.URL+PathOpenAI, sameStartBody(t, msgs), nil); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		n++
		return tp.record(t, n)
	}
	var alpha, beta RequestRecord
	for k := 8; k <= 16; k += 8 {
		alpha, beta = send(tp, sameStart("alpha", k)), send(tp, sameStart("beta", k))
	}
	if alpha.Session == beta.Session {
		t.Fatalf("before the restart: alpha in %s, beta in %s: the test covers nothing", alpha.Session, beta.Session)
	}
	waitBackground(tp.srv)
	tp.srv.Close()
	dir := tp.dir
	tp = newProxyWith(t, newUpstream(t), func(o *Options) { cfg(o); o.Dir = dir })
	tp.dir, n = dir, 0
	// Beta first: routed to the derived id's first branch (alpha's), it
	// diverges and finds its own store.
	q := append(sameStart("beta", 20), map[string]any{"role": "user", "content": "what did betamod2 print?"})
	rec := send(tp, q)
	if rec.Session != beta.Session || rec.Generation != beta.Generation {
		t.Fatalf("after the restart beta went to %s/g%d (warnings %v), want its store %s/g%d", rec.Session, rec.Generation, rec.Warnings, beta.Session, beta.Generation)
	}
	if len(rec.Hydrated) == 0 {
		t.Fatalf("beta's question hydrated nothing (warnings %v)", rec.Warnings)
	}
	if rec := send(tp, sameStart("alpha", 20)); rec.Session != alpha.Session {
		t.Fatalf("after the restart alpha went to %s (warnings %v), want %s", rec.Session, rec.Warnings, alpha.Session)
	}
	// A third conversation with the same start agrees with neither store.
	if rec := send(tp, sameStart("gamma", 20)); rec.Session == alpha.Session || rec.Session == beta.Session {
		t.Fatalf("a third conversation went to %s, a store of another", rec.Session)
	}
}
