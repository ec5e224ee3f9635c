package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Format names a transcript layout accepted by [Parse].
type Format string

// Accepted formats. FormatAuto asks [Parse] to call [Detect].
const (
	FormatAuto         Format = "auto"
	FormatClaudeCode   Format = "claude-code"
	FormatOpenAI       Format = "openai"
	FormatAnthropic    Format = "anthropic"
	FormatSWEAgent     Format = "swe-agent"
	FormatMiniSWEAgent Format = "mini-swe-agent"
	FormatOpenHands    Format = "openhands"
	FormatAider        Format = "aider"
)

// Formats lists the concrete formats in a fixed order (FormatAuto excluded).
func Formats() []Format {
	return []Format{FormatClaudeCode, FormatOpenAI, FormatAnthropic, FormatSWEAgent,
		FormatMiniSWEAgent, FormatOpenHands, FormatAider}
}

// ParseFormat converts a user-supplied name (as given to --format) into a
// Format. The empty string means FormatAuto.
func ParseFormat(name string) (Format, error) {
	n := Format(strings.ToLower(strings.TrimSpace(name)))
	if n == "" || n == FormatAuto {
		return FormatAuto, nil
	}
	for _, f := range Formats() {
		if n == f {
			return f, nil
		}
	}
	return "", fmt.Errorf("ingest: unknown format %q; use one of: auto, %s", name, formatList())
}

