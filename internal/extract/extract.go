// Package extract reproduces the IPCF-1.1 term extraction exactly (spec §4).
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
package extract

import (
	"sort"
	"strings"
	"sync"
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
//
// Memory: the extractors walk text by byte offset, decoding one
// code point at a time, and keep only the distinct results (each a copy, so
// the result does not pin text); their working memory is a small multiple of
// the number of distinct terms, not of the text. Invalid UTF-8 is read as
// U+FFFD per invalid byte, as a []rune conversion reads it.
func Extract(text string) Terms {
	text = validText(text)
	return Terms{
		Identifiers: identifiers(text),
		Files:       files(text),
		Commands:    commands(text),
		Errors:      errorNames(text),
	}
}

// ExtractTurn is Extract(Text(summary, payload)), the extraction of a
// turn, without the concatenation of summary and payload where it is not
// needed (for a 62 MB payload the copy is as large as the
// payload). No match of the identifier and file patterns can hold the '\n'
// between the two, and neither pattern looks behind its match, so those
// are the union of each part's; so are the commands and errors whenever
// the summary holds none of '$', '>' and "HTTP" (a command match that
// starts in the summary needs one of the first two, and the only error
// alternative that can cross a line, HTTP\s+[45]\d{2}, the last). Otherwise
// commands and errors are read from the concatenation, made then and
// dropped before the other two are extracted.
func ExtractTurn(summary, payload string) Terms {
	sum, pay := validText(NFC(summary)), validText(NFC(payload))
	var t Terms
	joined := strings.ContainsAny(sum, "$>") || strings.Contains(sum, "HTTP")
	if joined {
		text := sum + "\n" + pay
		t.Commands, t.Errors = commands(text), errorNames(text)
	}
	c := getCollector()
	defer c.release()
	if !joined {
		commandsTo(c, sum)
		commandsTo(c, pay)
		t.Commands = c.result()
		errorNamesTo(c, sum)
		errorNamesTo(c, pay)
		t.Errors = c.result()
	}
	identifiersTo(c, sum)
	identifiersTo(c, pay)
	t.Identifiers = c.result()
	filesTo(c, sum)
	filesTo(c, pay)
	t.Files = c.result()
	return t
}

// validText returns text with every invalid UTF-8 byte replaced by U+FFFD
// (what []rune(text) reads), or text itself when it is valid.
func validText(text string) string {
	if utf8.ValidString(text) {
		return text
	}
	return string([]rune(text))
}

// runeAt decodes the code point at byte offset i of s (i < len(s)).
func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// runeBefore decodes the code point that ends at byte offset i of s (i > 0).
func runeBefore(s string, i int) (rune, int) {
	if c := s[i-1]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeLastRuneInString(s[:i])
}

// collector gathers matches and keeps them sorted and unique as it goes:
// when the list grows by half past its last compacted size it is sorted
// and de-duplicated in place, so it holds at most about 1.5 times the
// distinct matches (not every occurrence; 1.5 rather than 2 took a 16 MiB
// log's fold from 3.7 to 3.0 times the input at its peak). Its strings may be substrings of the
// text until [collector.result] copies them.
type collector struct {
	ss      []string
	compact int
}

func (c *collector) add(s string) {
	c.ss = append(c.ss, s)
	if len(c.ss) >= c.compact+c.compact/2+1024 {
		c.ss = SortUnique(c.ss)
		c.compact = len(c.ss)
	}
}

// collectors recycles the collectors' working lists: a fold event projects
// some 50 turns, each through four collectors, and their growing lists
// were about half of what the projection allocated (BenchmarkFoldEvent).
var collectors = sync.Pool{New: func() any { return new(collector) }}

// collectorKeepMax is the largest working list (in strings) a collector
// goes back to the pool with; a larger one (a large log's) is dropped.
const collectorKeepMax = 1 << 14

// getCollector returns an empty collector from the pool; release gives it
// back.
func getCollector() *collector { return collectors.Get().(*collector) }

// release gives c back to the pool, its working list emptied (its strings
// cleared, so that the pool pins no text). Nothing may use c afterwards.
func (c *collector) release() {
	if cap(c.ss) > collectorKeepMax {
		return
	}
	clear(c.ss[:cap(c.ss)])
	c.ss, c.compact = c.ss[:0], 0
	collectors.Put(c)
}

// result is the sorted, unique list, in a slice of its own length (the
// working list may be twice as long, and the result is kept with the cold
// node), its strings copies of their matches made in one allocation (so the
// result does not pin the text, and a large node's hundreds of thousands of
// short terms take their bytes, not one rounded-up allocation each: issue
// 12). A caller that keeps only a few of the strings should copy them.
// The working list is emptied and kept for c's next matches.
func (c *collector) result() []string {
	sorted := SortUnique(c.ss)
	out := make([]string, len(sorted))
	n := 0
	for _, s := range sorted {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range sorted {
		b.WriteString(s)
	}
	all, off := b.String(), 0
	for i, s := range sorted {
		out[i] = all[off : off+len(s)]
		off += len(s)
	}
	clear(sorted)
	c.ss, c.compact = c.ss[:0], 0
	return out
}

// Identifiers returns the folded identifiers of text (spec §4): every maximal
// run of word characters that starts with a non-digit word character and is
// at least 3 code points long, or that is 3+ ASCII digits; folded with
// [FoldTerm]; stop words removed; sorted and unique.
func Identifiers(text string) []string { return identifiers(validText(text)) }

func identifiers(s string) []string {
	c := getCollector()
	defer c.release()
	identifiersTo(c, s)
	return c.result()
}

// identifiersTo adds the identifiers of s to c.
func identifiersTo(c *collector, s string) {
	for i := 0; i < len(s); {
		r, n := runeAt(s, i)
		if !IsWord(r) {
			i += n
			continue
		}
		first := r
		j, count := i+n, 1
		for j < len(s) {
			r, n := runeAt(s, j)
			if !IsWord(r) {
				break
			}
			j += n
			count++
		}
		run := s[i:j]
		i = j
		if count < 3 {
			continue
		}
		if IsDecimal(first) && !allASCIIDigits(run) {
			continue
		}
		t := FoldTerm(run)
		if isStopWord(t) {
			continue
		}
		c.add(t)
	}
}

// allASCIIDigits reports whether every byte of s is '0'..'9' (so every code
// point is).
func allASCIIDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
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
	clear(ss[len(out):]) // drop references to the duplicates
	return out
}

// FoldTerm folds a term for matching (spec §4): Python str.lower() (full
// lower-casing: U+0130 → "i\u0307", Final_Sigma), then NFC, then every U+0307
// removed and every 'ı' (U+0131) replaced by 'i'.
func FoldTerm(s string) string {
	if isASCII(s) { // ASCII is NFC and holds neither U+0307 nor U+0131
		return strings.ToLower(s)
	}
	l := PyLower(s)
	l = NFC(l)
	if strings.ContainsAny(l, "\u0307\u0131") {
		l = strings.ReplaceAll(l, "\u0307", "")
		l = strings.ReplaceAll(l, "\u0131", "i")
	}
	return l
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
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

// asciiPathChar[c] is isPathChar(c) for an ASCII byte c.
var asciiPathChar = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = isPathChar(rune(c))
	}
	return t
}()

func isASCIIAlnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

func isASCIIAlnumByte(c byte) bool { return isASCIIAlnum(rune(c)) }

// bareExts are the extensions of the second file alternative, in pattern
// order: the first that matches wins, so "config.json" yields "config.js".
var bareExts = []string{"py", "js", "ts", "json", "md", "sql", "sh", "yml", "yaml", "html", "css", "rs", "go", "cs"}

// Files returns the file paths of text (spec §4), matching
// (?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+|[\w.-]+\.(?:py|js|…|cs)
// leftmost-first, with backslashes turned into '/', sorted and unique.
func Files(text string) []string { return files(validText(text)) }

func files(s string) []string {
	c := getCollector()
	defer c.release()
	filesTo(c, s)
	return c.result()
}

// filesTo adds the file paths of s to c.
func filesTo(c *collector, s string) {
	m := newPathMatcher(s)
	for i := 0; i < len(s); {
		m.forget(i)
		end := m.matchPath(i)
		if end < 0 {
			end = m.matchBareFile(i)
		}
		if end < 0 {
			if ok, _ := m.pathCharAt(i); ok {
				// Neither alternative matches anywhere else in this run of
				// path characters: the path alternative's answer is the
				// run's (best of the run's end), and the bare one's is -1
				// at every position at or after its last extension dot.
				i = m.runEndAt(i)
				continue
			}
			_, n := runeAt(s, i)
			i += n
			continue
		}
		c.add(strings.ReplaceAll(s[i:end], `\`, "/"))
		i = end
	}
}

// pathMatcher answers the two file alternatives at any position in O(1)
// amortised, with the results a backtracking matcher gives: a naive scan
// from every position is quadratic on long runs of word characters (and so
// is the reference's regex engine). Offsets are bytes of s; every query is
// at or after the scan position, so memos behind it are dropped.
type pathMatcher struct {
	s string
	// The run of path characters ([\w.-]) that holds the scan position:
	// [curStart, curEnd).
	curStart, curEnd int
	// For the run ending at bareQ, the last '.' followed by a bare extension
	// and the end of that match (-1 if none).
	bareQ   int
	bareDot int
	bareEnd int
	// chainBest memoises, per segment end, the end of the longest path match
	// (-1: none); nameExt, per name start, the end of [\w.-]+\.[a-zA-Z0-9]+.
	chainBest map[int]int
	nameExt   map[int]int
	// forgetAt: when the memos next are pruned of keys behind the scan.
	forgetAt int
}

func newPathMatcher(s string) *pathMatcher {
	return &pathMatcher{s: s, curStart: -1, curEnd: -1, bareQ: -1, chainBest: map[int]int{}, nameExt: map[int]int{}, forgetAt: 4096}
}

// forget drops memo entries for positions before i (no later query can
// reach them) once the memos have grown.
func (m *pathMatcher) forget(i int) {
	if len(m.chainBest)+len(m.nameExt) < m.forgetAt {
		return
	}
	for k := range m.chainBest {
		if k < i {
			delete(m.chainBest, k)
		}
	}
	for k := range m.nameExt {
		if k < i {
			delete(m.nameExt, k)
		}
	}
	m.forgetAt = max(4096, 2*(len(m.chainBest)+len(m.nameExt)))
}

// pathCharAt reports whether a path character starts at p, and its size.
func (m *pathMatcher) pathCharAt(p int) (bool, int) {
	if p >= len(m.s) {
		return false, 0
	}
	if c := m.s[p]; c < utf8.RuneSelf {
		return asciiPathChar[c], 1
	}
	r, n := runeAt(m.s, p)
	return isPathChar(r), n
}

// scanRunEnd is the end of the run of path characters starting at p (p
// itself when no path character is there).
func (m *pathMatcher) scanRunEnd(p int) int {
	for p < len(m.s) {
		ok, n := m.pathCharAt(p)
		if !ok {
			break
		}
		p += n
	}
	return p
}

// runEndAt is the end of the run that holds the scan position i (a path
// character), computed once per run.
func (m *pathMatcher) runEndAt(i int) int {
	if i < m.curStart || i >= m.curEnd {
		m.curStart, m.curEnd = i, m.scanRunEnd(i)
	}
	return m.curEnd
}

// matchPath matches (?:[\w.-]+[/\\])+[\w.-]+\.[a-zA-Z0-9]+ at i: the most
// groups that still leave a name with an extension after the last separator.
func (m *pathMatcher) matchPath(i int) int {
	if ok, _ := m.pathCharAt(i); !ok {
		return -1
	}
	return m.best(m.runEndAt(i))
}

// best is the match end for a chain whose first segment ends at q (all
// positions of a segment share it).
func (m *pathMatcher) best(q int) int {
	if q >= len(m.s) || (m.s[q] != '/' && m.s[q] != '\\') {
		return -1 // no group ends here (most runs): nothing to memoise
	}
	if v, ok := m.chainBest[q]; ok {
		return v
	}
	res := -1
	g := q + 1 // a group end: a segment starts here
	if ok, _ := m.pathCharAt(g); ok {
		res = m.best(m.scanRunEnd(g)) // more groups first
	}
	if res < 0 {
		res = m.matchNameExt(g)
	}
	m.chainBest[q] = res
	return res
}

// matchNameExt matches [\w.-]+\.[a-zA-Z0-9]+ at p: the greedy name backs off
// to the last '.' that has a name character before it and an ASCII
// alphanumeric after it. ('.' and ASCII bytes never occur inside a
// multi-byte code point, so bytes are compared directly.)
func (m *pathMatcher) matchNameExt(p int) int {
	if v, ok := m.nameExt[p]; ok {
		return v
	}
	s := m.s
	res := -1
	if ok, _ := m.pathCharAt(p); ok {
		q := m.scanRunEnd(p)
		for d := q - 1; d > p; d-- {
			if s[d] != '.' || d+1 >= len(s) || !isASCIIAlnumByte(s[d+1]) {
				continue
			}
			e := d + 1
			for e < len(s) && isASCIIAlnumByte(s[e]) {
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
	s := m.s
	if ok, _ := m.pathCharAt(i); !ok {
		return -1
	}
	q := m.runEndAt(i)
	if q != m.bareQ {
		m.bareQ, m.bareDot, m.bareEnd = q, -1, -1
		for d := q; d > 0; {
			var r rune
			if c := s[d-1]; c < utf8.RuneSelf {
				if !asciiPathChar[c] {
					break
				}
				r, d = rune(c), d-1
			} else {
				var n int
				r, n = runeBefore(s, d)
				if !isPathChar(r) {
					break
				}
				d -= n
			}
			if r != '.' {
				continue
			}
			if e := bareExtEnd(s, d); e > 0 {
				m.bareDot, m.bareEnd = d, e
				break
			}
		}
	}
	if m.bareDot > i {
		return m.bareEnd
	}
	// The last extension dot of the run is at or before i: an earlier one
	// cannot be after i either.
	return -1
}

// bareExtEnd returns the end of the first bare extension after the dot at
// d, or -1.
func bareExtEnd(s string, d int) int {
	for _, ext := range bareExts {
		if strings.HasPrefix(s[d+1:], ext) {
			return d + 1 + len(ext)
		}
	}
	return -1
}

// ---- commands ----------------------------------------------------------

func isCmdWordChar(c byte) bool {
	return isASCIIAlnumByte(c) || c == '_' || c == '.' || c == '-'
}

// Commands returns the shell commands of text (spec §4): with multi-line '^'
// (text start, or after '\n' only), every capture of
// ^\s*(?:\$|>)\s*([a-zA-Z0-9_.-]+(?:\s+[^;\n\r]+)?), stripped, sorted, unique.
func Commands(text string) []string { return commands(validText(text)) }

func commands(s string) []string {
	c := getCollector()
	defer c.release()
	commandsTo(c, s)
	return c.result()
}

// commandsTo adds the commands of s to c.
func commandsTo(c *collector, s string) {
	for i := 0; i < len(s); {
		if i > 0 && s[i-1] != '\n' {
			// No line starts before the next '\n'.
			k := strings.IndexByte(s[i:], '\n')
			if k < 0 {
				break
			}
			i += k + 1
			continue
		}
		start, end, ok := matchCommand(s, i)
		if !ok {
			_, n := runeAt(s, i)
			i += n
			continue
		}
		if cmd := TrimSpace(s[start:end]); cmd != "" {
			c.add(cmd)
		}
		if end == i { // cannot happen (the capture is non-empty), but never loop
			_, n := runeAt(s, i)
			end += n
		}
		i = end
	}
}

// skipSpace returns the offset after the Python whitespace starting at p.
func skipSpace(s string, p int) int {
	for p < len(s) {
		r, n := runeAt(s, p)
		if !IsSpace(r) {
			break
		}
		p += n
	}
	return p
}

// matchCommand matches at line start i and returns the capture bounds.
func matchCommand(s string, i int) (start, end int, ok bool) {
	p := skipSpace(s, i)
	if p >= len(s) || (s[p] != '$' && s[p] != '>') {
		return 0, 0, false
	}
	p = skipSpace(s, p+1)
	start = p
	for p < len(s) && isCmdWordChar(s[p]) {
		p++
	}
	if p == start {
		return 0, 0, false
	}
	end = p
	// Optional (?:\s+[^;\n\r]+): \s+ greedy, then backs off one character at
	// a time until [^;\n\r] can match at least one character.
	w := skipSpace(s, p)
	for k := w; k > p; {
		if k < len(s) && isRestChar(s[k]) {
			e := k
			for e < len(s) && isRestChar(s[e]) {
				e++
			}
			return start, e, true
		}
		_, n := runeBefore(s, k)
		k -= n
	}
	return start, end, true
}

// isRestChar is [^;\n\r] on a byte: the three are ASCII, and no byte of a
// multi-byte code point equals them.
func isRestChar(c byte) bool { return c != ';' && c != '\n' && c != '\r' }

// ---- errors ------------------------------------------------------------

// Errors returns the error names of text (spec §4), matching
// \b(?:[A-Z][a-zA-Z0-9]+Error|[A-Z][a-zA-Z0-9]+Exception|FATAL|PANIC|Traceback)\b
// |HTTP\s+[45]\d{2}|\b[A-Z]{2,}_[A-Z0-9_]+_ERROR\b leftmost-first, sorted
// and unique.
func Errors(text string) []string { return errorNames(validText(text)) }

func errorNames(s string) []string {
	c := getCollector()
	defer c.release()
	errorNamesTo(c, s)
	return c.result()
}

// errorNamesTo adds the error names of s to c.
func errorNamesTo(c *collector, s string) {
	prevWord := false // whether the code point before i is a word character
	for i := 0; i < len(s); {
		r, n := runeAt(s, i)
		isWord := IsWord(r)
		atWordStart := isWord && !prevWord
		if atWordStart {
			j := i + n
			for j < len(s) {
				r, n := runeAt(s, j)
				if !IsWord(r) {
					break
				}
				j += n
			}
			if w := s[i:j]; isClassError(w) || isConstErrorAfterHTTP(s, i, w) {
				c.add(w)
				i = j
				prevWord = true
				continue
			}
			if end := matchHTTP(s, i); end > 0 {
				c.add(s[i:end])
				r, _ := runeBefore(s, end)
				prevWord = IsWord(r)
				i = end
				continue
			}
			// No later position of the word starts a word, so only the
			// HTTP alternative can match there: go to its next "HTTP", or
			// past the word.
			prevWord = true
			if k := strings.Index(s[i+n:j], "HTTP"); k >= 0 {
				i += n + k
			} else {
				i = j
			}
			continue
		}
		if end := matchHTTP(s, i); end > 0 {
			c.add(s[i:end])
			r, _ := runeBefore(s, end)
			prevWord = IsWord(r)
			i = end
			continue
		}
		prevWord = isWord
		i += n
	}
}

// isConstErrorAfterHTTP is the third alternative at a word start, tried only
// when the second (HTTP) does not match there.
func isConstErrorAfterHTTP(s string, i int, w string) bool {
	return isConstError(w) && matchHTTP(s, i) < 0
}

func isUpperASCII(c byte) bool { return 'A' <= c && c <= 'Z' }

// isClassError: the whole word is [A-Z][a-zA-Z0-9]+(Error|Exception), or
// FATAL, PANIC, Traceback. (All ASCII, so bytes are code points.)
func isClassError(w string) bool {
	switch w {
	case "FATAL", "PANIC", "Traceback":
		return true
	}
	for k := 0; k < len(w); k++ {
		if !isASCIIAlnumByte(w[k]) {
			return false
		}
	}
	if len(w) < 2 || !isUpperASCII(w[0]) {
		return false
	}
	for _, suf := range []string{"Error", "Exception"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 2 {
			return true
		}
	}
	return false
}

// isConstError: the whole word is [A-Z]{2,}_[A-Z0-9_]+_ERROR.
func isConstError(w string) bool {
	for k := 0; k < len(w); k++ {
		c := w[k]
		if !(isUpperASCII(c) || ('0' <= c && c <= '9') || c == '_') {
			return false
		}
	}
	if !strings.HasSuffix(w, "_ERROR") {
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
func matchHTTP(s string, i int) int {
	if !strings.HasPrefix(s[i:], "HTTP") {
		return -1
	}
	p := i + 4
	q := skipSpace(s, p)
	if q == p || q >= len(s) {
		return -1
	}
	if s[q] != '4' && s[q] != '5' {
		return -1
	}
	q++
	for range 2 {
		if q >= len(s) {
			return -1
		}
		r, n := runeAt(s, q)
		if !IsDecimal(r) {
			return -1
		}
		q += n
	}
	return q
}
