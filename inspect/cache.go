package inspect

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// reportCache keeps the last Validate report with a fingerprint of the files
// it read. Validate re-hashes and re-projects every node, which is slow for
// large stores; pages reuse the report while no store file changed, and
// "verify now" always validates afresh.
type reportCache struct {
	mu  sync.Mutex
	fp  string
	rep *contextfold.Report
	at  string // when rep was made
	// actions caches the action type of verified payloads by their
	// artifact_sha256, which identifies the content.
	actions map[string]string
	// sizes caches a database store's cold node sizes (bytes) by
	// artifact_sha256 (nodeSize).
	sizes map[string]int64
}

// fingerprint names, sizes, modes and modification times of the recall
// index, the policy and every entry of cold_nodes/ but empty spare files
// (which validate ignores). It reads no content.
func fingerprint(dir string) string {
	var b strings.Builder
	for _, f := range []string{contextfold.IndexFile, contextfold.PolicyFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
			fmt.Fprintf(&b, "%s %d %v %d\n", f, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s -\n", f)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, contextfold.ColdNodesDir))
	if err != nil {
		b.WriteString("cold_nodes -\n")
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			fmt.Fprintf(&b, "%s ?\n", e.Name())
			continue
		}
		if fi.Mode().IsRegular() && fi.Size() == 0 && fsutil.SpareNameRE.MatchString(e.Name()) {
			// An empty spare file (Store.FillSpares): no part of the
			// store, made and taken by a running proxy.
			continue
		}
		fmt.Fprintf(&b, "%s %d %v %d\n", e.Name(), fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode()&os.ModeSymlink != 0 {
			if ti, err := os.Stat(filepath.Join(dir, contextfold.ColdNodesDir, e.Name())); err == nil {
				fmt.Fprintf(&b, " → %d %d\n", ti.Size(), ti.ModTime().UnixNano())
			}
		}
	}
	return b.String()
}

// report returns the store's Validate report, from the cache unless fresh
// is true or a store file changed since it was made.
func (in *Inspector) report(fresh bool) (*contextfold.Report, error) {
	rep, _, err := in.reportAt(fresh)
	return rep, err
}

// reportAt is report, with the time the report was made.
func (in *Inspector) reportAt(fresh bool) (*contextfold.Report, string, error) {
	fp := in.storeFingerprint()
	in.cache.mu.Lock()
	defer in.cache.mu.Unlock()
	if !fresh && in.cache.rep != nil && in.cache.fp == fp {
		return in.cache.rep, in.cache.at, nil
	}
	rep, err := in.store.Validate()
	if err != nil {
		return nil, "", err
	}
	in.cache.fp, in.cache.rep, in.cache.at = fp, rep, in.now().UTC().Format(contextfold.TimeFormat)
	return rep, in.cache.at, nil
}

// actionType returns the action type of an indexed step, hydrating it (and
// so verifying it) the first time its content is seen.
func (in *Inspector) actionType(e *contextfold.Entry) string {
	in.cache.mu.Lock()
	a, ok := in.cache.actions[e.ArtifactSHA256]
	in.cache.mu.Unlock()
	if ok {
		return a
	}
	// The hot projection's own classification (package harness), from the
	// verified content when it can be read, else from the entry alone.
	h, err := in.store.Hydrate(e.StepID)
	if err != nil {
		return harness.ProjectEntry(e, "").ActionType
	}
	a = harness.ProjectEntry(e, h.RawContent).ActionType
	in.cache.mu.Lock()
	if in.cache.actions == nil {
		in.cache.actions = map[string]string{}
	}
	in.cache.actions[e.ArtifactSHA256] = a
	in.cache.mu.Unlock()
	return a
}

// fileExists reports whether dir/name exists.
func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// fileSize returns the size of the file at path (not following a symlink).
func fileSize(path string) (int64, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	return fi.Size(), true
}
