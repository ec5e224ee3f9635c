//go:build unix

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contextfold/contextfold/match/ranked"
)

// TestSpecialFilesNeverBlock: a FIFO in place of any file a store or its
// per-user cache holds (the index, the policy, the settings, the logs, an
// indexed cold node, the index and ranked snapshots and the delta) never
// blocks validate, repair, scrub-check, scan, recall, hydrate, status or
// steps: each returns within seconds, and a FIFO in place of a store file
// is named in a finding or an error saying it is not a regular file. A
// cache that is not a regular file is a miss: the command answers as
// without it. (Before: validate on a FIFO cold node blocked forever.)
func TestSpecialFilesNeverBlock(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("CONTEXTFOLD_CACHE_DIR", cache)
	store := []string{"recall_index.json", "hydration_policy.json", "store_settings.json", "eviction_log.json",
		"policy_history.json", "repair_log.json", "cold_nodes/step_000137.json"}
	caches := []string{"recall_index.cache", ranked.CacheFile, ranked.CacheFile + ".delta"}
	cmds := [][]string{{"validate"}, {"repair"}, {"scrub-check"}, {"scan", "postgres port"}, {"recall", "port"},
		{"hydrate", "137"}, {"status"}, {"steps"}}
	for _, target := range append(store, caches...) {
		dir := demoDir(t)
		abs, _ := filepath.Abs(dir)
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
		sum := sha256.Sum256([]byte(abs))
		cdir := filepath.Join(cache, hex.EncodeToString(sum[:16]))
		os.MkdirAll(cdir, 0o700)
		p := filepath.Join(dir, target)
		isCache := !strings.HasSuffix(target, ".json")
		if isCache {
			p = filepath.Join(cdir, target)
		}
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		named := false
		for _, args := range cmds {
			out, errs, code := cliWithin(t, hangWait, append([]string{"--dir", dir}, args...)...)
			if strings.Contains(out+errs, "not a regular file") {
				named = true
			}
			if isCache && code != 0 {
				t.Errorf("a FIFO cache %s: %v exit %d %s %s (want a miss)", target, args, code, out, errs)
			}
		}
		if !isCache && !named {
			t.Errorf("a FIFO %s: no command said it is not a regular file", target)
		}
		if _, _, code := cliWithin(t, hangWait, "--dir", dir, "validate"); !isCache && code == 0 {
			t.Errorf("validate passes a store whose %s is a FIFO", target)
		}
	}
}

// TestScrubCheckNamesUnreadableNodes: a node scrub-check cannot read (here
// a FIFO in its place) is not counted as clean: it is listed as unreadable,
// the summary says the audit is incomplete with the remedy, and the exit
// code is 1.
func TestScrubCheckNamesUnreadableNodes(t *testing.T) {
	dir := demoDir(t)
	p := filepath.Join(dir, "cold_nodes", "step_000137.json")
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	out, errs, code := cliWithin(t, hangWait, "--dir", dir, "scrub-check")
	if code != 1 || !strings.Contains(out, "step 137") || !strings.Contains(out, "1 unreadable") || !strings.Contains(out, "contextfold validate") {
		t.Fatalf("scrub-check with an unreadable node: exit %d\n%s%s", code, out, errs)
	}
	out, _, code = cliWithin(t, hangWait, "--dir", dir, "scrub-check", "--json")
	if code != 1 || !strings.Contains(out, `"nodes_unreadable"`) || !strings.Contains(out, `"step_id": 137`) {
		t.Fatalf("scrub-check --json with an unreadable node: exit %d\n%s", code, out)
	}
}

