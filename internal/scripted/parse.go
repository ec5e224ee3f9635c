package scripted

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
)

// parseTurn reads a request body into the neutral turn.
func parseTurn(api API, body []byte) (*Turn, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, errors.New("request body is not a JSON object: " + err.Error())
	}
	t := &Turn{API: api, Body: body, PromptIndex: -1, ToolSchemas: map[string]json.RawMessage{}}
	_ = json.Unmarshal(top["stream"], &t.Stream)
	_ = json.Unmarshal(top["model"], &t.Model)
	var tools []map[string]json.RawMessage
	_ = json.Unmarshal(top["tools"], &tools)
	for _, tl := range tools {
		var name string
		schema := tl["input_schema"]
		if fn, ok := tl["function"]; ok { // chat: {"type":"function","function":{…}}
			var f map[string]json.RawMessage
			_ = json.Unmarshal(fn, &f)
			_ = json.Unmarshal(f["name"], &name)
			schema = f["parameters"]
		} else {
			_ = json.Unmarshal(tl["name"], &name)
			if schema == nil {
				schema = tl["parameters"]
			}
		}
		if name != "" {
			t.Tools = append(t.Tools, name)
			t.ToolSchemas[name] = schema
		}
	}
	var err error
	switch api {
	case Anthropic:
		err = t.anthropic(top)
	case Chat:
		err = t.chat(top)
	default:
		err = t.responses(top)
	}
	t.Prompt = strings.TrimSpace(hydration.ReplaceAllString(t.Prompt, ""))
	return t, err
}

// hydration matches the content contextfold adds to a prompt, which is not
// the human's words.
var hydration = regexp.MustCompile(`(?s)<contextfold-hydration\b.*?</contextfold-hydration>`)

// isReminder is true for text the agent adds on its own (Claude Code's
// <system-reminder> blocks) or contextfold adds (hydration, the page-table
// block), which is not a human prompt by itself.
func isReminder(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.HasPrefix(s, "<system-reminder>") || strings.HasPrefix(s, "<contextfold-hydration") ||
		strings.HasPrefix(s, "[contextfold")
}

// humanText returns a message content's text and whether any of it is the
// human's (not only reminders the agent adds).
func humanText(raw json.RawMessage, extra ...string) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, !isReminder(s) && !hasPrefix(s, extra)
	}
	var parts []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &parts)
	var out []string
	human := false
	for _, p := range parts {
		var txt string
		if json.Unmarshal(p["text"], &txt) == nil {
			out = append(out, txt)
			human = human || (!isReminder(txt) && !hasPrefix(txt, extra))
		}
	}
	return strings.Join(out, "\n"), human
}

func hasPrefix(s string, prefixes []string) bool {
	s = strings.TrimSpace(s)
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		var txt string
		if json.Unmarshal(p["text"], &txt) == nil {
			out = append(out, txt)
		}
	}
	return strings.Join(out, "\n")
}

func (t *Turn) anthropic(top map[string]json.RawMessage) error {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || msgs == nil {
		return errors.New(`request body has no "messages" array`)
	}
	t.Messages = len(msgs)
	for i, m := range msgs {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			if !isReminder(s) {
				t.Prompt, t.PromptIndex, t.Results = s, i, nil
			}
			continue
		}
		var blocks []map[string]json.RawMessage
		_ = json.Unmarshal(m.Content, &blocks)
		var texts, results []string
		human := false
		for _, b := range blocks {
			var typ string
			_ = json.Unmarshal(b["type"], &typ)
			switch typ {
			case "text":
				var txt string
				_ = json.Unmarshal(b["text"], &txt)
				texts = append(texts, txt)
				human = human || !isReminder(txt)
			case "tool_result":
				results = append(results, textOf(b["content"]))
			}
		}
		if human {
			t.Prompt, t.PromptIndex, t.Results = strings.Join(texts, "\n"), i, nil
		} else {
			t.Results = append(t.Results, results...)
		}
	}
	return nil
}

func (t *Turn) chat(top map[string]json.RawMessage) error {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || msgs == nil {
		return errors.New(`request body has no "messages" array`)
	}
	t.Messages = len(msgs)
	for i, m := range msgs {
		switch m.Role {
		case "user":
			if s, human := humanText(m.Content); human {
				t.Prompt, t.PromptIndex, t.Results = s, i, nil
			}
		case "tool", "function":
			t.Results = append(t.Results, textOf(m.Content))
		}
	}
	return nil
}

func (t *Turn) responses(top map[string]json.RawMessage) error {
	raw, ok := top["input"]
	if !ok {
		return errors.New(`request body has no "input"`)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t.Prompt, t.PromptIndex, t.Messages = s, 0, 1
		return nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return errors.New(`"input" is neither a string nor an array of items`)
	}
	t.Messages = len(items)
	for i, it := range items {
		var typ, role string
		_ = json.Unmarshal(it["type"], &typ)
		_ = json.Unmarshal(it["role"], &role)
		switch {
		case (typ == "" || typ == "message") && role == "user":
			// Codex sends its environment and AGENTS.md as user messages.
			if s, human := humanText(it["content"], "<environment_context>", "# AGENTS.md", "<user_instructions>"); human {
				t.Prompt, t.PromptIndex, t.Results = s, i, nil
			}
		case strings.HasSuffix(typ, "_call_output"):
			t.Results = append(t.Results, outputText(it["output"]))
		case typ == "compaction_trigger" && i == len(items)-1:
			t.Compact = true
		}
	}
	return nil
}

// outputText reads a function_call_output's output: a string, or an array
// of content items.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != "" {
		return o.Content
	}
	return textOf(raw)
}
