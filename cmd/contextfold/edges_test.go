package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMistypedDirIsNotAStore: the commands that would write or serve a
// store refuse a directory that is not one, say so, exit 1, and create
// nothing.
func TestMistypedDirIsNotAStore(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "typo")
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	for _, dir := range []string{missing, empty} {
		for _, args := range [][]string{{"repair", "--apply"}, {"repair"}, {"compact"}, {"ui", "--listen", "127.0.0.1:0"}} {
			_, errs, code := cli(t, "", append([]string{"--dir", dir}, args...)...)
			if code != 1 || !strings.Contains(errs, "no store at "+dir) || !strings.Contains(errs, "--dir") {
				t.Errorf("%s %v: exit %d %q", filepath.Base(dir), args, code, errs)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a mistyped --dir was created")
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("an empty directory got %v", ents)
	}
	// A real store is still repaired.
	dir := demoDir(t)
	if out, errs, code := cli(t, "", "--dir", dir, "repair", "--apply"); code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Errorf("repair of a store: %d %s %s", code, out, errs)
	}
}