// TestLockFileNotRegular: the store's lock file (.lock) replaced by a FIFO,
// a symbolic link to /dev/zero or a directory never blocks a command that
// writes (fold, evict, ingest, repair --apply) or one that reads: each
// returns, a writer with exit 1 and an error naming .lock, saying what it
// is and how to mend it, and nothing is written. (Before: fold and evict
// opened the FIFO for reading and waited for a writer forever.)
func TestLockFileNotRegular(t *testing.T) {
	transcript := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(transcript, []byte(`{"type":"user","message":{"role":"user","content":"run the tests"}}`+"\n"+
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ok, all tests pass"}]}}`+"\n"), 0o644)
	payload := filepath.Join(t.TempDir(), "p.txt")
	os.WriteFile(payload, []byte("make: *** [all] Error 2\n"), 0o644)
	writers := [][]string{{"fold", "900", "build failed", "--file", payload}, {"evict", "137"},
		{"ingest", transcript}, {"repair", "--apply"}}
	readers := [][]string{{"status"}, {"scan", "postgres port"}, {"validate"}, {"hydrate", "137"}}
	for _, kind := range []string{"fifo", "devzero", "dir"} {
		dir := demoDir(t)
		lock := filepath.Join(dir, ".lock")
		os.Remove(lock)
		var err error
		switch kind {
		case "fifo":
			err = syscall.Mkfifo(lock, 0o644)
		case "devzero":
			err = os.Symlink("/dev/zero", lock)
		case "dir":
			err = os.Mkdir(lock, 0o755)
		}
		if err != nil {
			t.Skipf("%s: %v", kind, err)
		}
		before := treeDigest(t, dir)
		for _, args := range writers {
			_, errs, code := cliWithin(t, hangWait, append([]string{"--dir", dir}, args...)...)
			if code != 1 || !strings.Contains(errs, ".lock") || !strings.Contains(errs, "not a regular file") || !strings.Contains(errs, "remove it") {
				t.Errorf(".lock a %s: %v: exit %d, %q (want exit 1 naming .lock, not a regular file, remove it)", kind, args, code, errs)
			}
		}
		for _, args := range readers {
			cliWithin(t, hangWait, append([]string{"--dir", dir}, args...)...)
		}
		if after := treeDigest(t, dir); after != before {
			t.Errorf(".lock a %s: the store changed:\n%s\n---\n%s", kind, before, after)
		}
	}
}

// treeDigest lists every entry under dir with its type and, for a regular
// file, the SHA-256 of its bytes; special files are not read.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			sum := sha256.Sum256(data)
			b.WriteString(" " + hex.EncodeToString(sum[:8]))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestStoreDirSymlinkLoop: a store directory that is a symbolic link loop
// is named as one, with the remedy, by every command, which exits 1 (mcp
// too, before it serves). Before, each said something else: "check the
// permissions of the store directory" (status, scan), "the directory does
// not exist" (repair), "mkdir …: file exists" (fold, and proxy, whose
// --dir holds each session's store), and mcp served a store that could
// never be written.
func TestStoreDirSymlinkLoop(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	if err := os.Symlink(b, a); err != nil {
		t.Skipf("symlink: %v", err)
	}
	os.Symlink(a, b)
	payload := filepath.Join(tmp, "p.txt")
	os.WriteFile(payload, []byte("make: *** [all] Error 2\n"), 0o644)
	transcript := filepath.Join(tmp, "s.jsonl")
	os.WriteFile(transcript, []byte(`{"type":"user","message":{"role":"user","content":"run the tests"}}`+"\n"), 0o644)
	for _, args := range [][]string{{"status"}, {"validate"}, {"repair"}, {"scan", "error"}, {"hydrate", "1"},
		{"fold", "1", "build failed", "--file", payload}, {"ingest", transcript}, {"mcp"},
		{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"}} {
		_, errs, code := cliWithin(t, hangWait, append([]string{"--dir", a}, args...)...)
		if code != 1 || !strings.Contains(errs, a) || !strings.Contains(errs, "symbolic link that loops") || !strings.Contains(errs, "remove the link") {
			t.Errorf("%v: exit %d, %q (want exit 1 naming %s as a symbolic link loop, with the remedy)", args, code, errs, a)
		}
	}
}

// TestEvictionLogNotRegular: an eviction log that is a FIFO, a link to
// /dev/zero or a directory makes evict fail at once, naming the file, what
// it is and the remedy (move it aside or remove it), not "check the
// permissions of the store directory"; the store is left as it was.
func TestEvictionLogNotRegular(t *testing.T) {
	for _, kind := range []string{"fifo", "devzero", "dir"} {
		dir := demoDir(t)
		p := filepath.Join(dir, "eviction_log.json")
		os.Remove(p)
		var err error
		switch kind {
		case "fifo":
			err = syscall.Mkfifo(p, 0o644)
		case "devzero":
			err = os.Symlink("/dev/zero", p)
		case "dir":
			err = os.Mkdir(p, 0o755)
		}
		if err != nil {
			t.Skipf("%s: %v", kind, err)
		}
		before := treeDigest(t, dir)
		_, errs, code := cliWithin(t, hangWait, "--dir", dir, "evict", "137")
		if code != 1 || !strings.Contains(errs, "eviction_log.json") || !strings.Contains(errs, "not a regular file") ||
			!strings.Contains(errs, "remove it") || strings.Contains(errs, "permissions") {
			t.Errorf("eviction_log.json a %s: evict: exit %d, %q", kind, code, errs)
		}
		if after := treeDigest(t, dir); after != before {
			t.Errorf("eviction_log.json a %s: the store changed", kind)
		}
	}
}
