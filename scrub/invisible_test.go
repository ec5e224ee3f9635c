package scrub

import (
	"strings"
	"testing"
)

// TestInvisibleAndFullWidth: a secret whose name or value holds a
// zero-width character, a soft hyphen, a no-break space or a full-width
// form (a chat client's or a CJK keyboard's) is redacted like the plain
// one, and the look-alikes around it are kept.
func TestInvisibleAndFullWidth(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(11)
	for _, c := range []struct{ name, format string }{
		{"full-width equals", "API_KEY\uFF1D%s\n"},
		{"full-width colon", "password\uFF1A %s\n"},
		{"full-width name", "\uFF30\uFF21\uFF33\uFF33\uFF37\uFF2F\uFF32\uFF24=%s\n"},
		{"zero-width space in the name", "PASS\u200bWORD=%s\n"},
		{"zero-width non-joiner in the name", "DB_PASS\u200cWORD=%s\n"},
		{"zero-width joiner in the name", "TOK\u200dEN=%s\n"},
		{"word joiner in the name", "API_\u2060KEY=%s\n"},
		{"soft hyphen in the name", "PASS\u00adWORD=%s\n"},
		{"byte-order mark in the name", "SECRET\ufeff_KEY=%s\n"},
		{"zero-width space before =", "PASSWORD\u200b=%s\n"},
		{"no-break space after the colon", "password:\u00a0%s\n"},
		{"ideographic space", "password\uFF1A\u3000%s\n"},
		{"JSON-escaped zero-width space", `{"env": "PASS\u200bWORD=%s"}`},
		{"in a larger text", strings.Repeat("log line without secrets\n", 1200) + "TOK\u200bEN=%s\n" + strings.Repeat("more log\n", 100)},
	} {
		v := g.value("PUNCTPW")
		g.memo = map[string]string{}
		text := strings.Replace(c.format, "%s", v, 1)
		res := s.Scrub(text)
		if strings.Contains(res.Text, v) || res.Redactions == 0 {
			t.Errorf("%s: the secret survived:\n%q", c.name, res.Text)
		}
	}
	// A vendor token split by a zero-width space: the marker covers it whole.
	tok := "gh" + "p_" + g.pick(alnum, 36)
	res := s.Scrub("token " + tok[:10] + "\u200b" + tok[10:] + " end\n")
	if res.Text != "token [REDACTED:github-pat] end\n" {
		t.Errorf("zero-width space inside a token: %q", res.Text)
	}
	// Look-alikes stay: CJK prose with full-width punctuation, an emoji
	// sequence joined by U+200D, a no-break space in prose.
	for _, text := range []string{
		"\u5bc6\u7801\u91cd\u7f6e\u4e86\uFF0C\u8bf7\u67e5\u770b\u90ae\u4ef6\u3002\uFF08\u5df2\u5b8c\u6210\uFF09\n",
		"team \U0001F468\u200d\U0001F4BB shipped it\n",
		"the token\u00a0expired at 10:00; rerun the\u00a0job\n",
		"\uFF21\uFF30\uFF29 version \uFF12\n",
	} {
		if res := s.Scrub(text); res.Text != text {
			t.Errorf("look-alike changed: %q → %q", text, res.Text)
		}
	}
}

// BenchmarkScrubOneInvisible is BenchmarkScrubPerMB's text with one
// no-break space between two ASCII letters: its folded view is read in a
// window around it (foldWindows), not a second time whole (the MB/s column
// stays BenchmarkScrubPerMB's).
func BenchmarkScrubOneInvisible(b *testing.B) {
	s := newTestScrubber(b)
	text := benchText()
	text = text[:len(text)/2] + "a\u00a0b" + text[len(text)/2:]
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Scrub(text)
	}
}

// TestLookalikeNames: a secret's name written with Cyrillic or Greek
// letters that look like Latin ones is read as the name it looks like; the
// value alone is redacted (the name's letters are kept as written), and
// Russian and Greek words, which hold letters that look like no Latin one
// or fold to no secret's name, are kept.
func TestLookalikeNames(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(12)
	for _, c := range []struct{ name, format string }{
		{"Cyrillic TOKEN", "\u0422\u041e\u041a\u0415N=%s\n"},
		{"Cyrillic PASSWORD", "\u0420\u0410\u0405\u0405W\u041eRD=%s\n"},
		{"Greek PASSWORD", "\u03a1\u0391SSW\u039fRD=%s\n"},
		{"Cyrillic API_KEY", "\u0410\u0420\u0406_\u041a\u0415Y=%s\n"},
		{"Cyrillic SECRET", "\u0405\u0415\u0421R\u0415\u0422=%s\n"},
		{"Greek TOKEN, no Latin letter", "\u03a4\u039f\u039a\u0395\u039d=%s\n"},
		{"lower-case Cyrillic in YAML", "db_\u0440\u0430ssword: %s\n"},
		{"export", "export DB_\u0420\u0410SSWORD='%s'\n"},
		{"prose", "the \u0440\u0430ssword is %s\n"},
		{"JSON member", `{"\u0440\u0430ssword": "%s"}`},
		{"JSON-escaped look-alike", `{"env": "\u0420\u0410SSWORD=%s"}`},
		{"Greek header name", "\u03a7-Api-\u039aey: %s\n"},
	} {
		v := g.value("PUNCTPW")
		g.memo = map[string]string{}
		text := strings.Replace(c.format, "%s", v, 1)
		res := s.Scrub(text)
		if strings.Contains(res.Text, v) || res.Redactions == 0 {
			t.Errorf("%s: the secret survived:\n%q", c.name, res.Text)
			continue
		}
		// Only the value is replaced: the name keeps its letters.
		if k := strings.Index(text, v); !strings.HasPrefix(res.Text, text[:k]) {
			t.Errorf("%s: the name changed: %q → %q", c.name, text, res.Text)
		}
	}
	for _, text := range []string{
		"\u041f\u0430\u0440\u043e\u043b\u044c \u0431\u044b\u043b \u0438\u0437\u043c\u0435\u043d\u0451\u043d \u0432\u0447\u0435\u0440\u0430.\n",
		"\u0422\u041e\u041a\u0415\u041d=\u0442\u0435\u0441\u0442\u043e\u0432\u044b\u0439 (\u0441\u043c. README)\n",
		"\u03a4\u03bf \u039a\u0395\u03a5 \u03b5\u03af\u03bd\u03b1\u03b9 \u03c3\u03c4\u03bf config.yaml\n",
		"\u0421\u0420\u041e\u041a=2026-12-07 \u0410\u0412\u0422\u041e=on\n",
	} {
		if res := s.Scrub(text); res.Text != text {
			t.Errorf("look-alike changed: %q → %q", text, res.Text)
		}
	}
}
