package ranked

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The labels as strings.Fields read them (the code labelWords replaced):
// the oracle of TestLabelWordsAsFields.
func labelOfFields(summary string) string {
	s := summary
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "] ")
		if i < 0 || i > maxLabelBytes {
			return ""
		}
		s = s[i+2:]
	}
	i := strings.Index(s, ": ")
	if i <= 0 || i > maxLabelBytes {
		return ""
	}
	words := strings.Fields(s[:i])
	if len(words) == 0 || len(words) > maxLabelWords {
		return ""
	}
	for _, w := range words {
		for _, r := range w {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-.@'", r) {
				return ""
			}
		}
	}
	return s[:i]
}

func speakerOfFields(summary string) string {
	s := summary
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "] ")
		if i < 0 {
			return ""
		}
		s = s[i+2:]
	}
	i := strings.Index(s, ": ")
	if i <= 0 {
		return ""
	}
	words := strings.Fields(s[:i])
	if len(words) == 0 || len(words) > maxLabelWords {
		return ""
	}
	for _, w := range words {
		if r, _ := utf8.DecodeRuneInString(w); !unicode.IsUpper(r) {
			return ""
		}
		for _, r := range w {
			if !unicode.IsLetter(r) && r != '\'' && r != '-' {
				return ""
			}
		}
	}
	return words[0]
}

// TestLabelWordsAsFields: labelOf and speakerOf read a label in one pass
// (labelWords) with the same answers as splitting it with strings.Fields,
// on summaries built from letters, digits, the label punctuation, ASCII
// and Unicode spaces (NBSP, NEL, U+2003), upper-case and non-Latin
// letters and invalid UTF-8.
func TestLabelWordsAsFields(t *testing.T) {
	parts := []string{"Caroline", "caroline37", "Dr", "Ana", "López", "O'Neil", "Jean-Luc", "user_2", "a.b@c", "X",
		" ", "  ", "\t", "\u00a0", "\u0085", "\u2003", "\n", "é", "É", "日本", "\xff", "\xe2\x82", "1", "?", "!", "[8 May] ", "] ", ": ", ":", "["}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", ": x", "Caroline: hi", "[8 May, 2023] Caroline: hi", "Dr Ana Lopez: x", "Dr Ana Maria Lopez: x",
		" Caroline : x", "caroline37: x", "tool mcp__fs__read: x", "\u00a0Ana\u00a0Lopez\u00a0: x", "Ana\xffB: x", strings.Repeat("A ", 40) + ": x"}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		if got, want := labelOf(c), labelOfFields(c); got != want {
			t.Fatalf("labelOf(%q) = %q, want %q", c, got, want)
		}
		if got, want := speakerOf(c), speakerOfFields(c); got != want {
			t.Fatalf("speakerOf(%q) = %q, want %q", c, got, want)
		}
	}
}
