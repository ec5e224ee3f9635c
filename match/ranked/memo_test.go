package ranked

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
)

// The stem memo changes no term: every turn of the bundled transcripts (the
// mini-swe-agent corpus included) analyses to the same terms with the memo
// and without it, as a document and as a prompt, the memos of words across
// documents and prompts (docWords, queryWords) included, and with memos
// that fill up.
func TestStemMemoSameTerms(t *testing.T) {
	var files []string
	filepath.WalkDir("../../ingest/testdata/transcripts", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (!strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".history.md")) {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 10 {
		t.Fatalf("only %d transcripts", len(files))
	}
	var texts []string
	for _, f := range files {
		res, err := ingest.ParseFile(f, ingest.FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tu := range res.Turns {
			texts = append(texts, tu.Summary+"\n"+tu.Payload)
		}
	}
	texts = append(texts, "Running runs ran RUNNING Düzenleme düzenlemeler migración migraciones 東京タワー running")
	// identifierParts' fast path splits every word as the general rule does.
	for _, s := range texts {
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !isChunkRune(r) || isJoiner(r) }) {
			if got, want := identifierParts(w), identifierPartsOf(w); !reflect.DeepEqual(got, want) {
				t.Fatalf("identifierParts(%q) = %q, want %q", w, got, want)
			}
		}
	}
	// The memos across documents and prompts (docWords, queryWords) are off
	// with memo 0, and start empty otherwise: each text reads the words of
	// the texts before it.
	analyse := func(memo int, texts []string) (docs, queries [][]Term) {
		defer func(m, f int, d int64) { stemMemoMax, stemMemoFrom, docWordsMax = m, f, d }(stemMemoMax, stemMemoFrom, docWordsMax)
		stemMemoMax, stemMemoFrom, docWordsMax = memo, 0, int64(memo) // every text through the memo
		docWords.m.Clear()
		docWords.n.Store(0)
		queryWords.m.Clear()
		queryWords.n.Store(0)
		for _, s := range texts {
			docs = append(docs, Analyze(s))
			var q []Term
			analyzeQuery(s, func(tm Term) { q = append(q, tm) })
			queries = append(queries, q)
		}
		return
	}
	d0, q0 := analyse(0, texts)
	d1, q1 := analyse(stemMemoMax, texts)
	d2, q2 := analyse(3, texts[len(texts)-300:]) // a memo that fills up
	// No text with a memo of its own: a prompt's words go through
	// queryWords alone.
	prompts := func(memo int, texts []string) (queries [][]Term) {
		defer func(f int, d int64) { stemMemoFrom, docWordsMax = f, d }(stemMemoFrom, docWordsMax)
		stemMemoFrom, docWordsMax = math.MaxInt, int64(memo)
		queryWords.m.Clear()
		queryWords.n.Store(0)
		for _, s := range texts {
			var q []Term
			analyzeQuery(s, func(tm Term) { q = append(q, tm) })
			queries = append(queries, q)
		}
		return
	}
	q3 := prompts(stemMemoMax, texts)
	q4 := prompts(3, texts[len(texts)-300:])
	for i := range texts {
		if !reflect.DeepEqual(q0[i], q3[i]) {
			t.Fatalf("text %d (%.80q): queryWords changed its terms as a prompt", i, texts[i])
		}
	}
	for i := range q4 {
		if k := len(texts) - 300 + i; !reflect.DeepEqual(q0[k], q4[i]) {
			t.Fatalf("text %d (%.80q): a full queryWords changed its terms as a prompt", k, texts[k])
		}
	}
	for i := range texts {
		if !reflect.DeepEqual(d0[i], d1[i]) || !reflect.DeepEqual(q0[i], q1[i]) {
			t.Fatalf("text %d (%.80q): the memo changed its terms", i, texts[i])
		}
	}
	for i := range d2 {
		k := len(texts) - 300 + i
		if !reflect.DeepEqual(d0[k], d2[i]) || !reflect.DeepEqual(q0[k], q2[i]) {
			t.Fatalf("text %d (%.80q): a full memo changed its terms", k, texts[k])
		}
	}
}