func formatList() string {
	fs := Formats()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// Turn is one conversation turn ready to be folded.
type Turn struct {
	StepID    int    // canonical position in the conversation history (see the package doc)
	Role      string // "user", "assistant", "tool", "system"
	Kind      string // "prompt", "response", "tool_call", "tool_result", "observation", "thought", "compaction", "compact_boundary", "meta", "demonstration", "system", "event"
	Tool      string // tool name when known (e.g. "Bash", "str_replace_editor"), else ""
	Command   string // shell command when known, else ""
	Summary   string // deterministic extractive one-liner, <= 280 code points, valid UTF-8
	Payload   string // full content of the turn, deterministic rendering, valid UTF-8
	SessionID string // session id when the file has one, else ""
	IsError   bool   // tool result flagged as error (is_error, non-zero exit code, error observation)
	ID        string // the record's own id when the file has one (Claude Code uuid, OpenHands event id), else ""
	ParentID  string // the id of the record this one follows (parentUuid, else logicalParentUuid; OpenHands cause), else ""
}

// Problem is a skipped or bad input line, for the closing report.
type Problem struct {
	Line    int    `json:"line"`    // 1-based line number in the input; 0 when unknown
	Message string `json:"message"` // what was wrong and what was done about it
}

// Result is the outcome of parsing one transcript.
type Result struct {
	Format   Format    // the format that was parsed
	Messages int       // records/messages read (well-formed JSONL records, array elements, Aider turns)
	Turns    []Turn    // in step order, unique StepIDs, ascending
	Problems []Problem // bad lines that were skipped, the first MaxProblems of them
	// ProblemsOmitted counts the bad lines skipped past the first
	// MaxProblems, which Problems leaves out.
	ProblemsOmitted int
	Replaced        int // lone surrogates / invalid UTF-8 sequences replaced by U+FFFD
}

// ErrUnknownFormat is wrapped by the error [Detect] returns for unrecognised input.
var ErrUnknownFormat = errors.New("unrecognised transcript format")

const acceptedFormats = "expected one of: claude-code (Claude Code session JSONL), " +
	"openai (Chat Completions messages array, bare or under \"messages\"), " +
	"anthropic (Messages API messages array, bare or under \"messages\"), " +
	"swe-agent (.traj object with \"history\"), " +
	"mini-swe-agent (.traj.json object with \"messages\"), " +
	"openhands (evaluation output JSONL with \"history\" events), " +
	"aider (.aider.chat.history.md)"

func unknownFormat(why string) error {
	return fmt.Errorf("ingest: %w: %s; %s; pass --format to force one", ErrUnknownFormat, why, acceptedFormats)
}

// MaxTranscriptBytes is the largest transcript ParseFile reads: 512 MiB.
// A larger regular file is refused before it is read, a pipe or standard
// input (ParseReaderWith) once past the limit; split the session, or
// ingest its parts.
const MaxTranscriptBytes = 512 << 20

// binaryFormat is the error for binary input (no --format reads it).
func binaryFormat(why string) error {
	return fmt.Errorf("ingest: %w: %s; ingest reads the text transcript an agent records, %s", ErrUnknownFormat, why, acceptedFormats)
}

// ParseFile reads path and parses it with [Parse]. path is a regular file
// of at most MaxTranscriptBytes or a pipe (bash's <(…)); a directory, a
// socket, or a larger input is refused with an error naming the limit.
// It is [ParseFileWith] with no record limit, collecting every turn.
func ParseFile(path string, f Format) (*Result, error) {
	return ParseFileWith(path, Options{Format: f, MaxRecordBytes: -1})
}

// ParseRegularFile is ParseFile for a path that must be a regular file (a
// hook's transcript_path): a FIFO or a device is refused without being
// opened for a blocking read.
func ParseRegularFile(path string, f Format) (*Result, error) {
	return ParseRegularFileWith(path, Options{Format: f, MaxRecordBytes: -1})
}

// Parse parses a transcript in format f (FormatAuto detects it). Bad lines of
// line-oriented formats are skipped and reported in Result.Problems; an input
// that cannot be read as f at all is an error. It reads data as
// [ParseFileWith] reads a file, with no record limit.
func Parse(data []byte, f Format) (*Result, error) {
	return ParseWith(data, Options{Format: f, MaxRecordBytes: -1})
}

// parseWhole is the parser that holds the whole transcript: what the
// streaming parser (stream.go) falls back to for input only it reproduces
// exactly (an error's wording, an unusual layout), and the reference the
// streaming parser is tested against. data holds the input after the
// caller's BOM check; p's result and emit are used as given.
func (p *parser) parseWhole(data []byte, f Format) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if f == "" {
		f = FormatAuto
	}
	if f == FormatAuto {
		d, err := Detect(data)
		if err != nil {
			return err
		}
		f = d
	} else if why, ok := binaryInput(data); ok {
		return binaryFormat(why)
	}
	p.res.Format = f
	if f == FormatClaudeCode || f == FormatOpenHands {
		if err := checkLines(data, p.lineLimit); err != nil {
			return err
		}
	}
	var err error
	switch f {
	case FormatClaudeCode:
		err = p.parseClaudeCode(data)
	case FormatOpenAI:
		err = p.parseChatDocument(data, FormatOpenAI)
	case FormatAnthropic:
		err = p.parseChatDocument(data, FormatAnthropic)
	case FormatSWEAgent:
		err = p.parseSWEAgent(data)
	case FormatMiniSWEAgent:
		err = p.parseMiniSWEAgent(data)
	case FormatOpenHands:
		err = p.parseOpenHands(data)
	case FormatAider:
		p.parseAider(data)
	default:
		return fmt.Errorf("ingest: unknown format %q; use one of: auto, %s", f, formatList())
	}
	if err != nil {
		return err
	}
	return p.err
}

// parser accumulates turns for one parse.
type parser struct {
	res  *Result
	emit func(Turn) error // when set, each turn goes here instead of res.Turns
	// lineLimit, when above 0, bounds each line of a JSONL transcript
	// (claude-code, openhands) that parseWhole reads, in bytes without
	// the newline: Options.MaxRecordBytes, for the inputs the streaming
	// parser leaves to the whole-input parser (a torn first line). A line
	// is a record, or part of one (a pretty-printed OpenHands run).
	lineLimit int64
	err       error // the first error emit returned: parsing stops
	n         int   // turns passed on
	// maxTurns, when above 0, is Options.MaxTurns: the turn past it
	// stops the parse with a *TooManyTurnsError
	maxTurns int
	// deferred are problems reported after those of the lines (an
	// OpenHands run's, once every line was read)
	deferred []Problem
	omitted  int // problems past MaxProblems, in either list
	last     int // the last step id passed on
}

