package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/match"
)

// sessionSet opens the directory the global flags name as a directory of
// session stores (the proxy's --dir, the hooks' .contextfold or its
// sessions/; package sessiondir): nil, nil when it is a database, a store,
// or holds no session store.
func (g *globals) sessionSet() (*sessiondir.Set, error) {
	if g.storeURL() != "" {
		return nil, nil
	}
	ss, err := sessiondir.Find(g.storeDir())
	if err != nil || len(ss) == 0 {
		return nil, err
	}
	return sessiondir.Open(g.storeDir(), g.storeOptions())
}

// sessionCommands are the commands that read or change one store and take
// --session ID, with whether a run changes the store (repair only with
// --apply). Given --session, the store becomes that session's store of the
// directory of session stores --dir names (globals.pickSession), as if
// --dir named the store itself, and every command they print names it.
var sessionCommands = map[string]func(*cobra.Command) bool{
	"hydrate": reads, "scan": reads, "recall": reads, "status": reads, "steps": reads,
	"validate": reads, "scrub-check": reads, "ui": reads, "export": reads,
	"repair": func(c *cobra.Command) bool { apply, _ := c.Flags().GetBool("apply"); return apply },
	"evict":  writes, "compact": writes,
}

func reads(*cobra.Command) bool  { return false }
func writes(*cobra.Command) bool { return true }

// addSessionFlag adds --session to c when it is one of sessionCommands.
func addSessionFlag(c *cobra.Command) {
	if _, ok := sessionCommands[c.Name()]; !ok {
		return
	}
	const where = "the session ID of the directory of session stores --dir names (default ./.contextfold: a project's, with the Claude Code hooks; or the proxy's --dir)"
	usage := "read " + where + ": its id as contextfold sessions lists it, the first characters of one id alone (e.g. of a UUID), or a proxy session's name alone (s-…, as its log prints it) for its only store"
	if c.Name() == "repair" {
		usage = "repair " + where + ": its id as contextfold sessions lists it (without --apply the first characters of one id alone will do)"
	} else if sessionCommands[c.Name()](c) {
		usage = "change the store of " + where + ": its whole id as contextfold sessions lists it (a command that writes takes no prefix)"
	}
	c.Flags().String("session", "", usage+`; --json output names it first, "session": {"id", "source", "dir"}`)
}

// pickSession, run before every command, makes the store of a command of
// sessionCommands given --session ID the named session's store of the
// directory of session stores the global flags name (sessiondir.Resolve:
// its id, a proxy session's name alone, or a unique start of an id), so
// the command (and every command it prints) reads that store as if --dir
// named it. A command that writes takes the whole id only: a prefix that
// names one session today may name another tomorrow, and a write cannot be
// taken back. A prefix, a proxy session's name alone, and a hooks session
// whose id is also a proxy session's name are named in a note on stderr.
func (g *globals) pickSession(cmd *cobra.Command) error {
	writesNow, ok := sessionCommands[cmd.Name()]
	f := cmd.Flags().Lookup("session")
	if !ok || f == nil || !f.Changed || cmd.Parent() != cmd.Root() {
		return nil
	}
	id := f.Value.String()
	if id != "" && g.storeURL() != "" {
		return usagef("--session %s: the store is a PostgreSQL session (--store or $%s); pick its session with ?session=NAME in the URL instead (the sessions: contextfold sessions)", id, EnvStore)
	}
	m, err := g.resolveSession(cmd, g.storeDir(), "--dir", id, writesNow(cmd))
	if err != nil {
		return err
	}
	g.dir, g.store = m.Dir, ""
	g.picked = &m.Session
	return nil
}

