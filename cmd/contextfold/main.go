// Command contextfold is the IPCF-1.1 In-Place Context Folding tool: it folds
// verbose agent turns into a verified cold store, scans prompts against the
// recall index, and hydrates exactly the turns a prompt needs.
//
// This file holds the root command, the global flags, and the one place that
// maps errors to exit codes (spec §6).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/pgstore"
	"github.com/contextfold/contextfold/scrub"
)

// Exit codes (spec §6).
const (
	exitOK              = 0
	exitUsage           = 1 // bad arguments, unreadable input, validation findings
	exitNodeNotFound    = 2
	exitIntegrity       = 3 // including path containment
	exitOrphan          = 4
	exitBrokenReference = 5
)

// globals are the flags every command accepts (before or after its name).
type globals struct {
	dir     string
	store   string // --store: a directory or a postgres:// URL
	jsonOut bool
	noScrub bool
	// picked is the session of a directory of session stores the store
	// was chosen as (--session, or the directory's only session): the
	// --json output of the command names it (globals.writeOut); nil when
	// --dir or --store named the store itself.
	picked *sessiondir.Session
}

// usageError marks an error caused by the command line (exit code 1).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// silentExit carries an exit code for a command that already printed its
// result (validate with findings).
type silentExit struct{ code int }

func (e *silentExit) Error() string { return "exit " + strconv.Itoa(e.code) }

// exitCode maps an error to the spec's exit code.
func exitCode(err error) int {
	var se *silentExit
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &se):
		return se.code
	case errors.Is(err, contextfold.ErrNodeNotFound):
		return exitNodeNotFound
	case errors.Is(err, contextfold.ErrIntegrityCheck):
		return exitIntegrity
	case errors.Is(err, contextfold.ErrOrphanedNode):
		return exitOrphan
	case errors.Is(err, contextfold.ErrBrokenReference):
		return exitBrokenReference
	}
	return exitUsage
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// jsonAsked reports whether the command line asks for --json before any
// "--": an unknown command or flag stops the parse before --json is read
// (`contextfold validate --bogus --json`), and a script that asked for JSON
// must get its error as JSON too.
func jsonAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// run executes the command line and returns the exit code. It is the entry
// point of the tests, which run it in-process and as a subprocess.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{}
	root := newRootCmd(g, stdin, stdout, stderr)
	root.SetArgs(args)
	err := withRemedy(root.Execute())
	if err != nil {
		var se *silentExit
		if !errors.As(err, &se) {
			msg := scrubMessage(err.Error())
			if g.jsonOut || jsonAsked(args) {
				doc := map[string]any{"error": msg, "exit_code": exitCode(err)}
				var amb *sessiondir.AmbiguousError
				if errors.As(err, &amb) {
					// --session ID named several sessions: a script picks one.
					cands := make([]map[string]any, len(amb.Candidates))
					for i, x := range amb.Candidates {
						cands[i] = map[string]any{"session": x.ID, "source": x.Source, "store": x.Dir}
					}
					doc["candidates"] = cands
				}
				writeJSON(stderr, doc)
			} else {
				fmt.Fprintln(stderr, "contextfold: "+msg)
			}
		}
	}
	return exitCode(err)
}

// scrubMessage is an error message with the secrets it quotes redacted: a
// message names a bad argument or quotes the input it could not read (a
// step id, the start of a file that is not JSON), and what the command
// printed reaches a terminal, a log or an agent's transcript on disk.
func scrubMessage(msg string) string {
	sc, err := scrub.New()
	if err != nil {
		return msg
	}
	return sc.Scrub(msg).Text
}

