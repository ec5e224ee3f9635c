package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// indexedSteps counts the steps the store indexes (recall_index.json and
// its journal), reading through the library, which writes nothing.
func indexedSteps(t *testing.T, dir string) int {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Status()
	if err != nil {
		t.Fatalf("status after a kill: %v", err)
	}
	return st.Total
}

// TestInterruptedIngestKeepsProgress kills a long ingest (a real
// subprocess, SIGKILL) again and again, each time soon after the store has
// grown: the index is committed in batches, so each kill keeps what was
// indexed before it (before the fix nothing was indexed until the whole
// ingest ended, so no run could be killed after growth), and the next run
// goes on from there; the run that finishes leaves a store that validates
// (after repair moves the temporaries the kills cut). Every command runs as
// the subprocess, so the test costs the same with the race detector.
func TestInterruptedIngestKeepsProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	bin := buildBinary(t)
	const turns = 4000
	msgs := make([]map[string]string, turns)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs[i] = map[string]string{"role": role, "content": fmt.Sprintf("turn %d: ran pytest tests/test_mod%d.py\n%s", i, i, strings.Repeat(fmt.Sprintf("log line %d of a long test run\n", i), 40))}
	}
	data, _ := json.Marshal(msgs)
	session := filepath.Join(t.TempDir(), "long.json")
	os.WriteFile(session, data, 0o644)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	run := func(args ...string) (string, int) {
		out, err := exec.Command(bin, append([]string{"--dir", dir, "--no-scrub"}, args...)...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}

	prev, kills := 0, 0
	for round := 0; round < 4 && prev < turns; round++ {
		cmd := exec.Command(bin, "--dir", dir, "--no-scrub", "ingest", session)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		seen, finished := prev, false
	poll:
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ingest failed: %v", err)
				}
				finished = true
				break poll
			case <-time.After(20 * time.Millisecond):
			}
			if seen = indexedSteps(t, dir); seen > prev {
				break
			}
		}
		if !finished {
			time.Sleep(time.Duration(round*70) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			if err := <-done; err == nil {
				finished = true // it ended before the signal
			} else {
				kills++
			}
		}
		n := indexedSteps(t, dir)
		if n < seen || n < prev {
			t.Fatalf("a kill lost indexed steps: %d after %d (seen %d before the kill)", n, prev, seen)
		}
		t.Logf("round %d: %d steps indexed (killed: %v)", round, n, !finished)
		prev = n
	}
	if kills < 2 {
		t.Fatalf("only %d runs were killed after the store grew and before the ingest ended: the index is not committed in batches", kills)
	}
	out, code := run("ingest", session, "--json")
	var rep ingestJSON
	mustJSON(t, out, &rep)
	if code != 0 || rep.Folded+rep.AlreadyIndexed != turns || rep.AlreadyIndexed != prev {
		t.Fatalf("final ingest: %d %+v", code, rep)
	}
	// What the kills may leave: temporaries of the atomic writes they cut
	// (validate reports them, repair moves them to quarantine/); no orphan,
	// since the finishing run adopted every node written before a kill.
	out, _ = run("validate", "--json")
	var rep2 struct {
		Findings []struct {
			Kind string `json:"kind"`
		} `json:"findings"`
	}
	mustJSON(t, out, &rep2)
	for _, f := range rep2.Findings {
		if f.Kind != contextfold.KindTempFile {
			t.Errorf("validate after the kills: %s", out)
		}
	}
	if len(rep2.Findings) > 0 {
		if out, code := run("repair", "--apply"); code != 0 {
			t.Fatalf("repair: %s", out)
		}
	}
	if out, code := run("validate"); code != 0 {
		t.Fatalf("validate after the kills and repair: %s", out)
	}
}
