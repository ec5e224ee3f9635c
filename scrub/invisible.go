package scrub

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The folded view: a secret's name or value written with characters that
// look like nothing or like ASCII. A chat client, a word processor or an
// input method puts them there without the writer knowing: a zero-width
// space or joiner (U+200B–U+200D, U+2060, U+FEFF) or a soft hyphen (U+00AD)
// inside PASS​WORD or a token, a no-break space (U+00A0) after "password:",
// the full-width forms of a CJK keyboard (API_KEY＝…, password：…,
// ＰＡＳＳＷＯＲＤ). The rules read ASCII and see none of these secrets, so the
// text is also read in a view where every format character (Unicode
// category Cf: the zero-width and bidirectional controls, the soft hyphen,
// the tag characters) and every variation selector is removed, every
// full-width ASCII form (U+FF01–U+FF5E) is its ASCII character and every
// Unicode space (U+00A0, U+2000–U+200A, U+202F, U+205F, U+3000) is an ASCII
// space. What is found there is mapped back to the text (the span covers
// the removed characters inside it), as for the decoded view of escapes.

// foldInvisible returns the folded view of text, or ok=false when text has
// none of those characters next to ASCII or a full-width letter or digit
// (CJK prose with full-width punctuation alone, an emoji joined by U+200D:
// no view, no second scan), or is too large for 32-bit offsets. A large
// text is read in windows (foldWindows).
func foldInvisible(text string) (v decodedView, ok bool) {
	if len(text) > 1<<30 || !needsFold(text) {
		return v, false
	}
	var b strings.Builder
	b.Grow(len(text))
	var esc []escapeSpan
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		rep, folds := foldRune(r)
		if !folds {
			b.WriteString(text[i : i+n])
			i += n
			continue
		}
		esc = append(esc, escapeSpan{v0: b.Len(), v1: b.Len() + len(rep), t0: i, t1: i + n})
		b.WriteString(rep)
		i += n
	}
	return decodedView{text: b.String(), esc: esc}, true
}

// foldRune returns what r is in the folded view, and whether it differs
// from r.
func foldRune(r rune) (string, bool) {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII
		return string(rune(r - 0xFF01 + '!')), true
	case r == 0x00A0 || r >= 0x2000 && r <= 0x200A || r == 0x202F || r == 0x205F || r == 0x3000:
		return " ", true
	case r == 0x034F || r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF:
		return "", true // combining grapheme joiner, variation selectors
	case r >= 0x00AD && unicode.Is(unicode.Cf, r):
		return "", true
	}
	return "", false
}

// needsFold reports whether text holds a character foldRune changes that
// touches an ASCII character other than a blank, or is a full-width letter
// or digit. Only such a text can hide a secret's name or value from the
// rules; the check costs a pass over the text's non-ASCII bytes.
func needsFold(text string) bool { return nextFold(text, 0) >= 0 }

// nextFold returns the offset of the first character at or after i that
// needsFold looks for, or -1.
func nextFold(text string, i int) int {
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if _, folds := foldRune(r); folds {
			if r >= 0xFF10 && r <= 0xFF19 || r >= 0xFF21 && r <= 0xFF3A || r >= 0xFF41 && r <= 0xFF5A {
				return i
			}
			if i > 0 && asciiInk(text[i-1]) || i+n < len(text) && asciiInk(text[i+n]) {
				return i
			}
		}
		i += n
	}
	return -1
}

// foldWindows returns the [start, end) byte ranges of text whose folded
// view is read, sorted and disjoint: the whole of a text up to
// windowMinText, else the lines around each character needsFold looks for
// (windowBefore bytes before it, windowAfter after it, to whole lines), so
// that one no-break space in a megabyte of log costs a scan of its
// neighbourhood, not a second scan of the whole.
func foldWindows(text string) [][2]int {
	if len(text) <= windowMinText {
		if needsFold(text) {
			return [][2]int{{0, len(text)}}
		}
		return nil
	}
	var out [][2]int
	for p := nextFold(text, 0); p >= 0; {
		a := max(0, p-windowBefore)
		if nl := strings.IndexByte(text[a:p], '\n'); nl >= 0 && a > 0 {
			a += nl + 1
		}
		b := min(len(text), p+windowAfter)
		if nl := strings.LastIndexByte(text[p:b], '\n'); nl >= 0 && b < len(text) {
			b = p + nl + 1
		}
		for a > 0 && !utf8.RuneStart(text[a]) {
			a--
		}
		for b < len(text) && !utf8.RuneStart(text[b]) {
			b++
		}
		if n := len(out); n > 0 && a <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], b)
		} else {
			out = append(out, [2]int{a, b})
		}
		p = nextFold(text, b)
	}
	return out
}

// asciiInk reports whether c is a printable ASCII character other than a
// space.
func asciiInk(c byte) bool { return c > ' ' && c < 0x7f }