// draft is a turn before its summary is computed.
type draft struct {
	Turn
	label  string // first word of the summary (role, or kind for special records)
	source string // text the summary line is extracted from
}

// add completes d (its summary, valid UTF-8 in every string) and passes it
// on, in step order: a step id not above the last one passed on is
// dropped. Cannot happen with the parsers of this package; kept as a guard
// so that the documented ordering holds even for unforeseen input.
func (p *parser) add(d draft) {
	if p.err != nil {
		return
	}
	if d.label == "" {
		d.label = d.Role
	}
	t := d.Turn
	if p.n > 0 && t.StepID <= p.last {
		return
	}
	if p.maxTurns > 0 && p.n >= p.maxTurns {
		p.err = &TooManyTurnsError{Limit: p.maxTurns, Step: t.StepID}
		return
	}
	p.n++
	p.last = t.StepID
	t.Summary = validText(summarize(d.label, t.Tool, t.Command, d.source, t.IsError))
	t.Role = validText(t.Role)
	t.Kind = validText(t.Kind)
	t.Tool = validText(t.Tool)
	t.Command = validText(t.Command)
	t.Payload = validText(t.Payload)
	t.SessionID = validText(t.SessionID)
	t.ID = validText(t.ID)
	t.ParentID = validText(t.ParentID)
	if p.emit != nil {
		p.err = p.emit(t)
		return
	}
	p.res.Turns = append(p.res.Turns, t)
}

// MaxProblems is the most problems a Result lists; past them only
// Result.ProblemsOmitted counts. A file of a million torn lines (a few
// MB) held a million problems, 150 bytes each, and printed them all.
const MaxProblems = 100

func (p *parser) problem(line int, format string, args ...any) {
	if len(p.res.Problems) >= MaxProblems {
		p.omitted++
		return
	}
	p.res.Problems = append(p.res.Problems, Problem{Line: line, Message: fmt.Sprintf(format, args...)})
}

// deferProblem reports a problem listed after those of the lines (see
// parser.deferred).
func (p *parser) deferProblem(line int, format string, args ...any) {
	if len(p.deferred) >= MaxProblems {
		p.omitted++
		return
	}
	p.deferred = append(p.deferred, Problem{Line: line, Message: fmt.Sprintf(format, args...)})
}

// problems is the count of problems reported so far, listed or not.
func (p *parser) problems() int { return len(p.res.Problems) + len(p.deferred) + p.omitted }

// finish makes every problem valid UTF-8 and Turns non-nil.
func (p *parser) finish() {
	if p.res.Turns == nil {
		p.res.Turns = []Turn{}
	}
	room := min(MaxProblems-len(p.res.Problems), len(p.deferred))
	p.res.Problems = append(p.res.Problems, p.deferred[:room]...)
	p.res.ProblemsOmitted = p.omitted + len(p.deferred) - room
	p.deferred, p.omitted = nil, 0
	for i := range p.res.Problems {
		p.res.Problems[i].Message = validText(p.res.Problems[i].Message)
	}
}

// checkLines returns a *RecordTooLargeError for the first line of data
// longer than limit bytes (without its newline); limit <= 0: no limit.
func checkLines(data []byte, limit int64) error {
	if limit <= 0 {
		return nil
	}
	for n := 1; len(data) > 0; n++ {
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			end = len(data)
		}
		if int64(end) > limit {
			return &RecordTooLargeError{What: fmt.Sprintf("line %d", n), Limit: limit}
		}
		data = data[min(end+1, len(data)):]
	}
	return nil
}
