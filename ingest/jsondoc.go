package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// docReader reads a JSON document from a stream one structural byte, key,
// scalar or array element at a time, each held to the record limit while
// it is read: a value is collected in a buffer that grows by doubling but
// never past the limit, and refused with a *RecordTooLargeError as soon as
// one byte more than the limit is read (as lineReader refuses a line).
// Before, a json.Decoder buffered the value: its buffer doubled past the
// limit and a refused 200 MB element peaked at three times the limit.
//
// Syntax errors, including a document that ends early, are errSyntax or
// io.ErrUnexpectedEOF (see invalid); an error of the underlying reader is
// returned as is. Not safe for concurrent use.
type docReader struct {
	br    *bufio.Reader
	off   int64 // bytes consumed, from the document's first byte
	base  int64 // the document's offset in the input
	limit int64 // the record limit, in bytes (-1: none)
	// scratch, when not nil, is the buffer value reads into, reused from
	// one value to the next (see elements)
	scratch []byte
}

// errSyntax is what docReader returns for input that is not valid JSON;
// the whole-input parser, which the caller falls back to, names the error.
var errSyntax = errors.New("ingest: the JSON document is not valid")

// maxNesting is the deepest nesting of arrays and objects encoding/json
// accepts (json.Valid, json.Unmarshal): a deeper document is invalid for
// the whole-input parser, so it is for docReader too.
const maxNesting = 10000

func (s *streamer) newDoc() *docReader {
	return &docReader{br: bufio.NewReaderSize(s.body(), 64<<10), base: s.base, limit: s.limit}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func closer(open byte) byte {
	if open == '[' {
		return ']'
	}
	return '}'
}

func (d *docReader) discard(n int) {
	d.br.Discard(n)
	d.off += int64(n)
}

// buffered returns the bytes buffered, reading more when there are none;
// the error is io.EOF at the end of the input.
func (d *docReader) buffered() ([]byte, error) {
	if d.br.Buffered() == 0 {
		if _, err := d.br.Peek(1); err != nil {
			return nil, err
		}
	}
	b, _ := d.br.Peek(d.br.Buffered())
	return b, nil
}

// peek skips white space and returns the next byte without consuming it;
// io.EOF at the end of the input.
func (d *docReader) peek() (byte, error) {
	for {
		b, err := d.buffered()
		if err != nil {
			return 0, err
		}
		i := 0
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i < len(b) {
			c := b[i]
			d.discard(i)
			return c, nil
		}
		d.discard(i)
	}
}

// unexpected maps the end of the input inside the document to
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// more reports whether the array or object being read (closed by close)
// has another element, reading the comma before it or the closing byte;
// first is true before its first element and set false by more.
func (d *docReader) more(first *bool, close byte) (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, unexpected(err)
	}
	if c == close {
		d.discard(1)
		return false, nil
	}
	if *first {
		*first = false
		return true, nil
	}
	if c != ',' {
		return false, errSyntax
	}
	d.discard(1)
	return true, nil
}

// appendCapped appends b to out, growing out by doubling but never past
// limit+1 bytes (limit < 0: no cap): once a doubling would pass half the
// limit, out grows to limit+1 at once, so that a record refused at the
// limit held at most 1.5 times the limit (the old buffer and the new) and
// allocated about twice it in all. Doubling to just under the limit, then
// to limit+1, held twice the limit.
func appendCapped(out, b []byte, limit int64) []byte {
	if need := len(out) + len(b); need > cap(out) {
		c := max(2*cap(out), need, 512)
		if limit >= 0 && int64(c) > limit/2 {
			c = int(min(limit+1, int64(maxInt)))
		}
		grown := make([]byte, len(out), max(c, need))
		copy(grown, out)
		out = grown
	}
	return append(out, b...)
}

const maxInt = int(^uint(0) >> 1)

// value reads the next value (at nesting depth: the arrays and objects
// around it) and returns its bytes as written, in a slice of their own. A
// scalar's bytes are checked by the caller (json.Valid, json.Unmarshal); an
// array's or object's only for their nesting and their end. A value past
// the record limit is a *RecordTooLargeError naming what() and its offset,
// returned once limit+1 bytes of it are read.
func (d *docReader) value(what func() string, depth int) ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, unexpected(err)
	}
	switch c {
	case ',', ':', ']', '}':
		return nil, errSyntax
	}
	at := d.base + d.off
	var out []byte
	if d.scratch != nil {
		out = d.scratch[:0]
		defer func() {
			if cap(out) <= 1<<20 {
				d.scratch = out // a larger one is not kept for the next
			}
		}()
	}
	v := startValue(c)
	for done := false; !done; {
		b, err := d.buffered()
		if err == io.EOF && v.scalar && len(out) > 0 {
			break // a number or literal at the end of the input
		}
		if err != nil {
			return nil, unexpected(err)
		}
		i := 0
		for ; i < len(b); i++ {
			stop, take := v.step(b[i])
			if stop {
				if take {
					i++
				}
				done = true
				break
			}
			if depth+v.nest > maxNesting {
				return nil, errSyntax
			}
		}
		if d.limit >= 0 && int64(len(out)+i) > d.limit {
			return nil, &RecordTooLargeError{What: fmt.Sprintf("%s (from byte %d)", what(), at), Limit: d.limit}
		}
		out = appendCapped(out, b[:i], d.limit)
		d.discard(i)
	}
	return out, nil
}

