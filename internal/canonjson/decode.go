package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Decode parses one JSON document into map[string]any / []any / string /
// json.Number / bool / nil, keeping number literals exactly (UseNumber). A
// duplicate key keeps its last value, as Python's json module does. Trailing
// non-space data is an error.
//
// A document is first read by a single-pass decoder written for the store's
// files (validate decodes every cold node and index entry); it
// gives exactly encoding/json's values — the same escapes, U+FFFD for
// invalid UTF-8 and lone surrogates, the same number literals — and hands
// anything it does not accept to encoding/json, so every error (and its
// message) is encoding/json's. Strings without escapes share one copy of
// data when data is at most 1 MiB (one allocation instead of one a string);
// a larger document gets a copy per string, so a value kept from it does
// not keep the whole document alive. Safe for concurrent use.
func Decode(data []byte) (any, error) {
	d := fastDecoder{data: data}
	if len(data) <= sharedStringMax {
		d.shared = string(data)
	}
	if v, ok := d.document(); ok {
		return v, nil
	}
	return decodeStd(data)
}

// DecodeOwned is [Decode] for a buffer the caller hands over: the decoded
// strings may share data's memory (no copy of the document), so data must
// not be modified or reused afterwards. For the buffer of a file just read
// (a cold node, an index entry).
func DecodeOwned(data []byte) (any, error) {
	d := fastDecoder{data: data}
	if len(data) <= sharedStringMax && len(data) > 0 {
		d.shared = unsafe.String(&data[0], len(data))
	}
	if v, ok := d.document(); ok {
		return v, nil
	}
	return decodeStd(data)
}

// sharedStringMax is the largest document whose plain strings are slices of
// one copy of the whole document, in bytes.
const sharedStringMax = 1 << 20

// maxFastDepth is the nesting the fast decoder follows; a deeper document
// is left to encoding/json (which allows 10,000 levels).
const maxFastDepth = 512

// decodeStd is Decode through encoding/json.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON document")
	}
	return v, nil
}

// fastDecoder reads a JSON document in one pass. Each method returns
// ok=false at anything it does not accept; Decode then asks encoding/json.
type fastDecoder struct {
	data   []byte
	shared string // string(data), when plain strings share it
	i      int
	depth  int
	stack  []any // elements of the arrays being read
}

func (d *fastDecoder) document() (any, bool) {
	d.space()
	v, ok := d.value()
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

func (d *fastDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value() (any, bool) {
	if d.i >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, ok := d.str(false)
		return s, ok
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) literal(lit string) bool {
	if !bytes.HasPrefix(d.data[d.i:], []byte(lit)) {
		return false
	}
	d.i += len(lit)
	return true
}

// number reads a number literal of the JSON grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	b := d.data
	if b[d.i] == '-' {
		d.i++
	}
	digits := func() bool {
		s := d.i
		for d.i < len(b) && b[d.i] >= '0' && b[d.i] <= '9' {
			d.i++
		}
		return d.i > s
	}
	switch {
	case d.i < len(b) && b[d.i] == '0':
		d.i++
	case !digits():
		return nil, false
	}
	if d.i < len(b) && b[d.i] == '.' {
		d.i++
		if !digits() {
			return nil, false
		}
	}
	if d.i < len(b) && (b[d.i] == 'e' || b[d.i] == 'E') {
		d.i++
		if d.i < len(b) && (b[d.i] == '+' || b[d.i] == '-') {
			d.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return json.Number(d.text(start, d.i)), true
}

// text returns data[a:b] as a string, from the shared copy when there is one.
func (d *fastDecoder) text(a, b int) string {
	if d.shared != "" {
		return d.shared[a:b]
	}
	return string(d.data[a:b])
}

func (d *fastDecoder) array() (any, bool) {
	if d.depth++; d.depth > maxFastDepth {
		return nil, false
	}
	d.i++ // '['
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		d.depth--
		return []any{}, true
	}
	// Elements gather on a stack shared by the nested arrays, and each array
	// is allocated once at its final length.
	base := len(d.stack)
	for {
		d.space()
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.stack = append(d.stack, v)
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			out := make([]any, len(d.stack)-base)
			copy(out, d.stack[base:])
			clear(d.stack[base:])
			d.stack = d.stack[:base]
			return out, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) object() (any, bool) {
	if d.depth++; d.depth > maxFastDepth {
		return nil, false
	}
	d.i++ // '{'
	size := 0
	if d.depth == 1 {
		size = 20 // a cold node or an index entry: no map growth
	}
	out := make(map[string]any, size)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		d.depth--
		return out, true
	}
	for {
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str(true)
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		out[k] = v
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return out, true
		default:
			return nil, false
		}
	}
}

// str reads a string at d.i (its opening quote). A string with no escape,
// control character or invalid UTF-8 is a slice of the document; any other
// is unquoted as encoding/json does. key interns the keys of the store's
// files.
func (d *fastDecoder) str(key bool) (string, bool) {
	b := d.data
	start := d.i + 1
	i := start
	for i < len(b) {
		c := b[i]
		if c == '"' {
			d.i = i + 1
			if key {
				if k, ok := knownKey(b[start:i]); ok {
					return k, true
				}
			}
			return d.text(start, i), true
		}
		if c == '\\' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	return d.unquote(start, i)
}

// unquote continues a string at i (after start) that needs unquoting, with
// encoding/json's rules: the escapes \" \\ \/ \b \f \n \r \t \uXXXX, a valid
// surrogate pair as one code point, a lone surrogate or an invalid UTF-8
// byte as U+FFFD; a control character is not accepted.
func (d *fastDecoder) unquote(start, i int) (string, bool) {
	b := d.data
	out := make([]byte, 0, i-start+64)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(out), true
		case c < ' ':
			return "", false
		case c == '\\':
			if i+1 >= len(b) {
				return "", false
			}
			switch b[i+1] {
			case '"', '\\', '/':
				out = append(out, b[i+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b[i+2:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r1 := rune(-1)
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						r1 = hex4(b[i+2:])
					}
					if dec := utf16.DecodeRune(r, r1); dec != unicode.ReplacementChar {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			out = utf8.AppendRune(out, r) // an invalid byte becomes U+FFFD
			i += size
		}
	}
	return "", false
}

// hex4 is the value of four hex digits at the start of b, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// knownKey returns the constant string of a key of the store's files (no
// allocation for the keys every cold node and index entry repeats).
func knownKey(b []byte) (string, bool) {
	switch string(b) { // the compiler does not allocate for this switch
	case "ipcf_version":
		return "ipcf_version", true
	case "projection_version":
		return "projection_version", true
	case "step_id":
		return "step_id", true
	case "session_id":
		return "session_id", true
	case "folded_at":
		return "folded_at", true
	case "summary":
		return "summary", true
	case "raw_content":
		return "raw_content", true
	case "normalized_content":
		return "normalized_content", true
	case "payload_sha256":
		return "payload_sha256", true
	case "projection_sha256":
		return "projection_sha256", true
	case "artifact_sha256":
		return "artifact_sha256", true
	case "identifiers":
		return "identifiers", true
	case "files":
		return "files", true
	case "commands":
		return "commands", true
	case "errors":
		return "errors", true
	case "token_estimate":
		return "token_estimate", true
	case "sanitized":
		return "sanitized", true
	case "status":
		return "status", true
	case "file_path":
		return "file_path", true
	case "evicted":
		return "evicted", true
	case "redactions":
		return "redactions", true
	}
	return "", false
}
