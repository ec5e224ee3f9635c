package harness

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSummary is the longest folded-step summary, in characters (code points).
const MaxSummary = 280

// MaxSummaryCommand is the longest command a summary shows, in characters
// (code points): ingest's (package ingest) so that a node the proxy folds
// and the turn ingest reads of the same exchange name the same command.
// The command is most of what a tool output's summary says of the call
// (an output seldom repeats it), and the matcher reads the summary as part
// of the node: a heredoc or a long pipeline names its file or its function
// past 80 characters ("grep -n "self.save_model(…)" django/contrib/admin/
// options.py"), and cut at 80 its output no longer held them.
const MaxSummaryCommand = 120

// Action types of a folded step (spec §8).
const (
	ActionCodeModification = "CODE_MODIFICATION"
	ActionCommandExecution = "COMMAND_EXECUTION"
	ActionExploration      = "EXPLORATION"
	ActionRefactor         = "REFACTOR"
	ActionVerification     = "VERIFICATION"
	ActionOther            = "OTHER"
)

// Statuses of a folded step (spec §8).
const (
	StatusSuccess = "SUCCESS"
	StatusFailed  = "FAILED"
	StatusPartial = "PARTIAL"
	StatusBlocked = "BLOCKED"
)

// maxTargetFiles bounds target_files so that a record stays small.
const maxTargetFiles = 8

// FoldedStepSchema is the JSON Schema (draft 2020-12) of a folded-step record.
//
//go:embed folded_step.schema.json
var FoldedStepSchema []byte

// FoldedStep is the hot projection of a folded turn (spec §8): the record
// that stays in the prompt in place of the turn. It is derived
// deterministically from the turn and its recall-index entry.
type FoldedStep struct {
	StepID      int       `json:"step_id"`
	Timestamp   string    `json:"timestamp"` // the cold node's folded_at (UTC, seconds)
	TargetFiles []string  `json:"target_files"`
	ActionType  string    `json:"action_type"`
	Summary     string    `json:"summary"` // at most MaxSummary characters, valid UTF-8
	Status      string    `json:"status"`
	Artifacts   Artifacts `json:"artifacts"`
}

// Artifacts points from a folded step to its cold storage.
type Artifacts struct {
	// ColdNodeRef is the cold node's path as the recall index records it
	// (relative, '/' separated).
	ColdNodeRef string `json:"cold_node_ref"`
}

