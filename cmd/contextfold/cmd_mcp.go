package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/mcpserver"
	"github.com/contextfold/contextfold/proxy"
)

func init() { commands = append(commands, newMCPCmd) }

func newMCPCmd(g *globals) *cobra.Command {
	var httpAddr, only string
	var quiet, sessions bool
	var maxFrame int
	var bodyTimeout time.Duration
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the store to an agent as an MCP server (stdio, or streamable HTTP with --http)",
		Long: `mcp serves the store over the Model Context Protocol, for agents and IDEs that
accept MCP servers but cannot use the proxy.

Tools: recall_archived_nodes, fetch_archived_node (verified, capped per call),
scan_prompt, fold_turn, evict_node, store_status, validate_store.
Resources: contextfold://steps/{step_id} (each cold node, verified) and
contextfold://recall_index, read-only.

By default the server speaks JSON-RPC on stdin/stdout; stdout carries nothing
else, and logs go to stderr. Every line must be one JSON-RPC 2.0 message of at
most --max-frame-bytes; any other line (not JSON, a batch, a bare value, an id
that is not a string or an integer within ±2^53, a longer line) is answered
with a JSON-RPC error and the session goes on. With --http 127.0.0.1:PORT it serves streamable
HTTP at http://127.0.0.1:PORT/mcp (loopback addresses only).

The store is --dir, else $CONTEXTFOLD_DIR, else ./.contextfold. Other processes
may fold into it while the server runs; the index is reloaded when it changes.

When that directory is not a store but a directory of session stores (a
project's .contextfold of the Claude Code hooks, its sessions/, or the
proxy's --dir), the server reads every session, read-only: list_sessions,
and recall_archived_nodes, scan_prompt and fetch_archived_node with an
optional session argument (recall and scan search all sessions without it,
each result naming its session). It offers no fold_turn, evict_node or
resources, and never writes into the sessions' stores. A directory that holds
no session store yet is served so too when it is meant to hold them: named
.contextfold (the hooks' directory, and the default), holding a sessions/
directory, or marked by a proxy (it writes .contextfold-proxy into its --dir
at start), and not a store; sessions are found at every call, so those the
hooks or the proxy fold after the server started are read. A missing or
empty directory is served as one store until a proxy claims it (its mark or
its session stores, and still not a store), then, from the next call, as the
proxy's sessions (tools/list_changed is sent). --sessions serves any
directory so; --sessions=false serves it as one store (fold_turn folds into
it), and is refused when it holds session stores.

A tool's session argument takes what every command's --session takes: a
session's id as list_sessions gives it, the first characters of one id
alone (a start several ids share is refused, naming them), or a proxy
session's name alone (s-…) for its only store; recall and scan given one
name the session read (session, source, store).

--session ID serves one session of that directory alone, read-only (ID as
above, resolved once, at start; stderr names the session and its store):
list_sessions lists it, recall_archived_nodes, scan_prompt and
fetch_archived_node read it without a session argument. To serve one
session's store with fold_turn and the other tools, give that store as
--dir instead.
See docs/mcp-and-hooks.md for host configuration.`,
		Example: `  contextfold mcp --dir ~/project/.contextfold
  CONTEXTFOLD_DIR=/path/to/store contextfold mcp
  contextfold mcp --http 127.0.0.1:7411
  contextfold mcp --dir "$PWD/.contextfold" --sessions
  contextfold mcp --dir "$PWD/.contextfold" --session 5a9d`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxFrame <= 0 {
				return usagef("--max-frame-bytes %d: give a positive number of bytes (default %d)", maxFrame, mcpserver.DefaultMaxFrameBytes)
			}
			if httpAddr != "" && bodyTimeout < 0 {
				return usagef("--body-read-timeout %s is negative; give a duration such as 60s", bodyTimeout)
			}
			logOut := cmd.ErrOrStderr()
			if quiet {
				logOut = io.Discard
			}
			logger := slog.New(g.logHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
			asStore := cmd.Flags().Changed("sessions") && !sessions // --sessions=false
			if cmd.Flags().Changed("session") {
				set, store, err := g.mcpSession(cmd, only, asStore)
				if err != nil {
					return err
				}
				srv := mcpserver.NewSessions(set, mcpserver.Options{Version: buildVersion(), Logger: logger})
				return serveMCP(cmd, g, srv, httpAddr, maxFrame, bodyTimeout, logger, "serving MCP on stdio (one session's store, read-only)", store)
			}
			set, err := g.sessionSet()
			if err != nil {
				return err
			}
			if set != nil && asStore {
				ss, _ := sessiondir.Find(set.Root())
				return usagef("--sessions=false: %s holds %s (a directory of session stores); served as one store, fold_turn would fold beside them: give one session's store as --dir (contextfold sessions --dir %s lists them), or leave out --sessions=false to read them all",
					set.Root(), plural(len(ss), "session store"), shellQuote(set.Root()))
			}
			auto := false
			if set == nil && !sessions && !asStore && g.storeURL() == "" && meantForSessions(g.storeDir()) {
				// The hooks' .contextfold before their first Stop (Claude
				// Code starts its MCP servers first): served as a store,
				// the sessions the hooks fold while it runs were never read.
				sessions, auto = true, true
			}
			if set == nil && sessions {
				if g.storeURL() != "" {
					return usagef("--sessions reads a directory of session stores; --store names a PostgreSQL store (its sessions: contextfold sessions)")
				}
				if set, err = sessiondir.Open(g.storeDir(), g.storeOptions()); err != nil {
					return usagef("--sessions: %v", err)
				}
			}
			if set != nil {
				// A directory of session stores (the hooks' .contextfold,
				// the proxy's --dir): every session, read-only.
				if ins, err := set.Sessions(); err == nil && auto {
					fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: %s is not a store and holds no session store yet; it is where the Claude Code hooks keep theirs (sessions/<session_id>), so it is served as a directory of session stores, read-only: sessions appear as the hooks fold them (list_sessions; recall_archived_nodes, scan_prompt and fetch_archived_node take a session); to serve it as one store that fold_turn folds into, start with --sessions=false\n", set.Root())
				} else if err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: %s is a directory of session stores (%s): serving them read-only (list_sessions; recall_archived_nodes, scan_prompt and fetch_archived_node take a session); to fold into a store, give --dir that store\n", set.Root(), plural(len(ins), "session"))
				}
				srv := mcpserver.NewSessions(set, mcpserver.Options{Version: buildVersion(), Logger: logger})
				return serveMCP(cmd, g, srv, httpAddr, maxFrame, bodyTimeout, logger, "serving MCP on stdio (session stores, read-only)", set.Root())
			}
			store, err := g.openStore()
			if err != nil {
				return err
			}
			var claim func() *sessiondir.Set
			if store.Backend() == nil {
				g.noteMissingStore(cmd, store.Dir()) // a mistyped --dir would be served empty without a word
				if !asStore && holdsNothing(store.Dir()) {
					// Maybe a proxy's --dir before the proxy first
					// started: served as a store until a proxy claims it
					// (its marker, its sessions), then as its sessions
					// (.contextfold is served as sessions at once:
					// meantForSessions).
					dir, sopts := store.Dir(), g.storeOptions()
					claim = func() *sessiondir.Set {
						if !proxyClaimed(dir) {
							return nil
						}
						set, err := sessiondir.Open(dir, sopts)
						if err != nil {
							return nil
						}
						fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: %s became a proxy's directory of session stores: serving them now, read-only (list_sessions; recall_archived_nodes, scan_prompt and fetch_archived_node take a session; no fold_turn)\n", dir)
						return set
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: %s holds nothing yet: it is served as one store (fold_turn folds into it) until a proxy starts on it before anything is folded here; it is then served as the proxy's sessions, read-only (the Claude Code hooks' directory: give --dir .contextfold; to read sessions at once: --sessions)\n", store.Dir())
				}
				if !isStore(store.Dir()) {
					// The hooks' .contextfold (or a proxy's directory):
					// its sessions' stores are below it, not served here.
					if h := proxyStoresHint(store.Dir()); h != "" {
						fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: %s is not a store: %s; served as it is, it holds only what fold_turn folds into it\n", store.Dir(), h)
					}
				} else if ss, _ := sessiondir.Find(filepath.Join(store.Dir(), "sessions")); len(ss) > 0 {
					// A store (fold_turn made it one) with the hooks'
					// sessions below it: those are not served here.
					fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: %s is a store, served as such; the %d session stores below it (sessions/) are not: to read them, give --dir %s\n", store.Dir(), len(ss), shellQuote(filepath.Join(store.Dir(), "sessions")))
				}
			}
			srv := mcpserver.New(store, mcpserver.Options{Version: buildVersion(), Logger: logger, Sessions: claim})
			return serveMCP(cmd, g, srv, httpAddr, maxFrame, bodyTimeout, logger, "serving MCP on stdio", store.Dir())
		},
	}
	c.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio")
	c.Flags().StringVar(&only, "session", "", "serve only this session of the directory of session stores --dir names, read-only: its id as contextfold sessions lists it, the first characters of one id alone, or a proxy session's name alone (s-…) for its only store; resolved once, at start (the tools then read it without a session argument)")
	c.Flags().BoolVar(&quiet, "quiet", false, "no request log on stderr")
	c.Flags().BoolVar(&sessions, "sessions", false, "serve --dir as a directory of session stores (read-only) even while it holds none yet (a directory that holds session stores, a .contextfold or a directory with sessions/ that is not a store, and a proxy's --dir are served so without it; a missing or empty one once a proxy claims it); --sessions=false: serve it as one store that fold_turn folds into")
	c.Flags().DurationVar(&bodyTimeout, "body-read-timeout", mcpserver.DefaultBodyReadTimeout, "with --http: longest time a client may take to send a request body (slower: 408 and the connection closed); headers must arrive within 10s, an idle connection is closed after 120s")
	c.Flags().IntVar(&maxFrame, "max-frame-bytes", mcpserver.DefaultMaxFrameBytes, "largest JSON-RPC message read, in bytes (a stdio line, an HTTP body); a longer one is skipped and answered with an Invalid Request error")
	return c
}

