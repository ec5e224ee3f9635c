package ranked

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	snowball "github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/turkish"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/contextfold/contextfold/internal/extract"
)

// Kind says how a term was derived from the text. The cold node side indexes
// every kind under the same term string; the query side weighs a matched
// term by its kind (see kindWeight).
type Kind uint8

const (
	// KindWord is a word or number as written (folded), or the Snowball stem
	// of an alphabetic word (rule "stem": failed → fail, migrations → migrat).
	KindWord Kind = iota
	// KindCompound is a run joined by . / - : \ @ # + (a path, a file name, a
	// version, a decimal number with its unit: test_models.py, 0.33s, 99.9).
	KindCompound
	// KindPart is a part of an identifier (rule "identifier parts":
	// TenantBilling → tenant, bill; test_models → test, model).
	KindPart
	// KindFuzzy is the first four letters of a stem, for inflections the
	// stemmer does not join (failure/failed, postgres/postgresql).
	KindFuzzy
	// KindCJK is a character bigram of a Chinese, Japanese or Korean run
	// (rule "CJK n-grams"; these scripts do not separate words by spaces).
	KindCJK
	// KindPlain is a word without its accents and dotless i (rule "accent
	// folding": şifre → sifre, configuración → configuracion), so that
	// Turkish and Spanish typed on a keyboard without them still match.
	// A cold node emits it for a word with non-ASCII letters; a prompt
	// emits it for every word whose stem differs from it (SIFRE → sifre
	// beside the stem sifr). It is a secondary form: it weighs less and
	// never counts as a prompt word of its own.
	KindPlain
	// KindCJKEdge is a CJK bigram of a function character and a content
	// one (口是 of 端口是多少, 为死 of 因为死锁): rarely a word, so a
	// secondary form.
	KindCJKEdge
	// KindNumber is a bare number of one or two digits (07, 11, 15): a
	// time, a date or a count that every log repeats, so it weighs less
	// than a word and is never a specific term (rule "small numbers").
	// So is a year (1900–2099): "on 3 June, 2023" dates the question, it
	// names no entity, and a year no node holds is no sign that the
	// archive lacks what is asked (rule "dates").
	KindNumber
	// KindAlias is a name under which a prompt's word appears in tool
	// output (rule "tool and failure names", aliases.go): "linker" → ld,
	// collect2; "segfault" → sigsegv. Query side only: a cold node indexes
	// the words it holds, a prompt adds the aliases of its words. It joins
	// its word's group and counts for the prompt's information and
	// rarity, never for coverage or intent ownership.
	KindAlias
	// KindTypo is a term of the archive one edit from a prompt word's stem
	// (rule "typos", typo.go, Params.Typo): a letter dropped, added,
	// changed or two swapped. Query side only; like an alias it joins its
	// word's group and never counts for coverage or intent ownership.
	KindTypo
	// KindRelated is a word WordNet relates to a prompt word: a
	// derivationally related form or a synonym of its most frequent sense
	// (rule "related words", related.go, Params.Related). Query side
	// only; like a typo it joins its word's group and never counts for
	// coverage or intent ownership.
	KindRelated
)

// secondary reports whether terms of kind k are extra forms of a word that
// its primary term already counts (fuzzy prefixes, identifier parts, plain
// forms): they never add to the prompt's information or coverage.
func secondary(k Kind) bool {
	return k == KindFuzzy || k == KindPart || k == KindPlain || k == KindCJKEdge || k == KindAlias || k == KindTypo || k == KindRelated
}

// plainForms hands out the transformer that removes the combining marks of
// the decomposed word (accents, cedillas, the dot of İ) and maps the dotless
// ı to i. A transform.Chain keeps buffers between calls, so it is not safe
// for concurrent use: scans of several sessions at once (a proxy) each take
// their own from the pool.
var plainForms = sync.Pool{New: func() any {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), runes.Map(func(r rune) rune {
		if r == 'ı' {
			return 'i'
		}
		return r
	}), norm.NFC)
}}

func plain(w string) string {
	t := plainForms.Get().(transform.Transformer)
	out, _, err := transform.String(t, w)
	plainForms.Put(t)
	if err != nil {
		return w
	}
	return out
}

// kindWeight is the query-side weight of a matched term of each kind.
var kindWeight = [...]float64{KindWord: 1, KindCompound: 1.2, KindPart: 0.5, KindFuzzy: 0.25, KindCJK: 0.7, KindPlain: 0.6, KindCJKEdge: 0.35, KindNumber: 0.3, KindAlias: 0.8, KindTypo: 0.6, KindRelated: 0.5}

