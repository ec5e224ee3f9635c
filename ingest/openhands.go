package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// openHandsTools are actions that run a tool even when an event carries no
// tool_call_metadata.
var openHandsTools = map[string]bool{
	"run": true, "run_ipython": true, "read": true, "edit": true, "write": true,
	"browse": true, "browse_interactive": true, "call_tool_mcp": true, "delegate": true,
}

// openHandsEnvObservations are observations about the agent's state rather
// than tool output.
var openHandsEnvObservations = map[string]bool{
	"agent_state_changed": true, "recall": true, "null": true, "user_rejected": true,
}

// parseOpenHands parses OpenHands evaluation output: one JSON run per line,
// each with a "history" event stream. Step ids continue across runs.
func (p *parser) parseOpenHands(data []byte) error {
	var lines []jsonLine
	if t := bytes.TrimSpace(data); bytes.IndexByte(t, '\n') >= 0 && json.Valid(t) {
		// A single pretty-printed run rather than JSONL.
		if o, ok := decodeObj(t); ok {
			p.res.Replaced += countReplacements(t)
			lines = []jsonLine{{line: 1, raw: t, obj: o}}
		}
	}
	if lines == nil {
		lines = p.readJSONL(data)
	}
	if len(lines) == 0 && p.problems() > 0 {
		return p.noOpenHandsRun()
	}
	run := p.openHandsRuns()
	for _, l := range lines {
		if p.err != nil {
			break
		}
		run(l)
	}
	return nil
}

// noOpenHandsRun is the error for an OpenHands file without one readable
// run.
func (p *parser) noOpenHandsRun() error {
	return fmt.Errorf("ingest: openhands: no readable JSON run in %d line(s) (first problem, line %d: %s); check that the file is OpenHands output JSONL or use --format auto",
		p.problems(), p.res.Problems[0].Line, p.res.Problems[0].Message)
}

// openHandsRuns returns the function that turns the runs of an OpenHands
// output file, given in file order, into turns; step ids continue across
// runs.
func (p *parser) openHandsRuns() func(l jsonLine) {
	step := 0
	return func(l jsonLine) {
		hist, ok := l.obj["history"]
		events, isArr := decodeArr(hist)
		if !ok || !isArr {
			// After the lines' own problems, as when every line was read first.
			p.deferProblem(l.line, "JSON object without a \"history\" array is not an OpenHands run; skipped")
			return
		}
		session := l.obj.scalar("instance_id")
		for i, raw := range events {
			if p.err != nil {
				return
			}
			p.res.Messages++
			d := draft{}
			d.StepID = step
			step++
			d.SessionID = session
			o, ok := decodeObj(raw)
			if !ok {
				p.deferProblem(l.line, "history[%d] of this run is not an event object; skipped", i)
				continue
			}
			openHandsEvent(&d, o)
			p.add(d)
		}
	}
}

func openHandsEvent(d *draft, o obj) {
	d.ID = o.scalar("id")
	d.ParentID = o.scalar("cause")
	src := o.str("source")
	message := o.str("message")
	fn := o.obj("tool_call_metadata").str("function_name")
	action, observation := o.str("action"), o.str("observation")
	switch {
	case action != "":
		args := o.obj("args")
		argsText := renderArgs(o["args"], message)
		text := args.str("content")
		if text == "" {
			text = message
		}
		switch {
		case action == "system":
			d.Role, d.Kind = "system", "system"
			d.source = text
		case action == "message":
			d.Role, d.Kind = "assistant", "response"
			if src == "user" {
				d.Role, d.Kind = "user", "prompt"
			}
			d.source = text
		case action == "think":
			d.Role, d.Kind = "assistant", "thought"
			d.source = firstNonEmpty(args.str("thought"), message)
		case action == "finish":
			d.Role, d.Kind = "assistant", "response"
			d.Tool = fn
			d.source = firstNonEmpty(args.str("final_thought"), args.str("thought"), message)
		case action == "condensation":
			d.Role, d.Kind, d.label = "system", "compaction", "compaction"
			d.source = firstNonEmpty(args.str("summary"), message)
		case fn != "" || openHandsTools[action]:
			d.Role, d.Kind = "assistant", "tool_call"
			d.Tool = firstNonEmpty(fn, action)
			d.Command = strings.TrimSpace(args.str("command"))
			d.source = firstNonEmpty(args.str("thought"), message, args.str("path"))
		default:
			d.Role, d.Kind, d.label = roleOfSource(src), "event", action
			d.source = message
		}
		d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), message, argsText)
	case observation != "":
		extras := o.obj("extras")
		body := o.str("content")
		var meta []string
		if c := strings.TrimSpace(extras.str("command")); c != "" {
			d.Command = c
			meta = append(meta, "command: "+c)
		}
		if m := extras.obj("metadata"); m != nil {
			if code, ok := m.num("exit_code"); ok {
				meta = append(meta, "exit_code: "+code)
				if n, err := strconv.ParseFloat(code, 64); err == nil && n > 0 {
					d.IsError = true
				}
			}
		}
		if p := extras.str("path"); p != "" {
			meta = append(meta, "path: "+p)
		}
		if fn == "" && openHandsEnvObservations[observation] {
			d.Role, d.Kind, d.label = roleOfSource(src), "event", observation
			if d.Role == "tool" {
				d.Role = "system"
			}
		} else {
			d.Role, d.Kind = "tool", "observation"
			d.Tool = firstNonEmpty(fn, observation)
			if observation == "error" || strings.HasPrefix(strings.TrimSpace(body), "ERROR:") {
				d.IsError = true
			}
		}
		d.source = firstNonEmpty(body, message)
		if strings.TrimSpace(message) == strings.TrimSpace(body) {
			message = "" // OpenHands repeats short observations ("Added workspace context") in both
		}
		d.Payload = joinSections(header(d.Role, d.Kind, d.Tool), message, body, strings.Join(meta, "\n"))
	default:
		d.Role, d.Kind, d.label = roleOfSource(src), "event", "event"
		d.source = message
		d.Payload = joinSections(header(d.Role, d.Kind, ""), message)
	}
}

func roleOfSource(src string) string {
	switch src {
	case "agent":
		return "assistant"
	case "user":
		return "user"
	default:
		return "system"
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// renderArgs renders an action's arguments once, readably: one "key: value"
// per argument in key order, string values as their text (not as escaped
// JSON, whose \n and \" would read as junk words and file names), other
// values as compact JSON. Arguments that add nothing are left out: null,
// false, empty strings and objects, and strings the event's message already
// holds verbatim (OpenHands repeats the command or the content there).
// Nothing when no argument is left.
func renderArgs(raw json.RawMessage, message string) string {
	args, ok := decodeObj(raw)
	if !ok || len(args) == 0 {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		v := bytes.TrimSpace(args[k])
		var text string
		if str, ok := rawString(v); ok {
			if strings.TrimSpace(str) == "" || strings.Contains(message, strings.TrimSpace(str)) {
				continue
			}
			text = str
		} else {
			switch string(v) {
			case "null", "false", "{}", "[]", "":
				continue
			}
			text = renderJSON(v)
		}
		if strings.Contains(text, "\n") {
			lines = append(lines, k+":\n"+text)
		} else {
			lines = append(lines, k+": "+text)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "[args]\n" + strings.Join(lines, "\n")
}
