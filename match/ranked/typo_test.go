package ranked

import (
	"fmt"
	"strings"
	"testing"
)

// Rule "typos" (Params.Typo, off by default): a turn that misspells the
// question's rare word by one edit is found with the rule and not
// without it; a turn spelling it right ranks first.
func TestTypoFindsMisspelling(t *testing.T) {
	ix := NewIndex()
	for i := range 30 {
		s := fmt.Sprintf("%s: the weather was fine on day %d", []string{"melanie", "caroline"}[i%2], i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	ix.Add(30, "a", 12, "s", "caroline: that potery class was so much fun")
	ix.Add(40, "b", 12, "s", "caroline: i love the pottery studio downtown")
	prompt := "What did Caroline say about pottery?"
	has := func(r *Result, step int) bool {
		for _, p := range r.Picks {
			if p.Step == step {
				return true
			}
		}
		return false
	}
	off := DefaultParams()
	off.Typo = 0
	if r := ix.Scan(prompt, off); has(r, 30) {
		t.Fatalf("without the rule: picks %+v", r.Picks)
	}
	on := DefaultParams()
	on.Typo = 0.6
	r := ix.Scan(prompt, on)
	if len(r.Picks) < 2 || r.Picks[0].Step != 40 || !has(r, 30) {
		t.Fatalf("with the rule: picks %+v, want 40 (spelt right) then 30 (potery)", r.Picks)
	}
	var why []string
	for _, p := range r.Picks {
		if p.Step == 30 {
			why = p.Why
		}
	}
	if len(why) == 0 || !strings.HasPrefix(why[0], `poteri (one edit from "pottery", rule "typos")`) {
		t.Errorf("why %q", why)
	}
}

func TestEdits1(t *testing.T) {
	var got []string
	edits1("abc", func(v string) bool { got = append(got, v); return true })
	// 3 deletions, 2 transpositions, 3×25 substitutions, 4×26 insertions,
	// less the duplicates ("abbc" twice, …).
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] || v == "abc" {
			t.Fatalf("%q twice or the word itself", v)
		}
		seen[v] = true
	}
	for _, want := range []string{"ab", "bac", "abd", "abcd", "xabc"} {
		if !seen[want] {
			t.Errorf("%q missing", want)
		}
	}
	n := 0
	edits1("abc", func(string) bool { n++; return n < 3 })
	if n != 3 {
		t.Errorf("stopped after %d, want 3", n)
	}
}
