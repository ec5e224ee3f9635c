package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/scrub"
)

// obj is a decoded JSON object whose values are decoded on demand, so a field
// of an unexpected type never fails the whole record.
type obj map[string]json.RawMessage

// rawRef is a JSON value left undecoded, as json.RawMessage, but holding
// the bytes of the input it was decoded from rather than a copy of them:
// an object or array nested n deep is then held once, not n times (a 200
// MB tool result inside message.content was copied at every level). The
// input must not change while a value decoded from it is in use; the
// parser never writes to its input.
type rawRef []byte

// UnmarshalJSON keeps data itself: json.Unmarshal passes a slice of its
// input, which the caller owns.
func (r *rawRef) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// decodeObj decodes raw as a JSON object; ok is false for anything else.
// The values are slices of raw.
func decodeObj(raw []byte) (obj, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]rawRef
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	o := make(obj, len(m))
	for k, v := range m {
		o[k] = json.RawMessage(v)
	}
	return o, true
}

// decodeArr decodes raw as a JSON array; ok is false for anything else.
// The elements are slices of raw.
func decodeArr(raw []byte) ([]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var a []rawRef
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, false
	}
	out := make([]json.RawMessage, len(a))
	for i, v := range a {
		out[i] = json.RawMessage(v)
	}
	return out, true
}

func (o obj) has(k string) bool { _, ok := o[k]; return ok }

// str returns the field as a string when it is a JSON string, else "".
func (o obj) str(k string) string {
	s, _ := rawString(o[k])
	return s
}

// obj returns the field as an object, or nil.
func (o obj) obj(k string) obj {
	v, _ := decodeObj(o[k])
	return v
}

// arr returns the field as an array, or nil.
func (o obj) arr(k string) []json.RawMessage {
	v, _ := decodeArr(o[k])
	return v
}

// toolCallID returns the id a tool message answers: "tool_call_id", else
// the first string of "tool_call_ids" (the function-calling variant of
// SWE-agent and older chat exports), else "".
func (o obj) toolCallID() string {
	if id := o.str("tool_call_id"); id != "" {
		return id
	}
	for _, raw := range o.arr("tool_call_ids") {
		if s, ok := rawString(raw); ok {
			return s
		}
	}
	return ""
}

// boolean returns the field when it is JSON true.
func (o obj) boolean(k string) bool {
	return string(bytes.TrimSpace(o[k])) == "true"
}

// num returns the field as a number text when it is a JSON number.
func (o obj) num(k string) (string, bool) {
	raw := bytes.TrimSpace(o[k])
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return "", false
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", false
	}
	return n.String(), true
}

// scalar renders a string, number or bool field as text ("" for others).
func (o obj) scalar(k string) string {
	raw := bytes.TrimSpace(o[k])
	if len(raw) == 0 {
		return ""
	}
	if s, ok := rawString(raw); ok {
		return s
	}
	if n, ok := o.num(k); ok {
		return n
	}
	switch string(raw) {
	case "true", "false":
		return string(raw)
	}
	return ""
}

// rawString decodes raw as a JSON string.
func rawString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// renderJSON renders a JSON value compactly, keeping key order and number
// text as given; strings are re-encoded so that lone surrogate escapes come
// out as U+FFFD and non-ASCII text is written as itself. A JSON string value
// is rendered as its text, without quotes.
func renderJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if s, ok := rawString(raw); ok {
		return s
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	type frame struct {
		object bool
		n      int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return validText(string(raw))
		}
		closing := false
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			closing = true
		}
		if len(stack) > 0 && !closing {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				b.WriteByte(':')
			case top.n > 0:
				b.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			if v == '{' || v == '[' {
				stack = append(stack, frame{object: v == '{'})
			} else if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case string:
			canonjson.WriteString(&b, v)
		case json.Number:
			b.WriteString(v.String())
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case nil:
			b.WriteString("null")
		}
	}
	return b.String()
}

