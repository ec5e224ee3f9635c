package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// compactionPrefix starts the recap Claude Code writes as a user record after
// it compacts a conversation.
const compactionPrefix = "This session is being continued from a previous conversation"

// jsonLine is one well-formed JSON object line of a JSONL file.
type jsonLine struct {
	line int
	raw  []byte
	obj  obj
}

// readJSONL splits data into lines, decodes each as a JSON object and reports
// every other line (torn, empty, whitespace-only, not an object) as a Problem.
func (p *parser) readJSONL(data []byte) []jsonLine {
	var out []jsonLine
	for n, rest := 1, data; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if l, ok := p.jsonLine(n, line); ok {
			out = append(out, l)
		}
	}
	return out
}

// jsonLine decodes line n (1-based, without its newline) of a JSONL file as
// a JSON object; any other line (torn, empty, whitespace-only, not an
// object) is reported as a Problem and ok is false.
func (p *parser) jsonLine(n int, line []byte) (l jsonLine, ok bool) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(line) == 0:
		p.problem(n, "empty line; skipped")
		return l, false
	case len(trimmed) == 0:
		p.problem(n, "whitespace-only line; skipped")
		return l, false
	}
	if !json.Valid(trimmed) {
		p.problem(n, "not valid JSON (%s); line skipped, the record may be torn or cut short", jsonErr(trimmed))
		return l, false
	}
	o, ok := decodeObj(trimmed)
	if !ok {
		p.problem(n, "a JSON %s where a JSON object record was expected; line skipped", jsonKind(trimmed))
		return l, false
	}
	p.res.Replaced += countReplacements(trimmed)
	return jsonLine{line: n, raw: trimmed, obj: o}, true
}

