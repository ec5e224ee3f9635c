package extract

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/extract/internal/runeref"
)

// TestByteOffsetsMatchRuneImplementation compares the byte-offset
// extraction with the []rune implementation it replaced
// (package runeref, unchanged) over generated texts: the trap alphabet,
// invalid UTF-8 bytes, and long texts where the memos of the path matcher
// are pruned.
func TestByteOffsetsMatchRuneImplementation(t *testing.T) {
	r := rand.New(rand.NewSource(20261201))
	extra := append(append([]string{}, alphabet...), "\xff", "\xc3", "\xe2\x82", "a/b/", "x.py", "c.json", "dir\\f.go", ".", "/", "$ ls -la\n", "> x;y\n", "HTTP 5٣٤", "AB_CD_ERROR ")
	check := func(text string) {
		t.Helper()
		got, want := Extract(text), runeref.Extract(text)
		if !reflect.DeepEqual(got.Identifiers, want.Identifiers) || !reflect.DeepEqual(got.Files, want.Files) ||
			!reflect.DeepEqual(got.Commands, want.Commands) || !reflect.DeepEqual(got.Errors, want.Errors) {
			t.Fatalf("text %q:\n got %q\nwant %q", text, got, want)
		}
		for name, f := range map[string][2]func(string) []string{
			"Identifiers": {Identifiers, runeref.Identifiers}, "Files": {Files, runeref.Files},
			"Commands": {Commands, runeref.Commands}, "Errors": {Errors, runeref.Errors},
		} {
			if g, w := f[0](text), f[1](text); !reflect.DeepEqual(g, w) {
				t.Fatalf("%s(%q) = %q, want %q", name, text, g, w)
			}
		}
	}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := 1 + r.Intn(40); n > 0; n-- {
			b.WriteString(extra[r.Intn(len(extra))])
		}
		check(b.String())
	}
	// Long texts: thousands of distinct paths and terms, so the collector
	// compacts and the path matcher prunes its memos many times.
	for i := 0; i < 20; i++ {
		var b strings.Builder
		for b.Len() < 200000 {
			b.WriteString(extra[r.Intn(len(extra))])
			if r.Intn(4) == 0 {
				b.WriteString(strings.Repeat("q", r.Intn(3)) + string(rune('a'+r.Intn(26))) + string(rune('0'+r.Intn(10))))
			}
		}
		check(b.String())
	}
	for _, s := range []string{strings.Repeat("ab/", 7000), strings.Repeat("a.", 10000), strings.Repeat("\n", 2000) + "$ ls", "$ ls" + strings.Repeat(" ", 2000) + ";", strings.Repeat("src/p.py x/y/z.json ", 5000)} {
		check(s)
	}
}

// FuzzFilesMatchRuneImplementation: the file paths found by byte offsets
// (which skip the rest of a run of path characters where neither file
// alternative matches) are the []rune implementation's for any text.
func FuzzFilesMatchRuneImplementation(f *testing.F) {
	for _, s := range []string{"a/b.py", "x.jsonx.py", "ab.c/d", "é.go a..py", "run.sh/.md", "\xffa.py", "a.b.c.d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g, w := Files(s), runeref.Files(s); !reflect.DeepEqual(g, w) {
			t.Fatalf("Files(%q) = %q, want %q", s, g, w)
		}
	})
}

// FuzzErrorsMatchRuneImplementation: the error names found by byte
// offsets (which pass over the rest of a word that is no error name, but
// for an "HTTP" inside it) are the []rune implementation's for any text.
func FuzzErrorsMatchRuneImplementation(f *testing.F) {
	for _, s := range []string{"xHTTP 404", "ValueErrorHTTP 500", "HTTPHTTP 503", "AB_CD_ERROR", "aHTTP\t4٣٤", "FATALx PANIC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g, w := Errors(s), runeref.Errors(s); !reflect.DeepEqual(g, w) {
			t.Fatalf("Errors(%q) = %q, want %q", s, g, w)
		}
	})
}
