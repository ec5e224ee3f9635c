package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/contextfold/contextfold/harness"
)

// The OpenAI Responses API (POST /v1/responses), as Codex CLI speaks it.
//
// A request's conversation is its "input": a string (one user message) or
// an array of items. Each item is one message of the neutral model, so that
// a step id is the item's position:
//
//   - {"type":"message","role":…,"content":…} (type may be left out): text
//     in a string or in input_text/output_text parts; user and assistant
//     text is foldable, system and developer text is not.
//   - function_call, custom_tool_call, local_shell_call: the assistant's
//     tool call (name and command shape the folded-step record); nothing in
//     it is foldable.
//   - function_call_output, custom_tool_call_output, local_shell_call_output
//     (any "*_call_output"): the tool's output, a string or an array of
//     input_text parts, foldable like a tool result of the other two APIs.
//   - reasoning items (encrypted_content, summaries) and every other item
//     type: passed through byte for byte, never folded.
//   - a "compaction" item (Codex's remote compaction: the opaque history
//     it replaces) is also pinned (harness.Message.Pin): no fold event
//     folds it, leaves it out or leaves out anything before it.
//
// A request with "previous_response_id" continues a conversation the
// provider holds: the client does not resend it, so there is nothing to
// fold. It is forwarded unchanged, counted in Stats.Chained and flagged with
// an X-Contextfold-Warning. A body without "input" is an unknown shape: it
// is forwarded unchanged, counted in Stats.UnknownShape, with a warning.

// APIResponses is the OpenAI Responses API (POST /v1/responses).
const APIResponses API = "responses"

// PathResponses is the path of the OpenAI Responses API.
const PathResponses = "/v1/responses"

// Warnings of requests the proxy forwards without folding because of their
// shape.
const (
	warnChained = "previous_response_id: the provider holds the earlier conversation, so nothing was folded or hydrated; forwarded unchanged"
	warnUnknown = "unknown API shape, forwarded unchanged, nothing folded: "
)

// responsesString reads a Responses body whose input is one string: one
// user message.
func responsesString(r *request, top []field, in span) *request {
	body := r.body
	if sp, ok := get(top, "instructions"); ok {
		r.seed = append(r.seed, body[sp.start:sp.end]...)
	}
	t := decodeString(body, in)
	r.msgs = []harness.Message{{Role: harness.RoleUser, Human: strings.TrimSpace(t) != ""}}
	r.spans = make([][]span, 1)
	r.points = []appendAt{{content: in, ok: true, text: t}}
	r.addPart(0, harness.Part{Text: t, Foldable: true}, in)
	r.seed = append(append(r.seed, '\n'), body[in.start:in.end]...)
	return r
}

// responsesElem reads input[i]. Tool calls and their outputs are tied by
// call_id (resolveTools); the reasoning rule is applied by the caller.
func (r *request) responsesElem(i int, el span) error {
	body := r.body
	if kind(body, el) != '{' {
		return badRequest("input[" + itoa(i) + "] is not an object")
	}
	f := objectFields(body, el)
	typ, role := stringField(body, f, "type"), stringField(body, f, "role")
	r.roles[i], r.kinds[i] = role, typ
	r.responsesItem(i, typ, role, f)
	return nil
}