func jsonErr(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

func jsonKind(b []byte) string {
	switch b[0] {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// parseClaudeCode parses a Claude Code session JSONL file.
func (p *parser) parseClaudeCode(data []byte) error {
	lines := p.readJSONL(data)
	if len(lines) == 0 && p.problems() > 0 {
		return p.noClaudeRecord()
	}
	record := p.claudeRecords()
	for _, l := range lines {
		if p.err != nil {
			break
		}
		record(l)
	}
	return nil
}

// noClaudeRecord is the error for a Claude Code file without one readable
// record.
func (p *parser) noClaudeRecord() error {
	return fmt.Errorf("ingest: claude-code: no readable JSON record in %d line(s) (first problem, line %d: %s); check that the file is a Claude Code session JSONL or use --format auto",
		p.problems(), p.res.Problems[0].Line, p.res.Problems[0].Message)
}

// claudeRecords returns the function that turns the well-formed records of
// a Claude Code session, given in file order, into turns.
func (p *parser) claudeRecords() func(l jsonLine) {
	return p.claudeRecordsFrom(&claudeState{})
}

// claudeState is what the parse of a Claude Code session carries from one
// record to the next: the uuids read, the tool calls by tool_use id, the
// next step id; from, when set, answers for the records read before the
// parse began (ReadClaudeCode), and rec, when set, receives what the
// current record did.
type claudeState struct {
	seen  map[string]bool
	tools map[string]toolInfo
	step  int
	from  *ClaudeCodeCursor
	rec   *ClaudeCodeRecord
}

// tool returns the tool call made with tool_use id id: by this parse's
// records, else by those read before it (from.Tool).
func (st *claudeState) tool(id string) (toolInfo, bool) {
	if ti, ok := st.tools[id]; ok {
		return ti, true
	}
	if st.from != nil && st.from.Tool != nil {
		name, command, ok := st.from.Tool(id)
		return toolInfo{name: name, command: command}, ok
	}
	return toolInfo{}, false
}

// claudeRecordsFrom is claudeRecords carrying st.
func (p *parser) claudeRecordsFrom(st *claudeState) func(l jsonLine) {
	if st.seen == nil {
		st.seen = map[string]bool{}
	}
	if st.tools == nil {
		st.tools = map[string]toolInfo{}
	}
	return func(l jsonLine) {
		p.res.Messages++
		o := l.obj
		typ := o.str("type")
		if typ != "user" && typ != "assistant" && typ != "system" {
			return // queue-operation, file-history-snapshot, attachment, summary, unknown: not conversation turns
		}
		uuid := o.str("uuid")
		if uuid != "" {
			if st.seen[uuid] || st.from != nil && st.from.Seen != nil && st.from.Seen(uuid) {
				return // re-appended copy of a record already ingested
			}
			st.seen[uuid] = true
			if st.rec != nil {
				st.rec.UUID = uuid
			}
		}
		d := draft{}
		d.StepID = st.step
		st.step++
		d.ID = uuid
		d.ParentID = o.str("parentUuid")
		if d.ParentID == "" {
			d.ParentID = o.str("logicalParentUuid")
		}
		d.SessionID = o.str("sessionId")
		msg := o.obj("message")
		switch typ {
		case "system":
			p.claudeSystem(&d, o)
		case "user":
			p.claudeUser(&d, o, msg, st)
		case "assistant":
			calls := p.claudeAssistant(&d, msg, st.tools)
			if st.rec != nil {
				for _, tc := range calls {
					if tc.id != "" {
						st.rec.Calls = append(st.rec.Calls, tc.id)
					}
				}
			}
		}
		p.add(d)
	}
}

func (p *parser) claudeSystem(d *draft, o obj) {
	d.Role, d.Kind = "system", "system"
	sub := o.str("subtype")
	if sub == "compact_boundary" {
		d.Kind, d.label = "compact_boundary", "compact_boundary"
	}
	text := contentText(o["content"])
	var extra []string
	if sub != "" {
		extra = append(extra, "subtype: "+sub)
	}
	for _, k := range []string{"level", "durationMs", "messageCount"} {
		if v := o.scalar(k); v != "" {
			extra = append(extra, k+": "+v)
		}
	}
	if m := o.obj("compactMetadata"); m != nil {
		extra = append(extra, "compactMetadata: "+renderJSON(o["compactMetadata"]))
	}
	d.Payload = joinSections(header(d.Role, d.Kind, ""), text, strings.Join(extra, "\n"))
	d.source = text
	if d.source == "" {
		d.source = sub
	}
}

func (p *parser) claudeUser(d *draft, o, msg obj, st *claudeState) {
	d.Role, d.Kind = "user", "prompt"
	var c content
	if msg != nil {
		c = renderAnthropic(msg["content"])
	} else if o.has("content") {
		c = renderAnthropic(o["content"])
	}
	switch {
	case c.results > 0:
		d.Role, d.Kind = "tool", "tool_result"
		d.IsError = c.isError
		if len(c.resultIDs) > 0 {
			if ti, ok := st.tool(c.resultIDs[0]); ok {
				d.Tool, d.Command = ti.name, ti.command
				if st.rec != nil {
					st.rec.Result = c.resultIDs[0]
				}
			}
		}
		d.source = c.resultText
		if strings.TrimSpace(d.source) == "" {
			d.source = c.text
		}
	case o.boolean("isCompactSummary") || strings.HasPrefix(strings.TrimSpace(c.text), compactionPrefix):
		d.Kind, d.label = "compaction", "compaction"
		d.source = c.text
	case o.boolean("isMeta"):
		d.Kind, d.label = "meta", "meta"
		d.source = c.text
	default:
		d.source = c.text
	}
	d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), c.body)
}

// claudeAssistant fills an assistant draft and returns the tool calls it
// made (registered in tools).
func (p *parser) claudeAssistant(d *draft, msg obj, tools map[string]toolInfo) []toolCall {
	d.Role, d.Kind = "assistant", "response"
	var c content
	if msg != nil {
		c = renderAnthropic(msg["content"])
	}
	p.assistantFromContent(d, c, tools)
	return c.calls
}

// assistantFromContent fills an assistant draft from Anthropic-style content.
func (p *parser) assistantFromContent(d *draft, c content, tools map[string]toolInfo) {
	if len(c.calls) > 0 {
		d.Kind = "tool_call"
		d.Tool, d.Command = c.calls[0].name, c.calls[0].command
		for _, tc := range c.calls {
			if tc.id != "" {
				tools[tc.id] = toolInfo{name: tc.name, command: tc.command}
			}
		}
	} else if strings.TrimSpace(c.text) == "" && c.thinking != "" {
		d.Kind = "thought"
	}
	d.source = c.text
	if strings.TrimSpace(d.source) == "" && len(c.calls) > 0 && d.Command == "" {
		d.source = c.calls[0].args
	}
	if strings.TrimSpace(d.source) == "" {
		d.source = c.thinking
	}
	d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), c.body)
}
