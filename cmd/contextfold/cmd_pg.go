package main

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/pgstore"
)

func init() {
	commands = append(commands, newMigrateCmd, newExportCmd, newImportCmd, newSessionsCmd)
}

func newMigrateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the PostgreSQL store's pending schema migrations",
		Long: `migrate brings the database of a PostgreSQL store (--store postgres://… or
$CONTEXTFOLD_STORE) to the schema version this contextfold uses. Every first
use of a database does the same; migrate does it on its own, e.g. before
starting proxy replicas. A database of a newer schema version is refused.`,
		Example: "  contextfold migrate --store postgres://cf@db:5432/contextfold",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			u := g.storeURL()
			if u == "" {
				return usagef("migrate needs a PostgreSQL store: give --store postgres://USER:PASSWORD@HOST:PORT/DB (or set $CONTEXTFOLD_STORE)")
			}
			from, to, err := pgstore.Migrate(context.Background(), u)
			if err != nil {
				return err
			}
			if g.jsonOut {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"store": pgstore.Redact(u), "from_version": from, "schema_version": to})
			}
			if from == to {
				fmt.Fprintf(cmd.OutOrStdout(), "schema version %d: up to date\n", to)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "schema migrated from version %d to %d\n", from, to)
			}
			return nil
		},
	}
}

func newExportCmd(g *globals) *cobra.Command {
	var to string
	c := &cobra.Command{
		Use:   "export --to DIR",
		Short: "Write the store (e.g. a PostgreSQL session) as a directory store",
		Long: `export writes the store chosen by --store (or --dir) into DIR as a directory
store: every cold node's exact bytes, recall_index.json in the reference's
encoding with file paths naming DIR, and the policy, settings and logs byte
for byte. DIR must not exist or be empty. The store is not changed.`,
		Example: "  contextfold export --store 'postgres://cf@db/contextfold?session=run-17' --to ./run-17/.contextfold",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usagef("export needs --to DIR")
			}
			s, err := g.openExistingStore(true)
			if err != nil {
				return err
			}
			if err := s.ExportDir(to); err != nil {
				return err
			}
			st, err := s.Status()
			if err != nil {
				return err
			}
			if g.jsonOut {
				return g.writeOut(cmd.OutOrStdout(), "", map[string]any{"store": s.Dir(), "to": to, "nodes": st.Total})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %d indexed nodes of %s to %s\n", st.Total, s.Dir(), to)
			return nil
		},
	}
	c.Flags().StringVar(&to, "to", "", "directory to write the store into (new or empty)")
	return c
}

func newImportCmd(g *globals) *cobra.Command {
	var session string
	c := &cobra.Command{
		Use:   "import DIR [--session ID]",
		Short: "Load a directory store into an empty PostgreSQL session",
		Long: `import loads the directory store DIR into the PostgreSQL session chosen by
--store (or $CONTEXTFOLD_STORE), which must hold nothing yet: every cold
node's exact bytes, the index and the store files, in one transaction (all
or nothing). export gives the same bytes back.

When DIR is a directory of session stores (a project's .contextfold of the
Claude Code hooks, the proxy's --dir), --session ID picks the session whose
store is loaded: its whole id as contextfold sessions --dir DIR lists it (a
start of an id or a proxy session's name alone is refused, naming the whole
id: the database session it fills cannot be emptied again by contextfold).
The database session is always the one ?session=NAME names; --json names
the session loaded ("session": {"id", "source", "dir"}).`,
		Example: "  contextfold import ./run-17/.contextfold --store 'postgres://cf@db/contextfold?session=run-17'\n  contextfold import .contextfold --session 0d7c9e55-bbbb-4ccc-8ddd-000000000002 --store 'postgres://cf@db/contextfold?session=0d7c9e55'",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.storeURL() == "" {
				return usagef("import needs a PostgreSQL store: give --store postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME")
			}
			from := args[0]
			if cmd.Flags().Changed("session") {
				m, err := g.resolveSession(cmd, from, "DIR", session, true)
				if err != nil {
					return err
				}
				from, g.picked = m.Dir, &m.Session
			} else if ss, _ := sessiondir.Find(from); len(ss) > 0 {
				// .contextfold itself holds no store: name the session to give.
				abs, err := filepath.Abs(from)
				if err != nil {
					abs = from
				}
				id := latestSession(ss)
				return usagef("%s is %s holding %s (%s), not one store: import loads one store; pick its session with --session ID (its whole id; the latest written: --session %s), or give its store as DIR; list them: contextfold sessions --dir %s",
					abs, sessionsDirKind(from, ss), plural(len(ss), "session"), sourceCounts(ss), shellQuote(id), shellQuote(abs))
			}
			s, err := g.openStore()
			if err != nil {
				return err
			}
			n, err := s.ImportDir(from)
			if err != nil {
				return err
			}
			if g.jsonOut {
				return g.writeOut(cmd.OutOrStdout(), "", map[string]any{"store": s.Dir(), "from": from, "nodes": n})
			}
			if g.picked != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "imported %d cold nodes of session %s (%s) into %s\n", n, g.picked.ID, from, s.Dir())
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d cold nodes from %s into %s\n", n, from, s.Dir())
			return nil
		},
	}
	c.Flags().StringVar(&session, "session", "", "when DIR is a directory of session stores: the session whose store is loaded, by its whole id as contextfold sessions --dir DIR lists it")
	return c
}

func newSessionsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions of a PostgreSQL store or of a directory of session stores",
		Long: `sessions lists every session of the database that --store postgres://… (or
$CONTEXTFOLD_STORE) names, by name, with the number of steps its recall index
holds; a session is what ?session=NAME selects. It changes nothing and needs
only read access (it never migrates).

With --dir a directory of session stores (the proxy's --dir, a project's
.contextfold of the Claude Code hooks, or its sessions/, or one directory that
is both) it lists the session stores below it, newest first: the session id
(what --session takes in every command that reads or changes one store:
the whole id, or for a command that only reads its first characters when
no other id starts so), its source (hooks: the
Claude Code hooks' sessions/<session_id>; proxy: a proxy's <session>/g<N>;
store: any other store in the directory), its nodes and tokens, when its
first and last nodes were folded, and its store directory; a store that
cannot be read is listed last with its error. It writes nothing. A directory store holds one session: use
status there. A proxy's --dir or a project's .contextfold before its first
session lists no session (exit 0).

The text is a table: a header row naming the columns, then one row per
session.

--json: {"sessions": [...]}; a database's rows have name, entries,
generation, revision; a directory's have session, source, store, nodes,
total_tokens, first_folded_at, last_folded_at (and error), under its root.`,
		Example: "  contextfold sessions --store postgres://cf@db:5432/contextfold\n  contextfold sessions --json | jq -r '.sessions[].name'                      # PostgreSQL: name, entries\n  contextfold sessions --dir .contextfold\n  contextfold sessions --dir .contextfold --json | jq -r '.sessions[].session'  # a directory: session, nodes, store",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			u := g.storeURL()
			if u == "" {
				set, err := g.sessionSet()
				if err != nil {
					return err
				}
				if set != nil {
					return listSessions(cmd, g, set)
				}
				if dir := g.storeDir(); meantForSessions(dir) {
					if abs, err := filepath.Abs(dir); err == nil {
						dir = abs
					}
					// A proxy's --dir or the hooks' .contextfold before
					// their first session: nothing to list yet, not an error.
					if g.jsonOut {
						return writeJSON(cmd.OutOrStdout(), map[string]any{"root": dir, "sessions": []any{}})
					}
					fmt.Fprintf(cmd.OutOrStdout(), "no session store under %s yet (a proxy or the Claude Code hooks make one at the first fold)\n", dir)
					return nil
				}
				return usagef("sessions lists the sessions of a PostgreSQL store (give --store postgres://USER@HOST:PORT/DB, or set $CONTEXTFOLD_STORE) or of a directory of session stores (give --dir the proxy's --dir or a project's .contextfold); %s holds no session store: a directory store holds one session (see status)", g.storeDir())
			}
			list, err := pgstore.Sessions(u)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				rows := make([]map[string]any, 0, len(list))
				for _, si := range list {
					rows = append(rows, map[string]any{"name": si.Name, "entries": si.Entries, "generation": si.Generation, "revision": si.Rev})
				}
				return writeJSON(out, map[string]any{"store": pgstore.Redact(u), "sessions": rows})
			}
			if len(list) == 0 {
				fmt.Fprintln(out, "no session yet (a session is created by its first fold or ingest)")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTEPS INDEXED")
			for _, si := range list {
				fmt.Fprintf(tw, "%s\t%d\n", si.Name, si.Entries)
			}
			return tw.Flush()
		},
	}
}
