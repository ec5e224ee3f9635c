package ingest

import (
	"strings"

	"github.com/contextfold/contextfold/internal/mdfence"
)

// parseSWEAgent parses a SWE-agent .traj object: each element of "history"
// is a turn. Both the older layout (assistant "action" text, observations as
// user messages) and the function-calling layout (tool_calls, role "tool"
// with tool_call_ids) are handled.
func (p *parser) parseSWEAgent(data []byte) error {
	msgs, _, start, err := messagesOf(data, "history", FormatSWEAgent)
	if err != nil {
		return err
	}
	p.res.Replaced += countReplacements(data)
	p.res.Messages = len(msgs)
	message := p.sweMessages()
	var lines []int
	for i, raw := range msgs {
		if p.err != nil {
			break
		}
		o, ok := decodeObj(raw)
		if !ok {
			p.badElement(data, start, &lines, "history", i, raw)
			continue
		}
		message(i, o)
	}
	return nil
}

// sweMessages returns the function that turns element i of a SWE-agent
// "history" into a turn; elements are given in array order.
func (p *parser) sweMessages() func(i int, o obj) {
	tools := map[string]toolInfo{}
	var last toolInfo
	afterAssistant := false
	return func(i int, o obj) {
		d := draft{}
		d.StepID = i
		text := contentText(o["content"])
		role := o.str("role")
		mt := o.str("message_type")
		switch {
		case role == "system":
			d.Role, d.Kind = "system", "system"
			d.source = text
			d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
		case role == "assistant":
			afterAssistant = true
			d.Role, d.Kind = "assistant", "response"
			calls := openAICalls(o)
			action := strings.TrimSpace(o.str("action"))
			if len(calls) > 0 || action != "" {
				d.Kind = "tool_call"
			}
			if len(calls) > 0 {
				d.Tool, d.Command = calls[0].name, calls[0].command
			}
			if d.Command == "" {
				d.Command = action
			}
			for i, c := range calls {
				if c.id == "" {
					continue
				}
				ti := toolInfo{name: c.name, command: c.command}
				if i == 0 {
					ti.command = d.Command
				}
				tools[c.id] = ti
			}
			last = toolInfo{name: d.Tool, command: d.Command}
			d.source = text
			if strings.TrimSpace(d.source) == "" {
				d.source = action
			}
			act := ""
			if action != "" {
				act = "[action]\n" + action
			}
			d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), text, act, renderCalls(calls))
		case role == "tool" || role == "function":
			d.Role, d.Kind = "tool", "observation"
			id := o.toolCallID()
			if ti, ok := tools[id]; ok {
				d.Tool, d.Command = ti.name, ti.command
			} else if id == "" {
				d.Tool, d.Command = last.name, last.command
			}
			d.source = text
			h := "[tool_result"
			if id != "" {
				h += " id=" + id
			}
			d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), h+"]\n"+text)
		case mt == "demonstration":
			d.Role, d.Kind = "user", "demonstration"
			d.label = "demonstration"
			d.source = text
			d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
		case afterAssistant || strings.HasPrefix(strings.TrimSpace(text), "Observation:"):
			d.Role, d.Kind = "tool", "observation"
			d.Tool, d.Command = last.name, last.command
			d.source = strings.TrimPrefix(strings.TrimSpace(text), "Observation:")
			d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), text)
		default:
			d.Role, d.Kind = "user", "prompt"
			if role != "user" && role != "" {
				d.Role, d.Kind, d.label = "system", "event", role
			}
			d.source = text
			d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
		}
		p.add(d)
	}
}

// parseMiniSWEAgent parses a mini-swe-agent trajectory: "messages" with
// role/content; the action is the fenced bash block of an assistant message
// and its output the next user message (<returncode>, <output>).
func (p *parser) parseMiniSWEAgent(data []byte) error {
	msgs, top, start, err := messagesOf(data, "messages", FormatMiniSWEAgent)
	if err != nil {
		return err
	}
	p.res.Replaced += countReplacements(data)
	p.res.Messages = len(msgs)
	session := ""
	if top != nil {
		session = top.str("instance_id")
	}
	message := p.miniMessages(session)
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

// miniMessages returns the function that turns element i of a
// mini-swe-agent "messages" array into a turn; elements are given in array
// order. session is the trajectory's instance_id.
func (p *parser) miniMessages(session string) func(i int, o obj) {
	lastCmd := ""
	afterAssistant := false
	return func(i int, o obj) {
		d := draft{}
		d.StepID = i
		d.SessionID = session
		text := contentText(o["content"])
		switch role := o.str("role"); {
		case role == "system":
			d.Role, d.Kind = "system", "system"
			d.source = text
			d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
		case role == "assistant":
			afterAssistant = true
			d.Role, d.Kind = "assistant", "response"
			if cmd, ok := mdfence.FirstShellBlock(text); ok {
				d.Kind, d.Tool, d.Command = "tool_call", "bash", cmd
			}
			lastCmd = d.Command
			d.source = strings.TrimPrefix(strings.TrimSpace(text), "THOUGHT:")
			d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), text)
		case role == "tool" || afterAssistant:
			d.Role, d.Kind = "tool", "observation"
			if lastCmd != "" {
				d.Tool, d.Command = "bash", lastCmd
			}
			d.source = text
			if rc, ok := between(text, "<returncode>", "</returncode>"); ok {
				rc = strings.TrimSpace(rc)
				d.IsError = rc != "0" && rc != ""
				if out, ok := between(text, "<output>", "</output>"); ok {
					d.source = out
				}
				if !hasAlnum(d.source) || strings.HasPrefix(strings.TrimSpace(d.source), "<returncode>") {
					d.source = "exit " + rc
				}
			}
			d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), text)
		default:
			d.Role, d.Kind = "user", "prompt"
			if role != "user" && role != "" {
				d.Role, d.Kind, d.label = "system", "event", role
			}
			d.source = text
			d.Payload = joinSections(header(d.Role, d.Kind, ""), text)
		}
		p.add(d)
	}
}

// between returns the text between the first open tag and the next close tag.
func between(s, open, close string) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}
