package inspect

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// segment is a run of payload text: plain text, or one invisible or
// dangerous character shown as a visible mark (Ctl), with its code point.
type segment struct {
	Text string
	Ctl  bool
	Code string // "U+001B" for a Ctl segment
}

// isMarked reports whether r is shown as a mark rather than as itself:
// C0 and C1 controls but newline and tab (ANSI escapes, carriage returns,
// NUL), DEL, and the bidirectional formatting characters that can make text
// display differently from what it is.
func isMarked(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

// mark is the visible form of a marked character: the Unicode control
// picture for C0 controls and DEL (␛ for ESC), else an escape.
func mark(r rune) string {
	switch {
	case r < 0x20:
		return string(rune(0x2400 + r))
	case r == 0x7f:
		return "\u2421"
	}
	return fmt.Sprintf("\\u%04x", r)
}

// segments splits s into plain text and marked characters. The template
// renders both as text; html/template escapes every one.
func segments(s string) []segment {
	var out []segment
	start := 0
	for i, r := range s {
		if !isMarked(r) {
			continue
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size != 1 {
				continue // a literal U+FFFD is shown as itself
			}
		}
		if start < i {
			out = append(out, segment{Text: s[start:i]})
		}
		out = append(out, segment{Text: mark(r), Ctl: true, Code: fmt.Sprintf("U+%04X", r)})
		_, size := utf8.DecodeRuneInString(s[i:])
		start = i + size
	}
	if start < len(s) {
		out = append(out, segment{Text: s[start:]})
	}
	return out
}

// payloadPageBytes is the size of one page of a payload, in bytes.
const payloadPageBytes = 64 << 10

// pageBounds splits s into pages of at most size bytes, cut at a newline in
// the second half of a page when there is one, and never inside a UTF-8
// sequence. It returns the start offsets of the pages; an empty s has one
// empty page.
func pageBounds(s string, size int) []int {
	starts := []int{0}
	for pos := 0; len(s)-pos > size; {
		end := pos + size
		for end > pos && !utf8.RuneStart(s[end]) {
			end--
		}
		if nl := strings.LastIndexByte(s[pos+size/2:end], '\n'); nl >= 0 {
			end = pos + size/2 + nl + 1
		}
		if end == pos { // cannot happen with size ≥ 4; guard against a loop
			end = pos + size
		}
		pos = end
		starts = append(starts, pos)
	}
	return starts
}

// payloadPage returns page n (1-based) of s and the number of pages; ok is
// false when page n does not exist.
func payloadPage(s string, n, size int) (text string, pages int, ok bool) {
	starts := pageBounds(s, size)
	if n < 1 || n > len(starts) {
		return "", len(starts), false
	}
	end := len(s)
	if n < len(starts) {
		end = starts[n]
	}
	return s[starts[n-1]:end], len(starts), true
}
