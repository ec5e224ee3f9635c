// Package runeref is the []rune implementation of the IPCF-1.1 term
// extraction that package extract used before its byte-offset rewrite, kept as a
// differential oracle for its byte-offset rewrite (tests only).
//
// Original doc: reproduces the IPCF-1.1 term extraction exactly (spec §4).
//
// The reference uses Python regular expressions over str, whose classes are
// Unicode-aware. This package implements those patterns by hand with the same
// leftmost-first, backtracking results:
//
//   - word character (\w): a letter (L*), a number of any kind (N*), or '_';
//     combining marks are not word characters;
//   - decimal digit (\d): general category Nd;
//   - whitespace (\s, str.strip): Go's unicode.IsSpace plus U+001C..U+001F;
//   - word boundary (\b): between a word character and a non-word character
//     (or the text's ends).
//
// All lengths and offsets in this package count code points unless stated.
package runeref

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// IsWord reports whether r is a Python \w character for str patterns.
func IsWord(r rune) bool {
	if r == '_' {
		return true
	}
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// IsDecimal reports whether r is a Python \d character (category Nd).
func IsDecimal(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.Is(unicode.Nd, r)
}

// IsSpace reports whether r is whitespace for Python's \s and str.strip:
// Go's unicode.IsSpace plus the separators U+001C..U+001F.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// TrimRightSpace removes trailing Python whitespace (str.rstrip()).
func TrimRightSpace(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// TrimSpace removes leading and trailing Python whitespace (str.strip()).
func TrimSpace(s string) string { return strings.TrimFunc(s, IsSpace) }

// NFC returns the Unicode NFC normalisation of s.
func NFC(s string) string { return norm.NFC.String(s) }

// NormalizeContent is the projection's normalized_content: NFC, then
// trailing whitespace removed (spec §3).
func NormalizeContent(payload string) string { return TrimRightSpace(NFC(payload)) }

// Text is the text examined by extraction: NFC(summary) + "\n" + NFC(payload)
// (spec §4).
func Text(summary, payload string) string { return NFC(summary) + "\n" + NFC(payload) }

// Terms holds the four extraction results of one text, each de-duplicated and
// sorted by code point.
type Terms struct {
	Identifiers []string // folded, stop words removed
	Files       []string // as matched, '\' turned into '/'
	Commands    []string // captured and stripped
	Errors      []string // as matched
}

// Extract runs all four extractors over text (already NFC, see [Text]).
func Extract(text string) Terms {
	rs := []rune(text)
	return Terms{
		Identifiers: identifiers(rs),
		Files:       files(rs),
		Commands:    commands(rs),
		Errors:      errorNames(rs),
	}
}

// Identifiers returns the folded identifiers of text (spec §4): every maximal
// run of word characters that starts with a non-digit word character and is
// at least 3 code points long, or that is 3+ ASCII digits; folded with
// [FoldTerm]; stop words removed; sorted and unique.
func Identifiers(text string) []string { return identifiers([]rune(text)) }

func identifiers(rs []rune) []string {
	var out []string
	for i := 0; i < len(rs); {
		if !IsWord(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && IsWord(rs[j]) {
			j++
		}
		run := rs[i:j]
		i = j
		if len(run) < 3 {
			continue
		}
		if IsDecimal(run[0]) {
			if !allASCIIDigits(run) {
				continue
			}
		}
		t := FoldTerm(string(run))
		if isStopWord(t) {
			continue
		}
		out = append(out, t)
	}
	return SortUnique(out)
}

func allASCIIDigits(rs []rune) bool {
	for _, r := range rs {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SortUnique sorts ss by code point and removes duplicates, in place. A nil
// or empty input gives a non-nil empty slice.
func SortUnique(ss []string) []string {
	if len(ss) == 0 {
		return []string{}
	}
	sort.Strings(ss)
	out := ss[:1]
	for _, s := range ss[1:] {
		if s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	return out
}

// FoldTerm folds a term for matching (spec §4): Python str.lower() (full
// lower-casing: U+0130 → "i\u0307", Final_Sigma), then NFC, then every U+0307
// removed and every 'ı' (U+0131) replaced by 'i'.
func FoldTerm(s string) string {
	l := PyLower(s)
	l = NFC(l)
	if strings.ContainsAny(l, "\u0307\u0131") {
		l = strings.ReplaceAll(l, "\u0307", "")
		l = strings.ReplaceAll(l, "\u0131", "i")
	}
	return l
}

// PyLower is Python's str.lower(): the simple lower-case mapping, except
// U+0130 → U+0069 U+0307 and the Greek capital sigma, which becomes final
// sigma (U+03C2) under the Unicode Final_Sigma condition.
func PyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3A3:
			if finalSigma(rs, i) {
				b.WriteRune(0x3C2)
			} else {
				b.WriteRune(0x3C3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma evaluates the Final_Sigma condition for rs[i]: preceded by a
// cased letter (skipping case-ignorable characters) and not followed by one.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && isCaseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !isCased(rs[j]) {
		return false
	}
	k := i + 1
	for k < len(rs) && isCaseIgnorable(rs[k]) {
		k++
	}
	return k == len(rs) || !isCased(rs[k])
}

func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// isCaseIgnorable is the Unicode Case_Ignorable property: Mn, Me, Cf, Lm, Sk,
// and the Word_Break classes MidLetter, MidNumLet and Single_Quote.
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', 0xB7, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A, 0x387, 0x55F, 0x5F4, 0x2E2F, 0x00AD:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

var stopWords = func() map[string]bool {
	words := strings.Fields(`and the for with this that from are was were will can has had have
what which how did you all any not but we is it on at to of in do be or an as if by so no up my
ve ile için olan bir bu şu daha gibi kadar diye veya ya ama fakat lakin çünkü böyle
nasıl neden ne hangi var yok şey mi mu mü mı`)
	m := make(map[string]bool, 2*len(words))
	for _, w := range words {
		m[w] = true
		m[FoldTerm(w)] = true
	}
	return m
}()

func isStopWord(folded string) bool { return stopWords[folded] }

// ---- files -------------------------------------------------------------

func isPathChar(r rune) bool { return r == '.' || r == '-' || IsWord(r) }

func isASCIIAlnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// bareExts are the extensions of the second file alternative, in pattern
// order: the first that matches wins, so "config.json" yields "config.js".
var bareExts = []string{"py", "js", "ts", "json", "md", "sql", "sh", "yml", "yaml", "html", "css", "rs", "go", "cs"}

// Files returns the file paths of text (spec §4), matching
// (?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+|[\w.-]+\.(?:py|js|…|cs)
// leftmost-first, with backslashes turned into '/', sorted and unique.
func Files(text string) []string { return files([]rune(text)) }

func files(rs []rune) []string {
	m := newPathMatcher(rs)
	var out []string
	for i := 0; i < len(rs); {
		end := m.matchPath(i)
		if end < 0 {
			end = m.matchBareFile(i)
		}
		if end < 0 {
			i++
			continue
		}
		out = append(out, strings.ReplaceAll(string(rs[i:end]), `\`, "/"))
		i = end
	}
	return SortUnique(out)
}

// pathMatcher answers the two file alternatives at any position in O(1)
// amortised, with the results a backtracking matcher gives: a naive scan
// from every position is quadratic on long runs of word characters (and so
// is the reference's regex engine).
type pathMatcher struct {
	rs []rune
	// runEnd[i] is the end of the run of path characters ([\w.-]) that
	// contains i (i itself when rs[i] is not a path character).
	runEnd []int
	// lastBare[e] is, for the run ending at e, the largest position of a '.'
	// followed by a bare extension, and the end of that match; -1 if none.
	lastBare map[int][2]int
	// chainBest memoises, per segment end, the end of the longest path match
	// (-2: not computed, -1: none).
	chainBest map[int]int
	nameExt   map[int]int
}

func newPathMatcher(rs []rune) *pathMatcher {
	m := &pathMatcher{rs: rs, runEnd: make([]int, len(rs)), lastBare: map[int][2]int{}, chainBest: map[int]int{}, nameExt: map[int]int{}}
	end := len(rs)
	for i := len(rs) - 1; i >= 0; i-- {
		if !isPathChar(rs[i]) {
			end = i
		}
		m.runEnd[i] = end
		if !isPathChar(rs[i]) {
			m.runEnd[i] = i
		}
	}
	return m
}

// matchPath matches (?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+ at i: the most
// groups that still leave a name with an extension after the last separator.
func (m *pathMatcher) matchPath(i int) int {
	if i >= len(m.rs) || !isPathChar(m.rs[i]) {
		return -1
	}
	return m.best(m.runEnd[i])
}

// best is the match end for a chain whose first segment ends at q (all
// positions of a segment share it).
func (m *pathMatcher) best(q int) int {
	if v, ok := m.chainBest[q]; ok {
		return v
	}
	res := -1
	if q < len(m.rs) && (m.rs[q] == '/' || m.rs[q] == '\\') {
		g := q + 1 // a group end: a segment starts here
		if g < len(m.rs) && isPathChar(m.rs[g]) {
			res = m.best(m.runEnd[g]) // more groups first
		}
		if res < 0 {
			res = m.matchNameExt(g)
		}
	}
	m.chainBest[q] = res
	return res
}

// matchNameExt matches [\w.-]+\.[a-zA-Z0-9]+ at p: the greedy name backs off
// to the last '.' that has a name character before it and an ASCII
// alphanumeric after it.
func (m *pathMatcher) matchNameExt(p int) int {
	if v, ok := m.nameExt[p]; ok {
		return v
	}
	rs := m.rs
	res := -1
	if p < len(rs) && isPathChar(rs[p]) {
		q := m.runEnd[p]
		for d := q - 1; d > p; d-- {
			if rs[d] != '.' || d+1 >= len(rs) || !isASCIIAlnum(rs[d+1]) {
				continue
			}
			e := d + 1
			for e < len(rs) && isASCIIAlnum(rs[e]) {
				e++
			}
			res = e
			break
		}
	}
	m.nameExt[p] = res
	return res
}

// matchBareFile matches [\w.-]+\.(?:py|js|…) at i: the last '.' of the run
// after i whose following text starts with an extension (first alternative
// wins).
func (m *pathMatcher) matchBareFile(i int) int {
	rs := m.rs
	if i >= len(rs) || !isPathChar(rs[i]) {
		return -1
	}
	q := m.runEnd[i]
	lb, ok := m.lastBare[q]
	if !ok {
		lb = [2]int{-1, -1}
		for d := q - 1; d >= 0 && d < len(rs) && isPathChar(rs[d]); d-- {
			if rs[d] != '.' {
				continue
			}
			if e := bareExtEnd(rs, d); e > 0 {
				lb = [2]int{d, e}
				break
			}
		}
		m.lastBare[q] = lb
	}
	if lb[0] > i {
		return lb[1]
	}
	// The last extension dot of the run is at or before i: an earlier one
	// cannot be after i either.
	return -1
}

// bareExtEnd returns the end of the first bare extension after the dot at
// d, or -1.
func bareExtEnd(rs []rune, d int) int {
	for _, ext := range bareExts {
		if hasPrefixRunes(rs[d+1:], ext) {
			return d + 1 + len(ext)
		}
	}
	return -1
}

func hasPrefixRunes(rs []rune, ascii string) bool {
	if len(rs) < len(ascii) {
		return false
	}
	for k := 0; k < len(ascii); k++ {
		if rs[k] != rune(ascii[k]) {
			return false
		}
	}
	return true
}

// ---- commands ----------------------------------------------------------

func isCmdWordChar(r rune) bool {
	return isASCIIAlnum(r) || r == '_' || r == '.' || r == '-'
}

// Commands returns the shell commands of text (spec §4): with multi-line '^'
// (text start, or after '\n' only), every capture of
// ^\s*(?:\$|>)\s*([a-zA-Z0-9_.-]+(?:\s+[^;\n\r]+)?), stripped, sorted, unique.
func Commands(text string) []string { return commands([]rune(text)) }

func commands(rs []rune) []string {
	var out []string
	for i := 0; i < len(rs); {
		if i > 0 && rs[i-1] != '\n' {
			i++
			continue
		}
		start, end, ok := matchCommand(rs, i)
		if !ok {
			i++
			continue
		}
		if c := TrimSpace(string(rs[start:end])); c != "" {
			out = append(out, c)
		}
		if end == i { // cannot happen (the capture is non-empty), but never loop
			end++
		}
		i = end
	}
	return SortUnique(out)
}

// matchCommand matches at line start i and returns the capture bounds.
func matchCommand(rs []rune, i int) (start, end int, ok bool) {
	p := i
	for p < len(rs) && IsSpace(rs[p]) {
		p++
	}
	if p >= len(rs) || (rs[p] != '$' && rs[p] != '>') {
		return 0, 0, false
	}
	p++
	for p < len(rs) && IsSpace(rs[p]) {
		p++
	}
	start = p
	for p < len(rs) && isCmdWordChar(rs[p]) {
		p++
	}
	if p == start {
		return 0, 0, false
	}
	end = p
	// Optional (?:\s+[^;\n\r]+): \s+ greedy, then backs off one character at
	// a time until [^;\n\r] can match at least one character.
	w := p
	for w < len(rs) && IsSpace(rs[w]) {
		w++
	}
	for k := w; k > p; k-- {
		if k < len(rs) && isRestChar(rs[k]) {
			e := k
			for e < len(rs) && isRestChar(rs[e]) {
				e++
			}
			return start, e, true
		}
	}
	return start, end, true
}

func isRestChar(r rune) bool { return r != ';' && r != '\n' && r != '\r' }

// ---- errors ------------------------------------------------------------

// Errors returns the error names of text (spec §4), matching
// \b(?:[A-Z][a-zA-Z0-9]+Error|[A-Z][a-zA-Z0-9]+Exception|FATAL|PANIC|Traceback)\b
// |HTTP\s+[45]\d{2}|\b[A-Z]{2,}_[A-Z0-9_]+_ERROR\b leftmost-first, sorted
// and unique.
func Errors(text string) []string { return errorNames([]rune(text)) }

func errorNames(rs []rune) []string {
	var out []string
	for i := 0; i < len(rs); {
		atWordStart := IsWord(rs[i]) && (i == 0 || !IsWord(rs[i-1]))
		if atWordStart {
			j := i
			for j < len(rs) && IsWord(rs[j]) {
				j++
			}
			if w := rs[i:j]; isClassError(w) {
				out = append(out, string(w))
				i = j
				continue
			}
		}
		if end := matchHTTP(rs, i); end > 0 {
			out = append(out, string(rs[i:end]))
			i = end
			continue
		}
		if atWordStart {
			j := i
			for j < len(rs) && IsWord(rs[j]) {
				j++
			}
			if w := rs[i:j]; isConstError(w) {
				out = append(out, string(w))
				i = j
				continue
			}
		}
		i++
	}
	return SortUnique(out)
}

func isUpperASCII(r rune) bool { return 'A' <= r && r <= 'Z' }

// isClassError: the whole word is [A-Z][a-zA-Z0-9]+(Error|Exception), or
// FATAL, PANIC, Traceback.
func isClassError(w []rune) bool {
	s := string(w)
	switch s {
	case "FATAL", "PANIC", "Traceback":
		return true
	}
	for _, r := range w {
		if !isASCIIAlnum(r) {
			return false
		}
	}
	if len(w) < 2 || !isUpperASCII(w[0]) {
		return false
	}
	for _, suf := range []string{"Error", "Exception"} {
		if strings.HasSuffix(s, suf) && len(s)-len(suf) >= 2 {
			return true
		}
	}
	return false
}

// isConstError: the whole word is [A-Z]{2,}_[A-Z0-9_]+_ERROR.
func isConstError(w []rune) bool {
	for _, r := range w {
		if !(isUpperASCII(r) || ('0' <= r && r <= '9') || r == '_') {
			return false
		}
	}
	s := string(w)
	if !strings.HasSuffix(s, "_ERROR") {
		return false
	}
	k := 0
	for k < len(w) && isUpperASCII(w[k]) {
		k++
	}
	// [A-Z]{2,} may back off, but must be followed by '_'; a shorter run of
	// capitals is followed by a capital, so only the maximal run can work.
	if k < 2 || k >= len(w) || w[k] != '_' {
		return false
	}
	middle := len(w) - len("_ERROR") - (k + 1) // [A-Z0-9_]+ between
	return middle >= 1
}

// matchHTTP matches HTTP\s+[45]\d{2} at i and returns the end, or -1.
func matchHTTP(rs []rune, i int) int {
	if !hasPrefixRunes(rs[i:], "HTTP") {
		return -1
	}
	p := i + 4
	q := p
	for q < len(rs) && IsSpace(rs[q]) {
		q++
	}
	if q == p || q+3 > len(rs) {
		return -1
	}
	if rs[q] != '4' && rs[q] != '5' {
		return -1
	}
	if !IsDecimal(rs[q+1]) || !IsDecimal(rs[q+2]) {
		return -1
	}
	return q + 3
}
