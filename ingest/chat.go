package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// messagesOf finds the messages array of a chat document: a bare array, or
// the field key of an object. start is the byte offset of the array in data
// (-1 when unknown).
func messagesOf(data []byte, key string, f Format) (msgs []json.RawMessage, top obj, start int, err error) {
	trimmed := bytes.TrimSpace(data)
	lead := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	if len(trimmed) == 0 {
		return nil, nil, -1, fmt.Errorf("ingest: %s: empty input; expected a JSON %s array or an object with %q", f, key, key)
	}
	if why, ok := truncatedDoc(data); ok {
		return nil, nil, -1, fmt.Errorf("ingest: %s: %s", f, why)
	}
	switch trimmed[0] {
	case '[':
		a, ok := decodeArr(trimmed)
		if !ok {
			return nil, nil, -1, fmt.Errorf("ingest: %s: input is not valid JSON (%s); expected a JSON array of messages", f, jsonErr(trimmed))
		}
		return a, nil, lead, nil
	case '{':
		if !json.Valid(trimmed) {
			return nil, nil, -1, fmt.Errorf("ingest: %s: input is not valid JSON (%s); if this is a JSONL file, use --format claude-code or openhands", f, jsonErr(trimmed))
		}
		o, _ := decodeObj(trimmed)
		raw, ok := o[key]
		if !ok {
			return nil, nil, -1, fmt.Errorf("ingest: %s: the JSON object has no %q array; expected a bare messages array or an object with %q (try --format auto)", f, key, key)
		}
		a, ok := decodeArr(raw)
		if !ok {
			return nil, nil, -1, fmt.Errorf("ingest: %s: %q is not an array", f, key)
		}
		start := -1
		if off := fieldOffset(trimmed, key); off >= 0 {
			start = lead + off
		}
		return a, o, start, nil
	default:
		return nil, nil, -1, fmt.Errorf("ingest: %s: input is not JSON; expected a JSON array of messages or an object with %q (try --format auto)", f, key)
	}
}

// badElement reports array element i that is not an object.
func (p *parser) badElement(data []byte, start int, lines *[]int, key string, i int, raw json.RawMessage) {
	if *lines == nil && start >= 0 {
		*lines = elementLines(data, start)
		if *lines == nil {
			*lines = []int{}
		}
	}
	line := 0
	if i < len(*lines) {
		line = (*lines)[i]
	}
	kind := "value"
	if t := bytes.TrimSpace(raw); len(t) > 0 {
		kind = jsonKind(t)
	}
	p.problem(line, "%s[%d] is a JSON %s, not a message object; skipped", key, i, kind)
}

// parseChatDocument parses an OpenAI or Anthropic messages array.
func (p *parser) parseChatDocument(data []byte, f Format) error {
	msgs, _, start, err := messagesOf(data, "messages", f)
	if err != nil {
		return err
	}
	p.res.Replaced += countReplacements(data)
	p.res.Messages = len(msgs)
	message := p.chatMessages(f)
	var lines []int
	for i, raw := range msgs {
		if p.err != nil {
			break
		}
		o, ok := decodeObj(raw)
		if !ok {
			p.badElement(data, start, &lines, "messages", i, raw)
			continue
		}
		message(i, o)
	}
	return nil
}

// chatMessages returns the function that turns message i of an OpenAI or
// Anthropic messages array into a turn; messages are given in array order.
func (p *parser) chatMessages(f Format) func(i int, o obj) {
	tools := map[string]toolInfo{}
	return func(i int, o obj) {
		d := draft{}
		d.StepID = i
		if f == FormatAnthropic {
			p.anthropicMessage(&d, o, tools)
		} else {
			p.openAIMessage(&d, o, tools)
		}
		p.add(d)
	}
}

// anthropicMessage fills d from one Anthropic Messages API message.
func (p *parser) anthropicMessage(d *draft, o obj, tools map[string]toolInfo) {
	c := renderAnthropic(o["content"])
	switch role := o.str("role"); role {
	case "assistant":
		d.Role, d.Kind = "assistant", "response"
		p.assistantFromContent(d, c, tools)
		return
	case "system":
		d.Role, d.Kind = "system", "system"
		d.source = c.text
	case "user", "":
		d.Role, d.Kind = "user", "prompt"
		d.source = c.text
		if c.results > 0 {
			d.Role, d.Kind = "tool", "tool_result"
			d.IsError = c.isError
			if ti, ok := tools[c.resultIDs[0]]; ok {
				d.Tool, d.Command = ti.name, ti.command
			}
			d.source = c.resultText
			if strings.TrimSpace(d.source) == "" {
				d.source = c.text
			}
		}
	default:
		d.Role, d.Kind, d.label = "system", "event", role
		d.source = c.text
	}
	d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), c.body)
}

