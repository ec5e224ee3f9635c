package scrub

import (
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"unicode/utf8"
)

// Token boundaries.
//
// Most gitleaks rules for a vendor token (Stripe, npm, GCP, Hugging Face,
// SendGrid, Pulumi, DigitalOcean, Databricks, RubyGems, Grafana, …) end with
// a terminator that must follow the token: one of a back-quote, a quote,
// white space, ';', a "\n" or "\r" escape, or the end of the text. A token
// followed by anything else (".json", "&page=2", "@host", "),", ":", "]",
// "/", "?", "=", an escaped quote \") was not found and reached disk.
//
// Rather than patching rules one by one, every rule is rewritten once when
// the detector is built: a terminator is recognised by its shape (see
// isBoundary) and replaced by "any character that is not an ASCII letter or
// digit, or the end of the text". A token therefore ends where its
// alphanumeric run ends, whatever punctuation follows. The same is done for
// a leading terminator (a rule that requires a given character before the
// token): it becomes "a character that is not an ASCII letter or digit, or
// the start of the text". Rules without such a terminator (\b, a fixed
// length, a closing quote that belongs to the syntax) are left as they are.
//
// A JSON or C escape just before a token ("\ntoken", "\u0026token") puts a
// letter or digit there, which defeats a \b before the token, and an
// escaped rule context ("=\u003e") is not what the rule reads. The
// detector therefore also runs on a decoded view of the text when it has
// escapes (decodeEscapes, one scanned window at a time), and maps what it
// finds back (see findWith).

// Widened terminators, as regular-expression source.
const (
	trailingBoundary = `(?:[^0-9A-Za-z]|\z)`
	leadingBoundary  = `(?:\A|[^0-9A-Za-z])`
)

// widenBoundaries returns re with its leading and trailing terminators
// widened (see above), and whether it changed anything. A rule whose
// expression does not parse or does not recompile is returned unchanged.
func widenBoundaries(re *regexp.Regexp) (*regexp.Regexp, bool) {
	if re == nil {
		return re, false
	}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return re, false
	}
	changed := false
	if tree.Op == syntax.OpAlternate { // one rule, several token shapes
		for _, b := range tree.Sub {
			changed = widenConcat(b) || changed
		}
	} else {
		changed = widenConcat(tree)
	}
	if !changed {
		return re, false
	}
	out, err := regexp.Compile(tree.String())
	// The capture groups (the secret group) must stay where they were; a
	// rule without one may gain one (wrapToken), which gitleaks then takes
	// as the secret.
	if err != nil || out.NumSubexp() != re.NumSubexp() && (re.NumSubexp() != 0 || out.NumSubexp() != 1) {
		return re, false
	}
	return out, true
}

// widenConcat widens the terminators of a concatenation in place.
func widenConcat(t *syntax.Regexp) bool {
	if t.Op != syntax.OpConcat || len(t.Sub) < 2 {
		return false
	}
	subs := t.Sub
	changed := false
	// A terminator only counts next to the secret: a capture, or the whole
	// match of a rule without one.
	capture := hasCapture(t)
	// A \b is a terminator too: '_' is a word character, so "_AIza…_"
	// (Markdown emphasis, a name joined by '_', "x_<token>_y") had no
	// boundary there.
	lead := isBoundary(subs[0]) || subs[0].Op == syntax.OpWordBoundary
	trail := isBoundary(subs[len(subs)-1]) || subs[len(subs)-1].Op == syntax.OpWordBoundary
	if !capture {
		// The terminators the widening consumes must not become part of
		// the secret (the whole match of a rule without a capture): the
		// token between them becomes the rule's one capture.
		if !lead && !trail {
			return false
		}
		i, j := 0, len(subs)
		if lead {
			i = 1
		}
		if trail {
			j--
		}
		if i >= j {
			return false
		}
		token := &syntax.Regexp{Op: syntax.OpConcat, Flags: t.Flags, Sub: append([]*syntax.Regexp(nil), subs[i:j]...)}
		out := []*syntax.Regexp{}
		if lead {
			out = append(out, mustParse(leadingBoundary))
		}
		out = append(out, &syntax.Regexp{Op: syntax.OpCapture, Cap: 1, Sub: []*syntax.Regexp{token}})
		if trail {
			out = append(out, mustParse(trailingBoundary))
		}
		t.Sub = out
		return true
	}
	if trail && hasCapture(subs[len(subs)-2]) {
		subs[len(subs)-1] = mustParse(trailingBoundary)
		trimWordBoundary(subs[len(subs)-2], false)
		changed = true
	}
	if lead && hasCapture(subs[1]) {
		subs[0] = mustParse(leadingBoundary)
		trimWordBoundary(subs[1], true)
		changed = true
	}
	return changed
}

