package ingest

import (
	"encoding/json"
	"strings"
)

// toolInfo remembers a tool call so that its result can name the tool.
type toolInfo struct {
	name    string
	command string
}

// toolCall is one tool invocation found in a message.
type toolCall struct {
	id, name, args, command string
}

// content is the rendering of an Anthropic-style content value (a string or a
// list of blocks).
type content struct {
	body       string     // payload text of all blocks
	text       string     // visible text only (text blocks, plain strings)
	thinking   string     // thinking text
	calls      []toolCall // tool_use / server_tool_use blocks, in order
	results    int        // number of tool_result blocks
	resultText string     // text of the tool_result blocks
	resultIDs  []string   // tool_use_id of each tool_result block, in order
	isError    bool       // some tool_result block has is_error: true
}

// commandOf extracts a shell command from tool arguments ({"command": ...}
// or {"cmd": ...}).
func commandOf(args obj) string {
	if args == nil {
		return ""
	}
	for _, k := range []string{"command", "cmd"} {
		if s := args.str(k); s != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// renderAnthropic renders a message content value of the Anthropic Messages
// API (also used by Claude Code records).
func renderAnthropic(raw json.RawMessage) content {
	var c content
	if s, ok := rawString(raw); ok {
		c.body, c.text = s, s
		return c
	}
	if isNull(raw) {
		return c
	}
	blocks, ok := decodeArr(raw)
	if !ok {
		c.body = renderJSON(raw)
		c.text = c.body
		return c
	}
	var body, text, thinking, results []string
	for _, b := range blocks {
		if s, ok := rawString(b); ok {
			body = append(body, s)
			text = append(text, s)
			continue
		}
		o, ok := decodeObj(b)
		if !ok {
			if !isNull(b) {
				body = append(body, renderJSON(b))
			}
			continue
		}
		typ := o.str("type")
		switch {
		case typ == "text":
			body = append(body, o.str("text"))
			text = append(text, o.str("text"))
		case typ == "thinking":
			body = append(body, "[thinking]\n"+o.str("thinking"))
			thinking = append(thinking, o.str("thinking"))
		case typ == "redacted_thinking":
			body = append(body, "[redacted_thinking]")
		case typ == "tool_use" || typ == "server_tool_use" || typ == "mcp_tool_use":
			tc := toolCall{id: o.str("id"), name: o.str("name"), args: renderJSON(o["input"]), command: commandOf(o.obj("input"))}
			c.calls = append(c.calls, tc)
			body = append(body, "["+typ+" "+tc.name+" id="+tc.id+"]\n"+tc.args)
		case typ == "tool_result" || strings.HasSuffix(typ, "_tool_result"):
			id := o.str("tool_use_id")
			out := contentText(o["content"])
			h := "[" + typ + " id=" + id
			if o.boolean("is_error") {
				h += " error"
				c.isError = true
			}
			body = append(body, h+"]\n"+out)
			results = append(results, out)
			c.results++
			c.resultIDs = append(c.resultIDs, id)
		case typ == "image" || typ == "document":
			body = append(body, mediaPlaceholder(typ, o))
		default:
			body = append(body, "["+typ+"]\n"+renderJSON(b))
		}
	}
	c.body = strings.Join(body, "\n\n")
	c.text = strings.Join(text, "\n")
	c.thinking = strings.Join(thinking, "\n")
	c.resultText = strings.Join(results, "\n")
	return c
}

// mediaPlaceholder names an image or document block without its (often
// base64) data.
func mediaPlaceholder(typ string, o obj) string {
	h := "[" + typ
	src := o.obj("source")
	if t := o.str("title"); t != "" {
		h += " " + t
	}
	if src != nil {
		if mt := src.str("media_type"); mt != "" {
			h += " " + mt
		}
		if u := src.str("url"); u != "" {
			h += " " + u
		}
		if src.str("type") == "text" {
			return h + "]\n" + src.str("data")
		}
	}
	return h + "]"
}

// contentText renders a tool_result / tool message content: a string, null or
// a list of blocks or parts.
func contentText(raw json.RawMessage) string {
	if s, ok := rawString(raw); ok {
		return s
	}
	if isNull(raw) {
		return ""
	}
	blocks, ok := decodeArr(raw)
	if !ok {
		return renderJSON(raw)
	}
	var out []string
	for _, b := range blocks {
		if s, ok := rawString(b); ok {
			out = append(out, s)
			continue
		}
		o, ok := decodeObj(b)
		if !ok {
			if !isNull(b) {
				out = append(out, renderJSON(b))
			}
			continue
		}
		switch typ := o.str("type"); typ {
		case "text", "input_text", "output_text":
			out = append(out, o.str("text"))
		case "image", "document":
			out = append(out, mediaPlaceholder(typ, o))
		case "image_url":
			u := o.obj("image_url").str("url")
			if strings.HasPrefix(u, "data:") {
				u = ""
			}
			out = append(out, strings.TrimSpace("[image_url "+u)+"]")
		case "refusal":
			out = append(out, "[refusal] "+o.str("refusal"))
		default:
			if t := o.str("text"); t != "" {
				out = append(out, t)
			} else {
				out = append(out, "["+typ+"]\n"+renderJSON(b))
			}
		}
	}
	return strings.Join(out, "\n")
}
