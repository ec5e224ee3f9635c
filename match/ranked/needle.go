package ranked

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/extract"
)

// Rule "exact needles": a prompt that quotes a token the archive holds once
// or a few times — a path, a URL, a version, a decimal, a timestamp
// fragment, a hash, an e-mail, a slash pair, a snake_case, CamelCase or
// kebab identifier, a quoted string — asks for the turn that holds it,
// whatever the token's punctuation. A word tokenizer splits such a token
// into common parts ("price/balance" → price, balance; "3.25.3" → 3, 25),
// so the rarity of the whole is lost to a bag-of-words score; the needle
// stage looks the token up whole instead: the nodes holding every term of
// the token are its candidates (an intersection of postings, rarest
// first), the caller verifies that a candidate's content holds the token
// literally (package match reads it through the store), and the verified
// nodes are hydrated ahead of any broader match, focused on the lines that
// hold the token (FocusNeedles).

// maxNeedles bounds the needles taken from one prompt (the longest first),
// so that a pasted log costs what a question costs.
const maxNeedles = 8

// minNeedleLen is the shortest needle, in bytes.
const minNeedleLen = 4

// maxNeedleLen is the longest needle, in bytes: past it a quoted span is a
// paste, not a token.
const maxNeedleLen = 200

// Needles returns the tokens of prompt that the needle stage looks up
// whole: every span in backquotes or double quotes (3 to maxNeedleLen
// bytes; single quotes too when they stand apart from letters, as a quote
// and not an apostrophe), and every whitespace-separated token that,
// stripped of surrounding punctuation, is at least minNeedleLen bytes and
// is structured: it holds an inner joiner (. / : @ # _ - \ between two word
// characters), mixes letters and digits, is a CamelCase identifier of two
// parts or more (HandleFunc; not a name such as PostgreSQL, whose capital
// tail is no new word: identifierParts), or is a number of at least 3 digits that
// is not a year. Plain words are not needles. Distinct (case-insensitive),
// longest first (ties in prompt order), at most maxNeedles. Deterministic.
//
// A URL needle with a scheme or "www." also yields the URL without them
// (urlHost), so that the turn writing it bare is found.
//
// The agent's own notes around the human's words (stripAgentMarkup:
// Claude Code's and Qwen Code's <system-reminder>, Codex's
// <environment_context>, …) are left out first, as the ranked scan leaves
// them out (rule "the human's words"): the todo reminder's "TodoWrite" or
// a CLAUDE.md path would otherwise take the needle slots of every prompt
// and hydrate the same nodes whatever the human asked.
func Needles(prompt string) []string {
	if len(prompt) > maxAnalyzeBytes {
		prompt = prompt[:maxAnalyzeBytes]
	}
	prompt = stripAgentMarkup(prompt)
	var out []string
	seen := map[string]bool{}
	var add func(s string)
	add = func(s string) {
		s = strings.TrimSpace(s)
		if len(s) < 3 || len(s) > maxNeedleLen || !utf8.ValidString(s) {
			return
		}
		k := strings.ToLower(s)
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
		if host := urlHost(s); host != s && len(host) >= minNeedleLen {
			add(host)
		}
	}
	// Quoted spans.
	for _, q := range []byte{'`', '"', '\''} {
		for i := 0; i < len(prompt); i++ {
			if prompt[i] != q {
				continue
			}
			if q == '\'' && i > 0 && isWordByte(prompt[i-1]) {
				continue // an apostrophe: it's
			}
			j := strings.IndexByte(prompt[i+1:], q)
			if j < 0 {
				break
			}
			end := i + 1 + j
			if q == '\'' && end+1 < len(prompt) && isWordByte(prompt[end+1]) {
				continue
			}
			span := prompt[i+1 : end]
			if !strings.ContainsRune(span, '\n') {
				add(span)
			}
			i = end
		}
	}
	// Structured tokens.
	for _, f := range strings.Fields(prompt) {
		tok := strings.TrimFunc(f, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '/' && r != '~' && r != '$'
		})
		tok = strings.TrimRight(tok, "/")
		if len(tok) >= minNeedleLen && structured(tok) {
			add(tok)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return len(out[a]) > len(out[b]) })
	if len(out) > maxNeedles {
		out = out[:maxNeedles]
	}
	return out
}

