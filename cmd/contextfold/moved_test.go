//go:build unix

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopiedStoreSaysTheSameEverywhere: in a store copied under another
// name, hydrate, scan, recall, status and steps all fail with exit 3 and the
// same message naming the copy and the one command that fixes it, and that
// command, run as printed, makes every one of them work. Before: scan,
// recall, status and steps answered (exit 0), recommending steps hydrate
// then refused.
func TestCopiedStoreSaysTheSameEverywhere(t *testing.T) {
	dir := demoDir(t)
	copied := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("cp", "-r", dir, copied).CombinedOutput(); err != nil {
		t.Skipf("cp: %v %s", err, out)
	}
	cmds := [][]string{{"hydrate", "137"}, {"scan", "postgres port"}, {"recall", "port"}, {"status"}, {"steps"}}
	fix := "contextfold --dir " + copied + " repair --apply"
	for _, args := range cmds {
		_, errs, code := cli(t, "", append([]string{"--dir", copied}, args...)...)
		if code != 3 || !strings.Contains(errs, "copied or renamed") || !strings.Contains(errs, fix) {
			t.Errorf("%v on a copy: exit %d %q", args, code, errs)
		}
	}
	if _, errs, code := cli(t, "", strings.Fields(fix)[1:]...); code != 0 {
		t.Fatalf("%s: exit %d %s", fix, code, errs)
	}
	for _, args := range cmds {
		if _, errs, code := cli(t, "", append([]string{"--dir", copied}, args...)...); code != 0 {
			t.Errorf("%v after the fix: exit %d %q", args, code, errs)
		}
	}
}
