package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/scrub"
)

func init() { commands = append(commands, newIngestCmd) }

// DefaultMaxIngestTurns bounds the turns one ingest folds (--max-turns).
// Folding a batch holds every turn's cold node, index entry and
// preparation until the batch is written: about ingestTurnKiB KiB a turn
// however short it is (measured: 100,000 two-token turns peaked at 925 MB
// resident, 1,000,000 at 9 GB and 400 s), so a transcript of a million
// one-line messages (a 42 MB file, well under MaxTranscriptBytes) would
// take all the memory of a workstation. 100,000 is twice the proxy's
// DefaultMaxMessages, past any agent session a model's context holds.
const DefaultMaxIngestTurns = 100000

// errTooManyTurns stops the parse of a transcript past --max-turns.
var errTooManyTurns = errors.New("more turns than --max-turns")

// ingestTurnKiB is the memory one folded turn holds during an ingest, in
// KiB (see DefaultMaxIngestTurns).
const ingestTurnKiB = 9

// ingestReport is the closing report of an ingest.
type ingestReport struct {
	File           string           `json:"file"`
	Format         string           `json:"format"`
	Messages       int              `json:"messages_read"`
	Turns          int              `json:"turns"`
	Folded         int              `json:"turns_folded"`
	AlreadyIndexed int              `json:"already_indexed"`
	Skipped        int              `json:"skipped_below_min_tokens"`
	MinTokens      int              `json:"min_tokens"` // --min-tokens (0: every turn)
	TokensArchived int              `json:"tokens_archived"`
	SummaryTokens  int              `json:"summary_tokens"`
	Replaced       int              `json:"replaced_invalid_characters"`
	Problems       []ingest.Problem `json:"problems"`
	ProblemsMore   int              `json:"problems_omitted"` // bad lines skipped past the ingest.MaxProblems listed
	Store          string           `json:"store"`
	// NothingFolded says why no turn was folded, as the text output's
	// last line does: "already_indexed" (ingest is idempotent: every
	// turn was in the store), "below_min_tokens", or "no_turns"; absent
	// when a turn was folded.
	NothingFolded string `json:"nothing_folded,omitempty"`
}

