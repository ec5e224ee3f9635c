package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProxyJSONLogs: 'contextfold proxy --json' writes its start line and
// one line per request on stderr as JSON objects (before: the same text
// lines as without --json, although every command takes --json). It runs
// the real binary against a loopback upstream and stops it with SIGINT.
func TestProxyJSONLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	defer up.Close()
	cmd, next := jsonProxy(t, up.URL)
	start := next("start line")
	url, _ := start["url"].(string)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || start["stores"] == nil {
		t.Fatalf("start line: %v", start)
	}
	resp, err := http.Post(url+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rec := next("request line")
	if rec["msg"] != "contextfold proxy request" || rec["status"] != float64(200) || rec["api"] != "anthropic" {
		t.Errorf("request line: %v", rec)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("proxy after SIGINT: %v", err)
	}
}

// TestMCPJSONLogs: 'contextfold mcp --json' logs JSON objects on stderr
// (before: text lines).
func TestMCPJSONLogs(t *testing.T) {
	_, errs, code := cli(t, "", "--dir", demoDir(t), "mcp", "--json")
	if code != 0 || strings.TrimSpace(errs) == "" {
		t.Fatalf("mcp on an empty stdin: exit %d, stderr %q", code, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("stderr line is not a JSON object: %q", l)
		}
	}
}

// TestProxySecondSignalExits: the first SIGINT lets the requests in flight
// finish (up to 10 s) and says so; a second ends the process at once
// (before: it was swallowed, and a proxy folding a huge request could not
// be stopped but by SIGKILL).
func TestProxySecondSignalExits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	got := make(chan struct{}, 1)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- struct{}{}
		<-release // an upstream that does not answer while the test runs
	}))
	defer up.Close()
	defer close(release)
	cmd, next := jsonProxy(t, up.URL)
	url, _ := next("start line")["url"].(string)
	go func() {
		resp, err := http.Post(url+"/v1/messages", "application/json",
			strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the upstream")
	}
	cmd.Process.Signal(os.Interrupt)
	if m := next("shutdown line"); !strings.Contains(fmt.Sprint(m["msg"]), "signal again") {
		t.Fatalf("after the first SIGINT: %v", m)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(hangWait):
		t.Fatalf("the proxy still ran %v after a second SIGINT, with a request in flight", hangWait)
	}
}

// jsonProxy is the real binary's 'proxy --json' in front of upstream: its
// process, and next, which returns the next line of its stderr as a JSON
// object (failing the test when the line is not one, or none comes within
// 30 s; what names the line awaited).
func jsonProxy(t *testing.T, upstream string) (*exec.Cmd, func(what string) map[string]any) {
	t.Helper()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "proxy", "--json", "--listen", "127.0.0.1:0", "--upstream", upstream, "--dir", t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the proxy's stderr ended before %s", what)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("stderr line is not a JSON object: %q (%v)", l, err)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s on the proxy's stderr within 30 s", what)
		}
		return nil
	}
	return cmd, next
}
