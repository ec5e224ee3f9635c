package ranked

import (
	"fmt"
	"testing"
)

// The embedded table gives everyday stems their SCOWL size level and
// names, identifiers and rare words none.
func TestTierTable(t *testing.T) {
	for _, c := range []struct {
		word string
		want int
	}{
		{"weekend", 10}, {"weekends", 10}, {"feeling", 10},
		{"guitar", 20}, {"pottery", 35},
		{"caroline", 0}, {"kubectl", 0}, {"zyzzyva", 0},
	} {
		stem := ""
		for _, tm := range Analyze(c.word) {
			if tm.Kind == KindWord {
				stem = tm.Text
			}
		}
		if got := Tier(stem); got != c.want {
			t.Errorf("Tier(%q, stem of %q) = %d, want %d", stem, c.word, got, c.want)
		}
	}
}

// Rule "everyday words" (Params.Background, off by default): with it, a
// turn holding a question's rarer word outranks one holding its everyday
// word as often; without it the two weigh by their counts alone. A
// name and an identifier keep their weights.
func TestBackgroundDampsEverydayWords(t *testing.T) {
	ix := NewIndex()
	for i := range 40 {
		s := fmt.Sprintf("%s: the weather was fine on day %d", []string{"Melanie", "Caroline"}[i%2], i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	// "weekend" (size 10) and "pottery" (size 35) are each said by two turns.
	ix.Add(40, "a", 12, "s", "Caroline: what a weekend that was")
	ix.Add(41, "b", 12, "s", "Melanie: another weekend gone")
	ix.Add(42, "c", 12, "s", "Caroline: the pottery class was fun")
	ix.Add(43, "d", 12, "s", "Melanie: I love pottery")
	prompt := "what did Melanie do for pottery on the weekend"
	weight := func(p Params, word string) float64 {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		q := ix.query(prompt, p)
		for _, tm := range q.terms {
			if tm.src == word && tm.kind == KindWord {
				return tm.weight
			}
		}
		t.Fatalf("no term for %q", word)
		return 0
	}
	off, on := DefaultParams(), DefaultParams()
	on.Background = 0.5
	if a, b := weight(off, "weekend"), weight(off, "pottery"); a != b {
		t.Fatalf("off: weekend %v, pottery %v, want equal (same df)", a, b)
	}
	if a, b := weight(on, "weekend"), weight(off, "weekend"); a != b*0.5 {
		t.Errorf("on: weekend %v, want half of %v", a, b)
	}
	if a, b := weight(on, "pottery"), weight(off, "pottery"); a != b*(1-0.5*0.25) {
		t.Errorf("on: pottery %v, want 7/8 of %v", a, b)
	}
	if a, b := weight(on, "Melanie"), weight(off, "Melanie"); a != b {
		t.Errorf("on: a name moved, %v against %v", a, b)
	}
}
