package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// compressed returns body in content coding ce.
func compressed(t *testing.T, ce string, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch ce {
	case "gzip":
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
	case "deflate":
		w := zlib.NewWriter(&b)
		w.Write(body)
		w.Close()
	case "zstd":
		w, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
		w.Close()
	default:
		t.Fatalf("no coding %s", ce)
	}
	return b.Bytes()
}

// foldableBody is a Chat Completions conversation whose old tool output
// foldAll folds.
func foldableBody(t *testing.T) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": []map[string]any{
		{"role": "user", "content": "build the parser"},
		{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"make"}`}}}},
		{"role": "tool", "tool_call_id": "c1", "content": bigLog("parser", 200)},
		{"role": "assistant", "content": "it builds"},
		{"role": "user", "content": "now the tests"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// A body compressed in gzip, deflate or zstd (Codex compresses with zstd)
// is decoded, folded exactly as the same body sent uncompressed, and
// forwarded uncompressed without Content-Encoding.
func TestCompressedBodiesFold(t *testing.T) {
	body := foldableBody(t)
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	resp, _ := post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "plain"})
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	plain := up.last(t).Body
	if bytes.Equal(plain, body) || !strings.Contains(string(plain), "parser") {
		t.Fatalf("the uncompressed body was not folded")
	}
	for i, ce := range []string{"gzip", "deflate", "zstd"} {
		resp, b := post(t, tp.http.URL+PathOpenAI, compressed(t, ce, body), map[string]string{HeaderSession: "c-" + ce, "Content-Encoding": ce})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s %s", ce, resp.Status, b)
		}
		got := up.last(t)
		if got.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: forwarded with Content-Encoding %q", ce, got.Header.Get("Content-Encoding"))
		}
		if !bytes.Equal(got.Body, plain) {
			t.Errorf("%s: forwarded body differs from the uncompressed request's:\n%.300s\nwant\n%.300s", ce, got.Body, plain)
		}
		rec := tp.record(t, i+2)
		if rec.StepsFolded == 0 || len(rec.Warnings) != 0 {
			t.Errorf("%s: record %+v", ce, rec)
		}
	}
}

// A coding the proxy does not decode goes upstream as it arrived, with a
// warning; a corrupt body and one that decodes past --max-body-bytes are
// refused and never reach the upstream.
func TestCompressedBodiesRefusedOrPassed(t *testing.T) {
	body := foldableBody(t)
	up := newUpstream(t)
	tp := newProxy(t, up, foldAll)
	gz := compressed(t, "gzip", body)
	resp, _ := post(t, tp.http.URL+PathOpenAI, gz, map[string]string{"Content-Encoding": "br"})
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if got := up.last(t); !bytes.Equal(got.Body, gz) || got.Header.Get("Content-Encoding") != "br" {
		t.Fatalf("an unknown coding was changed on the way: %q", got.Header.Get("Content-Encoding"))
	}
	if rec := tp.record(t, 1); len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "without folding") {
		t.Fatalf("warnings %q", rec.Warnings)
	}

	corrupt := append([]byte(nil), gz...)
	corrupt[len(corrupt)/2] ^= 0xff
	zs := compressed(t, "zstd", body)
	zs[len(zs)/2] ^= 0xff
	for _, c := range []struct {
		ce   string
		body []byte
		code int
		msg  string
	}{
		{"gzip", []byte("not gzip at all"), 400, "gzip request body cannot be decoded"},
		{"gzip", corrupt, 400, "gzip request body cannot be decoded"},
		{"zstd", zs, 400, "zstd request body cannot be decoded"},
		{"deflate", gz, 400, "deflate (zlib) request body cannot be decoded"},
	} {
		resp, b := post(t, tp.http.URL+PathOpenAI, c.body, map[string]string{"Content-Encoding": c.ce})
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.msg) || !json.Valid(b) {
			t.Errorf("%s: %d %s", c.ce, resp.StatusCode, b)
		}
	}
	tp.srv.opts.MaxBodyBytes = 4 << 10
	bomb := compressed(t, "gzip", []byte(`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("a", 1<<20)+`"}]}`))
	if len(bomb) > 4<<10 {
		t.Fatalf("the test's bomb is %d bytes compressed", len(bomb))
	}
	resp, b := post(t, tp.http.URL+PathOpenAI, bomb, map[string]string{"Content-Encoding": "gzip"})
	if resp.StatusCode != 413 || !strings.Contains(string(b), "larger than 4096 bytes") {
		t.Errorf("bomb: %d %s", resp.StatusCode, b)
	}
	up.mu.Lock()
	n := len(up.reqs)
	up.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d requests reached the upstream, want the one in an unknown coding", n)
	}
}
