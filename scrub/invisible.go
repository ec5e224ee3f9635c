package scrub

import (
	"bytes"
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
	wordEnd, inName := 0, false // the word of the latest look-alike, and whether it names a secret
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		rep, folds := foldRune(r)
		if a, ok := lookalike(r); ok && !folds {
			// A look-alike letter folds inside a secret's name alone.
			if i >= wordEnd {
				_, wordEnd, inName = lookalikeName(text, i)
			}
			if inName {
				rep, folds = string(rune(a)), true
			}
		}
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
	wordEnd := 0
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if _, ok := lookalike(r); ok && i >= wordEnd {
			ws, we, name := lookalikeName(text, i)
			if name {
				return ws
			}
			wordEnd = we // no secret's name: its other look-alikes neither
		}
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

// Look-alike letters. A secret's name written with Cyrillic or Greek
// letters that look like Latin ones (РАЅЅWОRD, ТОКЕN, АРІ_КЕY, ΡΑSSWΟRD: a
// paste from a document, a keyboard left on another layout, a name made to
// slip past a filter) reads as no name to the rules. In the folded view
// such a letter is the Latin letter it looks like, but only inside a word
// (letters, digits, '_', '-', '.') that then names a secret (lookalikeName):
// a Russian or Greek word keeps its letters, and a value is never folded
// for a look-alike of its own. The table is the Cyrillic and Greek part of
// Unicode's confusables (UTS #39, confusables.txt) whose skeleton is one
// ASCII letter, the case of the letter kept (І, Ι → I rather than the
// skeleton's l).
var lookalikes = map[rune]byte{
	// Greek
	0x037F: 'J', 0x0391: 'A', 0x0392: 'B', 0x0395: 'E', 0x0396: 'Z', 0x0397: 'H', 0x0399: 'I',
	0x039A: 'K', 0x039C: 'M', 0x039D: 'N', 0x039F: 'O', 0x03A1: 'P', 0x03A4: 'T', 0x03A5: 'Y',
	0x03A7: 'X', 0x03B1: 'a', 0x03B3: 'y', 0x03B9: 'i', 0x03BD: 'v', 0x03BF: 'o', 0x03C1: 'p',
	0x03C3: 'o', 0x03C5: 'u', 0x03D2: 'Y', 0x03DC: 'F', 0x03F1: 'p', 0x03F2: 'c', 0x03F3: 'j',
	0x03F9: 'C', 0x03FA: 'M', 0x1FBE: 'i',
	// Cyrillic
	0x0405: 'S', 0x0406: 'I', 0x0408: 'J', 0x0410: 'A', 0x0412: 'B', 0x0415: 'E', 0x041A: 'K',
	0x041C: 'M', 0x041D: 'H', 0x041E: 'O', 0x0420: 'P', 0x0421: 'C', 0x0422: 'T', 0x0423: 'Y',
	0x0425: 'X', 0x042C: 'b', 0x0430: 'a', 0x0433: 'r', 0x0435: 'e', 0x043E: 'o', 0x0440: 'p',
	0x0441: 'c', 0x0443: 'y', 0x0445: 'x', 0x0455: 's', 0x0456: 'i', 0x0458: 'j', 0x0461: 'w',
	0x0474: 'V', 0x0475: 'v', 0x04AE: 'Y', 0x04AF: 'y', 0x04BB: 'h', 0x04BD: 'e', 0x04C0: 'I',
	0x04CF: 'i', 0x0501: 'd', 0x050C: 'G', 0x051B: 'q', 0x051C: 'W', 0x051D: 'w', 0x1D26: 'r',
}

// lookalike returns the Latin letter r looks like (lookalikes), checking
// r's block before the table.
func lookalike(r rune) (byte, bool) {
	if r >= lookalikeLo && r < lookalikeHi {
		a := lookalikeBlock[r-lookalikeLo]
		return a, a != 0
	}
	if r == 0x1D26 || r == 0x1FBE {
		return lookalikes[r], true
	}
	return 0, false
}

// lookalikeBlock is lookalikes over the Greek and Cyrillic blocks
// (lookalikeLo to lookalikeHi), indexed by rune: 0 where r looks like no
// Latin letter. Nothing in a text's hot loop then costs a map lookup.
const lookalikeLo, lookalikeHi = 0x0370, 0x0530

var lookalikeBlock = func() (t [lookalikeHi - lookalikeLo]byte) {
	for r, a := range lookalikes {
		if r >= lookalikeLo && r < lookalikeHi {
			t[r-lookalikeLo] = a
		}
	}
	return t
}()

// lookalikeStems are the parts of a name that make it a secret's for
// lookalikeName, lower case: what the rules' names end in or hold.
var lookalikeStems = [][]byte{[]byte("pass"), []byte("pwd"), []byte("secret"), []byte("token"), []byte("key"),
	[]byte("auth"), []byte("cred"), []byte("psk"), []byte("cookie"), []byte("bearer")}

// maxLookalikeWord bounds the bytes lookalikeName reads on either side of
// a look-alike.
const maxLookalikeWord = 64

// lookalikeName returns the word around the look-alike letter at byte i
// of text ([ws, we), letters, digits, '_', '-' and '.', at most
// maxLookalikeWord bytes on either side) and whether it names a secret:
// every letter in it is ASCII, a full-width form or a look-alike, and with
// the look-alikes read as the letters they look like it holds one of
// lookalikeStems (ТОКЕN, DB_РАSSWORD, Χ-Api-Κey; not ТОКЕН, whose Н reads
// as H, nor пароль, whose п looks like no Latin letter).
func lookalikeName(text string, i int) (ws, we int, ok bool) {
	wordRune := func(r rune) bool {
		if r < utf8.RuneSelf {
			return isWordByte(byte(r)) || r == '-' || r == '.'
		}
		if r >= lookalikeLo && r < lookalikeHi {
			return true // Greek and Cyrillic: letters and their marks
		}
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	ws = i
	for ws > 0 && i-ws < maxLookalikeWord {
		r, n := utf8.DecodeLastRuneInString(text[:ws])
		if !wordRune(r) {
			break
		}
		ws -= n
	}
	we = i
	for we < len(text) && we-i < maxLookalikeWord {
		r, n := utf8.DecodeRuneInString(text[we:])
		if !wordRune(r) {
			break
		}
		we += n
	}
	if we-ws < 3 {
		return ws, we, false
	}
	var b [2 * maxLookalikeWord]byte
	w := b[:0]
	for _, r := range text[ws:we] {
		var c byte
		switch a, look := lookalike(r); {
		case r < utf8.RuneSelf:
			c = byte(r)
		case look:
			c = a
		case r >= 0xFF01 && r <= 0xFF5E:
			c = byte(r - 0xFF01 + '!')
		default:
			return ws, we, false // a letter of another script: a word of prose
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		w = append(w, c)
	}
	for _, stem := range lookalikeStems {
		if bytes.Contains(w, stem) {
			return ws, we, true
		}
	}
	return ws, we, false
}