func newIngestCmd(g *globals) *cobra.Command {
	var format, session string
	var minTokens, maxTurns int
	var maxRecord int64
	c := &cobra.Command{
		Use:   "ingest PATH [--format auto|claude-code|openai|anthropic|swe-agent|mini-swe-agent|openhands|aider]",
		Short: "Fold a real agent session (Claude Code, OpenAI, Anthropic, SWE-agent, …) into the store",
		Long: `ingest reads a recorded agent session and folds every turn into the store.

The step id of a turn is its 0-based position in the conversation history as
the file records it (the message index; for JSONL the index among unique
message records), so it never changes when the transcript grows: ingesting the
same transcript again, or a longer version of it, folds only the new turns and
leaves every existing hash unchanged.

The payload is the turn's full content (text, tool-call arguments, tool
output) in a deterministic rendering. The summary is a deterministic
extractive one-liner of at most 280 characters (role, tool and command, first
meaningful or error line) — it is not an LLM summary.

Secrets are scrubbed out of every turn before it is written (docs/secrets.md),
and the turns of one transcript share what they reveal: a value one turn's
context marks as a secret (CLOUDFLARE_API_KEY=… in a tool output) is redacted
in every other turn that shows it, bare or encoded.

Bad lines in JSONL input are reported and skipped; unknown input is rejected
with the list of accepted formats, and so is binary input (an executable, an
archive: a NUL byte in its first 64 KiB), whatever --format says. PATH is a
file of at most 512 MiB (a larger one is refused before it is read), a pipe
such as <(zcat session.jsonl.gz), or - for standard input (zcat
session.jsonl.gz | contextfold ingest -); a pipe or standard input is read
as a stream up to the same limit, what was read past its first MiB kept in
a temporary file in $TMPDIR that is removed at once.

The transcript is read as a stream: a JSONL file (Claude Code, OpenHands) or
an Aider history line by line, a JSON document's messages one at a time (a
document is read twice: once to check it and detect its format, once to
parse it; without --min-tokens the first read stops at the message past
--max-turns). Two limits apply while it is read, and past either the ingest
is refused with nothing written:

  --max-turns N         at most N turns (default 100,000) are folded in one
                        ingest: folding holds about 9 KiB of memory per turn,
                        however short, so the parse stops at turn N+1.
  --max-record-bytes N  a record — a JSONL line, one message of a JSON
                        document (or its "info" object, or one string
                        elsewhere in it), an Aider turn — is at most N bytes
                        (default 128 MiB): parsing one holds a few times its
                        size. -1: no limit.

A turn's payload is at most 64 MiB, whatever the limits; a larger one refuses
the ingest before anything is written.

When --dir is a directory of session stores (a project's .contextfold of the
Claude Code hooks, its sessions/, the proxy's --dir), or --session is given,
the transcript becomes one session of it, laid out as the hooks lay theirs:
sessions/<id> in the hooks' directory (where the Stop hook of that session
folds too: the same step ids and bytes, so it finds them indexed), <dir>/<id>
beside the proxy's sessions. The id is --session ID, else the transcript's
own session id (a Claude Code session's UUID); a transcript that names none
(an OpenAI message list, an Aider history) needs --session. --session takes
an existing session's whole id (the transcript's new turns are added to it)
or a new id of letters, digits, '-', '_' and '.', starting with a letter
or a digit (not cold_nodes,
recall_index.json, nor sessions beside the proxy's: the directory would
read as one store); the start of an id or a proxy session's name alone is
refused (a write takes no prefix). The output names the session (--json:
"session": {"id", "source", "dir"}); contextfold sessions lists it. An
empty or missing --dir is made a store of its own, as before; a proxy's
--dir before its first fold (holding only its .contextfold-proxy mark) is
not: the transcript becomes a session of it.`,
		Example: `  contextfold ingest ~/.claude/projects/myproj/session.jsonl
  contextfold ingest run.traj --format swe-agent --min-tokens 200
  contextfold --dir /tmp/s ingest messages.json --json
  zcat session.jsonl.gz | contextfold ingest -
  contextfold ingest ~/.claude/projects/p/5f1c2a9e-….jsonl          # in a project with the hooks: .contextfold/sessions/5f1c2a9e-…
  contextfold ingest messages.json --session old-chat --dir .contextfold`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ingest.ParseFormat(format)
			if err != nil {
				return usagef("%v", err)
			}
			if maxRecord == 0 || maxRecord < -1 {
				return usagef("--max-record-bytes %d: give the largest record (a JSONL line, a message of a JSON document) one ingest reads, in bytes, 1 or more (default %d), or -1 for no limit", maxRecord, ingest.DefaultMaxRecordBytes)
			}
			if maxTurns == 0 || maxTurns < -1 {
				return usagef("--max-turns %d: give the most turns one ingest may fold, 1 or more (default %d), or -1 for no limit", maxTurns, DefaultMaxIngestTurns)
			}
			path := args[0]
			if path != "-" {
				if fi, err := os.Stat(path); err != nil {
					return usagef("cannot read %s: %v", path, err)
				} else if fi.IsDir() {
					return usagef("%s is a directory; ingest takes one session file, or - for standard input", path)
				}
			}
			// The turns are collected as they are parsed, and the parse
			// stops at the first turn past --max-turns: a transcript of a
			// million messages is refused after parsing --max-turns of
			// them, holding their memory only.
			var turns []contextfold.Turn
			all, skipped, stoppedAt := 0, 0, -1
			opts := ingest.Options{Format: f, MaxRecordBytes: maxRecord, Turn: func(t ingest.Turn) error {
				all++
				ct := contextfold.Turn{StepID: t.StepID, Summary: t.Summary, RawContent: t.Payload, SessionID: t.SessionID, OutputOf: t.Command}
				if contextfold.TokenEstimate(ct.Payload()) < minTokens {
					skipped++
					return nil
				}
				if maxTurns >= 0 && len(turns) >= maxTurns {
					stoppedAt = t.StepID
					return errTooManyTurns
				}
				turns = append(turns, ct)
				return nil
			}}
			if minTokens <= 0 && maxTurns > 0 {
				// Every turn counts: the parser refuses the one past
				// the limit itself, and a JSON document's first read
				// stops there (a million messages are not all read).
				opts.MaxTurns = maxTurns
			}
			var res *ingest.Result
			if path == "-" {
				res, err = parseStdin(cmd.InOrStdin(), opts)
			} else {
				res, err = ingest.ParseFileWith(path, opts)
			}
			// The refusals below name the input as the parser's errors
			// do: standard input for "-".
			name := path
			if path == "-" {
				name = "standard input"
			}
			var many *ingest.TooManyTurnsError
			if errors.As(err, &many) {
				stoppedAt = many.Step
			}
			if errors.Is(err, errTooManyTurns) || many != nil {
				// The limit is on the transcript's turns, the ones the
				// store already holds included (a re-ingest reads them
				// again): the message says so, not "turns to fold".
				return usagef("%s: the transcript holds %d turns and more, past --max-turns %d: reading stopped at step %d, the rest was not parsed "+
					"(folding holds about %d KiB of memory per turn, however short: %d turns would take about %d MiB); nothing was written. "+
					"Give a larger --max-turns (or -1 for no limit) if the machine has the memory, or --min-tokens N to fold only the larger turns",
					name, maxTurns+1, maxTurns, stoppedAt, ingestTurnKiB, maxTurns+1, (maxTurns+1)*ingestTurnKiB>>10)
			}
			var tooLarge *ingest.RecordTooLargeError
			if errors.As(err, &tooLarge) {
				return usagef("%v; nothing was written", err)
			}
			if err != nil {
				return usagef("%v", err)
			}
			if all == 0 {
				return usagef("%s: the %s transcript holds no turns (%d messages read); nothing was written: check that PATH is the session's transcript", name, res.Format, res.Messages)
			}
			target, err := g.ingestTarget(cmd, session, cmd.Flags().Changed("session"), turns)
			if err != nil {
				return err
			}
			var s *contextfold.Store
			if target != nil {
				s, err = contextfold.Open(target.Dir, g.storeOptions())
			} else {
				s, err = g.openStoreToWrite(cmd)
			}
			if err != nil {
				return err
			}
			rep := ingestReport{File: path, Format: string(res.Format), Messages: res.Messages, Turns: all,
				Replaced: res.Replaced, Problems: res.Problems, ProblemsMore: res.ProblemsOmitted, Store: s.Dir(), Skipped: skipped, MinTokens: max(minTokens, 0)}
			if rep.Problems == nil {
				rep.Problems = []ingest.Problem{}
			}
			// A value one turn's context marks as a secret is redacted
			// in the other turns too (a later echo of it, bare).
			shared, err := s.ShareSecrets(turns)
			if err != nil {
				return err
			}
			plain := turns
			turns = shared
			progress := progressFunc(cmd.ErrOrStderr(), len(turns), "folding turns", g.jsonOut)
			// The other-session check runs under the store's lock, on the
			// index the fold writes: another writer (a second ingest of
			// another transcript into the same store or session) cannot
			// fold these steps in between, so a refused run folds nothing
			// (the first fold of a step wins, and a longer transcript
			// would otherwise fold its extra steps after the other's).
			results, err := s.FoldBatchGuarded(turns, progress, func(conflicts contextfold.ConflictCheck) error {
				return refuseOtherSession(s, conflicts, plain, shared, path)
			})
			if err != nil {
				return err
			}
			// An ingest leaves the index whole (no journal), so that the
			// store reads the same in any IPCF implementation.
			if err := s.Compact(); err != nil {
				return err
			}
			for _, r := range results {
				if r.AlreadyIndexed {
					rep.AlreadyIndexed++
					continue
				}
				rep.Folded++
				rep.TokensArchived += r.Node.TokenEstimate
				rep.SummaryTokens += contextfold.TokenEstimate(r.Node.Summary)
			}
			if rep.Folded == 0 {
				switch {
				case rep.AlreadyIndexed > 0:
					rep.NothingFolded = "already_indexed"
				case rep.Skipped > 0:
					rep.NothingFolded = "below_min_tokens"
				default:
					rep.NothingFolded = "no_turns"
				}
			}
			if target != nil {
				g.picked = ingestedSession(target)
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				return g.writeOut(out, "", rep)
			}
			fmt.Fprintf(out, "ingested %s (%s) into %s\n", path, rep.Format, rep.Store)
			if target != nil {
				how := "a new session of " + target.Root
				if !target.New {
					how = "a session of " + target.Root + " already"
				}
				fmt.Fprintf(out, "  session            %s (%s, named by %s; contextfold sessions --dir %s lists it)\n", g.picked.ID, how, target.From, shellQuote(target.Root))
			}
			fmt.Fprintf(out, "  messages read      %d\n  turns              %d\n  folded now         %d\n  already indexed    %d\n",
				rep.Messages, rep.Turns, rep.Folded, rep.AlreadyIndexed)
			if minTokens > 0 {
				// The threshold and the count, never one number that reads as either.
				fmt.Fprintf(out, "  not folded, below --min-tokens %d: %d\n", minTokens, rep.Skipped)
			}
			fmt.Fprintf(out, "  tokens archived    %d\n  tokens a prompt still carries (summaries) %d\n", rep.TokensArchived, rep.SummaryTokens)
			if rep.Replaced > 0 {
				fmt.Fprintf(out, "  %d invalid characters (lone surrogates, bad UTF-8) replaced by U+FFFD\n", rep.Replaced)
			}
			for _, p := range rep.Problems {
				fmt.Fprintf(out, "  skipped line %d: %s\n", p.Line, p.Message)
			}
			if rep.ProblemsMore > 0 {
				fmt.Fprintf(out, "  … and %d more bad lines skipped (only the first %d are listed)\n", rep.ProblemsMore, len(rep.Problems))
			}
			switch rep.NothingFolded {
			case "already_indexed":
				fmt.Fprintf(out, "  nothing new: every turn of this session was already in the store (ingest is idempotent)\n")
			case "below_min_tokens":
				fmt.Fprintf(out, "  nothing folded: every turn is below --min-tokens %d\n", minTokens)
			case "no_turns":
				fmt.Fprintf(out, "  nothing folded: the session has no turns\n")
			}
			return nil
		},
	}
	c.Flags().StringVar(&session, "session", "", "when --dir is a directory of session stores (a project's .contextfold, the proxy's --dir): the session to fold into, an existing one by its whole id as contextfold sessions lists it, or a new id (letters, digits, '-', '_', '.', starting with a letter or digit; default: the transcript's own session id)")
	c.Flags().StringVar(&format, "format", "auto", "input format: auto, claude-code, openai, anthropic, swe-agent, mini-swe-agent, openhands, aider")
	c.Flags().IntVar(&minTokens, "min-tokens", 0, "fold only turns whose payload is at least this many tokens")
	c.Flags().IntVar(&maxTurns, "max-turns", DefaultMaxIngestTurns, "most turns one ingest folds (more: refused as soon as the parse reaches one more, nothing written; -1: no limit)")
	c.Flags().Int64Var(&maxRecord, "max-record-bytes", ingest.DefaultMaxRecordBytes, "largest record read, in bytes: a JSONL line, an element of a JSON document's messages array, an Aider turn (larger: refused, nothing written; -1: no limit)")
	return c
}

