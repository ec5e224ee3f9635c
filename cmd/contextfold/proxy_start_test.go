package main

import (
	"net"
	"strings"
	"testing"
)

// TestProxyStartErrorsNameTheRemedy: a proxy that cannot start says what
// to do, with exit 1: a port already in use names --listen, no user cache
// directory names --dir. (Before: the bare error of each.)
func TestProxyStartErrorsNameTheRemedy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errs, code := cliWithin(t, hangWait, "proxy", "--upstream", "http://127.0.0.1:1", "--dir", t.TempDir(), "--listen", ln.Addr().String())
	if code != 1 || !strings.Contains(errs, "--listen 127.0.0.1:PORT") {
		t.Errorf("port in use: exit %d, %q; want exit 1 naming --listen", code, errs)
	}
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	_, errs, code = cliWithin(t, hangWait, "proxy", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, "give --dir DIR") {
		t.Errorf("no cache directory: exit %d, %q; want exit 1 naming --dir", code, errs)
	}
}
