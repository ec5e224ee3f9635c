package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// A conversation's lineage: the proxy sessions one client conversation
// went through. A client that rewrites its history starts a new proxy
// session or a new store generation: Claude Code's /compact replaces the
// conversation by a summary (a new first message, so a new derived session
// id), and an edited or rewound conversation diverges (a new generation of
// the same session). The cold nodes folded before stay on disk, but the
// new store holds none of them. The lineage keeps them within reach: when
// the session's own store selects nothing for a human prompt, the stores of
// its earlier lives are scanned, newest first, and hydrated from read-only
// (harness.Config.Earlier). Nothing is written to, or evicted from, an
// earlier store.
//
// Two requests belong to one lineage when they come through the same API
// with the same value of one of LineageHeaders (the client's own
// conversation id) and offer the model the same tools (their names): the
// side requests a client sends under the same id (a title, a summary, a
// sub-agent) offer other tools or none, and form lineages of their own.

// LineageHeaders are the request headers that carry a client's own
// conversation id, in the order they are read: Claude Code's
// X-Claude-Code-Session-Id, Codex's session-id (0.171; session_id in
// earlier releases). Qwen Code 0.24 sends none.
var LineageHeaders = []string{"X-Claude-Code-Session-Id", "Session-Id", "Session_id"}

// LineageDir is the directory, under Options.Dir, of the lineage files:
// one JSON file per lineage, {"sessions": [session ids, oldest first]}. Its
// name cannot be a session's (a session name starts with a letter or a
// digit).
const LineageDir = ".lineage"

// MaxLineageFiles bounds the lineage files kept in LineageDir. A new
// lineage that takes their number past it prunes them down to seven eighths
// of it: first the lineages none of whose sessions has a directory under
// Options.Dir any more (their stores were removed: nothing left to read),
// then the least recently used (by modification time: a file is rewritten
// when a session joins its lineage, and touched when a session of it is
// opened again). A pruned lineage is forgotten: its sessions' stores stay,
// but a later session of that conversation no longer reads them. Each file
// is a few hundred bytes; about three lineages a conversation (its own and
// its side requests').
const MaxLineageFiles = 1024

// MaxEarlierStores bounds the earlier stores a session scans (its own
// earlier generations first, then the lineage's earlier sessions, each
// newest first).
const MaxEarlierStores = 8

// lineageID returns the client's conversation id of a request (the first
// of LineageHeaders it carries), "" when it has none.
func lineageID(h http.Header) (header, value string) {
	for _, k := range LineageHeaders {
		if v := strings.TrimSpace(h.Get(k)); v != "" && len(v) <= 256 {
			return k, v
		}
	}
	return "", ""
}

// toolNames returns the sorted names of the tools a request offers (the
// "tools" array of the three APIs: name, or function.name, or the type of
// a built-in tool), nil when it offers none or they do not parse.
func toolNames(tools []byte) []string {
	if len(tools) == 0 {
		return nil
	}
	var ts []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(tools, &ts) != nil {
		return nil
	}
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		switch {
		case t.Name != "":
			names = append(names, t.Name)
		case t.Function.Name != "":
			names = append(names, t.Function.Name)
		default:
			names = append(names, "type:"+t.Type)
		}
	}
	sort.Strings(names)
	return names
}

