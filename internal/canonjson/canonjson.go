// Package canonjson writes JSON exactly as the IPCF-1.1 reference writes it.
//
// Two forms exist (spec §1–§2):
//
//   - Canonical: keys sorted by code point, separators "," and ":" with no
//     spaces, non-ASCII written as itself. Every IPCF hash is taken over it.
//   - Pretty: the same escaping, 2-space indent, ", " at line ends and ": "
//     between key and value, "[]" and "{}" for empty containers, no trailing
//     newline. Every stored file uses it.
//
// String escaping follows Python's json.dumps(ensure_ascii=False): \" \\ \n
// \r \t \b \f, any other character below U+0020 as \u00xx (lower-case hex),
// and everything else — U+007F, U+2028, U+2029, '<', '>', '&', '/' — raw.
//
// Numbers follow Python's json module: integers print in plain decimal at any
// size; floats print as Python's repr (shortest round trip, exponent when the
// decimal exponent is below -4 or above 16, two-digit exponent, ".0" suffix on
// integral values). Decode documents with [Decode] (json.Number kept) so the
// numbers of a policy file reproduce the reference's canonical form.
package canonjson

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Raw is a pre-encoded JSON fragment written verbatim. In pretty output it
// must already carry the indentation of the place it is written at; it is
// used to cache index entries so that rewriting a large index is a copy.
type Raw []byte