// openAICalls returns the tool calls of an OpenAI assistant message
// (tool_calls, or the legacy function_call).
func openAICalls(o obj) []toolCall {
	var calls []toolCall
	for _, raw := range o.arr("tool_calls") {
		tc, ok := decodeObj(raw)
		if !ok {
			continue
		}
		fn := tc.obj("function")
		call := toolCall{id: tc.str("id")}
		if fn != nil {
			call.name = fn.str("name")
			call.args, call.command = openAIArgs(fn["arguments"])
		} else {
			call.name = tc.str("type")
			call.args = renderJSON(raw)
		}
		calls = append(calls, call)
	}
	if fn := o.obj("function_call"); fn != nil {
		call := toolCall{name: fn.str("name")}
		call.args, call.command = openAIArgs(fn["arguments"])
		calls = append(calls, call)
	}
	return calls
}

// openAIArgs renders function arguments as given (they are usually a string of
// JSON text) and extracts a shell command from them.
func openAIArgs(raw json.RawMessage) (args, command string) {
	if s, ok := rawString(raw); ok {
		args = s
		if o, ok := decodeObj([]byte(s)); ok {
			command = commandOf(o)
		}
		return args, command
	}
	if isNull(raw) {
		return "", ""
	}
	args = renderJSON(raw)
	if o, ok := decodeObj(raw); ok {
		command = commandOf(o)
	}
	return args, command
}

func renderCalls(calls []toolCall) string {
	var parts []string
	for _, c := range calls {
		h := "[tool_call " + c.name
		if c.id != "" {
			h += " id=" + c.id
		}
		parts = append(parts, h+"]\n"+c.args)
	}
	return strings.Join(parts, "\n\n")
}

// reasoningOf returns reasoning text some providers attach to assistant messages.
func reasoningOf(o obj) string {
	for _, k := range []string{"reasoning_content", "reasoning", "thinking"} {
		if s := o.str(k); s != "" {
			return s
		}
	}
	return ""
}

// openAIMessage fills d from one Chat Completions message.
func (p *parser) openAIMessage(d *draft, o obj, tools map[string]toolInfo) {
	text := contentText(o["content"])
	role := o.str("role")
	switch role {
	case "system", "developer":
		d.Role, d.Kind = "system", "system"
		d.source = text
		d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
	case "user":
		d.Role, d.Kind = "user", "prompt"
		d.source = text
		d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
	case "assistant":
		d.Role, d.Kind = "assistant", "response"
		calls := openAICalls(o)
		reasoning := reasoningOf(o)
		if len(calls) > 0 {
			d.Kind = "tool_call"
			d.Tool, d.Command = calls[0].name, calls[0].command
			for _, c := range calls {
				if c.id != "" {
					tools[c.id] = toolInfo{name: c.name, command: c.command}
				}
			}
		}
		if r := o.str("refusal"); r != "" {
			text = joinSections(text, "[refusal] "+r)
		}
		d.source = text
		if strings.TrimSpace(d.source) == "" && len(calls) > 0 && d.Command == "" {
			d.source = calls[0].args
		}
		if strings.TrimSpace(d.source) == "" {
			d.source = reasoning
		}
		if reasoning != "" {
			reasoning = "[thinking]\n" + reasoning
		}
		d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), reasoning, text, renderCalls(calls))
	case "tool", "function":
		d.Role, d.Kind = "tool", "tool_result"
		id := o.toolCallID()
		if ti, ok := tools[id]; ok {
			d.Tool, d.Command = ti.name, ti.command
		}
		if n := o.str("name"); n != "" {
			d.Tool = n
		}
		d.IsError = o.boolean("is_error")
		d.source = text
		h := "[tool_result"
		if id != "" {
			h += " id=" + id
		}
		d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), h+"]\n"+text)
	default:
		d.Role, d.Kind, d.label = "system", "event", role
		if role == "" {
			d.label = "system"
		}
		d.source = text
		d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
	}
}
