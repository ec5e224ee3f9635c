package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/pgstore"
)

// remedied is an error with what to run next appended to its message; it
// unwraps to the error, so its exit code (spec §6) is the error's.
type remedied struct {
	err    error
	remedy string
}

func (e *remedied) Error() string { return e.err.Error() + "; " + e.remedy }
func (e *remedied) Unwrap() error { return e.err }

// withRemedy appends the next step to the core errors whose message names
// none: a step the index does not hold (exit 2) and a node that fails
// verification (exit 3). The orphan, broken-reference, leftover-file and
// renamed-store errors already say to run repair and are returned as they
// are, and so is every other error.
func withRemedy(err error) error {
	if err == nil || strings.Contains(err.Error(), "contextfold repair") {
		return err
	}
	switch {
	case errors.Is(err, contextfold.ErrNodeNotFound):
		return &remedied{err, "contextfold steps lists the folded steps, contextfold recall <words> finds one by content"}
	case errors.Is(err, contextfold.ErrIntegrityCheck):
		return &remedied{err, "contextfold validate lists every finding; contextfold repair --apply moves the node to quarantine/ (or restore the file from a backup)"}
	}
	return err
}

// quarantinedRemedy is withRemedy for a step the index does not hold in a
// directory store whose quarantine/ holds that step's cold node: repair
// took it out of service (it did not verify, or its entry was broken), so
// the error says where it is and how to bring it back instead of pointing
// at steps and recall, which no longer list it. Any other error is
// returned as it is. It reads the quarantine directory's names only.
func quarantinedRemedy(err error, storeDir string, step int) error {
	if !errors.Is(err, contextfold.ErrNodeNotFound) || storeDir == "" {
		return err
	}
	qdir := filepath.Join(storeDir, contextfold.QuarantineDir)
	ents, rerr := os.ReadDir(qdir)
	if rerr != nil {
		return err
	}
	// repair names them <stamp>-step_000006.json (or .2.json, …); the
	// entry copies end in .index-entry.json.
	want := "-" + strings.TrimSuffix(fmt.Sprintf("step_%06d.json", step), ".json") + "."
	last := ""
	for _, e := range ents {
		n := e.Name()
		if strings.Contains(n, want) && !strings.Contains(n, ".index-entry.") && n > last {
			last = n
		}
	}
	if last == "" {
		return err
	}
	return &remedied{err, fmt.Sprintf("contextfold repair moved its cold node to %s (it did not verify; %s says why): restore the file from a backup into %s/ and run contextfold repair --apply to index it again",
		filepath.Join(qdir, last), filepath.Join(storeDir, contextfold.RepairLogFile), filepath.Join(storeDir, contextfold.ColdNodesDir))}
}

// storeHint says what chose the store directory, for the messages about a
// directory that is not a store, in the order storeDir resolves it:
// --store, --dir, $CONTEXTFOLD_STORE, $CONTEXTFOLD_DIR, else the default
// ./.contextfold of the working directory.
func (g *globals) storeHint() string {
	switch {
	case g.store != "":
		return "check --store"
	case g.dir != "":
		return "check --dir"
	case os.Getenv(EnvStore) != "" && !pgstore.IsURL(os.Getenv(EnvStore)):
		return "check $" + EnvStore + ", which chose it, or give --dir"
	case os.Getenv(contextfold.EnvStoreDir) != "":
		return "check $" + contextfold.EnvStoreDir + ", which chose it, or give --dir"
	}
	return "no --dir, $" + EnvStore + " or $" + contextfold.EnvStoreDir + " was given, so it is the default ./" + contextfold.DefaultStoreDir + " of the working directory: cd to the project, or give --dir"
}

