package ingest

import (
	"fmt"
	"strings"
)

const aiderSessionPrefix = "# aider chat started at"

// aiderLineKind classifies one line of an Aider chat history: 'S' session
// header, 'U' user, 'T' tool/output, 'A' assistant, 0 blank.
func aiderLineKind(line string) (byte, string) {
	switch {
	case strings.HasPrefix(line, aiderSessionPrefix):
		return 'S', strings.TrimSpace(strings.TrimPrefix(line, "#"))
	case strings.HasPrefix(line, "#### "):
		return 'U', line[len("#### "):]
	case strings.TrimRight(line, " \t") == "####":
		return 'U', ""
	case strings.HasPrefix(line, "> "):
		return 'T', line[len("> "):]
	case strings.TrimRight(line, " \t") == ">":
		return 'T', ""
	case strings.TrimSpace(line) == "":
		return 0, ""
	}
	return 'A', line
}

// parseAider parses an Aider chat history: a turn is a session header line, a
// run of "#### " user lines, a run of "> " output lines or a run of other
// (assistant) lines; blank lines stay with the turn they follow.
func (p *parser) parseAider(data []byte) {
	text, n := sanitize(string(data))
	p.res.Replaced += n
	a := p.aiderTurns(-1)
	for i, line := range strings.Split(text, "\n") {
		if p.err != nil {
			return
		}
		_ = a.line(i+1, line)
	}
	a.end()
}

// aiderParse turns the lines of an Aider chat history, given in file order,
// into turns: a turn is passed on when the next one starts (or at end).
type aiderParse struct {
	p     *parser
	limit int64 // most bytes of lines one turn may hold (< 0: none)
	kind  byte  // the open turn's kind (0: none yet)
	first int   // the line the open turn starts at
	size  int64 // bytes of its lines
	lines []string
	n     int // turns started
}

func (p *parser) aiderTurns(limit int64) *aiderParse { return &aiderParse{p: p, limit: limit} }

// line takes line n (1-based; valid UTF-8, without its newline). The error
// is a *RecordTooLargeError for a turn past the limit.
func (a *aiderParse) line(n int, line string) error {
	line = strings.TrimSuffix(line, "\r")
	k, body := aiderLineKind(line)
	if k == 0 {
		if a.kind != 0 {
			if a.size++; a.limit >= 0 && a.size > a.limit {
				return &RecordTooLargeError{What: fmt.Sprintf("the Aider turn starting at line %d", a.first), Limit: a.limit}
			}
			a.lines = append(a.lines, "")
		}
		return nil
	}
	if k == 'S' || a.kind == 0 || a.kind != k || a.kind == 'S' {
		a.flush()
		a.kind, a.first, a.size, a.n = k, n, 0, a.n+1
	}
	body = strings.TrimRight(body, " \t")
	a.size += int64(len(body)) + 1
	if a.limit >= 0 && a.size > a.limit {
		return &RecordTooLargeError{What: fmt.Sprintf("the Aider turn starting at line %d", a.first), Limit: a.limit}
	}
	a.lines = append(a.lines, body)
	return nil
}

// end passes on the last turn and counts the turns read.
func (a *aiderParse) end() {
	a.flush()
	a.p.res.Messages = a.n
}

// flush passes on the open turn, if any.
func (a *aiderParse) flush() {
	if a.kind == 0 {
		return
	}
	p := a.p
	body := strings.Trim(strings.Join(a.lines, "\n"), "\n")
	d := draft{}
	d.StepID = a.n - 1
	d.source = body
	switch a.kind {
	case 'S':
		d.Role, d.Kind, d.label = "system", "system", "session"
	case 'U':
		d.Role, d.Kind = "user", "prompt"
	case 'T':
		d.Role, d.Kind = "tool", "observation"
		var rest []string
		for _, l := range a.lines {
			if c, ok := strings.CutPrefix(l, "Running "); ok && d.Command == "" && strings.TrimSpace(c) != "" {
				d.Tool, d.Command = "shell", strings.TrimSpace(c)
			}
			if !strings.HasPrefix(l, "Tokens: ") {
				rest = append(rest, l)
			}
		}
		if hasAlnum(strings.Join(rest, "\n")) {
			d.source = strings.Join(rest, "\n")
		}
	default:
		d.Role, d.Kind = "assistant", "response"
	}
	d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), body)
	a.kind, a.lines = 0, nil
	p.add(d)
}
