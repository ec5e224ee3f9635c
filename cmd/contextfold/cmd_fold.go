package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/canonjson"
)

func init() { commands = append(commands, newFoldCmd) }

// foldInput is the JSON form of one turn read by 'fold --input'.
type foldInput struct {
	StepID     *json.Number `json:"step_id"`
	Summary    *string      `json:"summary"`
	RawContent *string      `json:"raw_content"`
	Files      *[]string    `json:"files"`
	Commands   *[]string    `json:"commands"`
	Errors     *[]string    `json:"errors"`
	SessionID  *string      `json:"session_id"`
}

func newFoldCmd(g *globals) *cobra.Command {
	var file, input, files, cmds, errs, session string
	c := &cobra.Command{
		Use:   "fold <step_id> <summary…> [--file PATH|-]",
		Short: "Fold one turn into the cold store (page-out)",
		Long: `Fold one turn: its payload (the --file content, else the summary) is stored
losslessly as a cold node, and the recall index points at it. The step id is
the turn's position in the conversation history. Folding a step that is
already indexed changes nothing and exits 0.

Files, commands and errors are extracted from the text unless given with
--files/--commands/--errors (comma-separated). --input reads the whole turn as
JSON {"step_id","summary","raw_content","files","commands","errors","session_id"},
so any text, NUL and newlines included, can be folded.`,
		Example: `  contextfold fold 137 "PostgreSQL port reverted to 5433" --file step137.log
  pytest 2>&1 | contextfold fold 42 "pytest run after the fix" --file -
  contextfold fold --input turn.json --json
  contextfold fold -- -1 "a turn before the first"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var t contextfold.Turn
			if input != "" {
				if len(args) > 0 || file != "" {
					return usagef("--input takes the whole turn; give no step id, summary or --file with it")
				}
				var err error
				if t, err = readFoldInput(cmd.InOrStdin(), input); err != nil {
					return err
				}
			} else {
				if len(args) < 2 {
					return usagef("fold needs a step id and a summary: contextfold fold <step_id> <summary…> [--file PATH|-] (or --input FILE)")
				}
				id, err := parseStepID("fold", args[0])
				if err != nil {
					return err
				}
				t = contextfold.Turn{StepID: id, Summary: strings.Join(args[1:], " "), SessionID: session}
				if file != "" {
					raw, err := readFileArg(cmd.InOrStdin(), file)
					if err != nil {
						return err
					}
					if raw == "" {
						fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: note: %s is empty, so the summary is the payload (IPCF §3)\n", file)
					}
					t.RawContent = raw
				}
			}
			if cmd.Flags().Changed("files") {
				t.Files = splitList(files)
			}
			if cmd.Flags().Changed("commands") {
				t.Commands = splitList(cmds)
			}
			if cmd.Flags().Changed("errors") {
				t.Errors = splitList(errs)
			}
			if cmd.Flags().Changed("session") {
				t.SessionID = session
			}
			if err := checkTurnText(t); err != nil {
				return err
			}
			if t.Summary == "" && t.RawContent == "" {
				// The reference folds it (an empty payload); so do we, with a word.
				fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: warning: step %d has an empty summary and an empty payload; folded as an empty turn (IPCF §3), which no prompt will match\n", t.StepID)
			}
			s, err := g.openStore()
			if err != nil {
				return err
			}
			res, err := s.Fold(t)
			if err != nil {
				return err
			}
			if res.AlreadyIndexed {
				warnOtherTurn(cmd, s, t)
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				if res.Node == nil {
					return fmt.Errorf("step %d is indexed but its cold node cannot be read; run 'contextfold validate'", t.StepID)
				}
				b, err := canonjson.Pretty(res.Node.Doc)
				if err != nil {
					return err
				}
				out.Write(append(b, '\n'))
				return nil
			}
			where := res.Entry.FilePath
			if s.Backend() != nil {
				// A database store: the node is a row, not that file.
				where = fmt.Sprintf("cf_nodes row of step %d in %s", t.StepID, s.Dir())
			}
			if res.AlreadyIndexed {
				fmt.Fprintf(out, "step %d is already indexed; nothing changed (%s)\n", t.StepID, where)
				return nil
			}
			fmt.Fprintf(out, "folded step %d → %s\n  %d tokens archived · payload %s…\n",
				t.StepID, where, res.Node.TokenEstimate, res.Node.PayloadSHA256[:12])
			if len(res.Node.Identifiers) > 0 {
				fmt.Fprintf(out, "  identifiers: %s\n", preview(strings.Join(res.Node.Identifiers, " "), 100))
			}
			if res.Node.Sanitized {
				fmt.Fprintf(out, "  secrets redacted before writing: %v\n", res.Node.Doc["redactions"])
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&file, "file", "", "read the raw content from PATH, or - for standard input")
	f.StringVar(&input, "input", "", "read the whole turn as JSON from FILE, or - for standard input")
	f.StringVar(&files, "files", "", "comma-separated files (replaces extraction)")
	f.StringVar(&cmds, "commands", "", "comma-separated commands (replaces extraction)")
	f.StringVar(&errs, "errors", "", "comma-separated error names (replaces extraction)")
	f.StringVar(&session, "session", "", "session id written into the cold node (default \"default-session\")")
	return c
}

// checkTurnText refuses a turn whose text given on the command line
// (summary, --files, --commands, --errors, --session) is not valid UTF-8:
// stored as JSON it would become U+FFFD, and a payload is stored losslessly
// or not at all. Text read with --file and --input is checked as it is read.
func checkTurnText(t contextfold.Turn) error {
	check := func(what, v string) error {
		if !utf8.ValidString(v) {
			return usagef("the %s is not valid UTF-8 text (%q); IPCF stores text losslessly, so nothing was folded: convert it (e.g. with iconv), or base64-encode binary data", what, preview(strings.ToValidUTF8(v, "\uFFFD"), 40))
		}
		return nil
	}
	if err := check("summary", t.Summary); err != nil {
		return err
	}
	if err := check("session id", t.SessionID); err != nil {
		return err
	}
	for i, list := range [][]string{t.Files, t.Commands, t.Errors} {
		for _, v := range list {
			if err := check([]string{"--files", "--commands", "--errors"}[i]+" list", v); err != nil {
				return err
			}
		}
	}
	return nil
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// readFileArg reads PATH, or standard input for "-", as UTF-8 text.
func readFileArg(stdin io.Reader, path string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		var fi os.FileInfo
		if fi, err = os.Stat(path); err == nil && fi.IsDir() {
			return "", usagef("%s is a directory; --file takes a file path or - for standard input", path)
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", usagef("cannot read %s: %v", path, err)
	}
	if !utf8.Valid(data) {
		return "", usagef("%s is not valid UTF-8 text; IPCF payloads are text (convert it, e.g. with iconv, or base64-encode binary data)", path)
	}
	return string(data), nil
}

func readFoldInput(stdin io.Reader, path string) (contextfold.Turn, error) {
	raw, err := readFileArg(stdin, path)
	if err != nil {
		return contextfold.Turn{}, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var in foldInput
	if err := dec.Decode(&in); err != nil {
		return contextfold.Turn{}, usagef("%s: not a turn object: %v; expected {\"step_id\": 42, \"summary\": \"…\", \"raw_content\": \"…\", \"files\": [...], \"commands\": [...], \"errors\": [...], \"session_id\": \"…\"}", path, err)
	}
	if dec.More() {
		return contextfold.Turn{}, usagef("%s: holds more than one JSON document; --input takes one turn (fold each turn with its own call, or use 'contextfold ingest' for a whole session)", path)
	}
	if in.StepID == nil {
		return contextfold.Turn{}, usagef("%s: \"step_id\" is required", path)
	}
	id, err := parseStepID("", string(*in.StepID))
	if err != nil {
		return contextfold.Turn{}, err
	}
	t := contextfold.Turn{StepID: id}
	if in.Summary != nil {
		t.Summary = *in.Summary
	}
	if in.RawContent != nil {
		t.RawContent = *in.RawContent
	}
	if in.Files != nil {
		t.Files = *in.Files
	}
	if in.Commands != nil {
		t.Commands = *in.Commands
	}
	if in.Errors != nil {
		t.Errors = *in.Errors
	}
	if in.SessionID != nil {
		t.SessionID = *in.SessionID
	}
	return t, nil
}

// preview shortens s to at most n code points, on a character boundary.
func preview(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// warnOtherTurn says on stderr when the turn offered at an indexed step is
// not the one stored there: the fold changed nothing (the reference's rule:
// a step id is folded once), so the offered turn was not stored.
func warnOtherTurn(cmd *cobra.Command, s *contextfold.Store, t contextfold.Turn) {
	c, err := s.Conflicts([]contextfold.Turn{t})
	if err != nil || len(c) == 0 {
		return
	}
	stored := c[0].StoredSession
	if stored == "" {
		stored = "(unreadable)"
	}
	msg := fmt.Sprintf("contextfold: warning: step %d is already indexed with another turn (session %q); this turn was NOT stored (a step id is folded once)", t.StepID, stored)
	if c[0].OfferedSession != stored {
		msg += fmt.Sprintf("; fold session %q into a store of its own: %s", c[0].OfferedSession, ownStore(s, c[0].OfferedSession))
	}
	fmt.Fprintln(cmd.ErrOrStderr(), msg)
}