func (r *request) responsesItem(i int, typ, role string, f []field) {
	b := r.body
	m := &r.msgs[i]
	switch {
	case typ == "message" || (typ == "" && role != ""):
		switch role {
		case "system", "developer":
			m.Role = harness.RoleSystem
		case "assistant":
			m.Role = harness.RoleAssistant
		default:
			m.Role = harness.RoleUser
		}
		content, ok := get(f, "content")
		if !ok {
			return
		}
		foldable := m.Role != harness.RoleSystem
		if m.Role == harness.RoleUser {
			r.contentPoint(i, content)
			r.points[i].partType = "input_text"
		}
		switch kind(b, content) {
		case '"':
			t := r.contentText(i, content)
			r.addPart(i, harness.Part{Text: t, Foldable: foldable}, content)
			m.Human = m.Role == harness.RoleUser && strings.TrimSpace(harness.StripHydration(t)) != ""
		case '[':
			for _, p := range arrayElems(b, content) {
				pf := objectFields(b, p)
				switch stringField(b, pf, "type") {
				case "input_text", "output_text", "text":
				default:
					continue // images, files, refusals: untouched
				}
				sp, ok := get(pf, "text")
				if !ok || kind(b, sp) != '"' {
					continue
				}
				t := decodeString(b, sp)
				r.addPart(i, harness.Part{Text: t, Foldable: foldable}, sp)
				if m.Role == harness.RoleUser && strings.TrimSpace(harness.StripHydration(t)) != "" {
					m.Human = true
				}
			}
		}
	case typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call":
		m.Role = harness.RoleAssistant
		name, cmd := stringField(b, f, "name"), ""
		switch typ {
		case "function_call":
			cmd = commandOf([]byte(stringField(b, f, "arguments")))
		case "custom_tool_call":
			cmd = firstLine(stringField(b, f, "input"))
		case "local_shell_call":
			name = "local_shell"
			if sp, ok := get(f, "action"); ok && kind(b, sp) == '{' {
				cmd = commandOf(b[sp.start:sp.end])
				if cmd == "" {
					var a struct {
						Command []string `json:"command"`
					}
					if json.Unmarshal(b[sp.start:sp.end], &a) == nil {
						cmd = strings.Join(a.Command, " ")
					}
				}
			}
		}
		r.event(i, toolEvent{kind: evCall, id: stringField(b, f, "call_id"), ref: toolRef{name, cmd}})
		m.Tool, m.Command = name, cmd
	case strings.HasSuffix(typ, "_call_output"):
		m.Role = harness.RoleTool
		r.event(i, toolEvent{kind: evResult, id: stringField(b, f, "call_id")})
		sp, ok := get(f, "output")
		if !ok {
			return
		}
		// Hydration may be placed here (the budget's host is the latest
		// user or tool-result item): after the output, as in a tool
		// message.
		r.contentPoint(i, sp)
		r.points[i].partType = "input_text"
		switch kind(b, sp) {
		case '"':
			r.addPart(i, harness.Part{Text: r.contentText(i, sp), Foldable: true, ToolResult: true}, sp)
		case '[':
			text, onlyText := inputTextParts(b, sp)
			r.addPart(i, harness.Part{Text: text, Foldable: onlyText, ToolResult: true}, sp)
		}
	case typ == "reasoning":
		// Bound to the conversation before it, like a thinking block
		// (reasoning.go): the item as a reasoning part, its summary as
		// text.
		m.Role = harness.RoleAssistant
		var parts []string
		if sp, ok := get(f, "summary"); ok && kind(b, sp) == '[' {
			for _, s := range arrayElems(b, sp) {
				if t := stringField(b, objectFields(b, s), "text"); t != "" {
					parts = append(parts, t)
				}
			}
		}
		if len(parts) == 0 && stringField(b, f, "encrypted_content") != "" {
			parts = append(parts, "(encrypted reasoning "+stringField(b, f, "id")+")")
		}
		r.addPart(i, harness.Part{Text: "[reasoning]\n" + strings.Join(parts, "\n"), Reasoning: true}, r.elems[i])
	case typ == "compaction":
		// Codex's remote compaction: the Responses API returns this
		// opaque item (encrypted_content) for a compaction_trigger, and
		// Codex resends it in place of the history it compacted. It is
		// that history: pinned, never folded or left out.
		m.Role = harness.RoleAssistant
		m.Pin = true
	default:
		// item_reference, web_search_call, compaction_trigger, …: kept
		// as they are.
		m.Role = harness.RoleAssistant
	}
}