// token reads the next scalar (a string, number or literal) and checks
// it; str is the string's text, for a string.
func (d *docReader) token(depth int) (raw []byte, str string, err error) {
	raw, err = d.value(func() string { return "the JSON token" }, depth)
	if err != nil {
		return nil, "", err
	}
	if raw[0] == '"' {
		if json.Unmarshal(raw, &str) != nil {
			return nil, "", errSyntax
		}
		return raw, str, nil
	}
	if !json.Valid(raw) {
		return nil, "", errSyntax
	}
	return raw, "", nil
}

// key reads an object's next key and the colon after it.
func (d *docReader) key(depth int) (string, error) {
	c, err := d.peek()
	if err != nil {
		return "", unexpected(err)
	}
	if c != '"' {
		return "", errSyntax
	}
	_, k, err := d.token(depth)
	if err != nil {
		return "", err
	}
	if c, err = d.peek(); err != nil {
		return "", unexpected(err)
	}
	if c != ':' {
		return "", errSyntax
	}
	d.discard(1)
	return k, nil
}

// skip reads the next value (at nesting depth) token by token, holding one
// token at a time (each at most the limit) and checking its syntax. clean
// is false when a string in it (a key included) holds U+FFFD, which may
// stand for bytes the decoder replaced.
func (d *docReader) skip(depth int) (clean bool, err error) {
	clean = true
	var stack []byte // the open arrays and objects, by their first byte
	member := func() error {
		k, err := d.key(depth + len(stack))
		if err == nil && !validClean(k) {
			clean = false
		}
		return err
	}
	after := false // a value was just read
	for {
		if after {
			if len(stack) == 0 {
				return clean, nil
			}
			c, err := d.peek()
			if err != nil {
				return clean, unexpected(err)
			}
			top := stack[len(stack)-1]
			switch c {
			case ',':
				d.discard(1)
				if top == '{' {
					if err := member(); err != nil {
						return clean, err
					}
				}
				after = false
			case closer(top):
				d.discard(1)
				stack = stack[:len(stack)-1]
			default:
				return clean, errSyntax
			}
			continue
		}
		c, err := d.peek()
		if err != nil {
			return clean, unexpected(err)
		}
		switch c {
		case '{', '[':
			d.discard(1)
			if stack = append(stack, c); depth+len(stack) > maxNesting {
				return clean, errSyntax
			}
			next, err := d.peek()
			if err != nil {
				return clean, unexpected(err)
			}
			if next == closer(c) {
				d.discard(1)
				stack = stack[:len(stack)-1]
				after = true
				continue
			}
			if c == '{' {
				if err := member(); err != nil {
					return clean, err
				}
			}
		default:
			raw, s, err := d.token(depth + len(stack))
			if err != nil {
				return clean, err
			}
			if raw[0] == '"' && !validClean(s) {
				clean = false
			}
			after = true
		}
	}
}

// validClean reports whether s holds no U+FFFD.
func validClean(s string) bool { return !strings.ContainsRune(s, utf8.RuneError) }

// elements reads the elements of the array whose '[' was just read (at
// nesting depth, the array included), calling each with every element's
// bytes until it returns false or an error, and the closing ']' when it
// never did. name names the array in errors. With reuse, an element's
// bytes are valid only until each returns (they are read into one buffer,
// a million small messages allocated a million).
func (d *docReader) elements(name string, depth int, reuse bool, each func(i int, raw []byte) (bool, error)) (stopped bool, err error) {
	if reuse {
		d.scratch = []byte{}
		defer func() { d.scratch = nil }()
	}
	first := true
	for i := 0; ; i++ {
		ok, err := d.more(&first, ']')
		if err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
		raw, err := d.value(func() string {
			if name == "" {
				return fmt.Sprintf("element %d of the JSON array", i)
			}
			return fmt.Sprintf("%s[%d]", name, i)
		}, depth)
		if err != nil {
			return false, err
		}
		if ok, err := each(i, raw); err != nil || !ok {
			return err == nil, err
		}
	}
}

