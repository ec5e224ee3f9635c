package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoExploreNamesTheRunningBinary: the demo's closing "Explore it"
// commands name the binary that ran it when "contextfold" on PATH is not
// that binary (a binary run by its path, another version installed), and
// "contextfold" when it is. Before, they always said "contextfold", which
// a user who ran ./contextfold demo could not run.
func TestDemoExploreNamesTheRunningBinary(t *testing.T) {
	bin := buildBinary(t)
	run := func(path string) string {
		t.Helper()
		cmd := exec.Command(bin, "demo", "--dir", filepath.Join(t.TempDir(), "my store"))
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out)
		}
		s := string(out)
		return s[strings.Index(s, "Explore it:"):]
	}
	if got := run(t.TempDir()); !strings.Contains(got, "\n   "+bin+" --dir '") || strings.Contains(got, "\n   contextfold ") {
		t.Errorf("contextfold not on PATH: want the commands to run %s, a quoted --dir:\n%s", bin, got)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "contextfold"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := run(other); !strings.Contains(got, "\n   "+bin+" --dir ") {
		t.Errorf("another contextfold on PATH: want the commands to run %s:\n%s", bin, got)
	}
	if got := run(filepath.Dir(bin)); !strings.Contains(got, "\n   contextfold --dir ") {
		t.Errorf("this binary on PATH: want the commands to say contextfold:\n%s", got)
	}
}
