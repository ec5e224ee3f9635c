package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/hooks"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/pgstore"
)

func init() { commands = append(commands, newHookCmd) }

func newHookCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "hook",
		Short: "Run as an agent hook (Claude Code: contextfold hook claude-code <event>)",
		Long: `hook runs contextfold inside an agent's hook system, for agents that cannot
use the proxy. See docs/mcp-and-hooks.md for the settings.json snippet.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown agent %q; supported: claude-code (contextfold hook claude-code <event>)", args[0])
			}
			return usagef("name the agent: contextfold hook claude-code <event>")
		},
	}
	c.AddCommand(newClaudeCodeHookCmd(g))
	return c
}

// minHookChars is the smallest --max-chars that leaves room for content and
// the marker that says what was left out.
const minHookChars = 256

func newClaudeCodeHookCmd(g *globals) *cobra.Command {
	var maxChars int
	var matchName string
	var strict, verbose bool
	c := &cobra.Command{
		Use:   "claude-code <UserPromptSubmit|Stop|SubagentStop|PreCompact|SessionStart>",
		Short: "Claude Code hook: hydrate on UserPromptSubmit, fold on Stop/PreCompact, page table on SessionStart",
		Long: `claude-code reads the hook's JSON payload on stdin.

  UserPromptSubmit  scan the prompt; print {"hookSpecificOutput":{...,"additionalContext":...}}
                    with the verified hydrated content, at most --max-chars characters,
                    ending with a marker that says what was left out and how to fetch it.
                    Nothing matches: print nothing.
  Stop, SubagentStop, PreCompact
                    fold the session's new turns from transcript_path (idempotent);
                    print nothing.
  SessionStart      print the session's folded steps as a compact page table.

The store is --dir (placeholders {cwd} and {session_id} allowed; --store
DIR is the same), else $CONTEXTFOLD_DIR, else
<cwd>/.contextfold/sessions/<session_id>, where cwd is the payload's (Claude
Code always sends it; without it the process's working directory is used,
with a warning on stderr). $CONTEXTFOLD_STORE is not read, and a PostgreSQL
--store is refused: the hooks keep one directory store per session.

A hook must never block the user: on any error it prints a one-line note on
stderr and exits 0, unless --strict (then exit 1, never 2, which Claude Code
would take as "block").`,
		Example: `  echo '{"session_id":"abc","cwd":"'$PWD'","hook_event_name":"UserPromptSubmit","prompt":"which port?"}' \
    | contextfold hook claude-code UserPromptSubmit`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			stderr := cmd.ErrOrStderr()
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("internal error: %v", r)
				}
				if err == nil {
					return
				}
				fmt.Fprintf(stderr, "contextfold hook: %s\n", oneLineErr(err))
				if strict {
					err = &silentExit{code: exitUsage}
				} else {
					err = nil
				}
			}()
			if maxChars < minHookChars {
				return usagef("--max-chars %d is too small to hold a hydrated node and its marker; use at least %d", maxChars, minHookChars)
			}
			event, ok := canonicalEvent(args[0])
			if !ok {
				return fmt.Errorf("unknown event %q; want UserPromptSubmit, Stop, SubagentStop, PreCompact or SessionStart", args[0])
			}
			if f, ok := cmd.InOrStdin().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				// Run by hand in a shell: ReadInput would wait for an
				// end of input the user does not know to type.
				return usagef(`the hook reads its payload, one JSON object, on stdin, and stdin is a terminal: Claude Code pipes the payload in; to run it by hand: echo '{"session_id":"abc","cwd":"'"$PWD"'","transcript_path":"…"}' | %s %s`, cmd.CommandPath(), event)
			}
			in, err := hooks.ReadInput(cmd.InOrStdin())
			if err != nil {
				return err
			}
			if err := in.CheckEvent(event); err != nil {
				return err
			}
			dir := g.dir
			if g.store != "" {
				// The global --store: a directory is the hook's --dir;
				// the hooks keep directory stores only, so a database is
				// refused rather than silently replaced by the default.
				if pgstore.IsURL(g.store) {
					return usagef("--store postgres://…: the Claude Code hooks keep one directory store per session and cannot write a PostgreSQL store; leave out --store (default <cwd>/.contextfold/sessions/<session_id>) or give --dir DIR ({cwd} and {session_id} allowed)")
				}
				dir = g.store
			}
			if dir == "" {
				dir = os.Getenv(contextfold.EnvStoreDir)
			}
			if in.CWD == "" && (dir == "" || strings.Contains(dir, "{cwd}")) {
				// Claude Code sends cwd with every event; a payload
				// without it (a hand-made test, another agent) would
				// otherwise read or write a store below whatever
				// directory the hook happens to run in, without a word.
				if where, err := hooks.StoreDir(in, dir); err == nil {
					fmt.Fprintf(stderr, "contextfold hook: warning: the %s payload has no \"cwd\" (Claude Code always sends one), so the store is taken from this process's working directory: %s; add \"cwd\" to the payload or give --dir\n", event, where)
				}
			}
			var diag io.Writer
			if verbose || event == hooks.EventUserPromptSubmit {
				diag = stderr
			}
			mode, err := match.ParseMode(matchName)
			if err != nil {
				return usagef("--match: %v", err)
			}
			opts := hooks.Options{Dir: dir, MaxChars: maxChars, Diag: diag, Match: mode}
			var out *hooks.Output
			switch event {
			case hooks.EventUserPromptSubmit:
				out, err = hooks.UserPromptSubmit(in, opts)
			case hooks.EventSessionStart:
				out, err = hooks.SessionStart(in, opts)
			default: // Stop, SubagentStop, PreCompact
				var rep *hooks.FoldReport
				rep, err = hooks.FoldTranscript(in, opts)
				if err == nil && len(rep.TooLarge) > 0 && !verbose {
					// Said whether or not -v: these turns are never archived.
					fmt.Fprintf(stderr, "contextfold: warning: steps %v not folded: their payload is larger than the %s a turn may fold (MaxPayloadBytes); the other turns were folded\n",
						rep.TooLarge, fsutil.ByteSize(contextfold.MaxPayloadBytes))
				}
				if err == nil && verbose {
					fmt.Fprintf(stderr, "contextfold: folded %d new turns (%d already stored, %d secrets redacted) into %s\n",
						rep.Folded, rep.Existing, rep.Redacted, rep.Dir)
				}
			}
			if err != nil {
				return err
			}
			return hooks.WriteOutput(cmd.OutOrStdout(), out)
		},
	}
	c.Flags().StringVar(&matchName, "match", string(match.Ranked), "matching mode of UserPromptSubmit: ranked (default) or exact (the reference's scan and truncation)")
	c.Flags().IntVar(&maxChars, "max-chars", hooks.DefaultMaxChars, "cap of the injected context, in characters (UTF-16 code units)")
	c.Flags().BoolVar(&strict, "strict", false, "exit 1 on errors instead of 0 (never blocks: exit 2 is not used)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "report what was folded on stderr")
	return c
}

// canonicalEvent accepts an event name in any case, with or without '-' or
// '_' (UserPromptSubmit, user-prompt-submit).
func canonicalEvent(s string) (string, bool) {
	key := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	for _, e := range []string{hooks.EventUserPromptSubmit, hooks.EventStop, hooks.EventSubagentStop, hooks.EventPreCompact, hooks.EventSessionStart} {
		if strings.ToLower(e) == key {
			return e, true
		}
	}
	return "", false
}

// oneLineErr flattens an error message to one line.
func oneLineErr(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
