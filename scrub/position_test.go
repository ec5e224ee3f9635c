package scrub

import (
	"strings"
	"testing"
)

// BenchmarkPositionRulesRepeated scrubs a text of 1 MiB made of one of the
// position rules' shapes over and over (CSV header lines, "kind: Secret"
// lines, JSON Secrets, PIN labels with no line break, '|' tables, URLs,
// expect scripts): about 0.1–0.6 s each on the 2-core machine. Before
// their begin functions looked back a bounded way and a listing's or a
// document's later headers were left to the first, these took 12 s to
// 3.5 minutes: every anchor scanned back to the text's start or re-read
// the 64 KiB after it.
//
//	go test ./scrub -run '^$' -bench PositionRulesRepeated -benchtime 1x
func BenchmarkPositionRulesRepeated(b *testing.B) {
	s, err := New()
	if err != nil {
		b.Fatal(err)
	}
	for _, unit := range []string{"password,token\n", "kind: Secret\n", `"kind": "Secret", `, "PIN: 1234 ",
		" a | password |\n", "x://a:b/c@d ", "expect \"pw\" send "} {
		text := strings.Repeat(unit, (1<<20)/len(unit))
		b.Run(strings.TrimSpace(unit), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scrub(text)
			}
		})
	}
}
