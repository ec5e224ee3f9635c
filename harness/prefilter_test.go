package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/contextfold/contextfold/ingest"
)

// corpusTexts returns the text of every turn of every bundled transcript
// (the mini-swe-agent corpus included): payloads, commands, summaries, and
// each payload's lines on their own.
func corpusTexts(t testing.TB) []string {
	t.Helper()
	var files []string
	filepath.WalkDir("../ingest/testdata/transcripts", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (!strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".history.md")) {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 10 {
		t.Fatalf("only %d transcripts under ../ingest/testdata/transcripts", len(files))
	}
	var out []string
	for _, f := range files {
		res, err := ingest.ParseFile(f, ingest.FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tu := range res.Turns {
			out = append(out, tu.Payload, tu.Command, tu.Summary, StripHydration(tu.Payload))
			out = append(out, strings.Split(tu.Payload, "\n")...)
		}
	}
	return out
}

// prefilterCases are texts built to reach the prefilters' edges: a match
// that starts lines before its marker, a bracket that spans lines, case
// variants of the exit markers, markers that are no failure.
var prefilterCases = []string{
	"", "\n", "ok\n\n   \n\tFAIL\n", "ok\n \n  panic: boom", "a\nerror[E0308\nmore]: mismatched\n", "error[E0308\n]: x",
	"error[x]: y", "x error[ no close\nnothing after", "3 errors\nall fine", "0 failed, 12 passed", "12 failed", "Tests failed",
	"pkg/a.go:12:3: undefined: x", "x.go:1:2:nope", "src/main.c:4:1: fatal error: x.h", "foo: command not found", "foo: command not found\nbar",
	"ValueError: bad", "  Traceback (most recent call last):\n", "make[2]: *** [all] Error 1", "npm ERR! code 1", "[ERROR] BUILD FAILURE",
	"error TS2339: x", "rake aborted!", "Segmentation fault (core dumped)", "error Command failed with exit code 1.",
	"<returncode>1</returncode>\n<output>x</output>", "EXIT CODE: 2", "Exit Status 3", "[Command finished with exit code 0]",
	"ReturnCode", "exi t code 1", "e\u212Ait code 1", "\u017Fexit", "exitexit code: 9", "<b>bold</b> and <tag-x>",
	"no tags < here >", "<1abc>", "a <x>\n<y>",
}

// The prefilters answer exactly what the regular expressions they stand in
// front of answer, on every turn of the bundled transcripts and on texts
// built to reach their edges: a summary or a record must not change by one
// byte. Under the race detector (which adds nothing to these
// single-goroutine functions and slows the regular expressions ~10 times)
// every eighth turn of the transcripts is checked, and every edge case;
// scripts/test.sh runs all of them without -race.
func TestPrefilterMatchesRegexp(t *testing.T) {
	corpus := corpusTexts(t)
	if raceEnabled {
		var some []string
		for i := 0; i < len(corpus); i += 8 {
			some = append(some, corpus[i])
		}
		corpus = some
	}
	texts := append(corpus, prefilterCases...)
	for _, s := range texts {
		checkPrefilters(t, s)
	}
	t.Logf("%d texts", len(texts))
}

func checkPrefilters(t testing.TB, s string) {
	t.Helper()
	if got, want := hasFailureLine(s), failureLine.MatchString(s); got != want {
		t.Fatalf("hasFailureLine(%.200q) = %v, failureLine says %v", s, got, want)
	}
	if !mayHaveExitCode(s) && (exitCodeRe.MatchString(s) || exitRe.MatchString(s)) {
		t.Fatalf("mayHaveExitCode(%.200q) = false, but an exit expression matches", s)
	}
	if got, want := stripTags(s), tagLineRe.ReplaceAllString(s, ""); got != want {
		t.Fatalf("stripTags(%.200q) = %q, want %q", s, got, want)
	}
	for _, m := range exitMarkers {
		want := strings.Index(strings.ToLower(s), m) // ToLower keeps byte offsets only for ASCII
		if isASCIIString(s) {
			if got := indexFoldASCII(s, m); got != want {
				t.Fatalf("indexFoldASCII(%.200q, %q) = %d, want %d", s, m, got, want)
			}
		}
	}
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// The exit markers' letters fold only to ASCII letters (Go's case-insensitive
// matching folds k to U+212A and s to U+017F, which an ASCII search would
// miss), so the ASCII case-insensitive search is exact.
func TestExitMarkersFoldASCII(t *testing.T) {
	for _, m := range exitMarkers {
		for _, r := range m {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f >= 0x80 {
					t.Errorf("%q of marker %q folds to %U: the ASCII search would miss it", r, m, f)
				}
			}
		}
	}
}

func FuzzPrefilter(f *testing.F) {
	for _, s := range prefilterCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPrefilters(t, s) })
}
