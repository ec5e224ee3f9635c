package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestModelWebSocketRefused: a WebSocket upgrade of a model API path
// (Codex's Responses WebSocket transport) is answered 426 Upgrade Required,
// the answer on which Codex falls back to HTTP, and never reaches the
// upstream, where the socket would carry the session unfolded. With
// PassWebSockets it is forwarded as before; another path's upgrade always
// passes.
func TestModelWebSocketRefused(t *testing.T) {
	upgrade := func(t *testing.T, url string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("OpenAI-Beta", "responses_websockets=2026-02-06")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	upgrades := func(up *upstream) (n int) {
		up.mu.Lock()
		defer up.mu.Unlock()
		for _, r := range up.reqs {
			if r.Method == "GET" {
				n++
			}
		}
		return n
	}

	up := newUpstream(t)
	tp := newProxyWith(t, up, func(*Options) {})
	for _, path := range []string{PathResponses, PathResponses + "/", PathOpenAI, PathAnthropic} {
		code, body := upgrade(t, tp.http.URL+path)
		if code != http.StatusUpgradeRequired || !strings.Contains(body, "--pass-websockets") {
			t.Errorf("%s: %d %s, want 426 naming the remedy", path, code, body)
		}
	}
	if n := upgrades(up); n != 0 {
		t.Fatalf("%d refused upgrades reached the upstream", n)
	}
	upgrade(t, tp.http.URL+"/v1/realtime")
	if n := upgrades(up); n != 1 {
		t.Fatalf("an upgrade of another path reached the upstream %d times, want 1", n)
	}

	up2 := newUpstream(t)
	tp2 := newProxyWith(t, up2, func(o *Options) { o.PassWebSockets = true })
	upgrade(t, tp2.http.URL+PathResponses)
	if n := upgrades(up2); n != 1 {
		t.Fatalf("with PassWebSockets the upgrade reached the upstream %d times, want 1", n)
	}
}
