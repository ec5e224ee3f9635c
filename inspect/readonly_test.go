package inspect

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// browseEverything requests every page and JSON endpoint of the inspector,
// for every step, with "verify now", the simulator, recall, HEAD requests
// and refused writes.
func browseEverything(t *testing.T, srv interface {
	Close()
}, base string, get func(method, path string) int) {
	t.Helper()
	_, _ = srv, base
	paths := []string{"/", "/?term=port", "/?file=.sql", "/?error=Error", "/?state=tampered",
		"/evictions", "/validate", "/validate?fresh=1", "/charts", "/recall?q=" + url.QueryEscape(contextfold.DemoRecallQuery),
		"/scan?prompt=" + url.QueryEscape(contextfold.DemoPrompt), "/scan?prompt=%ff", "/api/status", "/api/steps",
		"/api/evictions", "/api/validate", "/api/charts", "/api/recall?q=port", "/api/scan?prompt=" + url.QueryEscape(contextfold.DemoPrompt),
		"/assets/style.css", "/assets/app.js", "/nowhere", "/step/abc"}
	for _, step := range []int{37, 91, 137, 200, 318, 342, 447, 499, hostileStep, bigStep, 777, 99999} {
		s := strconv.Itoa(step)
		paths = append(paths, "/step/"+s, "/step/"+s+"?verify=1", "/step/"+s+"?page=2", "/step/"+s+"/raw",
			"/api/steps/"+s, "/api/steps/"+s+"/verify")
	}
	for _, p := range paths {
		if code := get(http.MethodGet, p); code >= 500 {
			t.Errorf("GET %s: %d", p, code)
		}
		if !strings.Contains(p, "verify") && !strings.Contains(p, "fresh") {
			get(http.MethodHead, p)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, p := range []string{"/", "/step/137", "/api/steps/137/verify", "/scan"} {
			if code := get(m, p); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", m, p, code)
			}
		}
	}
}

// TestCONF08BrowsingChangesNoByte proves CONF-08 for the developer view:
// browsing every page, running the simulator and "verify now" leave every
// byte of the store unchanged, the eviction log included, on a clean store
// and on a damaged one.
func TestCONF08BrowsingChangesNoByte(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		t.Run("damaged="+strconv.FormatBool(damaged), func(t *testing.T) {
			dir := demoCopy(t)
			if damaged {
				damage(t, dir)
			}
			if err := os.Remove(filepath.Join(dir, ".lock")); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			logPath := filepath.Join(dir, contextfold.EvictionLogFile)
			logBefore, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			before := hashTree(t, dir)
			// mtimes are part of the hash; make any rewrite visible even
			// within the file system's time resolution.
			time.Sleep(20 * time.Millisecond)
			srv := serve(t, dir, Options{})
			browseEverything(t, srv, srv.URL, func(method, path string) int {
				resp, _ := do(t, srv, method, path, nil)
				return resp.StatusCode
			})
			if after := hashTree(t, dir); after != before {
				t.Fatal("browsing the inspector changed the store")
			}
			logAfter, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(logBefore, logAfter) {
				t.Fatal("browsing the inspector changed the eviction log")
			}
			if _, err := os.Stat(filepath.Join(dir, ".lock")); err == nil {
				t.Error("browsing created the store's lock file")
			}
		})
	}
}

func TestCheckListenAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		remote   bool
		loopback bool
		err      string
	}{
		{"127.0.0.1:7137", false, true, ""},
		{"127.0.0.1:0", false, true, ""},
		{"127.1.2.3:80", false, true, ""},
		{"[::1]:7137", false, true, ""},
		{"localhost:7137", false, true, ""},
		{":7137", false, false, "every interface is not a loopback address"},
		{"0.0.0.0:7137", false, false, "--allow-remote"},
		{"192.168.1.10:7137", false, false, "not a loopback address"},
		{"[::]:7137", false, false, "not a loopback address"},
		{"devbox.lan:7137", false, false, "not a loopback address"},
		{"0.0.0.0:7137", true, false, ""},
		{"127.0.0.1", false, false, "want host:port"},
		{"127.0.0.1:http", false, false, "port must be a number"},
		{"127.0.0.1:70000", false, false, "port must be a number"},
	} {
		lb, err := CheckListenAddr(tc.addr, tc.remote)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckListenAddr(%q, %v): %v, want error containing %q", tc.addr, tc.remote, err, tc.err)
		}
		if err == nil && lb != tc.loopback {
			t.Errorf("CheckListenAddr(%q): loopback %v", tc.addr, lb)
		}
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	s, err := contextfold.Open(filepath.Join(t.TempDir(), "store"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, in) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("Serve did not stop")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Error("still serving after cancel")
	}
	if _, err := New(nil, Options{}); err == nil || errors.Is(err, nil) {
		t.Error("New(nil) succeeded")
	}
}

func TestSegmentsAndPages(t *testing.T) {
	in := "a\x1b[1mb\tc\n\u202e\x00é\x7f\u0085z"
	var out strings.Builder
	for _, s := range segments(in) {
		if s.Ctl {
			out.WriteString("[" + s.Code + "]")
		} else {
			out.WriteString(s.Text)
		}
	}
	if got, want := out.String(), "a[U+001B][1mb\tc\n[U+202E][U+0000]é[U+007F][U+0085]z"; got != want {
		t.Errorf("segments: %q, want %q", got, want)
	}
	if segs := segments("plain <b>"); len(segs) != 1 || segs[0].Text != "plain <b>" {
		t.Errorf("plain text: %v", segs)
	}
	if segs := segments(""); len(segs) != 0 {
		t.Errorf("empty: %v", segs)
	}
	// Pages never split a UTF-8 sequence, prefer newlines, and add up.
	text := strings.Repeat("ééé\n", 50) + strings.Repeat("日本語", 100)
	for _, size := range []int{4, 7, 16, 64, 1000} {
		var all strings.Builder
		for n := 1; ; n++ {
			p, pages, ok := payloadPage(text, n, size)
			if !ok {
				t.Fatalf("size %d: page %d missing of %d", size, n, pages)
			}
			if len(p) > size || !utf8Valid(p) {
				t.Fatalf("size %d page %d: %d bytes, valid %v", size, n, len(p), utf8Valid(p))
			}
			all.WriteString(p)
			if n == pages {
				break
			}
		}
		if all.String() != text {
			t.Fatalf("size %d: pages do not add up", size)
		}
	}
	if _, pages, ok := payloadPage("", 1, 16); !ok || pages != 1 {
		t.Error("empty payload has no page 1")
	}
	if _, _, ok := payloadPage("abc", 2, 16); ok {
		t.Error("page 2 of a short payload exists")
	}
}
