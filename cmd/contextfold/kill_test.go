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

// buildBinary builds the contextfold binary into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "contextfold")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

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
// subprocess, SIGKILL) again and again: the index is committed in batches,
// so every kill keeps what was folded before the last commit and the next
// run goes on from there; the run that finishes leaves a clean store.
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

	prev, grew, kills := 0, 0, 0 // grew: killed runs that kept progress
	for _, delay := range []time.Duration{1500, 2500, 3000, 3000, 3000} {
		cmd := exec.Command(bin, "--dir", dir, "--no-scrub", "ingest", session)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("ingest failed: %v", err)
			}
		case <-time.After(delay * time.Millisecond):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
			if n := indexedSteps(t, dir); n > prev {
				grew++
			}
		}
		n := indexedSteps(t, dir)
		if n < prev {
			t.Fatalf("a kill lost indexed steps: %d after %d", n, prev)
		}
		t.Logf("after %v: %d steps indexed", delay*time.Millisecond, n)
		prev = n
		if n == turns {
			break
		}
	}
	if kills == 0 {
		t.Fatal("no run was killed mid-ingest; the test needs a longer ingest")
	}
	if grew == 0 || (kills >= 3 && grew < 2) {
		t.Errorf("only %d of %d interrupted runs kept progress", grew, kills)
	}
	out, errs, code := cli(t, "", "--dir", dir, "--no-scrub", "ingest", session, "--json")
	var rep ingestJSON
	mustJSON(t, out, &rep)
	if code != 0 || rep.Folded+rep.AlreadyIndexed != turns || rep.AlreadyIndexed != prev {
		t.Fatalf("final ingest: %d %+v %s", code, rep, errs)
	}
	// What the kills may leave: temporaries of the atomic writes they cut
	// (validate reports them, repair moves them to quarantine/); no orphan,
	// since the finishing run adopted every node written before a kill.
	out, _, code = cli(t, "", "--dir", dir, "validate", "--json")
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
		if _, errs, code := cli(t, "", "--dir", dir, "repair", "--apply"); code != 0 {
			t.Fatalf("repair: %s", errs)
		}
	}
	if out, _, code := cli(t, "", "--dir", dir, "validate"); code != 0 {
		t.Fatalf("validate after the kills and repair: %s", out)
	}
}
