package ingest

import (
	"errors"
	"fmt"
	"io"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// ClaudeCodeCursor is where a read of a Claude Code session JSONL stopped,
// for a later read of the lines appended since ([ReadClaudeCode]): what the
// parse of the whole file carries from one line to the next. The zero
// value reads the file from its start.
type ClaudeCodeCursor struct {
	// Offset is the end of the last line read whole (past its newline),
	// in bytes from the file's start; 0 is the start (a byte order mark
	// there is skipped).
	Offset int64
	// Line is the count of lines before Offset (Problem line numbers go on
	// from it).
	Line int
	// Step is the step id of the next turn.
	Step int
	// Readable says that a well-formed record was read before Offset (a
	// file of only bad lines is refused, as [Parse] refuses it).
	Readable bool
	// Seen, when set, reports whether a record with this uuid was read
	// before Offset: a later copy of it is no new turn.
	Seen func(uuid string) bool
	// Tool, when set, returns the tool name and command of the tool call
	// made before Offset with this tool_use id (the latest one), which
	// names the tool of the turn holding its result.
	Tool func(id string) (name, command string, ok bool)
}

// ClaudeCodeRecord is what one line of a Claude Code session JSONL did,
// as [ReadClaudeCode] passes it on.
type ClaudeCodeRecord struct {
	Start, End int64    // the line's bytes in the file: [Start, End), End past its newline
	Complete   bool     // the line ends in a newline (else it is the file's last, perhaps still being written)
	UUID       string   // the uuid it is the first record of, else ""
	Calls      []string // the tool_use ids of the tool calls it made
	Result     string   // the tool_use id of the call that named its turn's tool, else ""
	Turn       *Turn    // its turn, or nil (a bad line, a copy, a record that is no turn)
}

// OpenClaudeCode opens the regular file path (a hook's transcript_path) for
// [ReadClaudeCode], as [ParseRegularFile] opens it: a FIFO or a device is
// refused without a blocking read, a file past MaxTranscriptBytes or
// holding binary data in its first 64 KiB is refused. The section has the
// file's size when opened; close releases it.
func OpenClaudeCode(path string) (sec *io.SectionReader, close func() error, err error) {
	sec, close, err = fsutil.OpenRegularMax(path, MaxTranscriptBytes, binarySniff, binaryCheck(path))
	if errors.Is(err, ErrUnknownFormat) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, readErr(err)
	}
	return sec, close, nil
}

// ReadClaudeCode reads the lines of the Claude Code session JSONL src from
// from.Offset on, as the parse of the whole file ([ParseRegularFile] with
// FormatClaudeCode) reads them once it has read those before from.Offset:
// the same turns, step ids, tool names and commands, copies skipped. It
// calls each for every line, in order (an error from each stops the read
// and is returned), and returns the lines' problems (Result.Turns stays
// empty: each receives them) and the cursor at the end of the last line
// read whole, for the next read; a last line with no newline is read, but
// the cursor stays before it, so the next read reads it again. A file of
// only bad lines is refused as Parse refuses it. No record limit.
func ReadClaudeCode(src *io.SectionReader, from ClaudeCodeCursor, each func(*ClaudeCodeRecord) error) (*Result, ClaudeCodeCursor, error) {
	start := from.Offset
	if start == 0 {
		var head [len(bom)]byte
		if n, _ := src.ReadAt(head[:], 0); n == len(bom) && string(head[:]) == bom {
			start = int64(len(bom))
		}
	}
	if start > src.Size() {
		return nil, from, fmt.Errorf("ingest: read transcript: the cursor (byte %d) is past the end of the file (%d bytes)", start, src.Size())
	}
	p := &parser{res: &Result{Format: FormatClaudeCode}}
	var rec *ClaudeCodeRecord
	p.emit = func(t Turn) error {
		rec.Turn = &t
		return nil
	}
	st := &claudeState{step: from.Step, from: &from}
	record := p.claudeRecordsFrom(st)
	lr := newLineReader(io.NewSectionReader(src, start, src.Size()-start), -1)
	lr.n = from.Line
	at := ClaudeCodeCursor{Offset: start, Line: from.Line, Step: from.Step, Readable: from.Readable}
	readable := false
	for p.err == nil {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, from, err
		}
		rec = &ClaudeCodeRecord{Start: at.Offset, End: at.Offset + int64(len(line))}
		rec.Complete = lr.newline
		if rec.Complete {
			rec.End++
		}
		st.rec = rec
		if l, ok := p.jsonLine(lr.n, line); ok {
			readable = true
			record(l)
		}
		if p.err != nil {
			return nil, from, p.err
		}
		if err := each(rec); err != nil {
			return nil, from, err
		}
		if rec.Complete {
			at.Offset, at.Line, at.Step = rec.End, lr.n, st.step
			at.Readable = at.Readable || readable
		}
	}
	if !from.Readable && !readable && p.problems() > 0 {
		return nil, from, p.noClaudeRecord()
	}
	p.finish()
	at.Seen, at.Tool = nil, nil
	return p.res, at, nil
}

// ClaudeCodeToolCall returns the tool name and command of the tool call
// with tool_use id id that the record line (one line of a Claude Code
// session JSONL, without its newline) makes, as the parse of the whole
// file registers it for the turn holding its result; ok is false when the
// line makes no such call.
func ClaudeCodeToolCall(line []byte, id string) (name, command string, ok bool) {
	p := &parser{res: &Result{}, emit: func(Turn) error { return nil }}
	st := &claudeState{}
	record := p.claudeRecordsFrom(st)
	if l, ok := p.jsonLine(1, line); ok {
		record(l)
	}
	ti, ok := st.tools[id]
	return ti.name, ti.command, ok
}
