// Package hooks plugs contextfold into Claude Code through its hooks, for
// users who cannot put the proxy in front of their agent.
//
//   - UserPromptSubmit: scan the prompt against the session's store and answer
//     with the verified hydrated content as additionalContext, within a
//     character cap, ending with a marker that says what was left out and how
//     to fetch it. Nothing matches: no output.
//   - Stop, SubagentStop, PreCompact: fold the session's new turns from the
//     transcript (incremental and idempotent: indexed steps are skipped).
//   - SessionStart: the session's folded-step records as a compact page table.
//
// The functions here never print; the command decides what goes to stdout
// (exactly one JSON object, or nothing) and to stderr (diagnostics).
package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/contextfold/contextfold/match"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/scrub"
)

// Claude Code hook event names.
const (
	EventUserPromptSubmit = "UserPromptSubmit"
	EventStop             = "Stop"
	EventSubagentStop     = "SubagentStop"
	EventPreCompact       = "PreCompact"
	EventSessionStart     = "SessionStart"
)

// DefaultMaxChars is the default cap of injected context, in characters
// counted as UTF-16 code units (the way Claude Code measures strings; never
// fewer than code points). Claude Code cuts additionalContext above 10,000
// characters to a preview; 9,000 leaves room for its own framing.
const DefaultMaxChars = 9000

// maxInputBytes bounds the hook payload read from stdin.
const maxInputBytes = 16 << 20

// Input is the JSON payload Claude Code writes to a hook's stdin. Fields an
// event does not use are empty.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	CWD            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`
	HookEventName  string `json:"hook_event_name"`
	// Prompt is the user's prompt (UserPromptSubmit).
	Prompt string `json:"prompt,omitempty"`
	// StopHookActive is true when Claude Code is already continuing because
	// of a Stop hook (Stop, SubagentStop). We never block, so it changes
	// nothing.
	StopHookActive bool `json:"stop_hook_active,omitempty"`
	// Source is startup, resume, clear or compact (SessionStart).
	Source string `json:"source,omitempty"`
	// Trigger is manual or auto (PreCompact).
	Trigger string `json:"trigger,omitempty"`
}

// Output is the JSON answer of a hook that adds context.
type Output struct {
	HookSpecificOutput SpecificOutput `json:"hookSpecificOutput"`
}

// SpecificOutput is the event-specific part of Output.
type SpecificOutput struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// Options configure the hooks. The zero value is valid.
type Options struct {
	// Dir is the store directory. "" means per project and session:
	// <cwd>/.contextfold/sessions/<session_id>. It may contain the
	// placeholders {cwd} and {session_id}.
	Dir string
	// MaxChars caps the injected context in UTF-16 code units. 0 means
	// DefaultMaxChars.
	MaxChars int
	// Diag receives one-line diagnostics (an unmatched id, a refused node).
	// nil discards them.
	Diag io.Writer
	// Match is the matching mode of UserPromptSubmit: "" or match.Ranked
	// (the default: ranked scan, focused hydration), or match.Exact (the
	// reference's scan and prefix truncation).
	Match match.Mode
}

func (o Options) mode() match.Mode {
	if o.Match == "" {
		return match.Ranked
	}
	return o.Match
}

func (o Options) maxChars() int {
	if o.MaxChars <= 0 {
		return DefaultMaxChars
	}
	return o.MaxChars
}

func (o Options) diagf(format string, a ...any) {
	if o.Diag != nil {
		fmt.Fprintf(o.Diag, "contextfold: "+format+"\n", a...)
	}
}

// ReadInput decodes a hook payload. The payload must be one JSON object.
func ReadInput(r io.Reader) (*Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("hooks: reading the hook payload: %w", err)
	}
	if len(data) > maxInputBytes {
		return nil, fmt.Errorf("hooks: the hook payload is larger than %d bytes", maxInputBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(`hooks: the hook payload is empty: the hook reads one JSON object on stdin, which Claude Code sends (to run it by hand: echo '{"session_id":"abc","cwd":"'"$PWD"'","transcript_path":"…"}' | contextfold hook claude-code Stop)`)
	}
	var in Input
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("hooks: the hook payload is not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("hooks: the hook payload holds more than one JSON value")
	}
	return &in, nil
}

// CheckEvent reports an error when the payload names another event than
// the hook was installed for (an empty name is accepted).
func (in *Input) CheckEvent(event string) error {
	if in.HookEventName != "" && !strings.EqualFold(in.HookEventName, event) {
		return fmt.Errorf("hooks: the payload is for %q but the hook was installed for %q; check the event name in settings.json", in.HookEventName, event)
	}
	return nil
}