// trimWordBoundary removes a \b at the start (first) or end of the
// captured token t, now that a widened terminator stands outside it: the
// terminator already says the token stops there, and the \b would still
// refuse a token joined by '_' ("(?i:(\b(SGP_…)\b))").
func trimWordBoundary(t *syntax.Regexp, first bool) {
	for t.Op == syntax.OpCapture && len(t.Sub) == 1 {
		t = t.Sub[0]
	}
	if t.Op != syntax.OpConcat || len(t.Sub) < 2 {
		return
	}
	k := len(t.Sub) - 1
	if first {
		k = 0
	}
	if t.Sub[k].Op == syntax.OpWordBoundary {
		t.Sub[k] = &syntax.Regexp{Op: syntax.OpEmptyMatch}
		return
	}
	trimWordBoundary(t.Sub[k], first)
}

func mustParse(src string) *syntax.Regexp {
	t, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		panic(err) // a constant of this file
	}
	return t
}

// isBoundary reports whether t is a terminator: a non-capturing alternation
// (or a single alternative) each of whose branches matches one character
// (a class, a literal character, any character), a two-character escape
// sequence starting with a backslash (`\\[nr]`), or an empty-width
// assertion (start or end of text or line, word boundary); or a lone
// class that admits white space. Such a node
// says only "the token stops here"; it holds no part of the secret.
func isBoundary(t *syntax.Regexp) bool {
	if t.Op != syntax.OpAlternate {
		// A lone class is a terminator only when it admits white space
		// (a lone quote or '=' belongs to the syntax around the token).
		return t.Op == syntax.OpCharClass && classHas(t, ' ')
	}
	branches := t.Sub
	hasChar := false
	for _, b := range branches {
		switch b.Op {
		case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			hasChar = true
		case syntax.OpLiteral:
			if len(b.Rune) == 1 {
				hasChar = true
				continue
			}
			if len(b.Rune) == 2 && b.Rune[0] == '\\' {
				continue
			}
			return false
		case syntax.OpConcat:
			// `\\[nr]`: a backslash, then one character.
			if len(b.Sub) == 2 && b.Sub[0].Op == syntax.OpLiteral && len(b.Sub[0].Rune) == 1 && b.Sub[0].Rune[0] == '\\' &&
				(b.Sub[1].Op == syntax.OpCharClass || b.Sub[1].Op == syntax.OpLiteral && len(b.Sub[1].Rune) == 1) {
				continue
			}
			return false
		case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
			syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		default:
			return false
		}
	}
	return hasChar
}

// classHas reports whether the character class t matches r.
func classHas(t *syntax.Regexp, r rune) bool {
	for i := 0; i+1 < len(t.Rune); i += 2 {
		if t.Rune[i] <= r && r <= t.Rune[i+1] {
			return true
		}
	}
	return false
}

// hasCapture reports whether t holds a capturing group.
func hasCapture(t *syntax.Regexp) bool {
	if t.Op == syntax.OpCapture {
		return true
	}
	for _, s := range t.Sub {
		if hasCapture(s) {
			return true
		}
	}
	return false
}