// end reports whether nothing but white space follows the document.
func (d *docReader) end() (bool, error) {
	_, err := d.peek()
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// valueEnd returns the end of the value of the valid JSON text raw that
// starts at i (after any white space).
func valueEnd(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	if i >= len(raw) {
		return i
	}
	v := startValue(raw[i])
	for ; i < len(raw); i++ {
		if stop, take := v.step(raw[i]); stop {
			if take {
				return i + 1
			}
			return i
		}
	}
	return i
}

// valueScan follows the bytes of one JSON value to its end: a string's
// escapes, the nesting of objects and arrays, where a number or literal
// stops. Its input is the value's bytes from its first (startValue).
type valueScan struct {
	nest               int // objects and arrays open
	inStr, esc, scalar bool
}

// startValue begins the scan of a value whose first byte is first.
func startValue(first byte) valueScan {
	return valueScan{scalar: first != '{' && first != '[' && first != '"'}
}

// step reads ch, the value's next byte. stop: the value has ended, with
// ch (take) or before it (a number or literal ends at the byte after it).
func (v *valueScan) step(ch byte) (stop, take bool) {
	if v.inStr {
		switch {
		case v.esc:
			v.esc = false
		case ch == '\\':
			v.esc = true
		case ch == '"':
			v.inStr = false
			return v.nest == 0, true
		}
		return false, false
	}
	if v.scalar {
		switch ch {
		case ' ', '\t', '\n', '\r', ',', ':', ']', '}', '[', '{', '"':
			return true, false
		}
		return false, false
	}
	switch ch {
	case '"':
		v.inStr = true
	case '{', '[':
		v.nest++
	case '}', ']':
		v.nest--
		return v.nest <= 0, true
	}
	return false, false
}

// eachValue calls f with each element of the valid JSON array raw, or
// each key (as written, quotes included) and value of the valid JSON
// object raw, in order; key is nil for an array.
func eachValue(raw []byte, f func(key, val []byte)) {
	i := 1 // after '[' or '{'
	object := raw[0] == '{'
	for {
		for i < len(raw) && (isSpace(raw[i]) || raw[i] == ',') {
			i++
		}
		if i >= len(raw) || raw[i] == ']' || raw[i] == '}' {
			return
		}
		var key []byte
		if object {
			end := valueEnd(raw, i)
			key = raw[i:end]
			i = end
			for i < len(raw) && (isSpace(raw[i]) || raw[i] == ':') {
				i++
			}
		}
		end := valueEnd(raw, i)
		f(key, raw[i:end])
		i = end
	}
}

// keyIs reports whether the JSON string key (quotes included) decodes to
// name, an ASCII text without quotes or backslashes.
func keyIs(key []byte, name string) bool {
	if len(key) == len(name)+2 && string(key[1:len(key)-1]) == name {
		return true
	}
	if len(key) < len(name)+2 || bytes.IndexByte(key, '\\') < 0 {
		return false // as written, and not name
	}
	s, _ := rawString(key)
	return s == name
}

// fastStr is obj.str on a value: its text when it is a JSON string.
func fastStr(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		ascii := true
		for _, c := range v {
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
		}
		if ascii {
			return string(v[1 : len(v)-1])
		}
	}
	s, _ := rawString(v)
	return s
}

// addValid is chatCounts.add on a valid JSON object, read without
// decoding it into a map: the tally of a million messages took most of the
// scan of a document. A repeated key counts by its last value, as
// decodeObj keeps it.
func (c *chatCounts) addValid(raw []byte) {
	var role, content []byte
	hasRole, openai := false, false
	eachValue(raw, func(k, v []byte) {
		switch {
		case keyIs(k, "role"):
			role, hasRole = v, true
		case keyIs(k, "content"):
			content = v
		case keyIs(k, "tool_calls"), keyIs(k, "tool_call_id"), keyIs(k, "function_call"):
			openai = true
		}
	})
	if !hasRole {
		return
	}
	c.roles++
	switch fastStr(role) {
	case "tool", "function", "system", "developer":
		c.openai++
	}
	if openai {
		c.openai++
	}
	if len(content) == 0 || content[0] != '[' {
		return
	}
	eachValue(content, func(_, b []byte) {
		if len(b) == 0 || b[0] != '{' {
			return
		}
		var typ []byte
		source := false
		eachValue(b, func(k, v []byte) {
			switch {
			case keyIs(k, "type"):
				typ = v
			case keyIs(k, "source"):
				source = true
			}
		})
		t := fastStr(typ)
		switch {
		case anthropicBlocks[t]:
			c.anthropic++
		case openAIParts[t]:
			c.openai++
		case t == "image" && source:
			c.anthropic++
		}
	})
}