// refuseOtherSession refuses an ingest whose turns collide with different
// turns already indexed at the same step ids: another session (or a
// rewritten transcript) would otherwise be silently dropped, since folding
// an indexed step changes nothing. Nothing is written. check is the
// guarded fold's ConflictCheck (FoldBatchGuarded): it runs under the
// store's lock, so s serves only Dir and Backend here.
func refuseOtherSession(s *contextfold.Store, check contextfold.ConflictCheck, turns, shared []contextfold.Turn, path string) error {
	conflicts, err := check(shared)
	if err != nil || len(conflicts) == 0 {
		return err
	}
	// A stored turn matches the transcript's turn with the batch's
	// shared redactions (ingested the same way) or without them (stored
	// by an earlier run of a shorter transcript, before a later turn
	// revealed the value it shows).
	at := map[int]contextfold.Turn{}
	for _, t := range turns {
		at[t.StepID] = t
	}
	var plain []contextfold.Turn
	for _, c := range conflicts {
		plain = append(plain, at[c.StepID])
	}
	still, err := check(plain)
	if err != nil {
		return err
	}
	real := map[int]bool{}
	for _, c := range still {
		real[c.StepID] = true
	}
	kept := conflicts[:0]
	for _, c := range conflicts {
		if real[c.StepID] {
			kept = append(kept, c)
		}
	}
	if conflicts = kept; len(conflicts) == 0 {
		return nil
	}
	c := conflicts[0]
	stored := c.StoredSession
	if stored == "" {
		stored = "(unreadable)"
	}
	input, stem := path, fileStem(path)
	if path == "-" {
		input, stem = "standard input", "stdin"
	}
	// A transcript's session id holding a secret (a token where an id
	// should be) is shown redacted, and the store suggested for it is
	// named by its scrub.SafeName: the value reaches neither the message
	// nor, when the user follows it, a directory's name.
	offered, name := c.OfferedSession, c.OfferedSession
	if sc, err := scrub.New(); err == nil {
		offered, name = sc.Scrub(offered).Text, sc.SafeName(name)
	}
	what := fmt.Sprintf("another session: the store holds session %q, %s is session %q", stored, input, offered)
	if name == contextfold.DefaultSessionID {
		// The file names no session (an OpenAI message list, an older .traj,
		// an Aider history): the store is named after the file (standard
		// input: "stdin", not "-"), so that the next such file does not
		// collide there again.
		name = stem
	}
	if stored == c.OfferedSession || stored == offered {
		what = fmt.Sprintf("different turns of session %q (was the transcript rewritten?)", stored)
		if stored == contextfold.DefaultSessionID {
			what = fmt.Sprintf("another session: neither the stored turns nor %s name their session (both are %q)", input, stored)
		}
	}
	return usagef("%s already holds %s; %d of the %d turns to fold have step ids the store holds with other content (the first: step %d). "+
		"Nothing was folded. Ingest it into a store of its own: contextfold %s ingest %s",
		s.Dir(), what, len(conflicts), len(turns), c.StepID, ownStore(s, name), path)
}

