package scrub

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// A dense text (a keyword on every line for 300 KiB) is cut into windows of
// about windowMaxMerged, not merged into one: gitleaks compares every
// finding of a fragment with every other, and 1 MiB of TOKEN=… lines took
// minutes as one fragment. Every keyword line is still inside a window
// whole, and every value is redacted (under -race, those of the first eighth
// of the lines).
func TestDenseTextWindowsBounded(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var values []string
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		v := make([]byte, 24)
		for k := range v {
			v[k] = alnum[r.IntN(len(alnum))]
		}
		v[3], v[11] = '0'+byte(r.IntN(10)), '0'+byte(r.IntN(10)) // a token holds digits
		values = append(values, string(v))
		fmt.Fprintf(&b, "API_TOKEN_%d=%s\n", i, v)
	}
	text := b.String()
	ws := s.windows(text)
	if len(ws) < 4 {
		t.Fatalf("%d windows over %d KiB of keyword lines: merged into too few", len(ws), len(text)>>10)
	}
	for i, w := range ws {
		if w[1]-w[0] > windowMaxMerged+windowBefore+windowAfter+2*windowSnap {
			t.Errorf("window %d is %d bytes, over the bound", i, w[1]-w[0])
		}
		if i > 0 && w[0] < ws[i-1][0] {
			t.Errorf("window %d starts before window %d", i, i-1)
		}
	}
	// Each line is inside one window whole.
	for off := 0; off < len(text); {
		end := off + strings.IndexByte(text[off:], '\n') + 1
		inside := false
		for _, w := range ws {
			if w[0] <= off && end-1 <= w[1] {
				inside = true
				break
			}
		}
		if !inside {
			t.Fatalf("line %q at %d is in no window whole", text[off:end-1], off)
		}
		off = end
	}
	// Under the race detector (which adds nothing to this single-goroutine
	// scrub and makes it ~40 times slower: minutes) only the first eighth of
	// the lines is scrubbed; scripts/test.sh scrubs all of it without -race.
	if raceEnabled {
		n := len(values) / 8
		values = values[:n]
		off := 0
		for range n {
			off += strings.IndexByte(text[off:], '\n') + 1
		}
		text = text[:off]
	}
	got := s.Scrub(text).Text
	for _, v := range values {
		if i := strings.Index(got, v); i >= 0 {
			t.Fatalf("a value reached the output: %q", got[max(0, i-40):i+len(v)])
		}
	}
}
