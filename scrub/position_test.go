package scrub

import (
	"strings"
	"testing"
	"time"
)

// TestPositionRulesLinear: a text of 1 MiB made of one of the position
// rules' shapes over and over (CSV header lines, "kind: Secret" lines,
// JSON Secrets, PIN labels with no line break, '|' tables) is scrubbed in
// well under 10 s (about 0.1–0.6 s on the 2-core CI machine). Before their
// begin functions looked back a bounded way and a listing's or a
// document's later headers were left to the first, these took 12 s to
// 3.5 minutes: every anchor scanned back to the text's start or re-read
// the 64 KiB after it.
func TestPositionRulesLinear(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("timing: 1 MiB texts")
	}
	s := newTestScrubber(t)
	for _, unit := range []string{"password,token\n", "kind: Secret\n", `"kind": "Secret", `, "PIN: 1234 ",
		" a | password |\n", "x://a:b/c@d ", "expect \"pw\" send "} {
		text := strings.Repeat(unit, (1<<20)/len(unit))
		start := time.Now()
		s.Scrub(text)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%q × %d: %v", unit, (1<<20)/len(unit), d)
		}
	}
}