// proxyStoresHint recognises, for a --dir that is not a store, the two
// directories of the proxy a user is likely to give instead of a store: a
// session directory (<dir>/<session>, whose stores are g1, g2, … one per
// history the client sent) and the directory of sessions itself. It returns
// what the directory is and the --dir of its latest store, or "" for any
// other directory. It reads at most a few hundred directory entries.
func proxyStoresHint(dir string) string {
	if gens := sessiondir.Generations(dir); len(gens) > 0 {
		return fmt.Sprintf("it is a proxy session directory, whose stores are %s (one per history the client sent): give --dir %s",
			strings.Join(gens, ", "), filepath.Join(dir, gens[len(gens)-1]))
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 512 {
		return ""
	}
	var stores []string // each session's latest store
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sess := filepath.Join(dir, e.Name())
		if gens := sessiondir.Generations(sess); len(gens) > 0 {
			stores = append(stores, filepath.Join(sess, gens[len(gens)-1]))
		}
	}
	if len(stores) == 0 {
		if h := hookStoresHint(dir); h != "" || !proxyMarked(dir) {
			return h
		}
		return fmt.Sprintf("it is a proxy's directory of session stores, with no session yet (the proxy makes <session>/g1 in it at a session's first fold); then: contextfold sessions --dir %s lists them", shellQuote(dir))
	}
	if hs := hookStores(filepath.Join(dir, "sessions")); len(hs) > 0 && len(sessiondir.Generations(filepath.Join(dir, "sessions"))) == 0 {
		// The proxy's --dir is the hooks' .contextfold too.
		return fmt.Sprintf("it is a directory of session stores of the proxy (%s with a store) and of the Claude Code hooks (%d in sessions/): give one session's store, e.g. the latest written: --dir %s%s",
			plural(len(stores), "session"), len(hs), latestWritten(append(stores, hs...)), sessionsTip(dir))
	}
	return fmt.Sprintf("it is the proxy's directory of sessions (%d with a store): give one session's store, e.g. the latest written: --dir %s%s", len(stores), latestWritten(stores), sessionsTip(dir))
}

// hookStores lists the stores directly in sdir (the hooks' sessions/), or
// nil when it cannot be read or holds more than 512 entries.
func hookStores(sdir string) []string {
	ents, err := os.ReadDir(sdir)
	if err != nil || len(ents) > 512 {
		return nil
	}
	var stores []string
	for _, e := range ents {
		if st := filepath.Join(sdir, e.Name()); e.IsDir() && isStore(st) {
			stores = append(stores, st)
		}
	}
	return stores
}

// latestWritten returns the store among stores whose recall index was
// written last (the first listed when none has an index).
func latestWritten(stores []string) string {
	var latest string
	var latestTime time.Time
	for _, st := range stores {
		if fi, err := os.Stat(filepath.Join(st, contextfold.IndexFile)); err == nil && (latest == "" || fi.ModTime().After(latestTime)) {
			latest, latestTime = st, fi.ModTime()
		} else if latest == "" {
			latest = st
		}
	}
	return latest
}

// hookStoresHint recognises the Claude Code hooks' layout, for a --dir that
// is not a store: a project's .contextfold, whose sessions/<session_id>/ are
// the hooks' stores (one per session), or that sessions/ directory itself.
// It is what `contextfold status` in a project set up with the hooks reads
// by default. It returns what the directory is and the --dir of the session
// store written last, or "" for any other directory; it reads at most a few
// hundred directory entries.
func hookStoresHint(dir string) string {
	what, sdir := "the Claude Code hooks' directory of sessions", dir
	if fi, err := os.Stat(filepath.Join(dir, "sessions")); err == nil && fi.IsDir() {
		what, sdir = "a project directory of the Claude Code hooks, whose stores are sessions/<session_id>", filepath.Join(dir, "sessions")
	}
	stores := hookStores(sdir)
	if len(stores) == 0 {
		return ""
	}
	return fmt.Sprintf("it is %s (%d with a store): give one session's store, e.g. the latest written: --dir %s%s", what, len(stores), latestWritten(stores), sessionsTip(dir))
}

// sessionsTip is the part of a hint about a directory of session stores
// that names the commands reading it as it is.
func sessionsTip(dir string) string {
	return fmt.Sprintf(" (or read them all: contextfold sessions, scan and recall --dir %s, and --session ID to pick one; the MCP server serves them too)", shellQuote(dir))
}

// sourceCounts says how many of ss come from each source, in a fixed
// order ("1 from the hooks, 2 from the proxy").
func sourceCounts(ss []sessiondir.Session) string {
	n := sessiondir.Sources(ss)
	var parts []string
	for _, src := range []struct{ key, from string }{{sessiondir.SourceHooks, "the hooks"}, {sessiondir.SourceProxy, "the proxy"}, {sessiondir.SourceStore, "other stores"}} {
		if n[src.key] > 0 {
			parts = append(parts, fmt.Sprintf("%d from %s", n[src.key], src.from))
		}
	}
	return strings.Join(parts, ", ")
}

// latestSession is the ID of the session of ss whose recall index was
// written last.
func latestSession(ss []sessiondir.Session) string {
	dirs := make([]string, len(ss))
	for i, x := range ss {
		dirs[i] = x.Dir
	}
	latest := latestWritten(dirs)
	for _, x := range ss {
		if x.Dir == latest {
			return x.ID
		}
	}
	return ss[0].ID
}
