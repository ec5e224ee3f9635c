package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hangWait bounds a test's wait for a command or process that takes
// milliseconds to seconds: only a hang reaches it (a bound of a few
// seconds could be reached on a loaded 2-core machine under -race).
const hangWait = time.Minute

// cliWithin is cli with a deadline: a command still running after d fails
// the test instead of hanging it (the blocked goroutine is left behind).
func cliWithin(t *testing.T, d time.Duration, args ...string) (string, string, int) {
	t.Helper()
	type res struct {
		out, errs string
		code      int
	}
	ch := make(chan res, 1)
	go func() {
		o, e, c := cli(t, "", args...)
		ch <- res{o, e, c}
	}()
	select {
	case r := <-ch:
		return r.out, r.errs, r.code
	case <-time.After(d):
		t.Fatalf("%v still running after %v (blocked on a special file?)", args, d)
		return "", "", -1
	}
}

// TestNonsenseIsRefused: flag values that make no sense are refused with
// exit 1 and an error naming the flag, its value and what it takes, before
// the proxy listens (before: the proxy started with a budget of 0 tokens,
// a fold target of 150 %, a window of -3); read commands on a directory
// that is not a store (it holds other files) fail naming it (before: exit
// 0, an empty answer); demo honours --store (before: a
// postgres:// URL was ignored and the demo ran in a temporary directory,
// exit 0).
func TestNonsenseIsRefused(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--context-budget", "0", "--context-budget 0"},
		{"--context-budget", "-7", "--context-budget -7"},
		{"--fold-target", "150", "1 to 95"},
		{"--fold-target", "0", "1 to 95"},
		{"--hot-window", "-3", "--hot-window -3"},
		{"--pin-messages", "-1", "--pin-messages -1"},
		{"--fold-block", "-2", "--fold-block -2"},
		{"--min-fold-tokens", "-5", "--min-fold-tokens -5"},
		{"--max-body-bytes", "0", "--max-body-bytes 0"},
		{"--max-inflight-bytes", "0", "--max-inflight-bytes 0"},
	} {
		_, errs, code := cliWithin(t, hangWait, "proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0", "--dir", t.TempDir(), c.flag, c.value)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("proxy %s %s: exit %d %q", c.flag, c.value, code, errs)
		}
	}

	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n"), 0o644)
	missing := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{{"status"}, {"scan", "port"}, {"recall", "port"}, {"steps"}, {"hydrate", "1"}, {"scrub-check"}, {"validate"}} {
		_, errs, code := cli(t, "", append([]string{"--dir", project}, args...)...)
		if code != 1 || !strings.Contains(errs, "no store at") || !strings.Contains(errs, "--dir") {
			t.Errorf("%v on a project directory: exit %d %q", args, code, errs)
		}
		// A missing directory is the spec's empty index (conformance
		// vector scan-046), with a note naming it.
		_, errs, _ = cli(t, "", append([]string{"--dir", missing}, args...)...)
		if !strings.Contains(errs, "no store at") {
			t.Errorf("%v on a missing directory: no note: %q", args, errs)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a read command created the mistyped directory")
	}
	if _, _, code := cli(t, "", "--dir", t.TempDir(), "status"); code != 0 {
		t.Errorf("an empty directory is an empty store: exit %d", code)
	}

	_, errs, code := cli(t, "", "demo", "--store", "postgres://cf:pw-secret@127.0.0.1:1/db?session=demo")
	if code == 0 || !strings.Contains(errs, "127.0.0.1:1") || strings.Contains(errs, "pw-secret") {
		t.Errorf("demo --store postgres://… unreachable: exit %d %q", code, errs)
	}
	store := filepath.Join(t.TempDir(), "demo-store")
	out, errs, code := cli(t, "", "demo", "--store", store)
	if code != 0 || !strings.Contains(out, store) {
		t.Errorf("demo --store DIR: exit %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(store, "recall_index.json")); err != nil {
		t.Errorf("demo --store DIR did not fold into DIR: %v", err)
	}
}

// A directory holding only a store's policy (written before the first
// fold) is a store: read commands answer from it.
func TestPolicyOnlyDirectoryIsAStore(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hydration_policy.json"), []byte(`{"max_rehydration_tokens_per_call": 100}`), 0o644)
	if out, errs, code := cli(t, "", "--dir", dir, "status"); code != 0 || !strings.Contains(out, "100 tokens per call") {
		t.Errorf("status: exit %d %s %s", code, out, errs)
	}
}
