// Package sessiondir reads a directory of session stores: the directory the
// proxy keeps one store per session in (<dir>/<session>/g<N>, one store per
// history the client sent), the Claude Code hooks' <project>/.contextfold
// (whose stores are sessions/<session_id>), or that sessions/ directory —
// or one directory that both write into (the proxy's --dir .contextfold
// beside the hooks): every session of either kind is listed, each with
// where it came from (Session.Source).
// It lists the sessions and searches (recall, scan) one of them or all of
// them, for the MCP server and the command line.
//
// It is read-only: stores are opened with contextfold.Open and only read
// (CONF-08: no lock, no cache file, no byte changed in a store), so it may
// run while a proxy or a hook folds into the same stores. A store that
// cannot be read (a damaged index, an unreadable file) is reported with its
// error; the other sessions are still served.
package sessiondir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// MaxSessions is the most session stores a directory may hold: listing one
// reads every store's index, so a larger directory is refused with an error
// that says to pick a session's store with --dir.
const MaxSessions = 4096

// DefaultRecallLimit is how many recall candidates a search across all
// sessions returns when the caller gives no limit: the output stays bounded
// however many sessions the directory holds.
const DefaultRecallLimit = 20

// Where a session store came from (Session.Source): which writer keeps
// stores in that place of a directory of session stores.
const (
	// SourceHooks is a session of the Claude Code hooks: a store in the
	// hooks' sessions/ directory (<project>/.contextfold/sessions/<id>, or
	// a directory named sessions given itself), or any store holding the
	// Stop hook's transcript state (HookStateFile; the hooks' --dir with
	// {session_id} elsewhere).
	SourceHooks = "hooks"
	// SourceProxy is one store of a proxy session: <session>/g<N>, one
	// per history the client sent.
	SourceProxy = "proxy"
	// SourceStore is any other store directly below the directory (one
	// that fold, ingest or the MCP tool fold_turn wrote).
	SourceStore = "store"
)

// HookStateFile is the file the Claude Code hooks' Stop keeps in each
// session store it writes (hooks.StateFile; not imported, to keep this
// package free of the hooks' dependencies): a store holding it is a hooks
// session wherever it lies.
const HookStateFile = "hook_transcript.state"

// Session is one store below a directory of session stores.
type Session struct {
	// ID names the session: the store's path relative to the directory,
	// '/'-separated ("5a9d…" for a hooks session, "s-067b…/g1" for a proxy
	// session's first store; the hooks' sessions/ prefix is left out,
	// unless a store directly below the directory has the same name: then
	// the hooks session is "sessions/<id>").
	ID string
	// Dir is the store directory.
	Dir string
	// Source is where the store came from: SourceHooks, SourceProxy or
	// SourceStore.
	Source string
}

