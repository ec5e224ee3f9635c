package ingest

import (
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
	type block struct {
		kind  byte
		lines []string
	}
	var blocks []block
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		k, body := aiderLineKind(line)
		if k == 0 {
			if len(blocks) > 0 {
				b := &blocks[len(blocks)-1]
				b.lines = append(b.lines, "")
			}
			continue
		}
		if k == 'S' || len(blocks) == 0 || blocks[len(blocks)-1].kind != k || blocks[len(blocks)-1].kind == 'S' {
			blocks = append(blocks, block{kind: k})
		}
		b := &blocks[len(blocks)-1]
		b.lines = append(b.lines, strings.TrimRight(body, " \t"))
	}
	p.res.Messages = len(blocks)
	for i, b := range blocks {
		body := strings.Trim(strings.Join(b.lines, "\n"), "\n")
		d := draft{}
		d.StepID = i
		d.source = body
		switch b.kind {
		case 'S':
			d.Role, d.Kind, d.label = "system", "system", "session"
		case 'U':
			d.Role, d.Kind = "user", "prompt"
		case 'T':
			d.Role, d.Kind = "tool", "observation"
			var rest []string
			for _, l := range b.lines {
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
		p.add(d)
	}
}
