package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ToolCall is a tool call of the assistant's response, reassembled from the
// stream or read from the body, for the proxy's own bookkeeping.
type ToolCall struct {
	Type  string `json:"type"` // "tool_use", "server_tool_use", "function"
	ID    string `json:"id,omitempty"`
	Name  string `json:"name"`
	Input string `json:"input"` // compact JSON of the arguments, keys sorted, characters unescaped
}

// String renders the call as "name input".
func (c ToolCall) String() string { return c.Name + " " + c.Input }

// Observed is what the proxy learnt from a response. The bytes the client
// receives are the upstream's, unchanged: observing only reads a copy.
type Observed struct {
	Blocks     []string   `json:"blocks,omitempty"` // content block types in order (Anthropic)
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	TextChars  int        `json:"text_chars"` // characters of assistant text
	StopReason string     `json:"stop_reason,omitempty"`
	Events     int        `json:"events"` // server-sent events seen
	// ReasoningDropped counts the reasoning the API reports dropping from
	// the request: Anthropic input_transformations of type
	// thinking_dropped, Responses ones that removed a reasoning item.
	ReasoningDropped int `json:"reasoning_dropped,omitempty"`
	// ErrorMessage is the message of an error body (an upstream 4xx/5xx),
	// at most 400 bytes in a request record, with the request's
	// credentials and any secret redacted (Server.safeErrorMessage).
	ErrorMessage string `json:"error_message,omitempty"`
	// EventsSkipped counts the server-sent events longer than maxSSEEvent
	// bytes: passed on to the client unchanged, but not parsed (what they
	// held, such as a tool call's input, is missing from ToolCalls).
	EventsSkipped int `json:"events_skipped,omitempty"`
}

// transformations is the part of a response (Anthropic message, Responses
// response) or error body the observer reads for the wire rules.
type transformations struct {
	InputTransformations []struct {
		Type   string `json:"type"`
		Action string `json:"action"`
	} `json:"input_transformations"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// note records what t reports: dropped reasoning (the largest list seen: a
// stream repeats it) and an error message.
func (o *observer) note(raw []byte) {
	var t transformations
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil {
		return
	}
	n := 0
	for _, x := range t.InputTransformations {
		if x.Type == "thinking_dropped" || (x.Type == "reasoning" && (x.Action == "" || x.Action == "removed")) {
			n++
		}
	}
	o.out.ReasoningDropped = max(o.out.ReasoningDropped, n)
	if t.Error != nil && t.Error.Message != "" {
		m := t.Error.Message
		if len(m) > maxErrorMessage {
			m = m[:maxErrorMessage] // cut to 400 bytes once redacted (safeErrorMessage)
		}
		o.out.ErrorMessage = m
	}
}

// namesReasoning reports an error message that names a thinking block or a
// reasoning item (a prefix check's 400, or the continuation rule's).
func namesReasoning(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "thinking") || strings.Contains(m, "'reasoning'") || strings.Contains(m, "reasoning item")
}

// maxErrorMessage bounds the error message the observer keeps, so that a
// credential it repeats is whole when redacted.
const maxErrorMessage = 4 << 10

// maxObserve bounds the bytes of a non-streaming response kept for parsing.
const maxObserve = 16 << 20

// maxSSEEvent bounds the bytes of one server-sent event kept for parsing; a
// longer event is passed on but skipped (Observed.EventsSkipped).
const maxSSEEvent = 16 << 20

// observer parses a copy of a response: server-sent events as they pass, or
// a JSON body at the end. It never fails the response; unparsable input is
// ignored.
type observer struct {
	api API
	sse bool
	buf []byte // unparsed SSE bytes, or the JSON body
	// scanned is how many bytes of buf were searched for an event end
	// already; skip is set while an event longer than maxSSEEvent passes.
	scanned int
	skip    bool
	out     Observed
	// ended is set by the stream's last event (Anthropic message_stop,
	// a Responses response.completed, .incomplete or .failed, Chat
	// Completions data: [DONE]): the client has everything after it.
	ended  bool
	blocks map[int]*blockState // Anthropic content blocks by index
	calls  map[int]*callState  // OpenAI tool calls by index
	order  []int
}

type blockState struct {
	typ, id, name string
	input         strings.Builder
	start         json.RawMessage
}

type callState struct {
	id, name string
	args     strings.Builder
}

func newObserver(api API, sse bool) *observer {
	return &observer{api: api, sse: sse, blocks: map[int]*blockState{}, calls: map[int]*callState{}}
}

// Write takes the next bytes of the response.
func (o *observer) Write(p []byte) {
	if !o.sse {
		if len(o.buf)+len(p) <= maxObserve {
			o.buf = append(o.buf, p...)
		}
		return
	}
	o.buf = append(o.buf, p...)
	for {
		// An event end found now starts at most 3 bytes before what
		// was searched ("\r\n\r" then "\n"): each byte is searched
		// a bounded number of times, however long the event.
		end, next := eventEnd(o.buf, max(0, o.scanned-3))
		if end < 0 {
			o.scanned = len(o.buf)
			if len(o.buf) > maxSSEEvent {
				// Keep only the tail an event end may start in.
				if !o.skip {
					o.skip = true
					o.out.EventsSkipped++
				}
				o.buf = append(o.buf[:0], o.buf[len(o.buf)-3:]...)
				o.scanned = len(o.buf)
			}
			return
		}
		if o.skip {
			o.skip = false
		} else {
			o.event(o.buf[:end])
		}
		o.buf = o.buf[next:]
		o.scanned = 0
	}
}

// eventEnd finds the blank line ending the first event (LF, CRLF or CR line
// ends) among the line ends at from or later: the end of the event and the
// start of the next.
func eventEnd(b []byte, from int) (end, next int) {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' && b[i] != '\r' {
			continue
		}
		// line end at i; is the following line empty?
		j := i + 1
		if b[i] == '\r' && j < len(b) && b[j] == '\n' {
			j++
		} else if b[i] == '\r' && j == len(b) {
			return -1, -1 // may be CRLF split across writes
		}
		if j < len(b) && (b[j] == '\n' || b[j] == '\r') {
			k := j + 1
			if b[j] == '\r' {
				if k == len(b) {
					return -1, -1
				}
				if b[k] == '\n' {
					k++
				}
			}
			return i, k
		}
	}
	return -1, -1
}

// event handles one event: its data lines joined by "\n".
func (o *observer) event(ev []byte) {
	o.out.Events++
	var data []string
	for _, line := range strings.FieldsFunc(string(ev), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	if len(data) == 0 {
		return
	}
	d := strings.Join(data, "\n")
	if d == "[DONE]" {
		o.ended = true
		return
	}
	switch o.api {
	case APIAnthropic:
		o.anthropicEvent([]byte(d))
	case APIResponses:
		o.responsesEvent([]byte(d))
	default:
		o.openaiChunk([]byte(d))
	}
}

func (o *observer) anthropicEvent(d []byte) {
	var ev struct {
		Type         string          `json:"type"`
		Index        int             `json:"index"`
		Message      json.RawMessage `json:"message"`
		ContentBlock json.RawMessage `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
	}
	if json.Unmarshal(d, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		o.note(ev.Message)
	case "message_stop":
		o.ended = true
	case "error":
		o.note(d)
	case "content_block_start":
		var cb struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Text  string          `json:"text"`
			Input json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(ev.ContentBlock, &cb)
		o.blocks[ev.Index] = &blockState{typ: cb.Type, id: cb.ID, name: cb.Name, start: cb.Input}
		o.order = append(o.order, ev.Index)
		o.out.TextChars += len([]rune(cb.Text))
	case "content_block_delta":
		bs := o.blocks[ev.Index]
		if bs == nil {
			return
		}
		switch ev.Delta.Type {
		case "input_json_delta":
			bs.input.WriteString(ev.Delta.PartialJSON)
		case "text_delta":
			o.out.TextChars += len([]rune(ev.Delta.Text))
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			o.out.StopReason = ev.Delta.StopReason
		}
		o.note(d)
	}
}