// inputTextParts joins the text of an output given as content parts;
// onlyText is false when a part is not text (an image), and the output then
// stays as it is.
func inputTextParts(b []byte, sp span) (text string, onlyText bool) {
	var parts []string
	onlyText = true
	for _, p := range arrayElems(b, sp) {
		pf := objectFields(b, p)
		switch stringField(b, pf, "type") {
		case "input_text", "output_text", "text":
			parts = append(parts, stringField(b, pf, "text"))
		default:
			onlyText = false
		}
	}
	return strings.Join(parts, "\n"), onlyText && len(parts) > 0
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// responsesEvent reads one Responses stream event: text deltas, finished
// output items (tool calls) and the final status.
func (o *observer) responsesEvent(d []byte) {
	var ev struct {
		Type     string          `json:"type"`
		Delta    json.RawMessage `json:"delta"`
		Item     json.RawMessage `json:"item"`
		Response json.RawMessage `json:"response"`
	}
	if json.Unmarshal(d, &ev) != nil {
		return
	}
	var resp struct {
		Status string `json:"status"`
	}
	if len(ev.Response) > 0 {
		_ = json.Unmarshal(ev.Response, &resp)
		o.note(ev.Response)
	}
	if ev.Type == "error" {
		o.note([]byte(`{"error":` + string(d) + `}`))
	}
	switch ev.Type {
	case "response.output_text.delta":
		var s string
		if json.Unmarshal(ev.Delta, &s) == nil {
			o.out.TextChars += len([]rune(s))
		}
	case "response.output_item.done":
		o.responsesItem(ev.Item, false)
	case "response.completed", "response.incomplete", "response.failed":
		o.out.StopReason = resp.Status
		o.ended = true
	}
}

// responsesItem records an output item: its type, and a tool call. text is
// true when the item's text is counted here (a whole body, not a stream).
func (o *observer) responsesItem(raw json.RawMessage, text bool) {
	var it struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Input     string `json:"input"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &it) != nil || it.Type == "" {
		return
	}
	o.out.Blocks = append(o.out.Blocks, it.Type)
	switch it.Type {
	case "function_call":
		o.out.ToolCalls = append(o.out.ToolCalls, ToolCall{Type: "function", ID: it.CallID, Name: it.Name, Input: normalizeInput(it.Arguments)})
	case "custom_tool_call":
		o.out.ToolCalls = append(o.out.ToolCalls, ToolCall{Type: "custom", ID: it.CallID, Name: it.Name, Input: it.Input})
	case "message":
		if text {
			for _, c := range it.Content {
				o.out.TextChars += len([]rune(c.Text))
			}
		}
	}
}

// parseResponsesBody reads a whole (non-streaming) Responses body.
func (o *observer) parseResponsesBody() {
	var resp struct {
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
	}
	if json.Unmarshal(o.buf, &resp) != nil {
		return
	}
	o.out.StopReason = resp.Status
	for _, it := range resp.Output {
		o.responsesItem(it, true)
	}
}

// passWarnKey carries the warning of a passed-through request to
// modifyResponse.
type passWarnKey struct{}

// knownOther are POST endpoints the proxy knows and leaves alone on
// purpose: they carry no conversation to fold into the session (token
// counting reports on the body it is given).
var knownOther = []string{"/v1/messages/count_tokens", "/v1/embeddings", "/v1/moderations"}

// unknownShape marks a POST to a path the proxy does not model: it passes
// through byte for byte, counted in Stats.UnknownShape, and its response
// carries a warning. Other methods (GET /v1/models) and the knownOther
// endpoints pass through silently.
func unknownShape(s *Server, r *http.Request) *http.Request {
	if r.Method != http.MethodPost {
		return r
	}
	for _, p := range knownOther {
		if strings.HasSuffix(r.URL.Path, p) {
			return r
		}
	}
	s.mu.Lock()
	s.stats.UnknownShape++
	s.mu.Unlock()
	w := warnUnknown + "POST " + r.URL.Path + " is not an API the proxy folds"
	return r.WithContext(context.WithValue(r.Context(), passWarnKey{}, w))
}

// countUnfolded records a request forwarded unchanged because of its shape.
func (s *Server) countUnfolded(st *reqState, req *request) {
	st.rec.Warnings = append(st.rec.Warnings, req.passReason)
	st.rec.Stream = req.stream
	s.mu.Lock()
	if req.chained {
		s.stats.Chained++
	} else {
		s.stats.UnknownShape++
	}
	s.mu.Unlock()
}