// IsStore reports whether dir holds a store's recall index or cold node
// directory.
func IsStore(dir string) bool {
	for _, f := range []string{contextfold.IndexFile, contextfold.ColdNodesDir} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// hooksDir reports whether root/sessions is the Claude Code hooks'
// directory of session stores: a directory, not a store, and not a proxy
// session named "sessions" (whose stores are g1, g2, …).
func hooksDir(root string) bool {
	sd := filepath.Join(root, "sessions")
	return isDir(sd) && !IsStore(sd) && len(Generations(sd)) == 0
}

// Find lists the session stores below root, by ID: the subdirectories of
// root that are stores, the stores g1, g2, … of each proxy session
// directory in root, and the stores in root/sessions (the Claude Code
// hooks' layout), all of them, so that a directory both the proxy (its
// --dir) and the hooks (.contextfold) write into lists the sessions of
// both. Each is marked with its Source. It returns nil, nil when root is
// itself a store, is missing, or has no session store below it, or cannot
// be read as a directory (root is then not a directory of session stores:
// opening it as a store names the problem). The error is for more than
// MaxSessions stores.
func Find(root string) ([]Session, error) {
	if IsStore(root) {
		return nil, nil
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		// Missing, a file, unreadable, a symbolic link loop: not a
		// directory of session stores; opening it as a store says why.
		return nil, nil
	}
	hooks := hooksDir(root)
	// A directory named sessions given itself is the hooks' (its parent
	// a project's .contextfold, or the hooks' --dir …/sessions/{session_id}).
	named := filepath.Base(filepath.Clean(root)) == "sessions"
	if abs, err := filepath.Abs(root); err == nil {
		named = filepath.Base(abs) == "sessions"
	}
	var out []Session
	tooMany := func() error {
		return fmt.Errorf("%s holds more than %d session stores; give one session's store with --dir (or --session)", root, MaxSessions)
	}
	ids := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() || hooks && e.Name() == "sessions" {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if IsStore(dir) {
			src := SourceStore
			if named || hasHookState(dir) {
				src = SourceHooks
			}
			out = append(out, Session{ID: e.Name(), Dir: dir, Source: src})
			ids[e.Name()] = true
		} else {
			for _, g := range Generations(dir) {
				out = append(out, Session{ID: e.Name() + "/" + g, Dir: filepath.Join(dir, g), Source: SourceProxy})
			}
		}
		if len(out) > MaxSessions {
			return nil, tooMany()
		}
	}
	if hooks {
		sd := filepath.Join(root, "sessions")
		hents, _ := os.ReadDir(sd)
		for _, e := range hents {
			dir := filepath.Join(sd, e.Name())
			if !e.IsDir() || !IsStore(dir) {
				continue
			}
			id := e.Name()
			if ids[id] {
				id = "sessions/" + id // a store of the same name directly below root
			}
			out = append(out, Session{ID: id, Dir: dir, Source: SourceHooks})
			if len(out) > MaxSessions {
				return nil, tooMany()
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// hasHookState reports whether the store dir holds the hooks' transcript
// state (HookStateFile).
func hasHookState(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, HookStateFile))
	return err == nil
}

// Sources counts the sessions of ss by Source.
func Sources(ss []Session) map[string]int {
	n := map[string]int{}
	for _, x := range ss {
		n[x.Source]++
	}
	return n
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Generations lists the store subdirectories g1, g2, … of a proxy session
// directory dir (each a directory named g and a number from 1 written
// without leading zeros, holding a store: IsStore), in generation order; nil
// when dir cannot be read or holds none. It stats each candidate once.
func Generations(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ns []int
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || len(name) < 2 || name[0] != 'g' {
			continue
		}
		n, err := strconv.Atoi(name[1:])
		if err != nil || n < 1 || strconv.Itoa(n) != name[1:] || !IsStore(filepath.Join(dir, name)) {
			continue
		}
		ns = append(ns, n)
	}
	sort.Ints(ns)
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "g" + strconv.Itoa(n)
	}
	return out
}

// Set is an opened directory of session stores. Sessions are found again
// on every call, so a session a proxy or a hook starts while the set is in
// use appears; each store is opened once and reloads its index when it
// changes on disk. Safe for concurrent use.
type Set struct {
	root string
	opts contextfold.Options

	// only is the store directory of the one session the set is
	// restricted to (Set.Only); "" for every session below root.
	only string

	mu     sync.Mutex
	stores map[string]*contextfold.Store // by store directory
}

// Open returns the set of the session stores below root, made absolute
// (Root, and each session's Dir, are absolute paths). root may hold no
// session yet (a project whose hooks have not folded a session, a proxy
// not started): sessions are found at each call. Errors: root is a store
// (not a directory of session stores), or Find's.
func Open(root string, opts contextfold.Options) (*Set, error) {
	if IsStore(root) {
		return nil, fmt.Errorf("%s is a store, not a directory of session stores; give the store itself as --dir, or the directory that holds the session stores", root)
	}
	if _, err := Find(root); err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs // store paths in listings and printed commands work from any directory
	}
	return &Set{root: root, opts: opts, stores: map[string]*contextfold.Store{}}, nil
}

// Root is the directory the set was opened on.
func (s *Set) Root() string { return s.root }

// Find lists the set's sessions now: Find's below Root, or, once Only
// restricted the set, that one session (none while its store is gone).
func (s *Set) Find() ([]Session, error) {
	ss, err := Find(s.root)
	if err != nil || s.only == "" {
		return ss, err
	}
	for _, x := range ss {
		if x.Dir == s.only {
			return []Session{x}, nil
		}
	}
	return nil, nil
}

// Only restricts the set, for good, to the session id names (Resolve
// over the sessions now below Root: its whole ID, a proxy session's name
// alone, or a unique start of an ID), and returns it. The session is kept
// by its store directory, so a prefix that would name another session
// later still means this one. Every other method then sees that session
// alone: Sessions lists it, Recall and Scan without an id search it, and
// an id naming another session is unknown. Errors as Resolve's. Call it
// before the set is used concurrently.
func (s *Set) Only(id string) (Match, error) {
	m, err := s.Lookup(id)
	if err != nil {
		return Match{}, err
	}
	s.only = m.Dir
	return m, nil
}

// Pinned returns the session Only restricted the set to, as it is listed
// now (while its store is gone, a Session holding its Dir alone), and
// whether Only restricted the set.
func (s *Set) Pinned() (Session, bool) {
	if s.only == "" {
		return Session{}, false
	}
	ss, _ := s.Find()
	if len(ss) == 1 {
		return ss[0], true
	}
	return Session{Dir: s.only}, true
}

// Mixed reports whether the set's sessions now come from more than one
// source (the proxy's beside the hooks'), so that a result line names its
// session's source.
func (s *Set) Mixed() bool {
	ss, _ := s.Find()
	return len(Sources(ss)) > 1
}

// Info describes one session for a listing.
type Info struct {
	Session
	// Nodes counts the archived nodes; TotalTokens their token estimates.
	Nodes, TotalTokens int
	// FirstFoldedAt and LastFoldedAt are the earliest and latest folded_at
	// of its nodes (RFC 3339, UTC as stored); "" for an empty store.
	FirstFoldedAt, LastFoldedAt string
	// Err is why the store could not be read (then the counts are 0).
	Err error
}

// store returns the opened store of session ss.
func (s *Set) store(ss Session) (*contextfold.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stores[ss.Dir]; ok {
		return st, nil
	}
	st, err := contextfold.Open(ss.Dir, s.opts)
	if err != nil {
		return nil, err
	}
	s.stores[ss.Dir] = st
	return st, nil
}

// Sessions lists the sessions with their counts and times, newest first:
// by LastFoldedAt descending, then ID; sessions whose store cannot be read
// come last, by ID, each with its Err.
func (s *Set) Sessions() ([]Info, error) {
	ss, err := s.Find()
	if err != nil {
		return nil, err
	}
	s.prune(ss)
	out := make([]Info, 0, len(ss))
	for _, x := range ss {
		out = append(out, s.info(x))
	}
	sortNewest(out)
	return out, nil
}

// prune forgets the opened stores of sessions no longer found (removed
// from the directory), so their indexes do not stay in memory.
func (s *Set) prune(found []Session) {
	keep := make(map[string]bool, len(found))
	for _, x := range found {
		keep[x.Dir] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for dir := range s.stores {
		if !keep[dir] {
			delete(s.stores, dir)
		}
	}
}

func sortNewest(in []Info) {
	sort.SliceStable(in, func(i, j int) bool {
		a, b := in[i], in[j]
		if (a.Err == nil) != (b.Err == nil) {
			return a.Err == nil
		}
		if a.LastFoldedAt != b.LastFoldedAt {
			return laterTime(a.LastFoldedAt, b.LastFoldedAt)
		}
		return a.ID < b.ID
	})
}

// laterTime reports whether RFC 3339 time a is after b (a time that does
// not parse sorts as the zero time; equal instants by the text).
func laterTime(a, b string) bool {
	ta, _ := time.Parse(time.RFC3339Nano, a)
	tb, _ := time.Parse(time.RFC3339Nano, b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a > b
}

func (s *Set) info(x Session) Info {
	in := Info{Session: x}
	st, err := s.store(x)
	if err == nil {
		err = st.CheckMoved()
	}
	var es []*contextfold.Entry
	if err == nil {
		es, err = st.EntriesShared()
	}
	if err != nil {
		in.Err = err
		return in
	}
	in.Nodes = len(es)
	for _, e := range es {
		in.TotalTokens += e.TokenEstimate
		if e.FoldedAt == "" {
			continue
		}
		if in.FirstFoldedAt == "" || laterTime(in.FirstFoldedAt, e.FoldedAt) {
			in.FirstFoldedAt = e.FoldedAt
		}
		if in.LastFoldedAt == "" || laterTime(e.FoldedAt, in.LastFoldedAt) {
			in.LastFoldedAt = e.FoldedAt
		}
	}
	return in
}

// How an id named its session (Match.How).
const (
	// ByID: the id is the session's whole ID.
	ByID = "id"
	// ByName: the id is a proxy session's name alone ("s-067b…", as its
	// request log prints it), which has one store ("s-067b…/g1").
	ByName = "name"
	// ByPrefix: the id is the start of one session's ID, and of no other.
	ByPrefix = "prefix"
)

// Match is the session an id names (Resolve).
type Match struct {
	Session
	// How is how the id named it: ByID, ByName or ByPrefix.
	How string
	// Alike are the proxy's stores of a session named as the hooks'
	// session the id names exactly ("<id>/g1", …): a proxy given the hooks'
	// session id as its session writes there, and only "<id>/gN" reaches
	// them.
	Alike []Session
}

// AmbiguousError is an id that is the start of several sessions' IDs, or
// a proxy session's name alone when that session has several stores.
type AmbiguousError struct {
	// Root is the directory of session stores; ID the id given.
	Root, ID string
	// Candidates are the sessions the id may mean, by ID.
	Candidates []Session
	// Generations is true when the candidates are the stores of one proxy
	// session named ID (one per history the client sent).
	Generations bool
}

// MaxCandidates is how many candidates an AmbiguousError's message names.
const MaxCandidates = 10

func (e *AmbiguousError) Error() string {
	var names []string
	for i, x := range e.Candidates {
		if i == MaxCandidates {
			names = append(names, fmt.Sprintf("… %d more", len(e.Candidates)-MaxCandidates))
			break
		}
		if e.Generations {
			names = append(names, x.ID)
		} else {
			names = append(names, x.ID+" ("+x.Source+")")
		}
	}
	last := e.Candidates[len(e.Candidates)-1].ID
	if e.Generations {
		return fmt.Sprintf("proxy session %q under %s has %d stores, one per history the client sent: %s; give one of them (e.g. --session %s)", e.ID, e.Root, len(e.Candidates), strings.Join(names, ", "), last)
	}
	return fmt.Sprintf("session %q under %s is ambiguous: it is the start of %d session ids: %s; give more of the id, up to a character that only one of them has there (e.g. --session %s; all of them with their times and counts: contextfold sessions --dir %s)", e.ID, e.Root, len(e.Candidates), strings.Join(names, ", "), e.Candidates[0].ID, e.Root)
}

// Resolve returns the session of ss (Find's, below root) that id names:
//   - the session whose ID is id;
//   - else, when id is a proxy session's name alone (the "s-067b…" its
//     request log prints, without "/g<N>"), that session's only store; a
//     proxy session with several stores (one per history the client sent)
//     is an *AmbiguousError naming them;
//   - else the one session whose ID starts with id (a unique prefix of a
//     long id, such as a Claude Code session's UUID); the prefix must end
//     inside a part of the ID, not just before a '/' ("sessions" is not a
//     prefix of "sessions/abc"), and an id that starts several sessions'
//     IDs is an *AmbiguousError naming them with their sources.
//
// An unknown id is an error that names the known ones (at most 10) and
// the command that lists them. Resolve reads nothing: it is deterministic
// in ss.
func Resolve(root string, ss []Session, id string) (Match, error) {
	if id == "" {
		return Match{}, fmt.Errorf("no session given: give a session's id (the sessions under %s: contextfold sessions --dir %s)", root, root)
	}
	for _, x := range ss {
		if x.ID == id {
			m := Match{Session: x, How: ByID}
			if x.Source == SourceHooks {
				m.Alike = generationsOf(ss, id)
			}
			return m, nil
		}
	}
	if gens := generationsOf(ss, id); len(gens) == 1 {
		return Match{Session: gens[0], How: ByName}, nil
	} else if len(gens) > 1 {
		return Match{}, &AmbiguousError{Root: root, ID: id, Candidates: gens, Generations: true}
	}
	var pre []Session
	for _, x := range ss {
		if len(x.ID) > len(id) && strings.HasPrefix(x.ID, id) && x.ID[len(id)] != '/' {
			pre = append(pre, x)
		}
	}
	if len(pre) == 1 {
		return Match{Session: pre[0], How: ByPrefix}, nil
	}
	if len(pre) > 1 {
		return Match{}, &AmbiguousError{Root: root, ID: id, Candidates: pre}
	}
	if len(ss) == 0 {
		return Match{}, fmt.Errorf("no session %q under %s: it holds no session store yet (the hooks' Stop and the proxy's first fold event write them)", id, root)
	}
	ids := make([]string, 0, 10)
	for i, x := range ss {
		if i == 10 {
			ids = append(ids, fmt.Sprintf("… %d more", len(ss)-10))
			break
		}
		ids = append(ids, x.ID)
	}
	return Match{}, fmt.Errorf("no session %q under %s; the sessions are: %s (with their times and counts: contextfold sessions --dir %s, or the MCP tool list_sessions)", id, root, strings.Join(ids, ", "), root)
}

// generationsOf returns the proxy's stores name/g1, name/g2, … among ss.
func generationsOf(ss []Session, name string) []Session {
	var gens []Session
	for _, x := range ss {
		if rest, ok := strings.CutPrefix(x.ID, name+"/"); ok && name != "" && x.Source == SourceProxy && !strings.Contains(rest, "/") {
			gens = append(gens, x)
		}
	}
	return gens
}

// Lookup is Resolve over the sessions now below the set's root.
func (s *Set) Lookup(id string) (Match, error) {
	ss, err := s.Find()
	if err != nil {
		return Match{}, err
	}
	return Resolve(s.root, ss, id)
}

// Store returns the store of the session id names (Resolve: its whole ID
// from Sessions, a proxy session's name alone, or a unique prefix of an
// ID), and that session; errors as Resolve's.
func (s *Set) Store(id string) (*contextfold.Store, Session, error) {
	m, err := s.Lookup(id)
	if err != nil {
		return nil, Session{}, err
	}
	st, err := s.store(m.Session)
	return st, m.Session, err
}

// Failure is a session whose store could not be searched, and why.
type Failure struct {
	Session
	Err error
}

// Searched says which sessions a search read: how many, and the ones whose
// store could not be read (by ID), which were left out.
type Searched struct {
	Sessions int
	Failures []Failure
	// Named is the session the id of a search in one session named
	// (Resolve: its whole ID, whatever start of it was given); zero for a
	// search of every session.
	Named Session
}

// searchable returns the sessions to search: the one named id, or all of
// them ("" id) newest first, with the ones that cannot be read as failures.
func (s *Set) searchable(id string) ([]Info, []Failure, error) {
	if id != "" {
		_, x, err := s.Store(id)
		if err != nil {
			return nil, nil, err
		}
		in := s.info(x)
		if in.Err != nil {
			return nil, nil, fmt.Errorf("session %s (%s): %w", x.ID, x.Dir, in.Err)
		}
		return []Info{in}, nil, nil
	}
	all, err := s.Sessions()
	if err != nil {
		return nil, nil, err
	}
	var ok []Info
	var bad []Failure
	for _, in := range all {
		if in.Err != nil {
			bad = append(bad, Failure{in.Session, in.Err})
		} else {
			ok = append(ok, in)
		}
	}
	return ok, bad, nil
}

// RecallHit is a recall candidate with the session it came from.
type RecallHit struct {
	Session
	contextfold.RecallHit
}

// Recall runs match.Recall in the session id, or in every session ("" id),
// and merges the candidates: by score descending, then the newest session
// first (Sessions' order), then each session's own order. In one session
// (the one id names, or the only one read) the candidates are that
// session's own recall, in match.Recall's order. Status labels
// (latest_chronological, …) are those of each candidate's own session.
// Scores of different sessions are each store's own (ranked scores weigh
// terms by their rarity in that store). A session that fails is listed in
// Searched.Failures, the others are searched; with an id, its failure is
// the error.
func (s *Set) Recall(id, query string, mode match.Mode) ([]RecallHit, Searched, error) {
	ins, bad, err := s.searchable(id)
	if err != nil {
		return nil, Searched{}, err
	}
	var out []RecallHit
	rank := map[string]int{}
	for i, in := range ins {
		st, _ := s.store(in.Session)
		hits, err := match.Recall(st, query, mode)
		if err != nil {
			if id != "" {
				return nil, Searched{}, fmt.Errorf("session %s (%s): %w", in.ID, in.Dir, err)
			}
			bad = append(bad, Failure{in.Session, err})
			continue
		}
		rank[in.ID] = i
		for _, h := range hits {
			out = append(out, RecallHit{in.Session, h})
		}
	}
	if len(rank) > 1 {
		// One session: its own recall, in its own order (coverage
		// tiers, newest first), as match.Recall and the command line
		// give it; sorting by score moved a related node of a higher
		// score above the latest_chronological one.
		sort.SliceStable(out, func(i, j int) bool {
			if out[i].Score != out[j].Score {
				return out[i].Score > out[j].Score
			}
			return rank[out[i].ID] < rank[out[j].ID]
		})
	}
	sortFailures(bad)
	sr := Searched{Sessions: len(rank), Failures: bad}
	if id != "" {
		sr.Named = ins[0].Session
	}
	return out, sr, nil
}

func sortFailures(f []Failure) {
	sort.Slice(f, func(i, j int) bool { return f[i].ID < f[j].ID })
}

// ScanPick is a scan pick with the session it came from.
type ScanPick struct {
	Session
	contextfold.ScanPick
}

// ScanResult is a scan over one session or all of them.
type ScanResult struct {
	QueryTerms []string
	// Selected are the picks admitted within BudgetTokens, in admission
	// order; Dropped the picks that did not fit.
	Selected, Dropped []ScanPick
	// BudgetTokens is the per-turn budget: the session's, or across all
	// sessions the smallest of theirs (one turn's hydration, however many
	// sessions it draws from). UsedTokens is the cost of Selected.
	BudgetTokens, UsedTokens float64
}

// Scan runs match.Scan in the session id, or in every session ("" id). In
// one session it is that session's scan. Across sessions, each session's
// selected picks are merged by score descending, then the newest session
// first, then each session's pick order, and admitted while their cost
// (capped at the budget) fits the smallest per-turn budget among the
// sessions; the first is always admitted, as in one store. Each pick's cost
// is its own store's (min of its tokens, per-call cap, per-turn budget), so
// the per-call bound of every hydration is that of its store. Failures as
// Recall.
func (s *Set) Scan(id, prompt string, mode match.Mode) (*ScanResult, Searched, error) {
	ins, bad, err := s.searchable(id)
	if err != nil {
		return nil, Searched{}, err
	}
	res := &ScanResult{QueryTerms: []string{}, Selected: []ScanPick{}, Dropped: []ScanPick{}}
	var cands, dropped []ScanPick
	rank := map[string]int{}
	budget := -1.0
	for i, in := range ins {
		st, _ := s.store(in.Session)
		r, err := match.Scan(st, prompt, mode)
		if err != nil {
			if id != "" {
				return nil, Searched{}, fmt.Errorf("session %s (%s): %w", in.ID, in.Dir, err)
			}
			bad = append(bad, Failure{in.Session, err})
			continue
		}
		rank[in.ID] = i
		if len(r.QueryTerms) > len(res.QueryTerms) {
			res.QueryTerms = r.QueryTerms // the same prompt: the same terms, or none for an empty store's
		}
		if budget < 0 || r.BudgetTokens < budget {
			budget = r.BudgetTokens
		}
		for _, p := range r.Selected {
			cands = append(cands, ScanPick{in.Session, p})
		}
		for _, p := range r.Dropped {
			dropped = append(dropped, ScanPick{in.Session, p})
		}
	}
	sortFailures(bad)
	if budget < 0 {
		budget = 0
	}
	res.BudgetTokens = budget
	byScore := func(ps []ScanPick) {
		sort.SliceStable(ps, func(i, j int) bool {
			if ps[i].Score != ps[j].Score {
				return ps[i].Score > ps[j].Score
			}
			return rank[ps[i].ID] < rank[ps[j].ID]
		})
	}
	if len(rank) == 1 {
		// One session: its own scan, unchanged.
		res.Selected, res.Dropped = append(res.Selected, cands...), append(res.Dropped, dropped...)
		for _, p := range cands {
			res.UsedTokens += p.TokenCost
		}
		sr := Searched{Sessions: 1, Failures: bad}
		if id != "" {
			sr.Named = ins[0].Session
		}
		return res, sr, nil
	}
	byScore(cands)
	for i, p := range cands {
		if p.TokenCost > budget {
			p.TokenCost = budget
		}
		if i == 0 || res.UsedTokens+p.TokenCost <= budget {
			res.Selected = append(res.Selected, p)
			res.UsedTokens += p.TokenCost
		} else {
			dropped = append(dropped, p)
		}
	}
	byScore(dropped)
	res.Dropped = append(res.Dropped, dropped...)
	return res, Searched{Sessions: len(rank), Failures: bad}, nil
}
