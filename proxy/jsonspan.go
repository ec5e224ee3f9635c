package proxy

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"
)

// The body is edited by splicing byte ranges of the client's JSON, never by
// re-encoding it: every byte the proxy does not mean to change (thinking
// signatures, cache_control markers, unknown fields, number literals) goes
// upstream as the client wrote it. The helpers below navigate a body that
// json.Valid accepted.

// span is the byte range [start, end) of a JSON value.
type span struct{ start, end int }

// field is one member of a JSON object.
type field struct {
	key string
	val span
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd returns the end of the JSON value starting at i (b is valid JSON).
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// stringEnd returns the end of the string starting at the quote at i: the
// first quote preceded by an even number of backslashes.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// objectFields lists the members of the object at sp.
func objectFields(b []byte, sp span) []field {
	if sp.end-sp.start < 2 || b[sp.start] != '{' {
		return nil
	}
	var out []field
	i := skipWS(b, sp.start+1)
	for i < sp.end && b[i] == '"' {
		ke := stringEnd(b, i)
		key := decodeString(b, span{i, ke})
		i = skipWS(b, ke)
		i = skipWS(b, i+1) // ':'
		ve := valueEnd(b, i)
		out = append(out, field{key: key, val: span{i, ve}})
		i = skipWS(b, ve)
		if i < sp.end && b[i] == ',' {
			i = skipWS(b, i+1)
		}
	}
	return out
}

// arrayElems lists the elements of the array at sp.
func arrayElems(b []byte, sp span) []span {
	if sp.end-sp.start < 2 || b[sp.start] != '[' {
		return nil
	}
	var out []span
	i := skipWS(b, sp.start+1)
	for i < sp.end && b[i] != ']' {
		ve := valueEnd(b, i)
		out = append(out, span{i, ve})
		i = skipWS(b, ve)
		if i < sp.end && b[i] == ',' {
			i = skipWS(b, i+1)
		}
	}
	return out
}

// get returns the value of key in fields.
func get(fs []field, key string) (span, bool) {
	for _, f := range fs {
		if f.key == key {
			return f.val, true
		}
	}
	return span{}, false
}

func kind(b []byte, sp span) byte {
	if sp.end <= sp.start {
		return 0
	}
	return b[sp.start]
}

// decodeString decodes the JSON string at sp. Lone surrogate escapes and
// invalid UTF-8 become U+FFFD (encoding/json's rule).
func decodeString(b []byte, sp span) string {
	raw := b[sp.start:sp.end]
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	if s, ok := unescape(inner); ok {
		return s
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// unescape decodes the common escapes of a JSON string body; ok is false for
// \u escapes and invalid UTF-8 (encoding/json handles those, surrogates
// included).
func unescape(in []byte) (string, bool) {
	if !utf8.Valid(in) {
		return "", false
	}
	// One allocation: the builder's buffer becomes the string (no
	// []byte-to-string copy).
	var out strings.Builder
	out.Grow(len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			// Copy the run up to the next escape at once.
			j := bytes.IndexByte(in[i:], '\\')
			if j < 0 {
				j = len(in) - i
			}
			out.Write(in[i : i+j])
			i += j - 1
			continue
		}
		i++
		if i >= len(in) {
			return "", false
		}
		switch in[i] {
		case '"', '\\', '/':
			out.WriteByte(in[i])
		case 'n':
			out.WriteByte('\n')
		case 't':
			out.WriteByte('\t')
		case 'r':
			out.WriteByte('\r')
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		default:
			return "", false
		}
	}
	return out.String(), true
}

// stringField returns the string value of key, "" when absent or not a string.
func stringField(b []byte, fs []field, key string) string {
	sp, ok := get(fs, key)
	if !ok || kind(b, sp) != '"' {
		return ""
	}
	return decodeString(b, sp)
}

// encodeString encodes s as a JSON string: valid UTF-8 (invalid bytes become
// U+FFFD), no HTML escaping.
func encodeString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(strings.ToValidUTF8(s, "\uFFFD"))
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// edit replaces [start, end) by data (an insertion when start == end).
type edit struct {
	start, end int
	data       []byte
}

// splice applies non-overlapping edits to b and returns a new body.
func splice(b []byte, edits []edit) []byte {
	if len(edits) == 0 {
		return b
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	n := len(b)
	for _, e := range edits {
		n += len(e.data) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, e := range edits {
		out = append(out, b[pos:e.start]...)
		out = append(out, e.data...)
		pos = e.end
	}
	return append(out, b[pos:]...)
}