// resolveSession resolves --session id in dir, the directory of session
// stores that flag (--dir, or import's DIR argument) names, for command
// cmd (sessiondir.Resolve: a session's whole id, a proxy session's name
// alone, or a unique start of an id); write says the command changes
// what it picks (or writes what it picks into a store that cannot be
// emptied again: import), and then only the whole id is taken. A start of
// an id, a proxy session's name alone, and a hooks session whose id is
// also a proxy session's name are named in a note on stderr. Refused:
// an empty id, dir a store or holding no session store, an unknown or
// ambiguous id (*sessiondir.AmbiguousError, wrapped).
func (g *globals) resolveSession(cmd *cobra.Command, dir, flag, id string, write bool) (sessiondir.Match, error) {
	if id == "" {
		return sessiondir.Match{}, usagef("--session is empty: give a session's id (the sessions and their ids: contextfold sessions --dir DIR)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	if sessiondir.IsStore(dir) {
		return sessiondir.Match{}, usagef("--session %s: %s is one store, not a directory of session stores; leave out --session to read it, or give %s the directory that holds the sessions (a project's .contextfold, the proxy's --dir)", id, abs, flag)
	}
	ss, err := sessiondir.Find(abs)
	if err != nil {
		return sessiondir.Match{}, err
	}
	if len(ss) == 0 {
		why := "holds no session store yet (the hooks' Stop and the proxy's first fold event write them)"
		if _, err := os.Stat(dir); err != nil {
			why = "does not exist"
		}
		hint := g.storeHint()
		if flag != "--dir" {
			hint = "check " + flag
		}
		return sessiondir.Match{}, usagef("--session %s: %s %s; %s", id, abs, why, hint)
	}
	m, err := sessiondir.Resolve(abs, ss, id)
	if err != nil {
		return sessiondir.Match{}, fmt.Errorf("--session: %w", err)
	}
	if write && m.How != sessiondir.ByID {
		what := "changes the session's store"
		if cmd.Name() == "import" {
			what = "writes the session into a database session that no command empties again"
		}
		return sessiondir.Match{}, usagef("--session %s: %s %s, so it takes the session's whole id as contextfold sessions lists it, not the start of one or a proxy session's name alone; here: --session %s (%s session, store %s)", id, cmd.CommandPath(), what, m.ID, m.Source, m.Dir)
	}
	stderr := cmd.ErrOrStderr()
	if m.How != sessiondir.ByID {
		fmt.Fprintf(stderr, "contextfold: note: --session %s is session %s (%s): reading its store %s\n", id, m.ID, m.Source, m.Dir)
	}
	if len(m.Alike) > 0 {
		alike := make([]string, len(m.Alike))
		for i, x := range m.Alike {
			alike[i] = x.ID
		}
		fmt.Fprintf(stderr, "contextfold: note: --session %s is the hooks' session; the proxy's session of the same name is %s (--session %s)\n", m.ID, strings.Join(alike, ", "), alike[len(alike)-1])
	}
	return m, nil
}

// pickOneError is the error of a command of sessionCommands run on a
// directory of session stores dir holding sessions ss without --session:
// it says what the directory is, and names the sessions' count and
// sources, the --session to give (the whole id of the one written last; a
// command that writes takes no other), that session's store as --dir, and
// the command that lists them.
func pickOneError(dir string, ss []sessiondir.Session) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	id := latestSession(ss)
	store := ss[0].Dir
	for _, x := range ss {
		if x.ID == id {
			store = x.Dir
		}
	}
	if a, err := filepath.Abs(store); err == nil {
		store = a
	}
	return usagef("%s is %s holding %s (%s), not one store: pick one with --session ID (the latest written: --session %s), or give its store as --dir %s; list them: contextfold sessions --dir %s",
		abs, sessionsDirKind(dir, ss), plural(len(ss), "session"), sourceCounts(ss), shellQuote(id), shellQuote(store), shellQuote(abs))
}

// sessionsDirKind says what kind of directory of session stores dir (with
// sessions ss) is, for a message.
func sessionsDirKind(dir string, ss []sessiondir.Session) string {
	if gens := sessiondir.Generations(dir); len(gens) > 0 {
		return "a proxy session directory, whose stores " + strings.Join(gens, ", ") + " are one per history the client sent,"
	}
	n := sessiondir.Sources(ss)
	switch {
	case n[sessiondir.SourceProxy] > 0 && n[sessiondir.SourceHooks] > 0:
		return "a directory of session stores of the proxy and of the Claude Code hooks"
	case n[sessiondir.SourceProxy] == len(ss):
		return "the proxy's directory of sessions"
	case n[sessiondir.SourceHooks] == len(ss) && filepath.Base(dir) == "sessions":
		return "the Claude Code hooks' directory of sessions"
	case n[sessiondir.SourceHooks] == len(ss):
		return "a project directory of the Claude Code hooks, whose stores are sessions/<session_id>,"
	}
	return "a directory of session stores"
}

