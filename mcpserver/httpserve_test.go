package mcpserver_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// hangWait bounds a wait for what the server's 500 ms timeouts make
// happen: only a server that never answers or never closes reaches it (a
// few seconds could be reached on a loaded 2-core machine under -race).
const hangWait = time.Minute

// serveLoopback serves the store's MCP server over HTTP on a loopback port
// with o, returning its address.
func serveLoopback(t *testing.T, o mcpserver.HTTPOptions) string {
	t.Helper()
	s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := mcpserver.NewHTTPServer(mcpserver.New(s, mcpserver.Options{}), o)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// TestHTTPSlowClientsAreCut: a client that sends a POST body one byte at a
// time, slower than the body timeout allows, gets 408 with a JSON-RPC error
// and its connection closed; one that never finishes its headers, or sits
// idle after a request, is disconnected. Before, nothing bounded the body:
// a client sending a byte every 5 s held its connection for good (3,000 such
// connections were all held).
func TestHTTPSlowClientsAreCut(t *testing.T) {
	addr := serveLoopback(t, mcpserver.HTTPOptions{BodyReadTimeout: 500 * time.Millisecond,
		HeaderReadTimeout: 500 * time.Millisecond, IdleTimeout: 500 * time.Millisecond})
	// The body is padded with blanks to 420 bytes, so that trickling it
	// takes at least 42 s (each gap is a lower bound): only the body
	// deadline can answer before the last byte. No wall-clock bound on the
	// answer: on a loaded machine a 500 ms timer can fire seconds late.
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	body += strings.Repeat(" ", 420-len(body))

	// Slow body: a byte every 100 ms, faster than any per-read timeout
	// would cut, slower than the body timeout allows in all.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	var sent atomic.Int64
	go func() {
		for i := 0; i < len(body); i++ {
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
			sent.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(hangWait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("slow body: no response: %v", err)
	}
	if n := sent.Load(); n >= int64(len(body)) {
		t.Errorf("slow body: answered after all %d bytes arrived, want it cut after about 500ms", n)
	}
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(msg), "did not arrive within 500ms") || !resp.Close {
		t.Errorf("slow body: %d close=%v %s", resp.StatusCode, resp.Close, msg)
	}

	// Slow headers, and an idle keep-alive connection: both closed (a
	// server without these timeouts keeps them open for good).
	for _, first := range []string{"POST /mcp HTTP/1.1\r\nHost: x\r\n", ""} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, first)
		c.SetReadDeadline(time.Now().Add(hangWait))
		start := time.Now()
		_, err = io.ReadAll(c) // the server closes: EOF (after a 408 for the headers)
		c.Close()
		if err != nil {
			t.Errorf("%q: not closed within %v (%v after %v)", first, hangWait, err, time.Since(start))
		}
	}

	// A client at normal speed is served.
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || !strings.Contains(string(b), "protocolVersion") {
		t.Errorf("a normal client: %d %s", r.StatusCode, b)
	}
}

// TestHTTPClaimedBodyPastTheLimit: a POST whose Content-Length claims more
// than the frame limit (2 GiB) is answered 413 with a JSON-RPC error before
// any of its body is read, and the connection is closed. Before, the
// server waited for the 2 GiB to arrive (until the body timeout: a minute
// by default) before refusing it.
func TestHTTPClaimedBodyPastTheLimit(t *testing.T) {
	addr := serveLoopback(t, mcpserver.HTTPOptions{BodyReadTimeout: 10 * hangWait})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", addr, int64(2)<<30)
	c.SetReadDeadline(time.Now().Add(hangWait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to a 2 GiB claim: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "frame limit") || !strings.Contains(string(msg), "-32600") || !resp.Close {
		t.Errorf("a 2 GiB claim: %d close=%v %s", resp.StatusCode, resp.Close, msg)
	}
}