// JSON returns the record as compact JSON (fields in schema order, HTML
// characters not escaped). The bytes are a pure function of the record.
func (s FoldedStep) JSON() []byte {
	if s.TargetFiles == nil {
		s.TargetFiles = []string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // cannot fail: strings and ints only
	return bytes.TrimRight(b.Bytes(), "\n")
}

// PromptText is what replaces the folded turn in the outgoing conversation:
// one line that says what it is, then the record.
func (s FoldedStep) PromptText() string {
	return "[contextfold folded step " + strconv.Itoa(s.StepID) +
		": verbatim output kept in verified cold storage; mention its files or terms to recall it]\n" + string(s.JSON())
}

// Validate checks the record against the folded-step schema: required
// fields, enumerations, summary length and text validity.
func (s FoldedStep) Validate() error {
	var errs []error
	if s.Timestamp == "" {
		errs = append(errs, errors.New("timestamp is required"))
	}
	if s.Summary == "" {
		errs = append(errs, errors.New("summary is required"))
	}
	if n := utf8.RuneCountInString(s.Summary); n > MaxSummary {
		errs = append(errs, fmt.Errorf("summary has %d characters, more than %d", n, MaxSummary))
	}
	if !utf8.ValidString(s.Summary) {
		errs = append(errs, errors.New("summary is not valid UTF-8"))
	}
	switch s.ActionType {
	case "", ActionCodeModification, ActionCommandExecution, ActionExploration, ActionRefactor, ActionVerification, ActionOther:
	default:
		errs = append(errs, fmt.Errorf("action_type %q is not one of the spec's values", s.ActionType))
	}
	switch s.Status {
	case StatusSuccess, StatusFailed, StatusPartial, StatusBlocked:
	default:
		errs = append(errs, fmt.Errorf("status %q is not one of SUCCESS, FAILED, PARTIAL, BLOCKED", s.Status))
	}
	if s.Artifacts.ColdNodeRef == "" {
		errs = append(errs, errors.New("artifacts.cold_node_ref is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("harness: folded step %d: %w", s.StepID, err)
	}
	return nil
}

// Summarize derives the one-line summary of a message, at most MaxSummary
// characters: the role, the tool and command when known, then the first
// meaningful line (for a failed tool result, the first line that looks like
// an error). Whitespace is collapsed, control characters and invalid UTF-8
// removed, hydrated content ignored, and any cut falls on a character
// boundary. It is a pure function.
func Summarize(m Message) string { return summarizeText(m, summaryText(m)) }

// summaryText is the text Summarize reads of m: its payload, else its
// text with hydrated content removed.
func summaryText(m Message) string {
	text, _ := m.payload()
	if text == "" {
		text = StripHydration(m.Text())
	}
	return text
}

// summarizeText is Summarize of m whose summaryText is text.
func summarizeText(m Message, text string) string {
	head := m.Role
	if m.Tool != "" {
		head += " " + m.Tool
	}
	if m.Command != "" {
		head += " $ " + cut(clean(m.Command), MaxSummaryCommand)
	}
	if m.IsError {
		head += " " + errorMark
	}
	if m.Role == RoleAssistant {
		// mini-swe-agent's and SWE-agent's label of the agent's reasoning
		// (alone on its line before it, or leading it): not a word of it,
		// and ingest's summary drops it too.
		text = strings.TrimPrefix(strings.TrimLeft(text, " \t\r\n"), "THOUGHT:")
	}
	o := readObservation(text)
	line := describeLine(o.body, m.IsError || o.failed || looksFailed(text) || (m.Role == RoleTool || m.Tool != "" || m.Command != "") && hasFailureLine(text))
	switch {
	case len(o.editedIn) > 0:
		line = "edits " + strings.Join(o.editedIn, ", ") + ": " + line
	case o.exit != "" && line == "":
		line = "exit " + o.exit + ", no output"
	case o.exit != "":
		line = "exit " + o.exit + ": " + line
	}
	line = strings.TrimSuffix(line, ": ")
	s := clean(head)
	if line != "" {
		s += ": " + line
	}
	return cut(s, MaxSummary)
}

var errLine = regexp.MustCompile(`(?i)\b(error|exception|traceback|fatal|panic|failed|failure)\b`)

// clean makes s a single line of valid UTF-8 without control characters.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if r >= 0xD800 && r <= 0xDFFF {
			r = '\uFFFD'
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// cut shortens s to at most n code points, ending with "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for j := range s {
		if k == n-1 {
			i = j
			break
		}
		k++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

var (
	exitRe = regexp.MustCompile(`(?i)(?:<returncode>\s*([0-9]+)\s*</returncode>|exit (?:code|status)[: ]+([0-9]+))`)
)

// looksFailed reports a non-zero exit code recorded in a tool output.
func looksFailed(text string) bool {
	lower := strings.Contains(text, "returncode") || strings.Contains(text, "xit code") || strings.Contains(text, "xit status") ||
		strings.Contains(text, "XIT CODE") || strings.Contains(text, "XIT STATUS")
	if !lower {
		return false
	}
	m := exitRe.FindStringSubmatch(text)
	if m == nil {
		return false
	}
	code := m[1] + m[2]
	return strings.Trim(code, "0") != ""
}

// errorMark in a summary's head records that the tool flagged its result
// as failed, so that the status can be derived from the stored summary.
const errorMark = "[error]"

// failureLine matches a line of tool output that reports a failure, across
// the languages and tools agents run: a test runner's FAIL/FAILED, "--- FAIL:",
// "test result: FAILED", "N failed"/"N failing"; a Python traceback or a
// "SomethingError:"/"SomethingException:" line; a Go panic or compiler
// diagnostic (file.go:L:C:); make's "***"; an "error:"/"fatal:" line or a
// compiler's "file:L:C: error" (gcc, clang, rustc's error[E0308]:); a coded
// diagnostic "error TS2339:" (tsc), "error CS1002:" (dotnet); npm's ERR!,
// yarn's "error Command failed", Maven's [ERROR] and BUILD FAILURE,
// Gradle's BUILD FAILED, "Build failed", "Compilation failed"; a
// segmentation fault; "command not found"; rake aborted!.
var failureLine = regexp.MustCompile(`(?m)` +
	`^\s*(?:FAIL(?:ED)?\b|--- FAIL:|Traceback \(most recent call last\):|panic: |make(?:\[\d+\])?: \*\*\* |` +
	`(?:error|fatal|ERROR|FATAL)(?:\[[^\]]*\])?: |npm ERR! |\[ERROR\] |[A-Z]\w*(?:Error|Exception): |` +
	`Segmentation fault|rake aborted!|error Command failed|\S+\.go:\d+:\d+: \S)` +
	`|:\d+(?::\d+)?: (?:fatal )?error\b` +
	`|\berror [A-Z]{2,}\d{3,}:` +
	`|\b(?:BUILD FAILED|BUILD FAILURE|[Bb]uild failed|[Cc]ompilation failed|test result: FAILED|[Tt]ests? failed)\b` +
	`|\b[1-9]\d* (?:failed|failing)\b` +
	`|: command not found$`)

// outputFailed reports a failure line in the output of m: a tool's result,
// a command's output, or a turn of unknown role (a log folded by hand). An
// assistant's text (even with the command it issues), or a user's prompt,
// that speaks of an error is not a failure.
func outputFailed(m Message, payload string) bool {
	switch m.Role {
	case RoleAssistant, RoleSystem:
		return false // its text is what it says or asks, not an output
	case RoleUser:
		if m.Tool == "" && m.Command == "" {
			return false // a prompt (a tool result in a user message names its tool)
		}
	}
	return hasFailureLine(payload)
}

// deriveStatus is FAILED for a failed tool result — flagged by the tool, a
// non-zero exit code, or a failure line in its output — else SUCCESS.
func deriveStatus(m Message, summary, payload string) string {
	head, _, _ := strings.Cut(summary, ": ")
	if m.IsError || strings.HasSuffix(head, errorMark) || looksFailed(payload) {
		return StatusFailed
	}
	if outputFailed(m, payload) {
		return StatusFailed
	}
	return StatusSuccess
}

// failureSummary is the summary of a FAILED record: summary as it is when it
// already tells the failure (an error word, or Summarize's error mark), else
// summary followed by the output's first failure line, so that a page-table
// line shows why the step failed rather than how its output began.
func failureSummary(summary, payload string) string {
	if errLine.MatchString(summary) || errName.MatchString(summary) || payload == "" || payload == summary {
		return summary
	}
	line := ""
	for _, l := range strings.Split(payload, "\n") {
		if hasFailureLine(l) || errLine.MatchString(l) || errName.MatchString(l) {
			if c := clean(stripTags(l)); c != "" && !noiseLine(l) {
				line = c
				break
			}
		}
	}
	if line == "" {
		return summary
	}
	return summary + " → " + line
}

var (
	editTools    = []string{"edit", "write", "str_replace", "apply_patch", "multiedit", "notebookedit", "create_file", "insert", "patch"}
	exploreTools = []string{"read", "view", "glob", "grep", "ls", "find", "search", "open", "fetch", "cat", "list", "scroll", "goto"}
	runTools     = []string{"bash", "shell", "run", "exec", "terminal", "command", "cmd"}
	verifyWords  = []string{"pytest", "go test", "go vet", "npm test", "make test", "cargo test", "make lint", "ruff", "mypy", "tox", "unittest", "golangci-lint", "eslint", "jest"}
)

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// deriveActionType classifies a folded turn (spec §8 action_type) from its
// tool, command and text.
func deriveActionType(m Message, payload string) string {
	tool := strings.ToLower(m.Tool)
	cmd := strings.ToLower(m.Command)
	head := strings.ToLower(payload)
	if len(head) > 4096 {
		head = head[:4096]
	}
	switch {
	case containsAny(cmd, verifyWords):
		return ActionVerification
	case strings.Contains(cmd, "refactor") || strings.Contains(tool, "rename"):
		return ActionRefactor
	case containsAny(tool, editTools) || strings.Contains(head, "<<<<<<< search") || strings.Contains(head, "diff --git"):
		return ActionCodeModification
	case m.Command != "" || containsAny(tool, runTools):
		if containsAny(head, verifyWords) {
			return ActionVerification
		}
		return ActionCommandExecution
	case containsAny(tool, exploreTools):
		return ActionExploration
	}
	return ActionOther
}
