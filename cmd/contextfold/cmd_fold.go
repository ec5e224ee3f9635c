package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
)

func init() { commands = append(commands, newFoldCmd) }

// foldInput is the JSON form of one turn read by 'fold --input'. Each field
// is kept raw so that a value of the wrong JSON type gets an error naming the
// field, the value and the remedy (checkedFoldInput), not encoding/json's.
type foldInput struct {
	StepID     json.RawMessage `json:"step_id"`
	Summary    json.RawMessage `json:"summary"`
	RawContent json.RawMessage `json:"raw_content"`
	Files      json.RawMessage `json:"files"`
	Commands   json.RawMessage `json:"commands"`
	Errors     json.RawMessage `json:"errors"`
	SessionID  json.RawMessage `json:"session_id"`
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
					raw, err := readFileArg(cmd.InOrStdin(), file, "--file", contextfold.MaxPayloadBytes, nil)
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
			s, err := g.openStoreToWrite(cmd)
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
			// The node's file, absolute: the index's file_path is relative
			// to the store's parent directory (the reference's layout,
			// ".contextfold/cold_nodes/…"), which from any other working
			// directory names no file.
			where := s.NodePath(t.StepID)
			if s.Backend() != nil {
				// A database store: the node is a row, not that file.
				where = fmt.Sprintf("cf_nodes row of step %d in %s", t.StepID, s.Dir())
			}
			if res.AlreadyIndexed {
				fmt.Fprintf(out, "step %d is already indexed; nothing changed (%s)\n", t.StepID, where)
				return nil
			}
			fmt.Fprintf(out, "folded step %d → %s\n  %s archived · payload %s…\n",
				t.StepID, where, plural(res.Node.TokenEstimate, "token"), res.Node.PayloadSHA256[:12])
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
	f.StringVar(&file, "file", "", "read the raw content from PATH, or - for standard input (at most 64 MiB: a larger payload is refused, nothing written)")
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

// readFileArg reads PATH, or standard input for "-", as UTF-8 text of at
// most max bytes (a larger regular file is refused before it is read, a
// stream once past max). flag names the option PATH was given to, for the
// errors. check, when not nil, vets the first headCheckBytes as soon as
// they are read: its error is returned as is, before the rest is read.
func readFileArg(stdin io.Reader, path, flag string, max int64, check func(head []byte) error) (string, error) {
	var data []byte
	var err error
	if check == nil {
		check = func([]byte) error { return nil }
	}
	if path == "-" {
		data, err = fsutil.ReadAllMaxHead(stdin, max, headCheckBytes, check)
	} else {
		var fi os.FileInfo
		if fi, err = os.Stat(path); err == nil && fi.IsDir() {
			return "", usagef("%s is a directory; %s takes a file path or - for standard input", path, flag)
		}
		data, err = fsutil.ReadInputMaxHead(path, max, headCheckBytes, check)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return "", err
	}
	var tl *fsutil.TooLargeError
	if errors.As(err, &tl) {
		return "", usagef("cannot read %s: %v (a turn's payload is at most %s: split the output into several turns)", path, tl, fsutil.ByteSize(contextfold.MaxPayloadBytes))
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
	// A JSON document (the payload escaped, and its lists) of up to 1 GiB:
	// what does not start as an object (/dev/zero, a log) is refused
	// after its first bytes, not read whole.
	raw, err := readFileArg(stdin, path, "--input", contextfold.MaxFileBytes, func(head []byte) error {
		if t := bytes.TrimSpace(head); len(t) > 0 && t[0] != '{' {
			return notTurnObject(path, t)
		}
		return nil
	})
	if err != nil {
		return contextfold.Turn{}, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if trimmed := bytes.TrimSpace([]byte(raw)); len(trimmed) > 0 && trimmed[0] != '{' {
		return contextfold.Turn{}, notTurnObject(path, trimmed)
	}
	var in foldInput
	if err := dec.Decode(&in); err != nil {
		return contextfold.Turn{}, usagef("%s: not a turn object: %v; expected {\"step_id\": 42, \"summary\": \"…\", \"raw_content\": \"…\", \"files\": [...], \"commands\": [...], \"errors\": [...], \"session_id\": \"…\"}", path, err)
	}
	if dec.More() {
		return contextfold.Turn{}, usagef("%s: holds more than one JSON document; --input takes one turn (fold each turn with its own call, or use 'contextfold ingest' for a whole session)", path)
	}
	return checkedFoldInput(path, in)
}

// headCheckBytes is how much of an input readFileArg's check sees first.
const headCheckBytes = 64 << 10

// notTurnObject is the error of an --input whose text (trimmed) is not a
// JSON object.
func notTurnObject(path string, trimmed []byte) error {
	return usagef("%s: holds %s, not a turn object; expected {\"step_id\": 42, \"summary\": \"…\", \"raw_content\": \"…\", \"files\": [...], \"commands\": [...], \"errors\": [...], \"session_id\": \"…\"}", path, jsonKind(trimmed))
}

// lossyString refuses a JSON string field of --input that decoding changed:
// a lone UTF-16 surrogate escape ("\ud800" without its pair) is not text
// and decodes to U+FFFD, so the turn would be stored with other text than
// it holds (IPCF stores text losslessly, as checkTurnText requires of the
// command line). It compares the U+FFFD the decoded value holds with those
// the JSON text wrote (literally or as \ufffd).
func lossyString(path, field string, raw json.RawMessage, decoded string) error {
	got := strings.Count(decoded, "\uFFFD")
	if got == 0 {
		return nil
	}
	lower := strings.ToLower(string(raw))
	if got == strings.Count(string(raw), "\uFFFD")+strings.Count(lower, `\ufffd`) {
		return nil
	}
	return usagef("%s: %q holds a lone UTF-16 surrogate escape (a \\uD800–\\uDFFF escape without its pair), which is not text; IPCF stores text losslessly, so nothing was folded: write the whole surrogate pair, or \\ufffd where the character is unknown", path, field)
}

// stepIDRule is the remedy of a bad "step_id" in --input.
const stepIDRule = `step_id must be an integer up to 2^63-1 (9223372036854775807; negative for a turn before the first), written as a JSON number without quotes, fraction or exponent, e.g. "step_id": 42`

// checkedFoldInput turns the raw fields of an --input turn into a Turn; a
// field of the wrong JSON type (a quoted or fractional step_id, a number as
// the summary, a string where a list of strings goes) is a usage error
// naming the field, its value and the remedy. null is an absent field.
func checkedFoldInput(path string, in foldInput) (contextfold.Turn, error) {
	absent := func(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }
	bad := func(field string, r json.RawMessage, what, rule string) error {
		// The value's secrets are redacted before it is cut (a token cut
		// short is no longer found when the message is scrubbed).
		return usagef("%s: %q is %s (%s); %s", path, field, preview(scrubMessage(string(r)), 40), what, rule)
	}
	if absent(in.StepID) {
		return contextfold.Turn{}, usagef("%s: \"step_id\" is required; %s", path, stepIDRule)
	}
	if jsonKind(in.StepID) != "a number" || bytes.ContainsAny(in.StepID, ".eE") {
		return contextfold.Turn{}, bad("step_id", in.StepID, jsonKind(in.StepID)+", not an integer", stepIDRule)
	}
	id, err := strconv.Atoi(string(in.StepID))
	if err != nil {
		return contextfold.Turn{}, bad("step_id", in.StepID, "out of range", stepIDRule)
	}
	t := contextfold.Turn{StepID: id}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		to   *string
		eg   string
	}{
		{"summary", in.Summary, &t.Summary, `"summary": "pytest run after the fix"`},
		{"raw_content", in.RawContent, &t.RawContent, `"raw_content": "$ pytest\n3 passed"`},
		{"session_id", in.SessionID, &t.SessionID, `"session_id": "s1"`},
	} {
		if absent(f.raw) {
			continue
		}
		if jsonKind(f.raw) != "a string" || json.Unmarshal(f.raw, f.to) != nil {
			return contextfold.Turn{}, bad(f.name, f.raw, jsonKind(f.raw), f.name+" must be a JSON string, e.g. "+f.eg)
		}
		if err := lossyString(path, f.name, f.raw, *f.to); err != nil {
			return contextfold.Turn{}, err
		}
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		to   *[]string
		eg   string
	}{
		{"files", in.Files, &t.Files, `"files": ["src/db.py"]`},
		{"commands", in.Commands, &t.Commands, `"commands": ["pytest -x"]`},
		{"errors", in.Errors, &t.Errors, `"errors": ["ConnectionRefusedError"]`},
	} {
		if absent(f.raw) {
			continue
		}
		rule := f.name + " must be a list of JSON strings, e.g. " + f.eg
		var items []json.RawMessage
		if jsonKind(f.raw) != "a list" || json.Unmarshal(f.raw, &items) != nil {
			return contextfold.Turn{}, bad(f.name, f.raw, jsonKind(f.raw), rule)
		}
		list := make([]string, len(items))
		for i, it := range items {
			if jsonKind(it) != "a string" || json.Unmarshal(it, &list[i]) != nil {
				return contextfold.Turn{}, bad(fmt.Sprintf("%s[%d]", f.name, i), it, jsonKind(it), rule)
			}
			if err := lossyString(path, fmt.Sprintf("%s[%d]", f.name, i), it, list[i]); err != nil {
				return contextfold.Turn{}, err
			}
		}
		*f.to = list
	}
	return t, nil
}

// jsonKind names the JSON type of a raw value ("a string", "a number", …).
func jsonKind(r json.RawMessage) string {
	r = bytes.TrimSpace(r)
	if len(r) == 0 {
		return "empty"
	}
	switch r[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	// Scrubbed before it is cut: a token cut to 12 characters is too short
	// for its rule to know it ("ghp_abcdefg…"), whole it is redacted.
	head := strings.ToValidUTF8(string(r[:min(len(r), 512)]), "\uFFFD")
	return fmt.Sprintf("text that is not JSON (it starts with %q)", preview(scrubMessage(head), 12))
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