// urlHost returns a URL needle without its scheme ("https://") and a
// leading "www.": a prompt quoting https://www.api.llama.fi/protocols
// asks for the turn writing api.llama.fi/protocols too (rule "exact
// needles": the turn that holds the token whatever its punctuation). Any
// other needle is returned as it is.
func urlHost(s string) string {
	if i := strings.Index(s, "://"); i > 0 {
		scheme := true
		for j := 0; j < i; j++ {
			c := s[j] | 0x20
			if !(c >= 'a' && c <= 'z' || j > 0 && (s[j] >= '0' && s[j] <= '9' || s[j] == '+' || s[j] == '.' || s[j] == '-')) {
				scheme = false
				break
			}
		}
		if scheme {
			s = s[i+3:]
		}
	}
	if len(s) > 4 && strings.EqualFold(s[:4], "www.") && strings.ContainsAny(s[4:], "./") {
		s = s[4:]
	}
	return s
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= utf8.RuneSelf
}

// structured reports whether tok is a needle by its shape (see Needles).
func structured(tok string) bool {
	rs := []rune(tok)
	letters, digits := 0, 0
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r):
			letters++
		case unicode.IsDigit(r):
			digits++
		}
		if i > 0 && i+1 < len(rs) && strings.ContainsRune("./:@#_-\\", r) && isWordRune(rs[i-1]) && isWordRune(rs[i+1]) {
			return true
		}
	}
	if letters > 0 && digits > 0 || len(identifierParts(tok)) > 1 {
		return true
	}
	return letters == 0 && digits >= 3 && !isYear(tok)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// needleTerms are the terms every node holding needle literally holds:
// the words, numbers and identifiers of each run of word characters and
// joiners of the needle, as the cold node side analyses them, and, for a
// run the needle encloses (a character that ends a run on each side of it,
// inside the needle), its compounds too. A run at the needle's edge may
// continue in the node ("api.llama.fi/protocols" inside
// "https://api.llama.fi/protocols?x=1"), so its compound is not the
// node's; an enclosed run is bounded the same way wherever the needle is
// written ("child.get" inside "refuri = child.get('refuri')").
//
// whole is the needle's own term when the needle is one run ("75.7",
// "price/balance", "settle_ledger_batch"): a node holding that term holds
// the needle as written, up to case. It is "" when the needle is more than
// one run ("self.linter =", "tensorproduct.py|paulialgebra.py", a quoted
// phrase): the node holding the first run's compound need not hold the
// rest.
func needleTerms(needle string) (words []string, whole string) {
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			words = append(words, t)
		}
	}
	start := -1
	chunk := func(s, e int) {
		enclosed := s > 0 && e < len(needle)
		analyzeInto(needle[s:e], func(t Term) {
			switch t.Kind {
			case KindWord, KindNumber, KindCJK, KindCJKEdge:
				add(t.Text)
			case KindCompound:
				if enclosed {
					add(t.Text)
				}
			}
		})
	}
	for i, r := range needle {
		if isChunkRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			chunk(start, i)
			start = -1
		}
	}
	if start >= 0 {
		chunk(start, len(needle))
	}
	fold := extract.FoldTerm(needle)
	analyzeInto(needle, func(t Term) {
		if whole == "" && t.Kind == KindCompound && t.Text == fold {
			whole = t.Text
		}
	})
	// A path's file name (its last element, when it holds a dot or a
	// dash) is a term of every run ending with the path (analyzer.chunk),
	// so it narrows the words' intersection before any node is read.
	if i := strings.LastIndexAny(whole, "/\\"); i >= 0 && i+1 < len(whole) && strings.ContainsAny(whole[i+1:], ".-") {
		add(whole[i+1:])
	}
	// A needle of one word (an identifier, a number) is its own term.
	if whole == "" && len(words) > 0 && words[0] == fold {
		whole = words[0]
	}
	return words, whole
}

