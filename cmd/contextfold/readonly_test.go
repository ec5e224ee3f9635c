package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/cachedir"
)

// treeHash hashes every path of a directory tree with its mode, and for
// regular files their content and modification time.
func treeHash(t testing.TB, dir string) (string, []string) {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		line := rel + " " + fi.Mode().String() + " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:]), lines
}

// largeStore folds n turns rich in identifiers, so that the index passes
// 4 MiB (large-store mode: journal and snapshot), with scrubbing off.
func largeStore(t testing.TB, dir string, n int) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff, Clock: func() time.Time { return time.Unix(1767225600, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	turns := make([]contextfold.Turn, n)
	for i := range turns {
		var b strings.Builder
		fmt.Fprintf(&b, "pytest run %d in pkg%d/service_%d.py\n", i, i%17, i)
		for k := 0; k < 700; k++ {
			fmt.Fprintf(&b, "ident_%d_%d ", i, k)
		}
		if i%10 == 0 {
			b.WriteString("\nValueError: bad token in step\n")
		}
		turns[i] = contextfold.Turn{StepID: i, Summary: fmt.Sprintf("step %d ran pytest on service_%d", i, i), RawContent: b.String()}
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	return s
}

// readOnlyCommands are the commands that must not change any file in the
// store (CONF-08), with arguments that make each read the large store.
var readOnlyCommands = [][]string{
	{"validate"}, {"validate", "--json"},
	{"status"}, {"status", "--json"},
	{"hydrate", "5"}, {"hydrate", "5", "--json"}, {"hydrate", "5", "--raw"}, {"hydrate", "5", "--offset", "100"}, {"hydrate", "999999"},
	{"scan", "which ValueError in service_30?"}, {"scan", "--json", "ident_7_3 pkg3"},
	{"recall", "service_12 pytest"}, {"recall", "--json", "ValueError"},
	{"steps"}, {"steps", "--json"},
	{"scrub-check"}, {"repair"}, {"repair", "--json"},
}

// TestCONF08ReadOnlyCommandsChangeNoByte: every read-only command leaves
// every file of a large store (index > 4 MiB, journaled) unchanged —
// content, mode and modification time — and creates none (no lock, no
// cache), both for our store and for one as the reference writes it (no
// journal, no snapshot, no lock, no extension files). Snapshots a reader
// makes go to the per-user cache directory.
func TestCONF08ReadOnlyCommandsChangeNoByte(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 4 MiB store")
	}
	base := t.TempDir()
	ours := filepath.Join(base, "ours", ".contextfold")
	s := largeStore(t, ours, 420)
	// A batch's intermediate commits are timed (every 2 s), so how much of it
	// sits in the journal depends on the machine's speed: compact first.
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(ours, contextfold.IndexFile))
	if err != nil || fi.Size() <= 4<<20 {
		t.Fatalf("the index must pass 4 MiB: %v %d", err, fi.Size())
	}
	// Journaled updates on top of the large index.
	if _, err := s.Fold(contextfold.Turn{StepID: 5000, Summary: "late turn", RawContent: "late ValueError in service_30"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Evict(7); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ours, contextfold.JournalFile)); err != nil {
		t.Fatalf("expected a journal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ours, contextfold.IndexCacheFile)); err == nil {
		t.Fatal("a writer kept the index snapshot in the store although a per-user cache directory exists")
	}

	// A store as the reference writes it: the same index and nodes, compacted,
	// without our extension files.
	ref := filepath.Join(base, "ref", ".contextfold")
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	copyDir(t, ours, ref)
	for _, f := range []string{".lock", "policy_history.json", contextfold.JournalFile, contextfold.IndexCacheFile} {
		os.Remove(filepath.Join(ref, f))
	}
	// And ours journaled again after the copy.
	if _, err := s.Evict(8); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, dir, cache string }{
		{"ours", ours, ""}, {"reference", ref, ""}, {"reference-no-user-cache", ref, "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cacheRoot := t.TempDir()
			if tc.cache != "" {
				cacheRoot = tc.cache
			}
			t.Setenv(cachedir.Env, cacheRoot)
			before, lines := treeHash(t, tc.dir)
			time.Sleep(20 * time.Millisecond) // a rewrite within the clock's resolution still shows
			for _, args := range readOnlyCommands {
				_, errs, code := cli(t, "", append([]string{"--dir", tc.dir}, args...)...)
				if code > 2 {
					t.Errorf("%v: exit %d %s", args, code, errs)
				}
				if after, afterLines := treeHash(t, tc.dir); after != before {
					t.Fatalf("%v changed the store:\nbefore %v\nafter  %v", args, diffLines(lines, afterLines), diffLines(afterLines, lines))
				}
			}
			if tc.cache == "" && tc.name == "reference" {
				// The reader that parsed the reference's index cached its
				// snapshot outside the store, bound to the index file.
				cd, _ := cachedir.For(tc.dir, false)
				if _, err := os.Stat(filepath.Join(cd, contextfold.IndexCacheFile)); err != nil {
					t.Errorf("no snapshot in the per-user cache directory: %v", err)
				}
			}
		})
	}
}

// diffLines lists the lines of a that b lacks.
func diffLines(a, b []string) []string {
	in := map[string]bool{}
	for _, l := range b {
		in[l] = true
	}
	var out []string
	for _, l := range a {
		if !in[l] {
			out = append(out, l)
		}
	}
	return out
}

// copyDir copies a directory tree (regular files and directories).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
