package harness

import (
	"strings"
	"testing"
	"unicode"
)

// TestFileDelimIsTheDelimiterSet: isFileDelim's table answers as the set
// it stands for (white space, and the punctuation around a path) for every
// code point.
func TestFileDelimIsTheDelimiterSet(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.IsSpace(r) || strings.ContainsRune("\"'`()[]{}<>,;|=*&!?", r)
		if got := isFileDelim(r); got != want {
			t.Fatalf("isFileDelim(%U) = %v, want %v", r, got, want)
		}
	}
}
