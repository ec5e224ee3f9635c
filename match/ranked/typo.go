package ranked

import "strings"

// Rule "typos" (Params.Typo): people misspell in chat ("potery",
// "pottrey"), and a turn that misspells the word a question asks about is
// not found by it, nor a question that misspells the turn's word. As
// Lucene's fuzzy query does (Damerau–Levenshtein distance 1), a prompt
// word's stem of at least typoMinLen letters also looks up the archive's
// terms one edit from it: a letter dropped, added or changed, or two
// adjacent letters swapped. A variant counts only when it is rarer than
// the word (held by at most max(rareDF, a quarter of) the nodes holding
// the word: a misspelling is rarer than the spelling, "glass" is not a
// typo of "class" in a store that says "glass" often), at most
// typoMaxVariants of them per word, each weighed Params.Typo × the word's
// idf (the variant's when the archive never spells the word right), in
// the word's group, so that a node holding the word itself wins.

// typoMinLen is the shortest stem, in letters, that looks up its typos.
const typoMinLen = 5

// typoMaxLen is the longest stem, in letters, that looks up its typos: a
// word's variants cost time in its length squared (a prompt of one
// word of a million letters), and a word past it is no word a person
// misspells.
const typoMaxLen = typoDelMaxLen - 1

// typoMaxVariants bounds the variants a prompt word adds.
const typoMaxVariants = 4

// typoTerms appends to terms the typo variants of the prompt's words.
// Callers hold ix.mu.
func (ix *Index) typoTerms(terms []qterm, best map[string]Term, order []string, p Params) []qterm {
	filter := ix.typoFilter()
	known := map[string]int{} // term text → index in terms
	for i, t := range terms {
		known[t.text] = i
	}
	for _, text := range order {
		t := best[text]
		if t.Kind != KindWord || len(text) < typoMinLen || len(text) > typoMaxLen || !lowerASCII(text) {
			continue
		}
		dfWord := 0
		if i, ok := known[text]; ok {
			dfWord = terms[i].df
		}
		limit := max(rareDF, dfWord/4)
		asked := 0 // rule "two words are no typo": 1 the word is a word, -1 not (0: not looked up yet)
		n := 0
		try := func(v string) bool {
			if _, ok := best[v]; ok {
				return true
			}
			id, ok := ix.termID(v)
			if !ok {
				return true
			}
			df := ix.liveDF(id)
			if df == 0 || df > limit {
				return true
			}
			if p.TypoWords { // rule "two words are no typo" (lexicon.go)
				if asked == 0 {
					asked = -1
					if IsWord(text) {
						asked = 1
					}
				}
				if asked == 1 && IsWord(v) {
					return true
				}
			}
			w := ix.idf(df)
			if dfWord > 0 {
				w = ix.idf(dfWord)
			}
			best[v] = Term{v, KindTypo, t.Src}
			terms = append(terms, qterm{id: id, text: v, src: t.Src, kind: KindTypo, weight: p.Typo * w, df: df})
			n++
			return n < typoMaxVariants
		}
		if filter != nil {
			typoVariants(text, filter, try)
		} else {
			edits1(text, try)
		}
	}
	return terms
}

// edits1 calls f with each distinct string one edit from w (a–z only:
// deletions, adjacent transpositions, substitutions, insertions, in that
// order) until f returns false.
func edits1(w string, f func(string) bool) {
	seen := map[string]bool{w: true}
	try := func(v string) bool {
		if seen[v] {
			return true
		}
		seen[v] = true
		return f(v)
	}
	var b strings.Builder
	build := func(parts ...string) string {
		b.Reset()
		for _, s := range parts {
			b.WriteString(s)
		}
		return b.String()
	}
	for i := range len(w) {
		if !try(build(w[:i], w[i+1:])) {
			return
		}
	}
	for i := 0; i+1 < len(w); i++ {
		if !try(build(w[:i], w[i+1:i+2], w[i:i+1], w[i+2:])) {
			return
		}
	}
	for i := range len(w) {
		for c := byte('a'); c <= 'z'; c++ {
			if c != w[i] && !try(build(w[:i], string(c), w[i+1:])) {
				return
			}
		}
	}
	for i := 0; i <= len(w); i++ {
		for c := byte('a'); c <= 'z'; c++ {
			if !try(build(w[:i], string(c), w[i:])) {
				return
			}
		}
	}
}