// fuzzyPrefix marks fuzzy terms so that they never collide with words.
const fuzzyPrefix = "\x01"

// Term is one term of an analysed text.
type Term struct {
	Text string
	Kind Kind
	Src  string // the word or run of the text it was derived from
}

// analyzer holds the per-call Snowball environment (not safe for
// concurrent use; Analyze makes one per call).
type analyzer struct {
	env   *snowball.Env
	query bool // a prompt: plain forms of ASCII words too (see KindPlain)
	// stems memoizes stem within one text of stemMemoFrom bytes or more
	// (memo), at most stemMemoMax words: a tool output repeats its words, and
	// a stem is a pure function of the word. A short text (a prompt, a
	// scan's segment) is not worth the map.
	memo  bool
	stems map[string]string
	// words memoizes, under the same conditions, the terms a word (not
	// CJK) emits (wordTerms): a pure function of the word too, so a word
	// repeated in a tool output is analysed once. Each word's terms are
	// the span [0]:[1] of terms.
	words map[string][2]int32
	terms []Term
}

// stemMemoMax bounds the words an analyzer memoizes the stem of (0: none;
// a variable for tests), in texts of stemMemoFrom bytes or more.
var stemMemoMax, stemMemoFrom = 4096, 2048

// maxAnalyzeBytes bounds the text analysed per document or prompt (bytes):
// a 1 MB prompt is analysed in full, anything longer is cut (on a rune
// boundary) so that work stays linear and bounded.
const maxAnalyzeBytes = 4 << 20

// Analyze returns the terms of text in order of occurrence (duplicates
// kept: a document's term frequencies count them). Deterministic; invalid
// UTF-8 is read as U+FFFD, which is no word character. Safe for concurrent
// use.
func Analyze(text string) []Term {
	var out []Term
	analyzeInto(text, func(t Term) { out = append(out, t) })
	return out
}

func analyzeInto(text string, emit func(Term)) { analyzeText(text, false, emit) }

// analyzeQuery analyses a prompt: as analyzeInto, plus the plain forms a
// prompt adds (KindPlain).
func analyzeQuery(text string, emit func(Term)) { analyzeText(text, true, emit) }

func analyzeText(text string, query bool, emit func(Term)) {
	text = analysedPart(text)
	a := &analyzer{env: snowball.NewEnv(""), query: query, memo: len(text) >= stemMemoFrom}
	eachChunk(text, func(c string) { a.chunk(c, emit) })
}

