package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUpstreamErrorEchoingTheKeyIsNotKept: an upstream (a gateway, a
// self-hosted server) whose error message repeats the credential the
// client sent — a key of a known shape or an opaque one — never puts it in
// the request record or GET /contextfold/stats: the client's credential
// values are redacted from the error message, and so is whatever the
// secret scrubber finds. Before: the stats endpoint served the key.
func TestUpstreamErrorEchoingTheKeyIsNotKept(t *testing.T) {
	known := "sk-ant-api03-" + strings.Repeat("R7tY2pQ9wXz4Lm8N", 6)[:93] + "AA"
	opaque := "gw-" + strings.Repeat("q8Xv2Lr9", 4)
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		msg := "invalid x-api-key: " + r.Header.Get("X-Api-Key") + " (authorization " + r.Header.Get("Authorization") + ")"
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": msg}})
	}
	tp := newProxy(t, up, foldAll)
	for i, hdr := range []map[string]string{{"X-Api-Key": known}, {"X-Api-Key": opaque, "Authorization": "Bearer " + opaque}} {
		resp, body := post(t, tp.http.URL+PathAnthropic, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), hdr)
		if resp.StatusCode != 401 || !strings.Contains(string(body), "invalid x-api-key") {
			t.Fatalf("request %d: the client must get the upstream's error as is: %d %s", i+1, resp.StatusCode, body)
		}
		rec := tp.record(t, i+1)
		if !strings.Contains(rec.Observed.ErrorMessage, "invalid x-api-key") {
			t.Errorf("request %d: error message lost: %q", i+1, rec.Observed.ErrorMessage)
		}
		for _, key := range []string{known, opaque} {
			if strings.Contains(rec.Observed.ErrorMessage, key) {
				t.Errorf("request %d: the record's error message holds the key: %q", i+1, rec.Observed.ErrorMessage)
			}
		}
	}
	resp, err := http.Get(tp.http.URL + PathStats)
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, key := range []string{known, opaque} {
		if strings.Contains(string(stats), key) {
			t.Errorf("GET %s serves the key %q", PathStats, key[:12])
		}
	}
}