// decodedView is text with its escapes decoded: every backslash escape
// ("\n", "\t", "\"", "\\", "\u0026", "\x41", a run of backslashes before
// one of these counting as one), every URL percent-escape ("%2F") and
// every HTML character reference ("&quot;", "&#95;", "&#x5f;") replaced by
// the character it stands for, and every terminal control sequence
// (ESC [ … m of coloured output, raw or escaped) by nothing, with where each escape was, so
// that a finding in the view maps back to the span to redact in the text
// (memory: the view and four words per escape). A token right after an escape ("…\nghp_…",
// "path%2Fsk_live_…") then starts after the decoded character, as it does
// in the decoded text, and a rule's context ("=\u003e" for "=>") reads as
// the rule expects.
type decodedView struct {
	text string
	// esc lists the escapes, in order: view bytes [v0, v1) stand for
	// text bytes [t0, t1). Between two escapes, view and text bytes
	// correspond one to one.
	esc []escapeSpan
}

// escapeSpan is one decoded escape of a decodedView.
type escapeSpan struct{ v0, v1, t0, t1 int }

// decodeEscapes returns the decoded view of text, or ok=false when text has
// no escape (or is too large for 32-bit offsets).
func decodeEscapes(text string) (v decodedView, ok bool) {
	if strings.IndexByte(text, '\\') < 0 && strings.IndexByte(text, '%') < 0 && strings.IndexByte(text, 0x1b) < 0 && !hasEntity(text) || len(text) > 1<<30 {
		return v, false
	}
	var b strings.Builder
	b.Grow(len(text))
	var esc []escapeSpan
	emit := func(s string, i, j int) {
		if len(s) != j-i || j-i != 1 {
			esc = append(esc, escapeSpan{v0: b.Len(), v1: b.Len() + len(s), t0: i, t1: j})
		}
		b.WriteString(s)
	}
	changed := false
	for i := 0; i < len(text); {
		c := text[i]
		if c == '%' && i+3 <= len(text) && isHex(text[i+1:i+3]) {
			emit(string(rune(unhex(text[i+1:i+3]))), i, i+3)
			i += 3
			changed = true
			continue
		}
		if c == 0x1b { // a terminal colour or style: nothing in the view
			if n := csiLen(text, i+1); n > 0 {
				emit("", i, i+1+n)
				i += 1 + n
				changed = true
				continue
			}
		}
		if c == '&' {
			if n, r := entityAt(text[i:]); n > 0 {
				emit(r, i, i+n)
				i += n
				changed = true
				continue
			}
		}
		if c != '\\' {
			emit(text[i:i+1], i, i+1)
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] == '\\' {
			j++
		}
		if j == len(text) {
			emit(text[i:j], i, j)
			break
		}
		// An escaped ESC (\u001b, \x1b, \033, \e) that starts a terminal
		// control sequence: nothing in the view, like a raw one.
		if n := escapedESC(text, j); n > 0 {
			if m := csiLen(text, j+n); m > 0 {
				emit("", i, j+n+m)
				i = j + n + m
				changed = true
				continue
			}
		}
		switch d := text[j]; {
		case d == 'u' && j+5 <= len(text) && isHex(text[j+1:j+5]):
			emit(string(rune(unhex(text[j+1:j+5]))), i, j+5)
			i = j + 5
		case d == 'x' && j+3 <= len(text) && isHex(text[j+1:j+3]):
			emit(string(rune(unhex(text[j+1:j+3]))), i, j+3)
			i = j + 3
		case strings.IndexByte(`nrtbfv0"'/`, d) >= 0:
			emit(string(unescapeByte(d)), i, j+1)
			i = j + 1
		default:
			// A run of backslashes before other text: one backslash.
			if j-i > 1 {
				changed = true
			}
			emit(`\`, i, j)
			i = j
			continue
		}
		changed = true
	}
	if !changed {
		return v, false
	}
	return decodedView{text: b.String(), esc: esc}, true
}

// span maps a [start, end) span of the view back to the text: a span
// starting or ending inside an escape covers the whole escape.
func (v decodedView) span(start, end int) (int, int) {
	a := v.toText(start, false)
	if end <= start {
		return a, a
	}
	return a, v.toText(end-1, true)
}

// toText maps view byte i to the text: its offset, or with after the
// offset just past it.
func (v decodedView) toText(i int, after bool) int {
	// The last escape starting at or before i.
	k := sort.Search(len(v.esc), func(k int) bool { return v.esc[k].v0 > i }) - 1
	if k < 0 {
		if after {
			return i + 1
		}
		return i
	}
	e := v.esc[k]
	if i < e.v1 { // inside the escape
		if after {
			return e.t1
		}
		return e.t0
	}
	p := e.t1 + (i - e.v1)
	if after {
		return p + 1
	}
	return p
}

func unescapeByte(d byte) byte {
	switch d {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b', 'f', 'v', '0':
		return ' '
	}
	return d
}

func unhex(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n*16 + int(c-'a'+10)
		default:
			n = n*16 + int(c-'A'+10)
		}
	}
	return n
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// hasEntity reports whether text has an HTML character reference
// (entityAt).
func hasEntity(text string) bool {
	for off := 0; ; {
		k := strings.IndexByte(text[off:], '&')
		if k < 0 {
			return false
		}
		if n, _ := entityAt(text[off+k:]); n > 0 {
			return true
		}
		off += k + 1
	}
}

// htmlEntities are the named character references HTML escaping writes.
var htmlEntities = map[string]string{"quot": `"`, "amp": "&", "lt": "<", "gt": ">", "apos": "'", "nbsp": "\u00a0"}

// entityAt returns the length of the HTML character reference at the start
// of s ("&quot;", "&#95;", "&#x5F;"; the ';' required) and what it stands
// for, or 0 when there is none.
func entityAt(s string) (int, string) {
	if len(s) < 4 || s[0] != '&' {
		return 0, ""
	}
	end := strings.IndexByte(s[1:min(len(s), 12)], ';')
	if end < 1 {
		return 0, ""
	}
	name := s[1 : 1+end]
	n := end + 2
	if r, ok := htmlEntities[name]; ok {
		return n, r
	}
	if name[0] != '#' || len(name) < 2 {
		return 0, ""
	}
	num, base := name[1:], 10
	if num[0] == 'x' || num[0] == 'X' {
		num, base = num[1:], 16
	}
	if num == "" || len(num) > 6 {
		return 0, ""
	}
	r := 0
	for i := 0; i < len(num); i++ {
		c := num[i]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case base == 16 && (c|0x20) >= 'a' && (c|0x20) <= 'f':
			d = int(c|0x20-'a') + 10
		default:
			return 0, ""
		}
		r = r*base + d
	}
	if r == 0 || r > utf8.MaxRune || r >= 0xD800 && r < 0xE000 {
		return 0, ""
	}
	return n, string(rune(r))
}

// escapedESC returns the length of an escaped ESC character at text[j:]
// (just past its backslashes): "u001b", "x1b", "033" or "e"; 0 when there
// is none.
func escapedESC(text string, j int) int {
	for _, e := range []string{"u001b", "u001B", "x1b", "x1B", "033", "e"} {
		if strings.HasPrefix(text[j:], e) {
			return len(e)
		}
	}
	return 0
}

// csiLen returns the length of a terminal control sequence's body at
// text[k:], just after its ESC: '[', parameter and intermediate bytes
// (at most 32), and a final byte ('@' to '~'); 0 when there is none.
func csiLen(text string, k int) int {
	if k >= len(text) || text[k] != '[' {
		return 0
	}
	for j := k + 1; j < len(text) && j-k <= 33; j++ {
		c := text[j]
		switch {
		case c >= 0x20 && c <= 0x3f: // parameters, intermediates
		case c >= 0x40 && c <= 0x7e:
			return j + 1 - k
		default:
			return 0
		}
	}
	return 0
}