// analysedPart is the part of text that is analysed: its first
// maxAnalyzeBytes bytes, cut on a rune boundary.
func analysedPart(text string) string {
	if len(text) > maxAnalyzeBytes {
		cut := maxAnalyzeBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	return text
}

// eachChunk calls f with each chunk of text, in order: the maximal runs of
// word characters and joiners. An ASCII byte is classed by a table
// (chunkASCII), other runes decoded as a range loop decodes them (an
// invalid byte is U+FFFD, no chunk rune).
func eachChunk(text string, f func(c string)) {
	start := -1
	for i := 0; i < len(text); {
		in, size := false, 1
		if b := text[i]; b < utf8.RuneSelf {
			in = chunkASCII[b]
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			in = isChunkRune(r)
		}
		if in {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			f(text[start:i])
			start = -1
		}
		i += size
	}
	if start >= 0 {
		f(text[start:])
	}
}

// chunkASCII is isChunkRune of each ASCII rune.
var chunkASCII = func() (t [utf8.RuneSelf]bool) {
	for r := range t {
		t[r] = isChunkRune(rune(r))
	}
	return t
}()

// analyzeCounted is analyzeInto for a caller that needs the terms' order
// of first occurrence and their counts only (analyseDoc): it calls emit(t,
// k) where analyzeInto would call emit(t) k times, k for each occurrence
// of t's chunk. A chunk's terms are a pure function of the chunk
// (analyzer.chunk), so a text of stemMemoFrom bytes or more (a tool
// output, which repeats its chunks) has each distinct chunk analysed once
// and emitted with its count, in the order of the chunks' first
// occurrences; a term's first occurrence is then its first chunk's
// first, as in analyzeInto. At most countedChunksMax distinct chunks are
// held: past it those held are emitted and the count starts again (a
// chunk seen before the flush adds to terms already there). A shorter text
// is analysed as analyzeInto does, each term with k = 1. Deterministic;
// safe for concurrent use.
func analyzeCounted(text string, emit func(t Term, k int)) {
	text = analysedPart(text)
	a := &analyzer{env: snowball.NewEnv(""), memo: len(text) >= stemMemoFrom}
	if !a.memo {
		eachChunk(text, func(c string) { a.chunk(c, func(t Term) { emit(t, 1) }) })
		return
	}
	sc := countScratches.Get().(*countScratch)
	defer sc.release()
	at, order, counts := sc.at, sc.order[:0], sc.counts[:0]
	defer func() { sc.order, sc.counts = order, counts }()
	flush := func() {
		for k, c := range order {
			n := counts[k]
			a.chunk(c, func(t Term) { emit(t, n) })
		}
		clear(at)
		order, counts = order[:0], counts[:0]
	}
	eachChunk(text, func(c string) {
		if k, ok := at[c]; ok {
			counts[k]++
			return
		}
		if len(order) >= countedChunksMax {
			flush()
		}
		at[c] = int32(len(order))
		order = append(order, c)
		counts = append(counts, 1)
	})
	flush()
}

// countScratch is analyzeCounted's working memory: the distinct chunks
// held (a chunk's index in order), in order of first occurrence, and their
// counts. It is recycled (countScratches): a fold event analyses some 50
// nodes, and growing these anew for each was a third of what the ranked
// analysis allocated (BenchmarkFoldEvent in package proxy).
type countScratch struct {
	at     map[string]int32
	order  []string
	counts []int
}

var countScratches = sync.Pool{New: func() any { return &countScratch{at: make(map[string]int32, 256)} }}

// scratchKeepMax is the most distinct chunks (or terms, docScratch) a
// recycled scratch may have held: a larger one (a large log's) is dropped
// rather than kept in the pool with its map's memory.
const scratchKeepMax = 1 << 13

// release empties sc (no string of a text stays referenced) and gives it
// back to the pool unless it grew past scratchKeepMax.
func (sc *countScratch) release() {
	if cap(sc.order) > scratchKeepMax {
		return
	}
	clear(sc.at)
	clear(sc.order[:cap(sc.order)])
	sc.order, sc.counts = sc.order[:0], sc.counts[:0]
	countScratches.Put(sc)
}

// countedChunksMax bounds the distinct chunks analyzeCounted holds at once
// (a variable for tests).
var countedChunksMax = 1 << 16

func isJoiner(r rune) bool {
	switch r {
	case '.', '/', '-', ':', '\\', '@', '#', '+':
		return true
	}
	return false
}

func isChunkRune(r rune) bool { return (extract.IsWord(r) && r != utf8.RuneError) || isJoiner(r) }

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// chunk analyses one run of word characters and joiners.
func (a *analyzer) chunk(c string, emit func(Term)) {
	c = strings.TrimFunc(c, isJoiner)
	if c == "" {
		return
	}
	if !strings.ContainsFunc(c, isJoiner) {
		a.word(c, emit) // one word (most chunks): no compound, no list
		return
	}
	words := strings.FieldsFunc(c, isJoiner)
	if len(words) > 1 {
		whole := extract.FoldTerm(c)
		if utf8.RuneCountInString(whole) <= 200 {
			emit(Term{whole, KindCompound, c})
			shorterVersions(whole, c, emit)
			namedVersions(whole, c, emit)
			// A path also yields its last element (ingest/x/foo.go → foo.go)
			// and a file:line reference its file (app.py:42 → app.py).
			if i := strings.LastIndexAny(whole, "/\\"); i >= 0 && i+1 < len(whole) && strings.ContainsAny(whole[i+1:], ".-") {
				emit(Term{whole[i+1:], KindCompound, c})
			}
			if i := strings.LastIndexByte(whole, ':'); i > 0 && allDigits(whole[i+1:]) && strings.ContainsAny(whole[:i], ".") {
				emit(Term{whole[:i], KindCompound, c})
			}
		}
	}
	for _, w := range words {
		a.word(w, emit)
	}
}

// shorterVersions emits the shorter versions of a dotted version v
// (20.27.1 → 20.27), so that "20.27" finds "20.27.1".
func shorterVersions(v, src string, emit func(Term)) {
	if vs := strings.Split(v, "."); len(vs) > 2 && allDigits(strings.Join(vs, "")) {
		for k := len(vs) - 1; k >= 2; k-- {
			emit(Term{strings.Join(vs[:k], "."), KindCompound, src})
		}
	}
}

// namedVersions is rule "a name and its version" (the analysed compound
// whole of the chunk src): a version joined to the name before it by a
// dash, an at sign or a colon — pip's "pytest-xdist-1.34.0", a wheel's
// "pytest_xdist-1.34.0-py3-none-any.whl", an archive's
// "requests-2.31.0.tar.gz", npm's "lodash@4.17.21", an image's
// "postgres:16.2" — also yields the version (with its shorter versions)
// and the name, so that a prompt quoting "1.34.0" or "pytest-xdist" holds
// the terms of "Successfully installed pytest-xdist-1.34.0", as it holds
// those of "pytest-xdist==1.34.0" (two chunks). A version is digits and
// dots, two numbers at least, up to the end of its part or to a dot and
// a letter (".tar.gz"); the parts before it must hold a letter (a
// timestamp's 09:03:40.123 and a date's 2024-01-02 yield nothing). The
// name is emitted when it is a compound itself (a word is a term of the
// chunk already). Each version of whole is emitted once, in order.
func namedVersions(whole, src string, emit func(Term)) {
	letter := false
	start := 0
	for i := 0; i <= len(whole); i++ {
		if i < len(whole) && whole[i] != '-' && whole[i] != '@' && whole[i] != ':' {
			continue
		}
		part := whole[start:i]
		if letter {
			if v := leadingVersion(part); v != "" {
				emit(Term{v, KindCompound, src})
				shorterVersions(v, src, emit)
				if name := whole[:start-1]; strings.ContainsFunc(name, isJoiner) {
					emit(Term{strings.TrimFunc(name, isJoiner), KindCompound, src})
				}
			}
		}
		if strings.ContainsFunc(part, unicode.IsLetter) {
			letter = true
		}
		start = i + 1
	}
}

// leadingVersion returns the dotted version part opens with ("1.34.0" of
// "1.34.0", "2.31.0" of "2.31.0.tar.gz"): digits and dots, at least one
// dot between digits, ending at part's end or before a dot and a letter;
// "" when part opens otherwise.
func leadingVersion(part string) string {
	digit := func(k int) bool { return k >= 0 && k < len(part) && part[k] >= '0' && part[k] <= '9' }
	j, dots := 0, 0
scan:
	for ; j < len(part); j++ {
		switch {
		case digit(j):
		case part[j] == '.' && digit(j-1) && digit(j+1):
			dots++
		default:
			break scan
		}
	}
	if dots == 0 {
		return ""
	}
	if j < len(part) && (part[j] != '.' || j+1 == len(part) || !isASCIILetter(part[j+1])) {
		return ""
	}
	return part[:j]
}

// isYear reports whether s is a four-digit year 1900–2099 (rule "dates").
func isYear(s string) bool {
	return len(s) == 4 && allDigits(s) && (s[:2] == "19" || s[:2] == "20")
}

func allDigits(s string) bool {
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

// word analyses one run of word characters (underscores included).
func (a *analyzer) word(w string, emit func(Term)) {
	// CJK runs inside the word are n-grammed apart from the rest.
	if hasCJK(w) {
		var rest []rune
		var cjk []rune
		flush := func() {
			if len(cjk) > 0 {
				cjkGrams(cjk, emit)
				cjk = cjk[:0]
			}
			if len(rest) > 0 {
				a.word(string(rest), emit)
				rest = rest[:0]
			}
		}
		for _, r := range w {
			if isCJK(r) {
				if len(rest) > 0 {
					a.word(string(rest), emit)
					rest = rest[:0]
				}
				cjk = append(cjk, r)
			} else {
				if len(cjk) > 0 {
					cjkGrams(cjk, emit)
					cjk = cjk[:0]
				}
				rest = append(rest, r)
			}
		}
		flush()
		return
	}
	if !a.memo {
		if a.query && docWordsMax > 0 {
			a.queryWord(w, emit)
			return
		}
		a.wordTerms(w, emit)
		return
	}
	if sp, ok := a.words[w]; ok {
		for _, t := range a.terms[sp[0]:sp[1]] {
			emit(t)
		}
		return
	}
	shared := !a.query && docWordsMax > 0
	if shared {
		if v, ok := docWords.m.Load(w); ok {
			for _, t := range *v.(*[]Term) {
				emit(t)
			}
			return
		}
	}
	if len(a.words) >= stemMemoMax {
		a.wordTerms(w, emit)
		return
	}
	start := int32(len(a.terms))
	a.wordTerms(w, func(t Term) {
		a.terms = append(a.terms, t)
		emit(t)
	})
	if a.words == nil {
		a.words = make(map[string][2]int32)
	}
	a.words[w] = [2]int32{start, int32(len(a.terms))}
	if shared {
		docWords.put(w, a.terms[start:])
	}
}

// queryWord is word for a prompt's word w without CJK characters, through
// queryWords.
func (a *analyzer) queryWord(w string, emit func(Term)) {
	if v, ok := queryWords.m.Load(w); ok {
		for _, t := range *v.(*[]Term) {
			emit(t)
		}
		return
	}
	start := len(a.terms)
	a.wordTerms(w, func(t Term) {
		a.terms = append(a.terms, t)
		emit(t)
	})
	queryWords.put(w, a.terms[start:])
	a.terms = a.terms[:start]
}

// queryWords is docWords for the words of prompts (wordTerms of a query:
// a pure function of the word, as a document's is): a session's prompts
// repeat their words, and a scan analyses its prompt again for the
// weights of a long pick's focus (Index.Weights). The same bounds as
// docWords. Safe for concurrent use.
var queryWords wordMemo

// docWords memoizes, across the documents of the process, the terms a
// word (not CJK) of a long document emits (wordTerms; a document's, not a
// prompt's: KindPlain differs): a pure function of the word, and the tool
// outputs of a session repeat their words ("line", "compiled", "error",
// file names), so that a fold event's fifty new nodes analyse most of
// their words once per process rather than once per node. At most
// docWordsMax words of at most docWordMaxLen bytes; the memo starts again
// when full. Its words and terms are copies: it holds no document's text.
// Safe for concurrent use (the analyses of a fold event's nodes run in
// parallel).
var docWords wordMemo

// wordMemo is docWords' type.
type wordMemo struct {
	m sync.Map     // word → *[]Term
	n atomic.Int64 // words stored since the memo was last emptied
}

// docWordsMax bounds the words docWords holds (0: no memo; a variable
// for tests), docWordMaxLen the bytes of a word it keeps.
var docWordsMax, docWordMaxLen = int64(16 << 10), 64

// put keeps terms as w's (copies of both), unless w is longer than
// docWordMaxLen; a full memo is emptied first.
func (dw *wordMemo) put(w string, terms []Term) {
	if len(w) > docWordMaxLen {
		return
	}
	if dw.n.Add(1) > docWordsMax {
		dw.m.Clear()
		dw.n.Store(1)
	}
	w = strings.Clone(w)
	c := make([]Term, len(terms))
	for i, t := range terms {
		// Every term of a word is derived from it (wordTerms: Src is w).
		c[i] = Term{Text: strings.Clone(t.Text), Kind: t.Kind, Src: w}
	}
	dw.m.Store(w, &c)
}

// wordTerms is word for a word without CJK characters, without the memo.
func (a *analyzer) wordTerms(w string, emit func(Term)) {
	folded := extract.FoldTerm(w)
	parts := identifierParts(w)
	if hasDigit(folded) && len(parts) <= 1 {
		// A number or an alphanumeric token (v12, 5433, e2e): as written.
		switch {
		case len(folded) == 2 && allDigits(folded), isYear(folded):
			emit(Term{folded, KindNumber, w})
		case len(folded) >= 2:
			emit(Term{folded, KindWord, w})
		}
		return
	}
	if len(parts) > 1 {
		emit(Term{folded, KindWord, w})
		for _, p := range parts {
			a.alpha(p, w, KindPart, emit)
		}
		return
	}
	a.alpha(w, w, KindWord, emit)
}

// alpha emits the stem (and its fuzzy prefix) of one word as written,
// unless it is a stop word. The language is chosen from the word's own
// letters, the word stemmed in lower case, and the stem then folded like
// every term (extract.FoldTerm), so that a Turkish dotless ı reaches the
// Turkish stemmer before folding turns it into i.
func (a *analyzer) alpha(raw, src string, kind Kind, emit func(Term)) {
	w := extract.FoldTerm(raw)
	if utf8.RuneCountInString(w) < 2 || IsStopWord(w) {
		return
	}
	if hasDigit(w) {
		emit(Term{w, kind, src})
		return
	}
	st := extract.FoldTerm(a.stem(strings.ToLower(raw)))
	emit(Term{st, kind, src})
	if kind == KindWord && (a.query || !isASCII(w)) {
		if pl := plain(w); pl != st && !IsStopWord(pl) {
			emit(Term{pl, KindPlain, src})
		}
	}
	if kind == KindWord {
		if isASCII(st) { // its first four runes are its first four bytes
			if len(st) >= 4 {
				emit(Term{fuzzyPrefix + st[:4], KindFuzzy, src})
			}
		} else if rs := []rune(st); len(rs) >= 4 {
			emit(Term{fuzzyPrefix + string(rs[:4]), KindFuzzy, src})
		}
	}
}

// stem applies the Snowball stemmer of the word's language, chosen from its
// letters alone (so that a prompt and a cold node stem a word alike):
// Turkish when it has ğ ş ı İ ç ö ü, Spanish when it has ñ or an acute
// accent (the stem then loses its accents), English for plain ASCII; other
// scripts are left as they are.
func (a *analyzer) stem(w string) string {
	if st, ok := a.stems[w]; ok {
		return st
	}
	st := a.stemWord(w)
	if a.memo && len(a.stems) < stemMemoMax {
		if a.stems == nil {
			a.stems = make(map[string]string)
		}
		a.stems[w] = st
	}
	return st
}

// stemWord is stem without the memo.
func (a *analyzer) stemWord(w string) string {
	lang := 'e'
	for _, r := range w {
		switch {
		case strings.ContainsRune("ğşıçöü\u0307", r):
			lang = 't'
		case strings.ContainsRune("ñáéíóú", r):
			if lang != 't' {
				lang = 's'
			}
		case r >= utf8.RuneSelf && lang == 'e':
			lang = 'x'
		}
	}
	if lang == 'x' {
		return w
	}
	a.env.SetCurrent(w)
	switch lang {
	case 't':
		turkish.Stem(a.env)
	case 's':
		spanish.Stem(a.env)
		// Unaccented, so that "migracion" typed without accents matches.
		return strings.NewReplacer("á", "a", "é", "e", "í", "i", "ó", "o", "ú", "u").Replace(a.env.Current())
	default:
		english.Stem(a.env)
	}
	if st := a.env.Current(); st != "" {
		return st
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasDigit(s string) bool {
	for _, r := range s {
		if unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

func hasCJK(s string) bool {
	for _, r := range s {
		if r >= 0x1100 && isCJK(r) {
			return true
		}
	}
	return false
}

// identifierParts splits an identifier at underscores and lower→upper or
// letter↔digit case changes (TenantBilling → Tenant, Billing; HTTPServer →
// HTTP, Server; test_models → test, models). One part: no split.
func identifierParts(w string) []string {
	if lowerASCII(w) {
		return []string{w} // nothing to split at: the common word, without its runes
	}
	return identifierPartsOf(w)
}

// lowerASCII reports whether w is a non-empty run of a-z.
func lowerASCII(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return w != ""
}

// identifierPartsOf is identifierParts without its fast path.
func identifierPartsOf(w string) []string {
	var parts []string
	for _, seg := range strings.FieldsFunc(w, func(r rune) bool { return r == '_' }) {
		rs := []rune(seg)
		start := 0
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			split := false
			switch {
			case unicode.IsLower(prev) && unicode.IsUpper(cur):
				// Not before an all-capitals tail (PostgreSQL, MySQL): that is
				// a name, not two words.
				split = hasLower(rs[i:])
			case unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				split = true
			case unicode.IsLetter(prev) && unicode.IsDigit(cur), unicode.IsDigit(prev) && unicode.IsLetter(cur):
				split = true
			}
			if split {
				parts = append(parts, string(rs[start:i]))
				start = i
			}
		}
		parts = append(parts, string(rs[start:]))
	}
	return parts
}

// cjkGrams emits the character bigrams of a CJK run (a lone character as
// itself), skipping stop words and bigrams made only of stop characters.
func cjkGrams(rs []rune, emit func(Term)) {
	if len(rs) == 1 {
		if !cjkStopChars[rs[0]] {
			emit(Term{string(rs), KindCJK, string(rs)})
		}
		return
	}
	for i := 0; i+1 < len(rs); i++ {
		if cjkStopChars[rs[i]] && cjkStopChars[rs[i+1]] {
			continue
		}
		g := string(rs[i : i+2])
		if cjkStopWords[g] {
			continue
		}
		if cjkStopChars[rs[i]] || cjkStopChars[rs[i+1]] {
			emit(Term{g, KindCJKEdge, g})
			continue
		}
		emit(Term{g, KindCJK, g})
	}
}

func hasLower(rs []rune) bool {
	for _, r := range rs {
		if unicode.IsLower(r) {
			return true
		}
	}
	return false
}
