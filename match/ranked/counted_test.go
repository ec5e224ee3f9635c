package ranked

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
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
	var texts []string
	filepath.WalkDir("../../ingest/testdata/transcripts", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, ".history.md") {
			return nil
		}
		res, err := ingest.ParseFile(p, ingest.FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tu := range res.Turns {
			texts = append(texts, tu.Summary+"\n"+tu.Payload)
		}
		return nil
	})
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
	for _, c := range []struct{ flushEvery, from int }{{countedChunksMax, stemMemoFrom}, {3, stemMemoFrom}, {1, 0}} {
		flushEvery, from := c.flushEvery, c.from
		{
			func() {
				defer func(c, f int) { countedChunksMax, stemMemoFrom = c, f }(countedChunksMax, stemMemoFrom)
				countedChunksMax, stemMemoFrom = flushEvery, from
				for k, s := range texts {
					if got, want := analyseDoc(s), analyseDocOneByOne(s); !reflect.DeepEqual(got, want) {
						t.Fatalf("text %d (%d bytes), flush every %d chunks, memo from %d bytes: analysis differs:\n got %+v\nwant %+v",
							k, len(s), flushEvery, from, got, want)
					}
				}
			}()
		}
	}
}