func (o *observer) openaiChunk(d []byte) {
	var ch struct {
		Choices []struct {
			Delta struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(d, &ch) != nil {
		return
	}
	for _, c := range ch.Choices { // may be empty (a usage chunk)
		o.out.TextChars += len([]rune(c.Delta.Content))
		for _, tc := range c.Delta.ToolCalls {
			cs := o.calls[tc.Index]
			if cs == nil {
				cs = &callState{}
				o.calls[tc.Index] = cs
				o.order = append(o.order, tc.Index)
			}
			if tc.ID != "" {
				cs.id = tc.ID
			}
			if tc.Function.Name != "" {
				cs.name = tc.Function.Name
			}
			cs.args.WriteString(tc.Function.Arguments)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			o.out.StopReason = *c.FinishReason
		}
	}
}

// normalizeInput decodes a JSON text and re-encodes it compactly with the
// characters unescaped (keys sorted). Unparsable input is kept as it is.
func normalizeInput(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimRight(b.String(), "\n")
}

// result finishes the observation.
func (o *observer) result() Observed {
	if !o.sse {
		o.parseBody()
		return o.out
	}
	for _, idx := range o.order {
		if o.api == APIAnthropic {
			bs := o.blocks[idx]
			o.out.Blocks = append(o.out.Blocks, bs.typ)
			if bs.typ == "tool_use" || bs.typ == "server_tool_use" {
				in := bs.input.String()
				if in == "" && len(bs.start) > 0 {
					in = string(bs.start)
				}
				o.out.ToolCalls = append(o.out.ToolCalls, ToolCall{Type: bs.typ, ID: bs.id, Name: bs.name, Input: normalizeInput(in)})
			}
		} else {
			cs := o.calls[idx]
			o.out.ToolCalls = append(o.out.ToolCalls, ToolCall{Type: "function", ID: cs.id, Name: cs.name, Input: normalizeInput(cs.args.String())})
		}
	}
	return o.out
}

func (o *observer) parseBody() {
	o.note(o.buf)
	if o.api == APIResponses {
		o.parseResponsesBody()
		return
	}
	if o.api == APIAnthropic {
		var msg struct {
			Content []struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Text  string          `json:"text"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
			StopReason string `json:"stop_reason"`
		}
		if json.Unmarshal(o.buf, &msg) != nil {
			return
		}
		o.out.StopReason = msg.StopReason
		for _, c := range msg.Content {
			o.out.Blocks = append(o.out.Blocks, c.Type)
			o.out.TextChars += len([]rune(c.Text))
			if c.Type == "tool_use" || c.Type == "server_tool_use" {
				o.out.ToolCalls = append(o.out.ToolCalls, ToolCall{Type: c.Type, ID: c.ID, Name: c.Name, Input: normalizeInput(string(c.Input))})
			}
		}
		return
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(o.buf, &cc) != nil {
		return
	}
	for _, c := range cc.Choices {
		o.out.StopReason = c.FinishReason
		o.out.TextChars += len([]rune(c.Message.Content))
		for _, tc := range c.Message.ToolCalls {
			o.out.ToolCalls = append(o.out.ToolCalls, ToolCall{Type: "function", ID: tc.ID, Name: tc.Function.Name, Input: normalizeInput(tc.Function.Arguments)})
		}
	}
}
