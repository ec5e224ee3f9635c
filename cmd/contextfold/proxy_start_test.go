package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/proxy"
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

// TestProxyStartLineNamesUpstreamAndBudget: the proxy's start line says
// where it forwards and at which context budget it folds, so that a user
// sees a wrong --upstream before the first request (before: the address
// and the stores only). The --json line carries the same as fields.
func TestProxyStartLineNamesUpstreamAndBudget(t *testing.T) {
	for _, c := range []struct {
		upstream, anthropic, openai, want string
	}{
		{"https://u.example", "", "", "upstream https://u.example"},
		{"", "https://a.example", "https://o.example", "Anthropic Messages to https://a.example, OpenAI APIs to https://o.example"},
		{"https://u.example", "https://a.example", "", "Anthropic Messages to https://a.example, the rest to https://u.example"},
	} {
		if got := upstreamsLine(c.upstream, c.anthropic, c.openai); got != c.want {
			t.Errorf("upstreamsLine(%q, %q, %q) = %q, want %q", c.upstream, c.anthropic, c.openai, got, c.want)
		}
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	_, next := jsonProxy(t, "http://127.0.0.1:9")
	m := next("start line")
	if m["upstream"] != "http://127.0.0.1:9" || m["context_budget"] != float64(harness.DefaultContextBudget) {
		t.Errorf("start line %v: want upstream http://127.0.0.1:9 and context_budget %d", m, harness.DefaultContextBudget)
	}
}

// TestProxyRefusesAStoreAsItsDir: a proxy given a store as --dir (a
// project's .contextfold that fold or the MCP server's fold_turn made a
// store) is refused at start, exit 1, naming a directory of its own: it
// made its session stores inside the store, where neither contextfold
// sessions, recall --dir nor the MCP server list them.
func TestProxyRefusesAStoreAsItsDir(t *testing.T) {
	dir := demoDir(t)
	_, errs, code := cliWithin(t, hangWait, "proxy", "--upstream", "http://127.0.0.1:1", "--dir", dir, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, dir+" is a store") || !strings.Contains(errs, "--dir "+dir+"-proxy") {
		t.Errorf("a store as --dir: exit %d, %q; want exit 1 naming a directory of its own", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, proxy.DirMarkerFile)); err == nil {
		t.Error("the refused proxy marked the store")
	}
}