// minHexDigits is the fewest hex digits of a needle looked up as a hex
// literal (hexPrefixed): an address or a hash fragment, not a word that
// happens to be spelt in a–f.
const minHexDigits = 6

// hexPrefixed returns the term under which a node holds needle when the
// needle is a hexadecimal number quoted without its 0x prefix, else "".
// Programs print addresses and handles as 0x7f3a9c2b1e80, and the analyser
// keeps such a literal as one word, 0x and all; a prompt may quote the
// digits alone (7f3a9c2b1e80) or lose the 0 to a tokenizer that starts
// identifiers at a letter (x7f3a9c2b1e80). Either is looked up as the
// 0x-prefixed word too, when the needle's own terms find no node: at least
// minHexDigits hex digits, a digit among them, and nothing else but a
// leading x. A candidate so found holds the needle literally (the caller
// checks, as for any candidate that is not Whole).
func hexPrefixed(needle string) string {
	h := strings.ToLower(needle)
	switch {
	case strings.HasPrefix(h, "0x"):
		return "" // its own word already
	case strings.HasPrefix(h, "x"):
		h = h[1:]
	}
	if len(h) < minHexDigits || !strings.ContainsAny(h, "0123456789") {
		return ""
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return "0x" + h
}

// NeedleCandidate is a node that may hold a needle literally.
type NeedleCandidate struct {
	Step    int
	Tokens  int // the node's token_estimate
	Summary string
	// Whole: the node holds the needle's own term — the whole compound
	// ("api.llama.fi/protocols", "75.7") or the one identifier
	// ("settle_ledger_batch") the needle is — so it holds the token as
	// written, up to case; no need to read it to verify.
	Whole bool
}

// NeedleCandidates returns the live nodes (of steps below before; all when
// before < 0) that may hold needle literally, newest first: the nodes
// holding its own term (Whole), else (none does, or the needle is no one
// term: a quoted phrase, a fragment of a longer run) the nodes holding
// every word of it; the set is kept when it has at most limit nodes (a
// larger one means the needle is not rare: the ranking weighs it). Nil
// when none is kept. The caller verifies a candidate that is not Whole. Cost: the rarest
// word's postings, each looked up in the others' (binary search). Safe for
// concurrent use.
func (ix *Index) NeedleCandidates(needle string, before, limit int) []NeedleCandidate {
	words, whole := needleTerms(needle)
	hexAlt := hexPrefixed(needle)
	if limit <= 0 {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := ix.needleCandidates(words, whole, hexAlt, before, limit)
	if ix.recoverSnapshot() {
		out = ix.needleCandidates(words, whole, hexAlt, before, limit)
	}
	return out
}

func (ix *Index) needleCandidates(words []string, whole, hexAlt string, before, limit int) []NeedleCandidate {
	var out []NeedleCandidate
	seen := map[int32]bool{}
	if whole != "" {
		for _, d := range ix.needleLocked([]string{whole}, before, limit) {
			seen[d] = true
			out = append(out, ix.needleCandidate(d, true))
		}
	}
	if len(words) > 0 && len(out) == 0 {
		for _, d := range ix.needleLocked(words, before, limit) {
			if !seen[d] {
				out = append(out, ix.needleCandidate(d, false))
			}
		}
	}
	if len(out) == 0 && hexAlt != "" {
		// Not to be verified away: a node holding 0x<digits> holds
		// <digits> and x<digits> literally; the caller still checks.
		for _, d := range ix.needleLocked([]string{hexAlt}, before, limit) {
			out = append(out, ix.needleCandidate(d, false))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Step > out[b].Step })
	return out
}

func (ix *Index) needleCandidate(d int32, whole bool) NeedleCandidate {
	return NeedleCandidate{Step: ix.docs[d].step, Tokens: ix.docs[d].tokens, Summary: ix.summaryOf(d), Whole: whole}
}

// needleLocked returns the live docs (of steps below before) holding
// every term of terms, nil when there are more than limit of them or a
// term is unknown. Callers hold ix.mu.
func (ix *Index) needleLocked(terms []string, before, limit int) []int32 {
	ids := make([]int32, 0, len(terms))
	for _, t := range terms {
		id, ok := ix.termID(t)
		if !ok {
			return nil
		}
		ids = append(ids, id)
	}
	// Each term's postings, decoded or a long list read in place
	// (inplace.go); the shortest is walked, the others looked up.
	type termList struct {
		id int32
		ps []posting
		l  *longList
		n  int
	}
	lists := make([]termList, len(ids))
	for i, id := range ids {
		ps, l := ix.list(id)
		lists[i] = termList{id: id, ps: ps, l: l, n: len(ps)}
		if l != nil {
			lists[i].n = l.n + len(ix.spost[id])
		}
		if lists[i].n == 0 {
			return nil
		}
	}
	sort.Slice(lists, func(a, b int) bool { return lists[a].n < lists[b].n })
	first := lists[0].ps
	if lists[0].l != nil {
		first = ix.postings(lists[0].id)
	}
	var out []int32
	for _, p := range first {
		d := p.doc
		if ix.docs[d].dead || before >= 0 && ix.docs[d].step >= before {
			continue
		}
		all := true
		for _, l := range lists[1:] {
			held := false
			if l.l != nil {
				tf, ok := ix.longTF(l.id, l.l, d)
				held = ok && tf > 0
			} else {
				held = hasDoc(l.ps, d)
			}
			if !held {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if len(out) == limit {
			return nil
		}
		out = append(out, d)
	}
	return out
}

// hasDoc reports whether postings ps (ascending doc) hold doc d.
func hasDoc(ps []posting, d int32) bool {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= d })
	return i < len(ps) && ps[i].doc == d
}

// ContainsFold reports whether s holds needle, ignoring case: the literal
// check of rule "exact needles". An ASCII needle is compared byte by byte
// (strings.EqualFold); any other is compared after both sides are folded
// as terms are (extract.FoldTerm: full lower-casing, then NFC), so that a
// quoted "Café" finds "CAFÉ" and "cafe\u0301" alike.
func ContainsFold(s, needle string) bool {
	if needle == "" {
		return true
	}
	if isASCII(needle) {
		return containsFoldASCII(s, needle)
	}
	return strings.Contains(extract.FoldTerm(s), extract.FoldTerm(needle))
}

// containsFoldASCII is ContainsFold for an ASCII needle: whether some
// len(needle) bytes of s equal it under strings.EqualFold. Such bytes are
// all ASCII (a rune of several bytes would leave the window fewer runes
// than the needle has), so where the needle has a byte that is no letter
// the window has that very byte: the windows tried are those around each
// occurrence of it (strings.IndexByte), else those starting with the
// needle's first letter in either case. The needles of a scan are
// searched for in every node read to verify them: a 5 KB node is scanned
// by IndexByte rather than byte by byte.
func containsFoldASCII(s, needle string) bool {
	n := len(needle)
	if len(s) < n {
		return false
	}
	k := 0
	for k < n && isASCIILetter(needle[k]) {
		k++
	}
	if k < n {
		// hay[i] is the anchor byte of the window starting at s[i].
		a, hay := needle[k], s[k:len(s)-n+k+1]
		for i := 0; ; i++ {
			j := strings.IndexByte(hay[i:], a)
			if j < 0 {
				return false
			}
			if i += j; strings.EqualFold(s[i:i+n], needle) {
				return true
			}
		}
	}
	// Every byte is a letter: windows start with the first in either case.
	hay := s[:len(s)-n+1]
	next := func(c byte, from int) int {
		if j := strings.IndexByte(hay[from:], c); j >= 0 {
			return from + j
		}
		return len(hay)
	}
	lower, upper := needle[0]|0x20, needle[0]&^0x20
	pl, pu := next(lower, 0), next(upper, 0)
	for {
		i := min(pl, pu)
		if i == len(hay) {
			return false
		}
		if strings.EqualFold(s[i:i+n], needle) {
			return true
		}
		if i == pl {
			pl = next(lower, i+1)
		} else {
			pu = next(upper, i+1)
		}
	}
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