// lineageKey is the name of a lineage (its file name; its key in a shared
// backend's lineage table): a digest of the API, the client's conversation
// id and the tools' names (the id itself is never stored).
func lineageKey(api, header, value string, tools []string) string {
	h := sha256.New()
	for _, s := range append([]string{api, strings.ToLower(header), value}, tools...) {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	return "l-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// lineages is the server's record of lineages, read from and written to
// LineageDir. Safe for concurrent use.
type lineages struct {
	dir string
	max int // the bound of the lineage files; 0 means MaxLineageFiles
	mu  sync.Mutex
	mem map[string][]string // key → session ids, oldest first
}

// join puts session id into lineage key (once) and returns the sessions
// that joined it before id, oldest first. A lineage file that cannot be
// read starts the lineage anew; one that cannot be written keeps it in
// memory only (err says so).
func (l *lineages) join(key, id string) (earlier []string, err error) {
	if l.dir == "" {
		// Never the working directory: a proxy without Options.Dir keeps
		// its lineages in its shared backend (SharedLineages) or none.
		return nil, errors.New("no --dir for the lineage files")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mem == nil {
		l.mem = map[string][]string{}
	}
	ids, ok := l.mem[key]
	path := filepath.Join(l.dir, LineageDir, key+".json")
	created := false // the lineage had no file: a new one is written
	if !ok {
		if data, rerr := fsutil.ReadFileMax(path, 1<<20); rerr == nil {
			var f struct {
				Sessions []string `json:"sessions"`
			}
			if json.Unmarshal(data, &f) == nil {
				for _, s := range f.Sessions {
					if validSession.MatchString(s) {
						ids = append(ids, s)
					}
				}
			}
		} else if errors.Is(rerr, fs.ErrNotExist) {
			created = true
		} else {
			err = rerr
		}
	}
	if i := slices.Index(ids, id); i >= 0 {
		l.mem[key] = ids
		// A session of the lineage opened again: the lineage is in use
		// (MaxLineageFiles keeps the most recently used).
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return slices.Clone(ids[:i]), err
	}
	earlier = slices.Clone(ids)
	ids = append(ids, id)
	l.mem[key] = ids
	data, _ := json.Marshal(struct {
		Sessions []string `json:"sessions"`
	}{ids})
	if werr := os.MkdirAll(filepath.Dir(path), 0o755); werr != nil {
		return earlier, werr
	}
	if werr := writeRename(path, append(data, '\n')); werr != nil {
		return earlier, werr
	}
	if created {
		l.prune(key)
	}
	return earlier, err
}

// prune bounds the lineage files (MaxLineageFiles): past the bound, it
// removes those whose sessions are all gone from the store directory, then
// the least recently modified, down to seven eighths of the bound, and
// forgets them in memory too. keep (the lineage just written) stays. It
// runs under l.mu. A file it cannot read or remove is left as it is.
func (l *lineages) prune(keep string) {
	bound := l.max
	if bound <= 0 {
		bound = MaxLineageFiles
	}
	dir := filepath.Join(l.dir, LineageDir)
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		key  string
		mod  time.Time
		gone bool
	}
	var files []file
	for _, de := range des {
		key, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || !strings.HasPrefix(key, "l-") || !de.Type().IsRegular() {
			continue // a temporary file of writeRename, or not ours
		}
		if info, err := de.Info(); err == nil {
			files = append(files, file{key: key, mod: info.ModTime()})
		}
	}
	if len(files) <= bound {
		return
	}
	target := bound - bound/8
	for i := range files {
		if files[i].key == keep {
			continue
		}
		data, err := fsutil.ReadFileMax(filepath.Join(dir, files[i].key+".json"), 1<<20)
		if err != nil {
			continue
		}
		var f struct {
			Sessions []string `json:"sessions"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		files[i].gone = true
		for _, sid := range f.Sessions {
			if !validSession.MatchString(sid) {
				continue
			}
			if _, err := os.Stat(filepath.Join(l.dir, sid)); err == nil {
				files[i].gone = false
				break
			}
		}
	}
	// Gone first, then the least recently used (the key orders files of
	// one modification time, so the same files go on every system).
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if a.gone != b.gone {
			return a.gone
		}
		if !a.mod.Equal(b.mod) {
			return a.mod.Before(b.mod)
		}
		return a.key < b.key
	})
	n := len(files)
	for _, f := range files {
		if n <= target {
			break
		}
		if f.key == keep {
			continue
		}
		if os.Remove(filepath.Join(dir, f.key+".json")) == nil {
			delete(l.mem, f.key)
			n--
		}
	}
}

// earlierNames are the stores a session of lineage earlier (session ids,
// oldest first) may read, newest first: its own earlier generations, then
// each earlier session's generations, at most MaxEarlierStores.
// With Options.Shared, a generation is named by the session and its
// number (dirs holds ""), and the earlier sessions' generations come from
// the shared backend (SharedLineages; none without it).
func (s *Server) earlierNames(id string, gen int, earlier []string) (names []string, dirs []string) {
	add := func(sid string, g int) bool {
		name, dir := sid+"/g"+strconv.Itoa(g), ""
		if s.opts.Shared == nil {
			dir = filepath.Join(s.opts.Dir, sid, "g"+strconv.Itoa(g))
			if _, err := os.Stat(filepath.Join(dir, contextfold.IndexFile)); err != nil {
				return true
			}
		}
		names, dirs = append(names, name), append(dirs, dir)
		return len(names) < MaxEarlierStores
	}
	latest := func(sid string) int { return latestGeneration(filepath.Join(s.opts.Dir, sid)) }
	if s.opts.Shared != nil {
		book, _ := s.opts.Shared.(SharedLineages)
		latest = func(sid string) int {
			if book == nil {
				return 0
			}
			ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
			defer cancel()
			g, err := book.Generation(ctx, sid)
			if err != nil {
				s.log.Warn("contextfold proxy: an earlier session's generation not read", "session", sid, "err", err)
				return 0
			}
			return g
		}
	}
	for g := gen - 1; g >= 1; g-- {
		if !add(id, g) {
			return
		}
	}
	for i := len(earlier) - 1; i >= 0; i-- {
		for g := latest(earlier[i]); g >= 1; g-- {
			if !add(earlier[i], g) {
				return
			}
		}
	}
	return
}

// earlierStores opens, once, the stores of x's earlier lives
// (harness.Config.Earlier). Opening a store reads nothing yet and writes
// nothing: the scan reads its index when it first needs it. It runs under
// x's harness lock and takes s.mu: no holder of s.mu waits for the lock of
// a harness in use (expireSessions drops idle sessions only).
func (s *Server) earlierStores(x *session) []harness.EarlierStore {
	x.earlierMu.Lock()
	defer x.earlierMu.Unlock()
	if x.earlierOpen {
		return x.earlier
	}
	x.earlierOpen = true
	names, dirs := s.earlierNames(x.id, x.gen, x.lineage)
	if s.opts.Shared != nil {
		// The shared backend opens each store once per replica and keeps
		// it: the same Store object the session of that store uses here.
		for _, name := range names {
			sid, g, _ := strings.Cut(name, "/g")
			gen, _ := strconv.Atoi(g)
			st, err := s.opts.Shared.Open(sid, gen)
			if err != nil {
				s.log.Warn("contextfold proxy: an earlier store of the session not opened", "session", x.id, "store", name, "err", err)
				continue
			}
			x.earlier = append(x.earlier, harness.EarlierStore{Name: name, Store: st})
		}
		return x.earlier
	}
	for i, dir := range dirs {
		// A session still in memory lends its store: one Store object per
		// directory in the process, so the ranked index (one per
		// directory) reads the nodes its fold event still holds.
		s.mu.Lock()
		var live *contextfold.Store
		for _, y := range s.sessions {
			if y.dir == dir {
				live = y.h.Store()
			}
		}
		s.mu.Unlock()
		if live != nil {
			x.earlier = append(x.earlier, harness.EarlierStore{Name: names[i], Store: live})
			continue
		}
		st, err := contextfold.Open(dir, contextfold.Options{Clock: s.opts.Clock, SessionID: x.id})
		if err != nil {
			s.log.Warn("contextfold proxy: an earlier store of the session not opened", "session", x.id, "store", names[i], "err", err)
			continue
		}
		x.earlier = append(x.earlier, harness.EarlierStore{Name: names[i], Store: st})
	}
	return x.earlier
}

// joinLineage puts the session in the lineage of req (LineageHeaders and
// its tools), once per session object; the earlier sessions it finds are
// what earlierStores opens. Without a conversation id the session reads
// only its own earlier generations. The lineage is the directory's
// (lineages) or, with Options.Shared, the shared backend's
// (SharedLineages; a backend without it keeps none).
func (s *Server) joinLineage(x *session, st *reqState, req *request) {
	x.earlierMu.Lock()
	defer x.earlierMu.Unlock()
	if x.joined || s.opts.NoLineage {
		return
	}
	x.joined = true
	if st.lineageHeader == "" {
		return
	}
	key := lineageKey(string(req.api), st.lineageHeader, st.lineageValue, toolNames(req.tools))
	var earlier []string
	var err error
	if s.opts.Shared != nil {
		book, ok := s.opts.Shared.(SharedLineages)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		earlier, err = book.JoinLineage(ctx, key, x.id)
		cancel()
		earlier = slices.DeleteFunc(earlier, func(id string) bool { return !validSession.MatchString(id) })
	} else {
		earlier, err = s.lin.join(key, x.id)
	}
	if err != nil {
		st.rec.Warnings = append(st.rec.Warnings, "the conversation's lineage not saved: "+err.Error())
	}
	x.lineage = earlier
}
