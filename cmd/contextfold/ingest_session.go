package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/hooks"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/proxy"
	"github.com/contextfold/contextfold/scrub"
)

// ingestSession is where an ingest into a directory of session stores
// folds (ingestTarget).
type ingestSession struct {
	// Root is the directory of session stores (absolute); Dir the
	// session's store, ID its id as contextfold sessions will list it.
	Root, Dir, ID string
	// New is true when the session is not in the directory yet: the
	// ingest makes its store.
	New bool
	// From says where the id came from: "--session" or "the transcript's
	// session id".
	From string
}

// ingestTarget decides where ingest folds when the store the global flags
// name is a directory of session stores (the hooks' .contextfold, its
// sessions/, the proxy's --dir: sessiondir.Find finds a session), or when
// --session is given (given; name its value): nil when neither (the store
// itself, as before). A new session is made as its directory's writers lay
// one out (sessionStoreDir): in the hooks' directory at sessions/<id>,
// where the Stop hook of that session folds too (step ids are positions in
// the transcript for both, so a later Stop of a Claude Code session
// ingested here finds its turns indexed); elsewhere at <dir>/<id>, listed
// as source "store". The id is --session's, else the transcript's own
// session id (a Claude Code UUID: the id the hooks name the session by);
// a transcript that names no session needs --session.
//
// --session takes an existing session's whole id (the ingest adds the
// transcript's new turns to it; refuseOtherSession still refuses turns
// that collide) or a new name: letters, digits, '-', '_', '.', at most 128,
// starting with a letter or a digit,
// that starts no session's id and is no proxy session's name (a writer
// takes no prefix: it might mean that session). Refused, nothing written:
// a database store (?session= names its session), --session on a store,
// a name that is not a directory name, the start of an id, a place that
// holds something else, and a name whose store would hide the other
// sessions (cold_nodes or recall_index.json, which make the directory
// holding them read as a store; sessions directly in a proxy's --dir,
// which makes <dir>/sessions a store, not the hooks' directory). A proxy's
// --dir before its first fold (only its proxy.DirMarkerFile) is a
// directory of session stores too, not a store to fold into.
func (g *globals) ingestTarget(cmd *cobra.Command, name string, given bool, turns []contextfold.Turn) (*ingestSession, error) {
	if g.storeURL() != "" {
		if given {
			return nil, usagef("--session %s: the store is a PostgreSQL session (--store or $%s); its session is ?session=NAME in the URL", name, EnvStore)
		}
		return nil, nil
	}
	dir := g.storeDir()
	root, err := filepath.Abs(dir)
	if err != nil {
		root = dir
	}
	if isStore(dir) {
		if given {
			return nil, usagef("--session %s: %s is one store, not a directory of session stores; leave out --session to ingest into it, or give --dir the directory that holds the sessions (a project's .contextfold, the proxy's --dir)", name, root)
		}
		return nil, nil
	}
	ss, err := sessiondir.Find(root)
	if err != nil {
		return nil, err
	}
	if !given && len(ss) == 0 && !proxyMarked(root) {
		// A store of its own, as before; but not in a proxy's --dir
		// before its first fold (its mark, proxy.DirMarkerFile): folded
		// there as a store, it would hide every session the proxy
		// writes later.
		return nil, nil
	}
	from := "--session"
	if !given {
		from = "the transcript's session id"
		name = transcriptSession(turns)
		if name == "" {
			if len(ss) == 0 {
				return nil, usagef("%s is a proxy's directory of session stores (it holds the proxy's mark, %s): ingest makes the transcript a session of it, named by its session id, and this transcript names none; give it one: contextfold ingest %s --session NAME (a new id: letters, digits, '-', '_', '.', starting with a letter or digit), or give --dir a store of its own",
					root, proxy.DirMarkerFile, shellQuote(cmd.Flags().Arg(0)))
			}
			return nil, usagef("%s is %s holding %s (%s): ingest makes the transcript a session of it, named by its session id, and this transcript names none; give it one: contextfold ingest %s --session NAME (a new id: letters, digits, '-', '_', '.', starting with a letter or digit), or give --dir a store of its own",
				root, sessionsDirKind(root, ss), plural(len(ss), "session"), sourceCounts(ss), shellQuote(cmd.Flags().Arg(0)))
		}
	}
	if name == "" {
		return nil, usagef("--session is empty: give the session's id, an existing one (contextfold sessions --dir %s) or a new one", shellQuote(root))
	}
	for _, x := range ss {
		if x.ID == name {
			return &ingestSession{Root: root, Dir: x.Dir, ID: x.ID, From: from}, nil
		}
	}
	if err := checkNewSessionName(name, from); err != nil {
		return nil, err
	}
	if m, err := sessiondir.Resolve(root, ss, name); err == nil {
		return nil, usagef("%s %s is not a session's whole id but names session %s (%s, store %s) by its %s: ingest writes, so it takes the whole id to add to that session (--session %s), or a new id that starts no session's id",
			from, name, m.ID, m.Source, m.Dir, map[string]string{sessiondir.ByName: "proxy session name", sessiondir.ByPrefix: "start"}[m.How], shellQuote(m.ID))
	} else if amb := (*sessiondir.AmbiguousError)(nil); errors.As(err, &amb) {
		return nil, usagef("%s %s is the start of several sessions' ids (%s): ingest takes a session's whole id, or a new id that starts none of them", from, name, candidateIDs(amb.Candidates))
	}
	store := sessionStoreDir(root, name)
	if b := filepath.Base(store); b == contextfold.IndexFile || b == contextfold.ColdNodesDir || store == filepath.Join(root, "sessions") {
		// A store there would make its directory (root, or the hooks'
		// sessions/) read as one store, or root/sessions as a store
		// rather than the hooks' directory: every other session would
		// be hidden from sessions, recall, scan and mcp.
		return nil, usagef("%s %s: a new session cannot be named %s in %s: the directory itself would read as a store (or its sessions/ no longer as the hooks' sessions) and its other sessions would be hidden; give another id", from, name, name, root)
	}
	if fi, err := os.Lstat(store); err == nil && !fi.IsDir() {
		return nil, usagef("%s %s: %s is a file, not a session's store; give another id", from, name, store)
	} else if err == nil {
		if ents, _ := os.ReadDir(store); len(ents) > 0 && !isStore(store) {
			return nil, usagef("%s %s: %s holds %s but no store; give another id, or --dir a store of its own", from, name, store, entries(len(ents)))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &ingestSession{Root: root, Dir: store, ID: name, New: true, From: from}, nil
}

// sessionStoreDir is where a new session id of the directory of session
// stores root is kept, as its writers lay sessions out: root/<id> when root
// is the hooks' sessions/ directory itself; root/sessions/<id> when root is
// a project's .contextfold or holds the hooks' sessions/ (where the Stop
// hook of that session writes); else root/<id> (beside a proxy's
// <session>/g<N>, a store directly in the directory).
func sessionStoreDir(root, id string) string {
	base := filepath.Base(root)
	switch {
	case base == "sessions":
		return filepath.Join(root, id)
	case base == contextfold.DefaultStoreDir, isDir(filepath.Join(root, "sessions")) && !isStore(filepath.Join(root, "sessions")) && len(sessiondir.Generations(filepath.Join(root, "sessions"))) == 0:
		return filepath.Join(root, "sessions", id)
	}
	return filepath.Join(root, id)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// transcriptSession is the session id the turns of one transcript name,
// "" when they name none (contextfold.DefaultSessionID) or several, or
// when it cannot name a directory safely: not 1-128 letters, digits, '-',
// '_', '.', or a secret the scrubber finds in it.
func transcriptSession(turns []contextfold.Turn) string {
	id := ""
	for _, t := range turns {
		s := t.SessionID
		if s == "" {
			s = contextfold.DefaultSessionID
		}
		if id != "" && s != id {
			return ""
		}
		id = s
	}
	if id == contextfold.DefaultSessionID || checkNewSessionName(id, "") != nil {
		return ""
	}
	if sc, err := scrub.New(); err != nil || sc.Scrub(id).Text != id {
		return ""
	}
	return id
}

// checkNewSessionName refuses an id that cannot name a new session's
// directory: empty, longer than 128, not starting with a letter or a digit,
// or holding anything but letters, digits, '-', '_' and '.' (the hooks'
// rule for a session_id).
func checkNewSessionName(id, from string) error {
	if !hooks.ValidSessionID(id) {
		return usagef("%s %q is no session of the directory and cannot name a new one: a new session's id is 1-128 letters, digits, '-', '_' and '.', starting with a letter or a digit", from, scrubText(id))
	}
	return nil
}

// scrubText is s with the secrets it holds redacted, for a message.
func scrubText(s string) string {
	if sc, err := scrub.New(); err == nil {
		return sc.Scrub(s).Text
	}
	return s
}

// candidateIDs names sessions by id and source, at most
// sessiondir.MaxCandidates of them.
func candidateIDs(ss []sessiondir.Session) string {
	var names []string
	for i, x := range ss {
		if i == sessiondir.MaxCandidates {
			names = append(names, fmt.Sprintf("… %d more", len(ss)-i))
			break
		}
		names = append(names, x.ID+" ("+x.Source+")")
	}
	return strings.Join(names, ", ")
}

// ingestedSession is the session an ingest folded into, as contextfold
// sessions lists it now (its id, source and store), for the output.
func ingestedSession(t *ingestSession) *sessiondir.Session {
	if ss, err := sessiondir.Find(t.Root); err == nil {
		for _, x := range ss {
			if x.Dir == t.Dir {
				return &x
			}
		}
	}
	// Nothing folded into a new session: its store is not made yet.
	src := sessiondir.SourceStore
	if filepath.Base(filepath.Dir(t.Dir)) == "sessions" {
		src = sessiondir.SourceHooks
	}
	return &sessiondir.Session{ID: t.ID, Dir: t.Dir, Source: src}
}
