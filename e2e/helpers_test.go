// Package e2e runs the real, unmodified agents — Claude Code, Codex CLI and
// Qwen Code, installed from e2e/testdata/agents/package-lock.json by
// `npm ci` — against contextfold (the proxy, the hooks, the MCP server) with
// a scripted model (internal/scripted) on loopback in place of the
// provider. Only the model is scripted; every client is the real program.
//
// Locally the tests skip with a message when the agents are not installed
// (cd e2e/testdata/agents && npm ci); with CI=true they fail instead.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// outside records every attempt of an agent to reach a host other than
// loopback: the agents run with HTTP_PROXY/HTTPS_PROXY pointing at it (and
// NO_PROXY for loopback), so a telemetry ping or update check that the
// environment failed to turn off shows up here instead of leaving the
// machine. It answers 403.
var outside = struct {
	sync.Mutex
	hosts []string
	url   string
}{}

// noOutsideCalls fails the test if an agent tried to reach the outside
// since mark (a value of outsideMark).
func noOutsideCalls(t *testing.T, mark int) {
	t.Helper()
	outside.Lock()
	defer outside.Unlock()
	if len(outside.hosts) > mark {
		t.Errorf("the agent tried to reach hosts outside loopback: %v", outside.hosts[mark:])
	}
}

func outsideMark() int {
	outside.Lock()
	defer outside.Unlock()
	return len(outside.hosts)
}

// contextfoldBin is the contextfold binary built once for the hook and MCP
// tests ("" when the build failed; buildErr says why).
var contextfoldBin, buildErr string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cf-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin := filepath.Join(dir, "contextfold")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/contextfold").CombinedOutput()
	if err != nil {
		buildErr = fmt.Sprintf("go build ../cmd/contextfold: %v\n%s", err, out)
	} else {
		contextfoldBin = bin
	}
	sentinel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outside.Lock()
		outside.hosts = append(outside.hosts, r.Method+" "+r.Host)
		outside.Unlock()
		http.Error(w, "contextfold e2e: no outside network", http.StatusForbidden)
	}))
	outside.url = sentinel.URL
	code := m.Run()
	sentinel.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needContextfold(t *testing.T) string {
	t.Helper()
	if contextfoldBin == "" {
		t.Fatal(buildErr)
	}
	return contextfoldBin
}

// agentBin returns the path of an installed agent's executable. The agents
// are node programs, so node must be on PATH too. Either missing: a skip
// locally (scripts/test.sh says so at its start), a failure under CI=true.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the agent e2e tests run on Unix")
	}
	var msg string
	if _, err := exec.LookPath("node"); err != nil {
		msg = fmt.Sprintf("node is not installed (%v); agent %q is a node program: install Node.js and npm, then run: cd e2e/testdata/agents && npm ci", err, name)
	} else {
		p, err := filepath.Abs(filepath.Join("testdata", "agents", "node_modules", ".bin", name))
		if err == nil {
			if _, err = os.Stat(p); err == nil {
				return p
			}
		}
		msg = fmt.Sprintf("agent %q is not installed (%v); install the pinned agents with: cd e2e/testdata/agents && npm ci", name, err)
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// agentRun is one run of an agent's command line.
type agentRun struct {
	Stdout, Stderr string
	Err            error
	Took           time.Duration
}

// agentEnv is the environment an agent runs with: PATH, a plain terminal,
// every outside host through the sentinel (loopback direct), then env.
func agentEnv(env []string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		"HTTP_PROXY=" + outside.url, "HTTPS_PROXY=" + outside.url, "http_proxy=" + outside.url, "https_proxy=" + outside.url,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}, env...)
}

// runAgent runs bin with args in dir, with exactly env as its environment
// (plus PATH), bounded by timeout.
func runAgent(t *testing.T, timeout time.Duration, dir string, env []string, bin string, args ...string) agentRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = agentEnv(env)
	cmd.WaitDelay = 5 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	mark := outsideMark()
	defer noOutsideCalls(t, mark)
	err := cmd.Run()
	r := agentRun{Stdout: so.String(), Stderr: se.String(), Err: err, Took: time.Since(start)}
	if ctx.Err() != nil {
		r.Err = fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	t.Logf("%s %s: %v in %v", filepath.Base(bin), strings.Join(short(args), " "), r.Err, r.Took.Round(time.Millisecond))
	return r
}

func short(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > 40 {
			a = a[:40] + "…"
		}
		out[i] = a
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