// ownStore returns the global flag that names a store of its own for the
// session name: for a directory store, --dir and a sibling of it
// (siblingStore), never a directory inside it; the same database's
// ?session=NAME for a database store (as s.Dir() shows it: the password
// redacted, to be filled in).
func ownStore(s *contextfold.Store, name string) string {
	if s.Backend() == nil {
		return "--dir " + shellQuote(siblingStore(s.Dir(), safeName(name)))
	}
	session := strings.TrimLeft(safeName(name), "._-")
	if session == "" {
		session = "session"
	}
	u, err := url.Parse(s.Dir())
	if err != nil {
		return "--store 'postgres://…?session=" + session + "'"
	}
	q := u.Query()
	q.Set("session", session)
	u.RawQuery = q.Encode()
	return "--store '" + u.String() + "'"
}

// siblingStore returns where a store for session name goes beside the
// store dir, outside it: a store inside a store is read as neither (its
// parent is a store, not a directory of session stores, so "contextfold
// sessions", "recall --dir" and the MCP server never list it).
//   - dir is a session of the hooks' directory of session stores
//     (<project>/.contextfold/sessions/<id>, any <parent>/sessions/<id>):
//     the same directory, <parent>/sessions/NAME, listed with it;
//   - dir is a proxy session's store <root>/<session>/g<N>: <root>/NAME,
//     a session of the proxy's directory;
//   - otherwise (a store of its own): <dir>-NAME beside it.
//
// A candidate that exists and holds something other than a store is
// skipped for <candidate>-2, -3, … (up to -99). Reads the file system only.
func siblingStore(dir, name string) string {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	base := filepath.Base(dir)
	cand := dir + "-" + name
	switch {
	case filepath.Base(parent) == "sessions":
		cand = filepath.Join(parent, name)
	case slices.Contains(sessiondir.Generations(parent), base):
		cand = filepath.Join(filepath.Dir(parent), name)
	}
	if cand == dir {
		cand = dir + "-" + name
	}
	free := func(p string) bool {
		if p == dir {
			return false
		}
		ents, err := os.ReadDir(p)
		return errors.Is(err, fs.ErrNotExist) || err == nil && (len(ents) == 0 || isStore(p))
	}
	if free(cand) {
		return cand
	}
	for i := 2; i < 100; i++ {
		if p := fmt.Sprintf("%s-%d", cand, i); free(p) {
			return p
		}
	}
	return cand
}