// Canonical returns the canonical JSON encoding of v (spec §2).
//
// Supported values: nil, bool, string, int, int64, uint64, json.Number,
// float64, []string, []int, []any, map[string]any, Raw. Any other type is an
// error of type *UnsupportedTypeError.
func Canonical(v any) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(sizeHint(v, -1, 0))
	if err := write(&b, v, -1, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Pretty returns the pretty (indent=2, sort_keys) encoding of v as stored in
// every IPCF file, without a trailing newline (spec §1).
func Pretty(v any) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(sizeHint(v, 2, 0))
	if err := write(&b, v, 2, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encoder is what the encoder writes to: a *bytes.Buffer, or a
// *bufio.Writer in front of a file or a hash.
type encoder interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

// streamBuffer is the buffer of the streaming encoders, in bytes.
const streamBuffer = 64 << 10

// WritePretty writes the pretty encoding of v (the bytes of [Pretty]) to w
// through a 64 KiB buffer, so a large document is never held whole in
// memory. Errors: *UnsupportedTypeError, *InvalidNumberError,
// or w's write error; after an error w may hold a part of the encoding.
func WritePretty(w io.Writer, v any) error {
	bw := getWriter(w)
	defer putWriter(bw)
	if err := write(bw, v, 2, 0); err != nil {
		return err
	}
	return bw.Flush()
}

// writers recycles the stream buffers: a fold of many small turns hashes
// three documents per turn, and a 64 KiB buffer each would dwarf them.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, streamBuffer) }}

func getWriter(w io.Writer) *bufio.Writer {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	writers.Put(bw)
}

// CanonicalSHA256 returns the SHA-256 of the canonical encoding of v (the
// bytes of [Canonical]), hashed as it is encoded through a 64 KiB buffer:
// every IPCF hash of a large document without holding its encoding.
// Errors: those of [Canonical].
func CanonicalSHA256(v any) ([sha256.Size]byte, error) {
	h := sha256.New()
	bw := getWriter(h)
	defer putWriter(bw)
	var sum [sha256.Size]byte
	if err := write(bw, v, -1, 0); err != nil {
		return sum, err
	}
	if err := bw.Flush(); err != nil { // a hash never fails to write
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// CanonicalSHA256Except is [CanonicalSHA256] of the object m without its
// key skip, without copying m (artifact_sha256 is the hash of a cold node
// without that key, spec §3). Errors: those of [Canonical].
func CanonicalSHA256Except(m map[string]any, skip string) ([sha256.Size]byte, error) {
	h := sha256.New()
	bw := getWriter(h)
	defer putWriter(bw)
	var sum [sha256.Size]byte
	if err := writeMap(bw, m, -1, 0, skip, true); err != nil {
		return sum, err
	}
	if err := bw.Flush(); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// PrettyAt is Pretty for a value nested at the given depth (each level two
// spaces), so the result can be spliced into an enclosing pretty document as a
// Raw value.
func PrettyAt(v any, depth int) ([]byte, error) {
	var b bytes.Buffer
	if err := write(&b, v, 2, depth); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnsupportedTypeError reports a Go value that has no IPCF JSON form.
type UnsupportedTypeError struct{ Value any }

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("canonjson: unsupported type %T", e.Value)
}

// InvalidNumberError reports a json.Number that is not a JSON number.
type InvalidNumberError struct{ Literal string }

func (e *InvalidNumberError) Error() string {
	return fmt.Sprintf("canonjson: invalid number literal %q", e.Literal)
}

// sizeHint estimates the encoded size of v in bytes (strings as their
// length plus quotes, each element its indentation), so that a large
// document is encoded into one buffer instead of doubling its way there
// (a 62 MB payload is held twice in a cold node). Only a hint: escapes make
// the encoding longer.
func sizeHint(v any, indent, depth int) int {
	pad := 0
	if indent > 0 {
		pad = 1 + indent*(depth+1)
	}
	switch x := v.(type) {
	case string:
		return len(x) + 2
	case []string:
		n := 2
		for _, s := range x {
			n += len(s) + 3 + pad
		}
		return n
	case []any:
		n := 2
		for _, e := range x {
			n += sizeHint(e, indent, depth+1) + 1 + pad
		}
		return n
	case map[string]any:
		n := 2
		for k, e := range x {
			n += len(k) + 4 + pad + sizeHint(e, indent, depth+1)
		}
		return n
	case Raw:
		return len(x)
	}
	return 8
}

func newline(b encoder, indent, depth int) {
	b.WriteByte('\n')
	for i := 0; i < indent*depth; i++ {
		b.WriteByte(' ')
	}
}

func write(b encoder, v any, indent, depth int) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		WriteString(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case float64:
		s, err := FloatRepr(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case json.Number:
		s, err := NumberRepr(string(x))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case Raw:
		b.Write(x)
	case []string:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, s := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if indent >= 0 {
				newline(b, indent, depth+1)
			}
			WriteString(b, s)
		}
		if indent >= 0 {
			newline(b, indent, depth)
		}
		b.WriteByte(']')
	case []int:
		items := make([]any, len(x))
		for i, n := range x {
			items[i] = n
		}
		return write(b, items, indent, depth)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if indent >= 0 {
				newline(b, indent, depth+1)
			}
			if err := write(b, e, indent, depth+1); err != nil {
				return err
			}
		}
		if indent >= 0 {
			newline(b, indent, depth)
		}
		b.WriteByte(']')
	case map[string]any:
		return writeMap(b, x, indent, depth, "", false)
	default:
		return &UnsupportedTypeError{Value: v}
	}
	return nil
}

// writeMap writes an object, without its key skip when skipping (the
// artifact hash is taken over a node without artifact_sha256).
func writeMap(b encoder, x map[string]any, indent, depth int, skip string, skipping bool) error {
	{
		var small [24]string
		keys := small[:0]
		for k := range x {
			if !skipping || k != skip {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		sort.Strings(keys) // byte order of UTF-8 == code point order
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if indent >= 0 {
				newline(b, indent, depth+1)
			}
			WriteString(b, k)
			if indent >= 0 {
				b.WriteString(": ")
			} else {
				b.WriteByte(':')
			}
			if err := write(b, x[k], indent, depth+1); err != nil {
				return err
			}
		}
		if indent >= 0 {
			newline(b, indent, depth)
		}
		b.WriteByte('}')
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// StringWriter is what WriteString writes to: a *bytes.Buffer or a
// *strings.Builder.
type StringWriter interface {
	WriteByte(c byte) error
	WriteString(s string) (int, error)
}

// WriteString writes s as a JSON string with Python's ensure_ascii=False
// escaping. Invalid UTF-8 bytes are written as U+FFFD.
func WriteString(b StringWriter, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b.WriteString(s[start:i])
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString("\uFFFD")
			i++
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// NumberRepr returns the canonical form of a JSON number literal as Python's
// json module would re-emit it: integers (no '.', 'e' or 'E') in plain
// decimal, anything else as a float repr.
func NumberRepr(lit string) (string, error) {
	if lit == "" {
		return "", &InvalidNumberError{Literal: lit}
	}
	if !strings.ContainsAny(lit, ".eE") {
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok || !validIntLiteral(lit) {
			return "", &InvalidNumberError{Literal: lit}
		}
		return n.String(), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			// Python turns an overflowing literal into inf, and json.dumps
			// writes it as Infinity.
			return FloatRepr(f)
		}
		return "", &InvalidNumberError{Literal: lit}
	}
	return FloatRepr(f)
}

func validIntLiteral(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FloatRepr formats f as Python's repr(float) inside json.dumps: shortest
// round trip digits; scientific notation when the decimal point position is
// below -3 or above 16 (so 1e-05 and 1e+16, but 0.0001 and 1e15 as
// "1000000000000000.0"); ".0" on integral values; NaN and ±Infinity as
// Python's json module writes them.
func FloatRepr(f float64) (string, error) {
	switch {
	case math.IsNaN(f):
		return "NaN", nil
	case math.IsInf(f, 1):
		return "Infinity", nil
	case math.IsInf(f, -1):
		return "-Infinity", nil
	}
	// 'e' with precision -1 gives the shortest digits: d.ddde±XX.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	neg := strings.HasPrefix(e, "-")
	if neg {
		e = e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, err := strconv.Atoi(expStr)
	if err != nil {
		return "", err
	}
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1 // value = 0.digits × 10^decpt
	var out string
	if decpt <= -4 || decpt > 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign = "-"
			exp = -exp
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, exp)
	} else if decpt <= 0 {
		out = "0." + strings.Repeat("0", -decpt) + digits
	} else if decpt >= len(digits) {
		out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	} else {
		out = digits[:decpt] + "." + digits[decpt:]
	}
	if neg {
		out = "-" + out
	}
	return out, nil
}