// mcpSession is the directory of session stores the global flags name,
// restricted to the session id names (mcp --session;
// sessiondir.Set.Only: the resolver of every command's --session), with
// a note on stderr naming the session and its store, and that store's
// directory (what the start log names). The server over it
// is read-only, like the one over every session, so a start of an id or a
// proxy session's name alone will do: it is resolved once, and the
// server keeps that session's store. Refused: an empty id, a PostgreSQL
// store, a store (one store is served by --dir itself), a directory that
// holds no session store, --sessions=false (asStore: one store that
// fold_turn folds into), an unknown or ambiguous id (Resolve's error;
// under --json, the candidates).
func (g *globals) mcpSession(cmd *cobra.Command, id string, asStore bool) (*sessiondir.Set, string, error) {
	if id == "" {
		return nil, "", usagef("--session is empty: give a session's id (the sessions and their ids: contextfold sessions --dir DIR)")
	}
	if asStore {
		return nil, "", usagef("--session %s serves one session of a directory of session stores, read-only; --sessions=false serves --dir as one store that fold_turn folds into: give one of them (to fold into a session's store, give that store as --dir)", id)
	}
	if g.storeURL() != "" {
		return nil, "", usagef("--session %s: the store is a PostgreSQL session (--store or $%s); pick its session with ?session=NAME in the URL instead", id, EnvStore)
	}
	dir := g.storeDir()
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	if isStore(dir) {
		return nil, "", usagef("--session %s: %s is one store, not a directory of session stores; leave out --session to serve it, or give --dir the directory that holds the sessions (a project's .contextfold, the proxy's --dir)", id, abs)
	}
	ss, err := sessiondir.Find(abs)
	if err != nil {
		return nil, "", err
	}
	if len(ss) == 0 {
		why := "holds no session store yet (the hooks' Stop and the proxy's first fold event write them; to serve the sessions as they appear, leave out --session)"
		if _, err := os.Stat(dir); err != nil {
			why = "does not exist"
		}
		return nil, "", usagef("--session %s: %s %s", id, abs, why)
	}
	set, err := sessiondir.Open(abs, g.storeOptions())
	if err != nil {
		return nil, "", err
	}
	m, err := set.Only(id)
	if err != nil {
		return nil, "", fmt.Errorf("--session: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "contextfold mcp: note: --session %s is session %s (%s): serving its store %s alone, read-only (list_sessions lists it; recall_archived_nodes, scan_prompt and fetch_archived_node read it without a session argument)\n", id, m.ID, m.Source, m.Dir)
	return set, m.Dir, nil
}

// storeOrSetUp reports whether dir is a store, or one set up before its
// first fold (it holds a policy, settings or eviction log file).
func storeOrSetUp(dir string) bool {
	if isStore(dir) {
		return true
	}
	for _, f := range []string{contextfold.PolicyFile, contextfold.SettingsFile, contextfold.EvictionLogFile} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// meantForSessions reports whether dir, which holds no session store yet,
// is meant to hold them rather than to be a store: it is not a store
// (nor one set up before its first fold: a policy, settings or eviction
// log file), is
// a directory or missing (anything else is left to opening it as a store,
// which names the problem), and is the Claude Code hooks' project
// directory — named .contextfold (the default --dir, where the hooks keep
// sessions/<session_id>), or holding a sessions/ directory — or that
// sessions/ directory itself. The MCP server serves such a directory as a
// directory of session stores without --sessions, so that the sessions the
// hooks fold after it started are read; --sessions=false serves it as one
// store. So is a proxy's --dir before its first session: the proxy
// marks it when it starts (proxyMarked).
func meantForSessions(dir string) bool {
	if storeOrSetUp(dir) {
		return false
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	clean := filepath.Clean(dir)
	if abs, err := filepath.Abs(clean); err == nil {
		clean = abs
	}
	if proxyMarked(dir) {
		return true // a proxy's --dir before its first session
	}
	base := filepath.Base(clean)
	if base == contextfold.DefaultStoreDir || base == "sessions" && filepath.Base(filepath.Dir(clean)) == contextfold.DefaultStoreDir {
		return true
	}
	sd := filepath.Join(dir, "sessions")
	fi, err := os.Stat(sd)
	return err == nil && fi.IsDir() && !isStore(sd) && len(sessiondir.Generations(sd)) == 0
}

// serveMCP serves srv on stdio, or over streamable HTTP at httpAddr when
// it is set, until the input ends or a signal comes; msg and store go to
// the log when it serves stdio.
func serveMCP(cmd *cobra.Command, g *globals, srv *mcp.Server, httpAddr string, maxFrame int, bodyTimeout time.Duration, logger *slog.Logger, msg, store string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if httpAddr != "" {
		return serveHTTP(ctx, g, srv, httpAddr, maxFrame, bodyTimeout, logger, cmd.ErrOrStderr())
	}
	logger.Info(msg, "store", store)
	t := mcpserver.StdioTransportWith(cmd.InOrStdin(), cmd.OutOrStdout(), mcpserver.StdioOptions{MaxFrameBytes: maxFrame})
	err := srv.Run(ctx, t)
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, context.Canceled)) {
		err = nil
	}
	return err
}

// serveHTTP serves srv over streamable HTTP at addr/mcp until ctx ends.
func serveHTTP(ctx context.Context, g *globals, srv *mcp.Server, addr string, maxFrame int, bodyTimeout time.Duration, logger *slog.Logger, stderr io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--http %q: want HOST:PORT, e.g. 127.0.0.1:7411", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("--http %q: only loopback addresses (127.0.0.1, ::1, localhost) are served; the tools can write to the store", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usagef("--http: %v", err)
	}
	hs := mcpserver.NewHTTPServer(srv, mcpserver.HTTPOptions{MaxFrameBytes: maxFrame, BodyReadTimeout: bodyTimeout,
		StreamOptions: &mcp.StreamableHTTPOptions{Logger: logger}})
	g.announce(stderr, fmt.Sprintf("contextfold: serving MCP at http://%s/mcp", ln.Addr()), "serving MCP", map[string]any{"url": "http://" + ln.Addr().String() + "/mcp"})
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		// Open event streams never end by themselves: wait briefly, then close.
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := hs.Shutdown(shut); err != nil {
			return hs.Close()
		}
		return nil
	}
}

// buildVersion is the module version of the binary, "dev" when unknown.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// proxyMarked reports whether dir holds the mark a proxy leaves in its
// --dir when it starts (proxy.DirMarkerFile) or its lineage directory.
func proxyMarked(dir string) bool {
	for _, f := range []string{proxy.DirMarkerFile, proxy.LineageDir} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// proxyClaimed reports whether dir, which held nothing when the MCP server
// started, is now a proxy's directory of session stores: marked by a proxy
// (proxyMarked) or holding session stores, and still not a store (nothing
// was folded into it as one: fold_turn, fold).
func proxyClaimed(dir string) bool {
	if storeOrSetUp(dir) {
		return false
	}
	if proxyMarked(dir) {
		return true
	}
	ss, _ := sessiondir.Find(dir)
	return len(ss) > 0
}

// holdsNothing reports whether dir is missing or an empty directory.
func holdsNothing(dir string) bool {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}
