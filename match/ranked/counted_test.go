package ranked

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// analyseDocOneByOne is analyseDoc one term at a time (analyzeInto), as it
// was before analyzeCounted: the reference TestAnalyseDocCountedSame holds
// it to.
func analyseDocOneByOne(text string) analysed {
	var a analysed
	at := map[string]int{}
	n, nspec := 0, 0
	analyzeInto(text, func(t Term) {
		if t.Kind != KindFuzzy && t.Kind != KindCompound && t.Kind != KindPlain {
			n++
		}
		i, ok := at[t.Text]
		if !ok {
			i = len(a.terms)
			at[t.Text] = i
			sp := (t.Kind == KindCompound || (t.Kind == KindWord && specific(t.Src))) && nspec < maxSpecific
			if sp {
				nspec++
			}
			a.terms = append(a.terms, analysedTerm{text: t.Text, specific: sp})
		}
		a.terms[i].tf++
	})
	a.length = float64(max(n, 1))
	a.question = n <= maxQuestionWords && isQuestion(text)
	return a
}

// TestAnalyseDocCountedSame: analysing each distinct chunk of a text once
// and counting its occurrences (analyzeCounted) gives the same analysis
// (terms in order of first occurrence, their counts, the specific ones,
// the length, the question flag) as analysing one term at a time, for
// every turn of the bundled transcripts, logs that repeat their lines
// (the fold benchmarks' tool outputs), texts of random words, joiners,
// versions, paths and CJK, more than maxSpecific specific terms, and with
// the distinct chunks held flushed every few chunks.
func TestAnalyseDocCountedSame(t *testing.T) {
	texts := transcriptTexts(t, 0)
	if len(texts) < 50 {
		t.Fatalf("only %d transcript turns", len(texts))
	}
	var log strings.Builder
	for i := range 400 {
		fmt.Fprintf(&log, "ok  \tgithub.com/acme/pkg%d/sub%d\t0.%03ds\n--- FAIL: TestThing%d (0.00s)\n    thing_test.go:%d: got %d, want 20.27.1\n", i%7, i%3, i, i%11, 40+i%5, i)
	}
	texts = append(texts, log.String())
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "Beta", "running", "ran", "config.yaml", "src/app/main.go", "app.py:42", "v1.2.3", "20.27.1",
		"ERROR", "ValueError", "snake_case_name", "camelCaseName", "x", "東京タワー", "düzenleme", "--flag", "a-b-c", "#123", "@user",
		"what", "why?", "0x1F", "deadbeefcafe0123", "...", "::", "/", "http://host/path", "what's", "2024"}
	for range 60 {
		var b strings.Builder
		for range 50 + r.IntN(3000) {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(8) == 0 {
				fmt.Fprintf(&b, "%d", r.IntN(1000)) // distinct chunks past maxSpecific
			}
			b.WriteString([]string{" ", "\n", ", ", ".", "/", "(", ")"}[r.IntN(7)])
		}
		texts = append(texts, b.String())
	}
	texts = append(texts, "", "what is it?", "Why does pkg3 fail?")
	// Under the race detector (which adds nothing to this single-goroutine
	// analysis and slows it ~10 times) each setting checks every fourth
	// text, a different fourth per setting; scripts/test.sh checks every
	// text under every setting without -race.
	every := 1
	if raceEnabled {
		every = 4
	}
	for ci, c := range []struct{ flushEvery, from int }{{countedChunksMax, stemMemoFrom}, {3, stemMemoFrom}, {1, 0}} {
		flushEvery, from := c.flushEvery, c.from
		{
			func() {
				defer func(c, f int) { countedChunksMax, stemMemoFrom = c, f }(countedChunksMax, stemMemoFrom)
				countedChunksMax, stemMemoFrom = flushEvery, from
				for k, s := range texts {
					if (k+ci)%every != 0 {
						continue
					}
					if got, want := analyseDoc(s), analyseDocOneByOne(s); !reflect.DeepEqual(got, want) {
						t.Fatalf("text %d (%d bytes), flush every %d chunks, memo from %d bytes: analysis differs:\n got %+v\nwant %+v",
							k, len(s), flushEvery, from, got, want)
					}
				}
			}()
		}
	}
}

// TestAnalyseDocRecycledScratch: analyses that share the recycled working
// memory (countScratch, docScratch) on several goroutines at once, small
// texts between texts of more distinct chunks than a recycled scratch may
// keep (scratchKeepMax), give the analysis of one term at a time, and
// no later analysis writes into a node's terms.
func TestAnalyseDocRecycledScratch(t *testing.T) {
	var big strings.Builder
	for i := range 3 * scratchKeepMax {
		fmt.Fprintf(&big, "step%d failed at pkg/mod%d/file%d.go:%d\n", i, i%97, i, i%400)
	}
	texts := []string{big.String(), "what is it?", ""}
	for i := range 40 {
		var b strings.Builder
		for j := range 30 + 40*i {
			fmt.Fprintf(&b, "ok github.com/acme/pkg%d %d.%03ds running tests\n", j%13, i, j)
		}
		texts = append(texts, b.String())
	}
	want := make([]analysed, len(texts))
	for k, s := range texts {
		want[k] = analyseDocOneByOne(s)
	}
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			var kept []analysed
			for round := range 3 {
				for k := range texts {
					k := (k + g + round) % len(texts)
					got := analyseDoc(texts[k])
					if !reflect.DeepEqual(got, want[k]) {
						errs <- fmt.Sprintf("goroutine %d, text %d: analysis differs", g, k)
						return
					}
					kept = append(kept, got)
				}
			}
			for i, a := range kept {
				k := (i%len(texts) + g + i/len(texts)) % len(texts)
				if !reflect.DeepEqual(a, want[k]) {
					errs <- fmt.Sprintf("goroutine %d: a kept analysis of text %d changed", g, k)
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
