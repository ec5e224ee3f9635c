package scrub_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestScrubSetKeyBlockLines: a private key block found in one text of a
// set has each of its body lines redacted where another text quotes it
// alone — a summary that leads with the first line after the BEGIN line
// (the proxy's summaries skip that line as a "-----" banner), JSON-escaped
// or not — and where the same text repeats one line after the block.
// Lines that are not the key's, and short lines, stay. Before, the block
// was one value and the quoted line reached disk in the summary.
func TestScrubSetKeyBlockLines(t *testing.T) {
	sc := newScrubber(t)
	line := func(i int) string { return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64] }
	block := "-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + line(1) + "\n" + line(2) + "\n" + line(3)[:24] + "==\n-----END OPENSSH PRIVATE" + " KEY-----\n"
	other := "Zx9" + strings.Repeat("Kq7Lm2Vb", 3) // base64, not the key's
	summary := "tool bash $ cat ~/.ssh/id_ed25519: " + line(1)
	if got := sc.Scrub(summary).Text; got != summary {
		t.Fatalf("the summary alone is redacted (%q): the test proves nothing", got)
	}
	for name, payload := range map[string]string{
		"plain":   block + "the first line was " + line(2) + "\n",
		"escaped": strings.ReplaceAll(block, "\n", `\n`) + "\nthe first line was " + line(2) + "\n",
	} {
		rs := sc.ScrubSet([]string{payload, summary, "quoting " + line(3)[:24] + "== and " + other, "ab"})
		for i, r := range rs {
			for k := 1; k <= 3; k++ {
				if strings.Contains(r.Text, line(k)[:20]) {
					t.Errorf("%s: field %d keeps key line %d: %q", name, i, k, r.Text)
				}
			}
		}
		if want := "tool bash $ cat ~/.ssh/id_ed25519: [REDACTED:contextfold-private-key-block]"; rs[1].Text != want {
			t.Errorf("%s: summary = %q, want %q", name, rs[1].Text, want)
		}
		if !strings.Contains(rs[2].Text, other) || rs[3].Text != "ab" {
			t.Errorf("%s: text that is not the key's was redacted: %q, %q", name, rs[2].Text, rs[3].Text)
		}
	}
}
