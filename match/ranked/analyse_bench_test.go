package ranked

import (
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
	var texts []string
	filepath.WalkDir("../../ingest/testdata/transcripts", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, ".history.md") {
			return nil
		}
		res, err := ingest.ParseFile(p, ingest.FormatAuto)
		if err != nil {
			b.Fatalf("%s: %v", p, err)
		}
		for _, tu := range res.Turns {
			if s := tu.Summary + "\n" + tu.Payload; len(s) >= stemMemoFrom {
				texts = append(texts, s)
			}
		}
		return nil
	})
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