// onlySession makes the store, when the global flags name a directory of
// session stores that holds exactly one (a project's .contextfold after
// the hooks' first session, a proxy's --dir after its first fold event),
// that session's store, with a note on stderr naming it: the read-only
// commands (hydrate, status, steps, validate, scrub-check, ui) read it as
// the MCP tool fetch_archived_node does without a session. With several
// sessions it does nothing (opening the directory as a store then names
// them and --session). After --session it does nothing either (the store
// is then that session's, not a directory of them). Commands that write
// (evict, repair --apply, compact) never call it.
func (g *globals) onlySession(cmd *cobra.Command) error {
	set, err := g.sessionSet()
	if err != nil || set == nil {
		return err
	}
	ss, err := sessiondir.Find(set.Root())
	if err != nil || len(ss) != 1 {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: note: %s is a directory of session stores with one session, %s: reading its store %s\n", set.Root(), ss[0].ID, ss[0].Dir)
	g.dir, g.store = ss[0].Dir, ""
	g.picked = &ss[0]
	return nil
}

// failuresOut names, on stderr, the sessions a search could not read; it
// is an error when no session could be read at all.
func failuresOut(stderr io.Writer, sr sessiondir.Searched) error {
	for _, f := range sr.Failures {
		fmt.Fprintf(stderr, "contextfold: warning: session %s (%s) not searched: %s\n", f.ID, f.Dir, errText(f.Err))
	}
	if sr.Sessions == 0 && len(sr.Failures) > 0 {
		f := sr.Failures[0]
		return fmt.Errorf("no session store could be read (%d failed; the first, %s: %w); run contextfold validate --dir %s", len(sr.Failures), f.ID, f.Err, shellQuote(f.Dir))
	}
	return nil
}

func failuresJSON(sr sessiondir.Searched) []map[string]any {
	out := []map[string]any{}
	for _, f := range sr.Failures {
		out = append(out, map[string]any{"session": f.ID, "source": f.Source, "store": f.Dir, "error": errText(f.Err)})
	}
	return out
}

// recallSessions is recall over every session of set: at most limit
// candidates (-1: all), each with its session.
func recallSessions(cmd *cobra.Command, g *globals, set *sessiondir.Set, query string, mode func(*contextfold.Store) (match.Mode, error), limit int) error {
	m, err := sessionsMode(cmd, mode)
	if err != nil {
		return err
	}
	hits, sr, err := set.Recall("", query, m)
	if err != nil {
		return err
	}
	omitted := 0
	if limit > 0 && len(hits) > limit {
		omitted = len(hits) - limit
		hits = hits[:limit]
	}
	out := cmd.OutOrStdout()
	if g.jsonOut {
		rows := make([]map[string]any, len(hits))
		for i, h := range hits {
			rows[i] = map[string]any{"session": h.ID, "source": h.Source, "store": h.Dir, "step_id": h.StepID, "status": h.Status, "coverage": h.Coverage, "score": h.Score, "summary": h.Summary, "evicted": h.Evicted}
		}
		// query_terms and match as scan --json across sessions gives them
		// (and the MCP tool its terms): what was looked up, secrets redacted.
		terms := echoTerms(query, contextfold.RecallTerms(query))
		if terms == nil {
			terms = []string{}
		}
		doc := map[string]any{"candidates": rows, "omitted": omitted, "sessions_searched": sr.Sessions, "failed_sessions": failuresJSON(sr),
			"query_terms": terms, "match": string(m)}
		if m == match.Ranked && len(hits) == 0 {
			// The text's below-cut-off hint, as a number.
			if ex, _, err := set.Recall("", query, match.Exact); err == nil {
				doc["exact_matches"] = len(ex)
			}
		}
		if err := writeJSON(out, doc); err != nil {
			return err
		}
		return failuresOut(cmd.ErrOrStderr(), sr)
	}
	fmt.Fprintf(out, "searched %s under %s\n", plural(sr.Sessions, "session"), set.Root())
	if len(hits) == 0 {
		fmt.Fprintln(out, "no archived turn matches")
		if m == match.Ranked {
			if ex, _, err := set.Recall("", query, match.Exact); err == nil {
				belowCutoffHint(out, len(ex), "recall")
			}
		}
	}
	mixed := set.Mixed()
	for _, h := range hits {
		fmt.Fprintf(out, "session %s  step %-6d %-21s coverage %d  score %d  %s\n", sessionLabel(h.Session, mixed), h.StepID, h.Status, h.Coverage, h.Score, preview(h.Summary, 70))
	}
	if omitted > 0 {
		fmt.Fprintf(out, "… %d more candidates left out (--limit %d); list more with --limit N (-1: all), or recall in one session: --session ID\n", omitted, limit)
	}
	if len(hits) > 0 {
		fmt.Fprintf(out, "read one: contextfold hydrate STEP --dir %s --session ID (the first: contextfold hydrate %d --dir %s --session %s)\n",
			shellQuote(set.Root()), hits[0].StepID, shellQuote(set.Root()), shellQuote(hits[0].ID))
	}
	return failuresOut(cmd.ErrOrStderr(), sr)
}

// sessionsMode is the matching mode across sessions: --match, else ranked
// (each store's own "matching" setting applies to a search in it alone).
func sessionsMode(cmd *cobra.Command, mode func(*contextfold.Store) (match.Mode, error)) (match.Mode, error) {
	if cmd.Flags().Changed("match") {
		return mode(nil)
	}
	return match.Default, nil
}

// scanSessions is scan over every session of set (sessiondir.Set.Scan).
func scanSessions(cmd *cobra.Command, g *globals, set *sessiondir.Set, prompt string, mode func(*contextfold.Store) (match.Mode, error)) error {
	m, err := sessionsMode(cmd, mode)
	if err != nil {
		return err
	}
	res, sr, err := set.Scan("", prompt, m)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if g.jsonOut {
		conv := func(ps []sessiondir.ScanPick) []map[string]any {
			rows := []map[string]any{}
			for _, p := range ps {
				r := map[string]any{"session": p.ID, "source": p.Source, "store": p.Dir, "step_id": p.StepID, "matched_terms": p.MatchedTerms, "token_cost": numberOut(p.TokenCost), "summary": p.Summary}
				if m == match.Ranked {
					r["score"], r["why"] = p.Score, p.Why
				}
				rows = append(rows, r)
			}
			return rows
		}
		doc := map[string]any{"query_terms": echoTerms(prompt, res.QueryTerms), "selected": conv(res.Selected), "dropped": conv(res.Dropped),
			"budget_tokens": numberOut(res.BudgetTokens), "used_tokens": numberOut(res.UsedTokens), "match": string(m),
			"sessions_searched": sr.Sessions, "failed_sessions": failuresJSON(sr)}
		if m == match.Ranked && len(res.Selected) == 0 {
			// The text's below-cut-off hint, as a number.
			if ex, _, err := set.Recall("", prompt, match.Exact); err == nil {
				doc["exact_matches"] = len(ex)
			}
		}
		if err := writeJSON(out, doc); err != nil {
			return err
		}
		return failuresOut(cmd.ErrOrStderr(), sr)
	}
	fmt.Fprintf(out, "searched %s under %s\n", plural(sr.Sessions, "session"), set.Root())
	if len(res.QueryTerms) == 0 {
		fmt.Fprintln(out, "query terms: none (the prompt has no word to look up in the recall index: stop words, greetings and single letters are skipped)")
	} else {
		fmt.Fprintf(out, "query terms: %s\n", strings.Join(echoTerms(prompt, res.QueryTerms), " "))
	}
	if len(res.Selected) == 0 {
		fmt.Fprintln(out, "no cold node matches; nothing would be hydrated")
		if m == match.Ranked {
			if ex, _, err := set.Recall("", prompt, match.Exact); err == nil {
				belowCutoffHint(out, len(ex), "scan")
			}
		}
		return failuresOut(cmd.ErrOrStderr(), sr)
	}
	fmt.Fprintf(out, "would hydrate (%v of %v tokens, the smallest per-turn budget of the sessions):\n", numberOut(res.UsedTokens), numberOut(res.BudgetTokens))
	mixed := set.Mixed()
	for i, p := range res.Selected {
		fmt.Fprintf(out, "  %d. session %s  step %d  [%s]  %v tokens  %s\n", i+1, sessionLabel(p.Session, mixed), p.StepID, strings.Join(p.MatchedTerms, ", "), numberOut(p.TokenCost), preview(p.Summary, 70))
		if m == match.Ranked {
			fmt.Fprintf(out, "     score %.3f: %s\n", p.Score, strings.Join(p.Why, "; "))
		}
	}
	for _, p := range res.Dropped {
		fmt.Fprintf(out, "  dropped: session %s  step %d  [%s]  %v tokens do not fit the per-turn budget\n", sessionLabel(p.Session, mixed), p.StepID, strings.Join(p.MatchedTerms, ", "), numberOut(p.TokenCost))
	}
	fmt.Fprintf(out, "read one: contextfold hydrate STEP --dir %s --session ID (the first: contextfold hydrate %d --dir %s --session %s)\n",
		shellQuote(set.Root()), res.Selected[0].StepID, shellQuote(set.Root()), shellQuote(res.Selected[0].ID))
	return failuresOut(cmd.ErrOrStderr(), sr)
}

// listSessions prints the sessions of a directory of session stores,
// newest first (sessiondir.Set.Sessions).
func listSessions(cmd *cobra.Command, g *globals, set *sessiondir.Set) error {
	ins, err := set.Sessions()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if g.jsonOut {
		rows := []map[string]any{}
		for _, in := range ins {
			r := map[string]any{"session": in.ID, "source": in.Source, "store": in.Dir, "nodes": in.Nodes, "total_tokens": in.TotalTokens,
				"first_folded_at": in.FirstFoldedAt, "last_folded_at": in.LastFoldedAt}
			if in.Err != nil {
				r["error"] = errText(in.Err)
			}
			rows = append(rows, r)
		}
		return writeJSON(out, map[string]any{"root": set.Root(), "sessions": rows})
	}
	if len(ins) == 0 {
		fmt.Fprintf(out, "no session store under %s yet\n", set.Root())
		return nil
	}
	// One header row, then one row per session, columns aligned; a store
	// that cannot be read has its error after its path.
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSOURCE\tNODES\tTOKENS\tFIRST FOLDED\tLAST FOLDED\tSTORE")
	for _, in := range ins {
		if in.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%s  unreadable: %s\n", in.ID, in.Source, in.Dir, oneLine(errText(in.Err)))
			continue
		}
		first, last := in.FirstFoldedAt, in.LastFoldedAt
		if first == "" {
			first, last = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", in.ID, in.Source, in.Nodes, in.TotalTokens, first, last, in.Dir)
	}
	return tw.Flush()
}

// sessionLabel is how a result line names its session: the id, and when
// the directory holds sessions of more than one source (the proxy's beside
// the hooks'), where it came from ("s-1/g1 (proxy)").
func sessionLabel(x sessiondir.Session, mixed bool) string {
	if mixed {
		return x.ID + " (" + x.Source + ")"
	}
	return x.ID
}

// oneLine replaces the tabs and line breaks of s by spaces, for a cell of
// a table printed with text/tabwriter.
func oneLine(s string) string {
	return strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// errText is an error's protocol name (when it has one) and message.
func errText(err error) string {
	if n := contextfold.ErrorName(err); n != "" && !strings.HasPrefix(err.Error(), n) {
		return n + ": " + err.Error()
	}
	return err.Error()
}

// SessionField is the key under which the --json output of a command run on
// one session of a directory of session stores (--session, or the
// directory's only session) names that session: {"id", "source", "dir"}.
const SessionField = "session"

// sessionJSON is the value of SessionField.
type sessionJSON struct {
	// ID is the session's whole id as contextfold sessions lists it
	// (whatever --session gave: a prefix, a proxy session's name alone).
	ID string `json:"id"`
	// Source is where the store came from: hooks, proxy or store.
	Source string `json:"source"`
	// Dir is the session's store directory (absolute).
	Dir string `json:"dir"`
}

// writeOut prints v as writeJSON does. When the store is a session picked
// from a directory of session stores (globals.picked), the output names it
// first, under SessionField: an object gains that key before its own; any
// other value (an array: steps, recall) is wrapped as {"session": …, key:
// v}. Without a picked session the output is writeJSON's, byte for byte.
func (g *globals) writeOut(w io.Writer, key string, v any) error {
	if g.picked == nil {
		return writeJSON(w, v)
	}
	enc := func(x any, prefix string) ([]byte, error) {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		e.SetIndent(prefix, "  ")
		if err := e.Encode(x); err != nil {
			return nil, err
		}
		return bytes.TrimRight(b.Bytes(), "\n"), nil
	}
	sess, err := enc(sessionJSON{ID: g.picked.ID, Source: g.picked.Source, Dir: g.picked.Dir}, "  ")
	if err != nil {
		return err
	}
	body, err := enc(v, "")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("{\n  \"" + SessionField + "\": ")
	b.Write(sess)
	switch {
	case string(body) == "{}":
		b.WriteString("\n}\n")
	case bytes.HasPrefix(body, []byte("{\n")):
		// The object's own keys follow, at the same level.
		b.WriteString(",\n")
		b.Write(body[2:])
		b.WriteString("\n")
	default:
		if body, err = enc(v, "  "); err != nil {
			return err
		}
		k, _ := json.Marshal(key)
		b.WriteString(",\n  ")
		b.Write(k)
		b.WriteString(": ")
		b.Write(body)
		b.WriteString("\n}\n")
	}
	_, err = w.Write(b.Bytes())
	return err
}
