package ranked

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
)

// BenchmarkAnalyseDoc analyses, as a cold node's text is analysed when it
// is folded (analyseDoc), every turn of the bundled transcripts of 2 KiB or
// more (tool outputs, mostly): bytes/op is the text analysed per op.
//
//	go test ./match/ranked -run '^$' -bench 'BenchmarkAnalyseDoc$'
func BenchmarkAnalyseDoc(b *testing.B) {
	texts := transcriptTexts(b, stemMemoFrom)
	if len(texts) == 0 {
		b.Fatal("no transcript turn of 2 KiB or more")
	}
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	for range b.N {
		for _, s := range texts {
			analyseDoc(s)
		}
	}
}

// transcriptTexts is the text of every turn of the bundled transcripts
// (summary, a newline, payload) of minLen bytes or more, as a cold node's
// text is analysed.
func transcriptTexts(tb testing.TB, minLen int) []string {
	tb.Helper()
	var texts []string
	err := filepath.WalkDir("../../ingest/testdata/transcripts", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, ".history.md") {
			return nil
		}
		res, err := ingest.ParseFile(p, ingest.FormatAuto)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, tu := range res.Turns {
			if s := tu.Summary + "\n" + tu.Payload; len(s) >= minLen {
				texts = append(texts, s)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return texts
}
