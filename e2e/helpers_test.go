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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

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
	code := m.Run()
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

// agentBin returns the path of an installed agent's executable. Missing: a
// skip locally, a failure under CI=true.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the agent e2e tests run on Unix")
	}
	p, err := filepath.Abs(filepath.Join("testdata", "agents", "node_modules", ".bin", name))
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("agent %q is not installed (%v); install the pinned agents with: cd e2e/testdata/agents && npm ci", name, err)
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

// runAgent runs bin with args in dir, with exactly env as its environment
// (plus PATH), bounded by timeout.
func runAgent(t *testing.T, timeout time.Duration, dir string, env []string, bin string, args ...string) agentRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1"}, env...)
	cmd.WaitDelay = 5 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
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