// StoreDir resolves the store of a hook call: opts.Dir with its placeholders
// expanded, else <cwd>/.contextfold/sessions/<session_id>, where cwd is the
// payload's cwd (else the process's working directory).
func StoreDir(in *Input, dir string) (string, error) {
	needSession := dir == "" || strings.Contains(dir, "{session_id}")
	if needSession {
		if err := checkSessionID(in.SessionID); err != nil {
			return "", err
		}
	}
	cwd := in.CWD
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("hooks: no cwd in the payload and no working directory: %w", err)
		}
		cwd = wd
	}
	if dir == "" {
		if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("hooks: the payload's cwd %q is not a directory; pass --dir to choose the store", cwd)
		}
		return filepath.Join(cwd, contextfold.DefaultStoreDir, "sessions", safeSessionID(in.SessionID)), nil
	}
	dir = strings.ReplaceAll(dir, "{cwd}", cwd)
	if needSession {
		dir = strings.ReplaceAll(dir, "{session_id}", safeSessionID(in.SessionID))
	}
	return dir, nil
}

var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// safeSessionID is the form of a payload's session_id that names its
// store's directory: the id itself, unless the secret scrubber finds a
// secret in it (a token where an id should be), then scrub.SafeName's
// "sha256-<64 hex>" — the value never reaches the disk. Claude Code's ids
// (UUIDs) are taken as they are without building the scrubber.
func safeSessionID(id string) string {
	if uuidShape.MatchString(id) {
		return id
	}
	sc, err := scrub.New()
	if err != nil {
		return id // the store's own scrubbing reports the same failure
	}
	return sc.SafeName(id)
}

// quoteID quotes a session_id for a message, secrets redacted.
func quoteID(id string) string {
	if sc, err := scrub.New(); err == nil {
		id = sc.Scrub(id).Text
	}
	return strconv.Quote(id)
}

// checkSessionID accepts the ids Claude Code uses (UUIDs) and refuses
// anything that could leave the sessions directory, or make it read as one
// store: contextfold.ColdNodesDir or contextfold.IndexFile there would hide
// every other session from sessions, recall, scan and mcp.
func checkSessionID(id string) error {
	if id == "" {
		return errors.New("hooks: the payload has no session_id; pass --dir to choose the store")
	}
	if id == contextfold.ColdNodesDir || id == contextfold.IndexFile {
		return fmt.Errorf("hooks: session_id %s is the name of a store's own file: its store would make the directory of sessions read as one store; pass --dir to choose the store", quoteID(id))
	}
	if ValidSessionID(id) {
		return nil
	}
	// Why not, for the message.
	if len(id) > 128 {
		return fmt.Errorf("hooks: session_id %s is not usable as a directory name", quoteID(id))
	}
	if c := id[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') && c < utf8.RuneSelf {
		return fmt.Errorf("hooks: session_id %s starts with %q; a session_id starts with a letter or a digit; pass --dir to choose the store", quoteID(id), rune(c))
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("hooks: session_id %s holds %q; only letters, digits, '-', '_' and '.' are accepted", quoteID(id), r)
		}
	}
	return fmt.Errorf("hooks: session_id %s is not usable as a directory name", quoteID(id))
}

// ValidSessionID reports whether id can name a session's directory under
// sessions/ (the hooks' session_id, ingest's new --session): 1-128 ASCII
// letters, digits, '-', '_' and '.', starting with a letter or a digit (as
// the proxy's session names do: a leading '.' would hide the directory or
// take the name of a proxy's own file, .lineage; a leading '-' reads as a
// flag when the id is typed again). So never "." nor "..", nor a path.
// Pure.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// WriteOutput prints out as exactly one JSON object and a newline; nil
// prints nothing.
func WriteOutput(w io.Writer, out *Output) error {
	if out == nil {
		return nil
	}
	data, err := json.Marshal(out) // one line; invalid UTF-8 becomes U+FFFD
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// storeExists reports whether dir holds a recall index: the fast no-store
// path of UserPromptSubmit and SessionStart.
func storeExists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, contextfold.IndexFile))
	return err == nil
}

// toolFetch is the MCP server's tool that reads an archived node
// (mcpserver.ToolFetch; hooks do not import the MCP adapter, and a test of
// the command checks that the two names agree).
const toolFetch = "fetch_archived_node"

// ToolFetchName is the MCP tool name the hooks point the model to.
const ToolFetchName = toolFetch
