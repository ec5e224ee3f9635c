package ranked

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"strings"
	"sync"
)

// Rule "related words" (Params.Related): a question and the turn that
// answers it often say one thing in two words that stemming does not
// join ("Is she married?" / "our marriage", "a painting" / "the painter",
// "her job" / "her occupation"). A prompt word listed in the link table
// (related.txt.gz) also looks up its related words: its derivationally
// related forms and pertainyms (Krovetz 1993, "Viewing morphology as an
// inference process"; WordNet's "+" and "\" pointers) and the other words
// of its most frequent sense (Voorhees 1994, "Query expansion using
// lexical-semantic relations": added terms weighted down, the most
// frequent sense only). At most relatedMax of them per word, in the
// table's order (derived forms first), each the archive holds, as terms of
// KindRelated weighed Params.Related × the lower of the word's idf and the
// related word's (a rare related word never outweighs the word asked
// for; a word the archive lacks counts at the highest idf), in the word's
// group, so that a node holding the word itself scores by the word. Like
// an alias or a typo a related word is a secondary term: it adds nothing
// to the prompt's information, coverage or intent ownership, and a node
// that matches only through related words must still pass the cut-off on
// its own score. Exact needles (package match) are not affected.
//
// The table is generated from WordNet 3.1 by cmd/cflinks (its doc comment
// gives the command); WordNet's licence is related.LICENSE, beside it.
// WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.

//go:embed related.txt.gz
var relatedGz []byte

// relatedMax bounds the related words one prompt word adds.
const relatedMax = 8

// relatedTable maps a stem to its related stems, read from the embedded
// table on first use.
var relatedTable = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	r, err := gzip.NewReader(bytes.NewReader(relatedGz))
	if err != nil {
		panic("ranked: related.txt.gz: " + err.Error())
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[k] = strings.Fields(v)
		}
	}
	if err := sc.Err(); err != nil {
		panic("ranked: related.txt.gz: " + err.Error())
	}
	return m
})

// Related returns the stems the link table of rule "related words"
// relates to an analysed word (a KindWord term's Text, such as Analyze
// gives: "marri" for "married"), in the table's order, or nil. The slice
// is shared: callers must not modify it. Safe for concurrent use.
func Related(stem string) []string { return relatedTable()[stem] }

// relatedTerms appends to terms the related words of the prompt's words.
// Callers hold ix.mu.
func (ix *Index) relatedTerms(terms []qterm, best map[string]Term, order []string, p Params) []qterm {
	table := relatedTable()
	df := map[string]int{} // a prompt word's term → live nodes holding it
	for _, t := range terms {
		df[t.text] = t.df
	}
	for _, text := range order {
		t := best[text]
		if t.Kind != KindWord {
			continue
		}
		links := table[text]
		if len(links) == 0 {
			continue
		}
		wordIdf := ix.idf(df[text])
		n := 0
		for _, r := range links {
			if n == relatedMax {
				break
			}
			if _, ok := best[r]; ok {
				continue // the prompt says it, or an earlier word added it
			}
			id, ok := ix.termID(r)
			if !ok {
				continue
			}
			d := ix.liveDF(id)
			if d == 0 {
				continue
			}
			n++
			best[r] = Term{r, KindRelated, t.Src}
			terms = append(terms, qterm{id: id, text: r, src: t.Src, kind: KindRelated, weight: p.Related * min(wordIdf, ix.idf(d)), df: d})
		}
	}
	return terms
}