func newRootCmd(g *globals, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "contextfold",
		Short: "Fold verbose agent turns into a verified cold store and page them back in on demand (IPCF-1.1)",
		Long: `contextfold implements IPCF-1.1, the In-Place Context Folding Protocol.

A verbose turn (tool output, a log, a diff) is folded: stored losslessly as a
cold node on disk and listed in the recall index, while a short summary stays
in the prompt. Before each turn, scan matches the prompt against the index and
hydrates the right cold nodes (SHA-256 verified, bounded per call and per
turn) into that turn only; evict records that they left again.

The store is the one given by --store (a directory, or a PostgreSQL session
postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME), else the directory given
by --dir, else $CONTEXTFOLD_STORE, else $CONTEXTFOLD_DIR, else ./.contextfold.

The Claude Code hooks and the proxy keep one store per session instead: a
project's .contextfold then holds sessions/<session_id>/ (the hooks), and the
proxy's --dir <session>/g<N>/ (both, when the proxy's --dir is .contextfold).
Given such a directory, sessions lists its sessions, scan and recall search
all of them, and every command that reads or changes one store (hydrate,
status, steps, validate, ui, export, scrub-check, repair, evict, compact)
takes --session ID: the id sessions lists, or, for a command that only
reads, its first characters when no other id starts so (--session 5a9d).
The read-only ones read the directory's only session without it. Their
--json output then names the session read, first: "session": {"id",
"source", "dir"} (an array, as steps and recall print, is wrapped:
{"session": …, "steps": […]}); given --dir or --store a store, it is as
before. ingest makes a transcript a session of such a directory
(sessions/<id>, the id the transcript's or --session's); fold writes into a
store, not into a directory of them: give --dir a session's store.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version() + " (IPCF-1.1, " + contextfold.ProjectionVersion + ")",
		Example: `  contextfold demo
  contextfold fold 137 "PostgreSQL port reverted to 5433" --file step137.log
  contextfold scan "What port are we using for PostgreSQL?"
  contextfold hydrate 137 --json`,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.dir, "dir", "", "store directory (default $CONTEXTFOLD_STORE, else $CONTEXTFOLD_DIR, else ./.contextfold)")
	root.PersistentFlags().StringVar(&g.store, "store", "", "store: a directory, or postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME (NAME: 1-128 ASCII letters, digits, '.', '_', '-', '/', starting with a letter or digit; without ?session=, the session \"default\"); without --store: --dir, else $CONTEXTFOLD_STORE")
	root.PersistentFlags().BoolVar(&g.jsonOut, "json", false, "print machine-readable JSON")
	root.PersistentFlags().BoolVar(&g.noScrub, "no-scrub", false, "store payloads as given, without secret scrubbing (the reference-identical profile; also CONTEXTFOLD_SCRUB=off)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if g.store != "" && g.dir != "" {
			return usagef("--store and --dir both name the store: give one of them (--store takes a directory or a postgres:// URL)")
		}
		if err := checkStoreScheme("--store", g.store); err != nil {
			return err
		}
		if g.store == "" && g.dir == "" {
			if err := checkStoreScheme("$"+EnvStore, os.Getenv(EnvStore)); err != nil {
				return err
			}
		}
		return g.pickSession(cmd)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if near := nearFlag(c, err); near != "" {
			// A mistyped flag (--sesion, --jsno): name the one meant.
			err = fmt.Errorf("%v (did you mean --%s?)", err, near)
		}
		if (strings.HasPrefix(err.Error(), "unknown shorthand flag") || strings.HasPrefix(err.Error(), "unknown flag")) && takesDashedArgs[c.Name()] {
			// A negative step id or a prompt starting with '-' reads as a flag.
			return usagef("%v; to pass a negative step id or text that starts with '-', put -- before it (e.g. '%s -- -1') (see '%s --help')", err, c.CommandPath(), c.CommandPath())
		}
		return usagef("%v (see '%s --help')", err, c.CommandPath())
	})
	for _, mk := range commands {
		c := mk(g)
		addSessionFlag(c)
		root.AddCommand(c)
	}
	return root
}

// nearFlag returns, for an "unknown flag: --NAME" error of command c, the
// flag of c (its own or a global one) whose name is closest to NAME, at
// most 2 edits away (1 for a name of 4 characters or fewer); "" when none
// is, or err is another error. Ties go to the first in name order.
func nearFlag(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok || name == "" {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	limit := 2
	if len(name) <= 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD && !f.Hidden {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of two neighbours that turn a into b (the
// optimal string alignment distance: "jsno" is 1 from "json").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// takesDashedArgs are the commands whose arguments may start with '-' (a
// negative step id, a prompt or query, a summary): an unknown flag there may
// be one, so the error says to put -- before it; the other commands only
// name the flag and their --help.
var takesDashedArgs = map[string]bool{"fold": true, "hydrate": true, "evict": true, "scan": true, "recall": true, "ingest": true, "import": true}

// commands lists the constructors of the subcommands; each command file adds
// itself in an init function.
var commands []func(*globals) *cobra.Command

// storeDir resolves the store directory: --dir, else $CONTEXTFOLD_DIR, else
// ./.contextfold.
func (g *globals) storeDir() string {
	if g.store != "" && !pgstore.IsURL(g.store) {
		return g.store
	}
	if g.dir != "" {
		return g.dir
	}
	if d := os.Getenv(EnvStore); d != "" && !pgstore.IsURL(d) {
		return d
	}
	if d := os.Getenv(contextfold.EnvStoreDir); d != "" {
		return d
	}
	return contextfold.DefaultStoreDir
}

// storeURL returns the database store URL the flags and environment
// choose ("" for a directory store): --store, else (without --dir)
// $CONTEXTFOLD_STORE, when it is a postgres:// URL.
func (g *globals) storeURL() string {
	if g.store != "" {
		if pgstore.IsURL(g.store) {
			return g.store
		}
		return ""
	}
	if g.dir == "" {
		if v := os.Getenv(EnvStore); pgstore.IsURL(v) {
			return v
		}
	}
	return ""
}

// checkStoreScheme refuses a store value (of --store or $CONTEXTFOLD_STORE,
// named by what) that starts with a URL scheme other than postgres:// or
// postgresql:// (file://, mysql://, a mistyped postgress://): it would
// otherwise name a relative directory ("file:/…") in the working
// directory. Only the scheme is shown, never the rest (it may hold a
// password). A path with "://" further on (./a://b) is a directory.
func checkStoreScheme(what, v string) error {
	if pgstore.IsURL(v) {
		return nil
	}
	scheme, _, ok := strings.Cut(v, "://")
	if !ok || scheme == "" || !isURLScheme(scheme) {
		return nil
	}
	return usagef("%s %s://…: not a store this build can open; %s takes a directory path or a PostgreSQL URL postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME (or postgresql://, in lower case); for a directory, give its path (not a file:// URL)", what, scheme, what)
}

// isURLScheme reports whether s has the form of a URL scheme (RFC 3986: a
// letter, then letters, digits, '+', '-' or '.').
func isURLScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// EnvStore names the store like --store: a directory or a postgres:// URL.
const EnvStore = "CONTEXTFOLD_STORE"

// openStore opens the store chosen by the global flags.
func (g *globals) openStore() (*contextfold.Store, error) {
	if u := g.storeURL(); u != "" {
		return pgstore.OpenURL(u, g.storeOptions())
	}
	return contextfold.Open(g.storeDir(), g.storeOptions())
}

// openStoreToWrite is openStore for a command that folds into the store
// (fold; ingest when no session is its target: ingestTarget): a directory
// store that is a directory of session stores
// (a project's .contextfold holding the hooks' sessions/, the proxy's
// --dir) is refused, naming a session's store to give as --dir. Folding
// there would make the directory a store of its own, which hides every
// session below it from sessions, scan, recall and the MCP server; and a
// write does not guess which session is meant.
func (g *globals) openStoreToWrite(cmd *cobra.Command) (*contextfold.Store, error) {
	if g.storeURL() == "" && !isStore(g.storeDir()) {
		if ss, _ := sessiondir.Find(g.storeDir()); len(ss) > 0 {
			abs, err := filepath.Abs(g.storeDir())
			if err != nil {
				abs = g.storeDir()
			}
			latest := ss[0]
			for _, x := range ss {
				if x.ID == latestSession(ss) {
					latest = x
				}
			}
			return nil, usagef("%s is a directory of session stores holding %s (%s), not one store: %s folds into one store and does not pick a session; give --dir a session's store (the latest written, session %s: --dir %s), or another directory for a store of its own; list them: contextfold sessions --dir %s",
				abs, plural(len(ss), "session"), sourceCounts(ss), cmd.CommandPath(), latest.ID, shellQuote(latest.Dir), shellQuote(abs))
		}
	}
	return g.openStore()
}

// openReadOnly opens the store chosen by the global flags for a command
// that writes nothing: a database session through pgstore.OpenURLToRead.
func (g *globals) openReadOnly() (*contextfold.Store, error) {
	if u := g.storeURL(); u != "" {
		return pgstore.OpenURLToRead(u, g.storeOptions())
	}
	return contextfold.Open(g.storeDir(), g.storeOptions())
}

// openStoreToRead opens the store for a read-only command; a directory
// that holds files but no store is refused (checkReadableStore), a missing
// one is noted on stderr: a mistyped --dir must not pass unnoticed.
// A database store is opened read-only (pgstore.OpenURLToRead): never
// migrated, and a missing session or schema is refused. A directory of
// session stores holding one session reads that session's store
// (globals.onlySession).
func (g *globals) openStoreToRead(cmd *cobra.Command) (*contextfold.Store, error) {
	if err := g.onlySession(cmd); err != nil {
		return nil, err
	}
	s, err := g.openReadOnly()
	if err == nil && s.Backend() == nil {
		if err := g.checkReadableStore(cmd, s.Dir()); err != nil {
			return nil, err
		}
	} else if err == nil {
		// A mistyped ?session= reads as an empty store: say so.
		if st, serr := s.Status(); serr == nil && st.Total == 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: note: the session %s holds nothing yet (nothing folded); check ?session= in --store or $CONTEXTFOLD_STORE\n", s.Dir())
		}
	}
	return s, err
}

// openStoreToUse is openStoreToRead for a command whose answer names cold
// nodes to read (hydrate, scan, recall, status, steps): a store copied or
// renamed, whose index points into its old directory, is refused with the
// command that fixes it (contextfold.MovedStoreError), so that nothing
// recommends a node that cannot be read.
func (g *globals) openStoreToUse(cmd *cobra.Command) (*contextfold.Store, error) {
	s, err := g.openStoreToRead(cmd)
	if err != nil {
		return nil, err
	}
	if err := s.CheckMoved(); err != nil {
		return nil, err
	}
	return s, nil
}

// openExistingStore opens the store for a command that must not invent one
// (repair --apply, compact, ui, export, evict): a directory that holds neither
// recall_index.json nor cold_nodes/ is refused, since it is most likely a
// mistyped --dir.
// With readOnly (ui, export) a database store is opened as by openReadOnly.
func (g *globals) openExistingStore(readOnly bool) (*contextfold.Store, error) {
	open := g.openStore
	if readOnly {
		open = g.openReadOnly
	}
	s, err := open()
	if err != nil {
		return nil, err
	}
	if s.Backend() == nil && !isStore(s.Dir()) {
		why := "does not exist"
		if _, err := os.Stat(s.Dir()); err == nil {
			why = "holds no recall_index.json and no cold_nodes/"
		}
		if ss, _ := sessiondir.Find(s.Dir()); len(ss) > 0 {
			// ui, export, evict, compact, repair: --session picks one.
			return nil, pickOneError(s.Dir(), ss)
		}
		if h := proxyStoresHint(s.Dir()); h != "" {
			return nil, usagef("no store at %s: the directory %s; %s", s.Dir(), why, h)
		}
		return nil, usagef("no store at %s: the directory %s; %s (a store is made by fold or ingest)", s.Dir(), why, g.storeHint())
	}
	return s, nil
}

// checkReadableStore refuses, for a read-only command, a store directory
// that is not a store: a file, or a directory that is not empty yet holds
// neither recall_index.json nor cold_nodes/ (a project directory given as
// --dir). An empty directory is an empty store; a missing one reads as an
// empty store too (spec: scan of an empty index), with a note on stderr.
func (g *globals) checkReadableStore(cmd *cobra.Command, dir string) error {
	abs, _ := filepath.Abs(dir)
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The spec's empty index (scan of a store that holds nothing yet
		// answers nothing, exit 0): a note only.
		g.noteMissingStore(cmd, dir)
		return nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, syscall.ENOTDIR) {
			return usagef("no store at %s: it is a file, not a directory; %s", abs, g.storeHint())
		}
		return nil // unreadable: the command names the file it cannot read
	case len(ents) > 0 && !isStore(dir) && !holdsStoreFile(dir):
		if cmd.Flags().Lookup("session") != nil {
			// hydrate on a project's .contextfold (or a proxy's --dir)
			// with several sessions: --session is the way, not --dir.
			if ss, _ := sessiondir.Find(dir); len(ss) > 1 {
				return pickOneError(dir, ss)
			}
		}
		if h := proxyStoresHint(dir); h != "" {
			return usagef("no store at %s: the directory holds %s but no recall_index.json and no cold_nodes/; %s", abs, entries(len(ents)), h)
		}
		return usagef("no store at %s: the directory holds %s but no recall_index.json and no cold_nodes/; %s (a store is made by fold or ingest)", abs, entries(len(ents)), g.storeHint())
	}
	return nil
}

// holdsStoreFile reports whether dir holds a file only a store has (a
// policy written before the first fold, a lock, a journal).
func holdsStoreFile(dir string) bool {
	for _, f := range []string{contextfold.PolicyFile, contextfold.SettingsFile, contextfold.EvictionLogFile, contextfold.JournalFile, ".lock"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// isStore reports whether dir holds a store's index or cold node directory.
func isStore(dir string) bool { return sessiondir.IsStore(dir) }

// storeOptions are the store options the global flags select.
func (g *globals) storeOptions() contextfold.Options {
	var o contextfold.Options
	if g.noScrub {
		o.Scrub = contextfold.ScrubOff
	}
	return o
}

// writeJSON prints v as indented JSON without HTML escaping.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseStepID parses the step id argument of command cmd ("hydrate",
// "evict", "fold"; "" for a step id read from a JSON document, where the
// hint about -- does not apply).
func parseStepID(cmd, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return 0, usagef("step id %s is out of range (at most %d)", s, math.MaxInt)
	}
	if err != nil {
		if cmd == "" {
			return 0, usagef("step id %s is not an integer; step ids are the turn's position in the conversation (a whole number, without a fraction or exponent)", s)
		}
		return 0, usagef("step id %q is not an integer; step ids are the turn's position in the conversation (put -- before a negative id, e.g. 'contextfold %s -- -5')", s, cmd)
	}
	return n, nil
}

// noteMissingStore tells a read command's user, on stderr, that the store
// does not exist yet (a mistyped --dir reads as an empty store).
func (g *globals) noteMissingStore(cmd *cobra.Command, dir string) {
	if _, err := os.Stat(dir); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: note: no store at %s yet (nothing folded); %s\n", dir, g.storeHint())
	}
}

// version is the module version of the binary, from its build information.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// entries counts directory entries in English ("1 entry", "2 entries").
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