// fileStem is the name of the file at path without its extensions
// ("run.traj.json" → "run").
func fileStem(path string) string {
	base := filepath.Base(path)
	if i := strings.IndexByte(base, '.'); i > 0 {
		return base[:i]
	}
	return base
}

// safeName makes a session id usable as one directory name.
func safeName(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 64 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if s := strings.Trim(b.String(), "."); s != "" {
		return s
	}
	return "session"
}

// progressFunc returns a progress callback that draws a bar on w when w is a
// terminal and the work is long enough to need one; else nil.
func progressFunc(w io.Writer, total int, what string, quiet bool) func(done, total int) {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) || total < 200 {
		return nil
	}
	bar := progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100_000_000))
	return func(done, _ int) { _ = bar.Set(done) }
}

// parseStdin parses the transcript read from stdin (ingest -) as o says,
// as a stream (ingest.ParseReaderWith: about one record held, the rest
// spooled to a temporary file); binary input is refused after its first
// 64 KiB, a larger input than ingest.MaxTranscriptBytes once past it.
// Errors name "standard input" as ParseFileWith's name the path.
func parseStdin(stdin io.Reader, o ingest.Options) (*ingest.Result, error) {
	res, err := ingest.ParseReaderWith(stdin, o)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	return res, nil
}