// countReplacements counts what decoding raw JSON text turns into U+FFFD:
// \uXXXX escapes of UTF-16 surrogates that do not form a high+low pair
// (canonjson.LoneSurrogate), and bytes that are not valid UTF-8 (one per
// byte, as encoding/json does).
func countReplacements(raw []byte) int {
	n := 0
	for i := canonjson.LoneSurrogate(raw, 0); i >= 0; i = canonjson.LoneSurrogate(raw, i+6) {
		n++
	}
	for i := 0; i < len(raw); {
		if raw[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}

// validText replaces every invalid UTF-8 byte with U+FFFD.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out, _ := sanitize(s)
	return out
}

// sanitize replaces every invalid UTF-8 byte with U+FFFD and counts them.
func sanitize(s string) (string, int) {
	if utf8.ValidString(s) {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
			n++
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), n
}

// lineAt returns the 1-based line number of byte offset off in data.
func lineAt(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// elementLines returns, for the JSON array at data[start:], the 1-based line
// of each element's first byte. It returns nil when the array cannot be
// scanned; callers then report line 0.
func elementLines(data []byte, arrayStart int) []int {
	if arrayStart < 0 || arrayStart >= len(data) || data[arrayStart] != '[' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data[arrayStart:]))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var lines []int
	line := lineAt(data, arrayStart)
	pos := arrayStart
	for dec.More() {
		off := arrayStart + int(dec.InputOffset())
		for off < len(data) && (data[off] == ',' || data[off] == ' ' || data[off] == '\n' || data[off] == '\r' || data[off] == '\t') {
			off++
		}
		line += bytes.Count(data[pos:off], []byte{'\n'})
		pos = off
		lines = append(lines, line)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return lines
}

// fieldOffset returns the byte offset of the value of top-level key in the
// JSON object data, or -1.
func fieldOffset(data []byte, key string) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return -1
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return -1
		}
		k, _ := t.(string)
		off := int(dec.InputOffset())
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return -1
		}
		if k == key {
			for off < len(data) && (data[off] == ':' || data[off] == ' ' || data[off] == '\n' || data[off] == '\r' || data[off] == '\t') {
				off++
			}
			return off
		}
	}
	return -1
}

// truncatedDoc describes a JSON document that ends before it is complete (a
// file cut short by an interrupted copy or write): where it ends and what it
// was inside. ok is false when data is not such a document — complete, or
// invalid for another reason, or JSONL whose first line is a whole value.
func truncatedDoc(data []byte) (what string, ok bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') || json.Valid(trimmed) {
		return "", false
	}
	if nl := bytes.IndexByte(trimmed, '\n'); nl >= 0 && json.Valid(bytes.TrimSpace(trimmed[:nl])) {
		return "", false // JSONL: each line is its own document
	}
	// Walk the tokens: a syntax error is not truncation; running out is.
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var stack []byte
	for {
		tok, err := dec.Token()
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) || (err != nil && strings.Contains(err.Error(), "unexpected EOF")) {
			break
		}
		if err != nil {
			return "", false
		}
		if d, isDelim := tok.(json.Delim); isDelim {
			switch d {
			case '{', '[':
				stack = append(stack, byte(d))
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			}
		}
	}
	if len(stack) == 0 {
		return "", false
	}
	inside := "an object"
	if stack[len(stack)-1] == '[' {
		inside = "an array"
	}
	end := len(data) - len(bytes.TrimRight(data, " \t\r\n"))
	last := len(data) - end
	line := 1 + bytes.Count(data[:last], []byte("\n"))
	col := last - bytes.LastIndexByte(data[:last], '\n')
	tail := string(bytes.TrimSpace(data[max(0, last-40):last]))
	if i := strings.LastIndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	return fmt.Sprintf("the input is a truncated JSON document: it ends at line %d, column %d (byte %d) inside %s nested %d deep, after %q; the file was cut short (an interrupted copy or write?); restore the whole file",
		line, col, last, inside, len(stack), quotableTail(tail)), true
}

// quotableTail is tail, the last bytes of an input an error message
// quotes, with what may be a credential left out: the scrubber's findings
// redacted, and every run of 16 or more token characters (letters, digits,
// "+/=_.-": a token the cut left too short for its rule) replaced by "…".
func quotableTail(tail string) string {
	if sc, err := scrub.New(); err == nil {
		tail = sc.Scrub(tail).Text
	}
	return longTokenRun.ReplaceAllString(tail, "…")
}

var longTokenRun = regexp.MustCompile(`[A-Za-z0-9+/=_.-]{16,}`)
