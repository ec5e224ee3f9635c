package ranked

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
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

// BenchmarkTypoScan is BenchmarkScanAfterFold's turn (3,000 generated
// agent nodes opened from a snapshot, a fold of one node, then a timed
// scan) with rule "typos" off and on: what the rule costs a scan.
func BenchmarkTypoScan(b *testing.B) {
	g := testgen.New(31)
	data := generatedSnapshot(b, g, 3000)
	next := 3000
	for _, w := range []float64{0, 0.6} {
		name := "off"
		if w > 0 {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			ix, err := decodeSnapshot(data)
			if err != nil {
				b.Fatal(err)
			}
			p := DefaultParams()
			p.Typo = w
			for i := range 20 {
				ix.Scan(g.Prompt(i), p)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				tn := g.Turn(next)
				next++
				ix.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
				b.StartTimer()
				ix.Scan(g.Prompt(i%20), p)
			}
		})
	}
}

// typoVariants offers, in edits1's order, every variant an archive holds:
// filtered by the term filter and by membership, the two enumerations
// give the same sequence (first occurrences, the word itself left out),
// for random words and random vocabularies holding many of their
// variants and many strings that are none.
func TestTypoVariantsMatchEdits1(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	letters := "abcdeeilmnorst" // few letters: many repeats, swaps of equal letters
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	for trial := range 300 {
		w := word(typoMinLen + r.IntN(6))
		held := map[string]bool{}
		var all []string
		edits1(w, func(v string) bool { all = append(all, v); return true })
		for _, v := range all {
			if r.IntN(8) == 0 {
				held[v] = true
			}
		}
		for range 2000 {
			held[word(3+r.IntN(10))] = true
		}
		var z filterSize
		for v := range held {
			if typoKey(v) {
				z.count(len(v))
			}
		}
		f := z.filter()
		for v := range held {
			if typoKey(v) {
				addTerm(f, v)
			}
		}
		var want, got []string
		edits1(w, func(v string) bool {
			if held[v] {
				want = append(want, v)
			}
			return true
		})
		seen := map[string]bool{w: true}
		typoVariants(w, f, func(v string) bool {
			if held[v] && !seen[v] {
				seen[v] = true
				got = append(got, v)
			}
			return true
		})
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d, word %q:\n got  %q\n want %q", trial, w, got, want)
		}
	}
}

// The filter holds the terms added after it was built (insert), and is
// built again when they outgrow it: a misspelling folded after the first
// scan with the rule on is found by the next.
func TestTypoFilterFollowsAdds(t *testing.T) {
	ix := NewIndex()
	for i := range 30 {
		s := fmt.Sprintf("%s: the weather was fine on day %d", []string{"melanie", "caroline"}[i%2], i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	on := DefaultParams()
	on.Typo = 0.6
	prompt := "What did Caroline say about pottery?"
	ix.Scan(prompt, on)
	built := ix.typo
	if built == nil {
		t.Fatal("no filter after a scan with the rule on")
	}
	ix.Add(30, "a", 12, "s", "caroline: that potery class was so much fun")
	r := ix.Scan(prompt, on)
	if len(r.Picks) == 0 || r.Picks[0].Step != 30 {
		t.Fatalf("added misspelling not found: %+v", r.Picks)
	}
	for i := range built.terms.cap + 10 {
		s := fmt.Sprintf("melanie: zzword%s", strings.Repeat(string(rune('a'+i%26)), 1+i/26))
		ix.Add(100+i, fmt.Sprint(100+i), 12, s, s)
	}
	ix.Add(5000, "b", 12, "s", "melanie: the pottary wheel spun")
	r = ix.Scan(prompt, on)
	if ix.typo == built {
		t.Fatal("filter not built again past its capacity")
	}
	found := false
	for _, p := range r.Picks {
		found = found || p.Step == 5000
	}
	if !found {
		t.Fatalf("misspelling added past the filter's capacity not found: %+v", r.Picks)
	}
}

// A snapshot too large for the first scan to build its filter has it
// built beside the scans: the scans before it is ready look each variant
// up, and every scan answers as an index whose filter was built in place.
// Closing the snapshot while it is built waits for the builder.
func TestTypoFilterBuiltInBackground(t *testing.T) {
	old := typoSyncTerms
	typoSyncTerms = 10
	defer func() { typoSyncTerms = old }()
	g := testgen.New(5)
	mem := NewIndex()
	words := strings.Fields("pottery painting gardening adoption counseling marathon photography volunteering")
	for i, tn := range g.Turns(0, 400) {
		text := tn.Summary + "\n" + tn.RawContent
		if i%7 == 0 { // a misspelt word: a letter dropped
			w := words[i%len(words)]
			text += " " + w[:3] + w[4:]
		}
		mem.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, text)
	}
	data := encoded(t, mem)
	open := func() *Index {
		ix, err := decodeSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	p := DefaultParams()
	p.Typo = 0.6
	prompts := []string{}
	for _, w := range words {
		prompts = append(prompts, "what did we say about "+w+"?")
	}
	ref := open()
	typoSyncTerms = 1 << 30
	var want []string
	for _, q := range prompts {
		want = append(want, fmt.Sprint(ref.Scan(q, p).Picks))
	}
	if ref.typo == nil {
		t.Fatal("reference index built no filter")
	}
	typoSyncTerms = 10
	bg := open()
	for i, q := range prompts {
		if got := fmt.Sprint(bg.Scan(q, p).Picks); got != want[i] {
			t.Fatalf("prompt %q while building:\n got  %s\n want %s", q, got, want[i])
		}
	}
	bg.mu.Lock()
	b := bg.typoBuild
	bg.mu.Unlock()
	if b != nil {
		b.snap.users.Wait() // the builder has stored its filter
	}
	for i, q := range prompts {
		if got := fmt.Sprint(bg.Scan(q, p).Picks); got != want[i] {
			t.Fatalf("prompt %q after the build:\n got  %s\n want %s", q, got, want[i])
		}
	}
	bg.mu.Lock()
	installed := bg.typo != nil && bg.typoBuild == nil
	bg.mu.Unlock()
	if !installed {
		t.Fatal("background filter not installed")
	}
	// Closing while a build runs: reset waits for it, under -race.
	cl := open()
	cl.Scan(prompts[0], p)
	cl.Scan(prompts[1], p) // the second scan starts the build
	cl.mu.Lock()
	started := cl.typoBuild != nil
	cl.reset()
	cl.mu.Unlock()
	if !started {
		t.Fatal("no background build started")
	}
}

// Rule "two words are no typo" (Params.TypoWords): for every pair of
// English words one edit apart, a prompt asking about one finds no node
// that holds only the other; a misspelling that is no word is still
// found, on either side.
func TestTypoTwoWordsAreNoTypo(t *testing.T) {
	pairs := [][2]string{{"token", "taken"}, {"patch", "match"}, {"model", "mode"}, {"field", "yield"},
		{"print", "point"}, {"class", "clash"}, {"string", "strange"}, {"change", "hang"}}
	for _, pr := range pairs {
		asked, held := Analyze(pr[0])[0].Text, Analyze(pr[1])[0].Text
		if !IsWord(asked) || !IsWord(held) {
			t.Fatalf("%q or %q not in the dictionary", asked, held)
		}
		ix := NewIndex()
		for i := range 30 {
			s := fmt.Sprintf("tool bash: ran the suite again, %d passed", i)
			ix.Add(i, fmt.Sprint(i), 12, s, s)
		}
		ix.Add(40, "x", 12, "s", "tool bash: the "+pr[1]+" was read from settings.py")
		prompt := "what about the " + pr[0] + "?"
		off := DefaultParams()
		off.TypoWords = false
		if r := ix.Scan(prompt, off); len(r.Picks) == 0 || r.Picks[0].Step != 40 {
			t.Fatalf("%q without the guard: picks %+v, want 40 (%q one edit away)", prompt, r.Picks, pr[1])
		}
		if r := ix.Scan(prompt, DefaultParams()); len(r.Picks) != 0 {
			t.Errorf("%q: picks %+v, want none: %q is another word", prompt, r.Picks, pr[1])
		}
	}
	// A misspelling that is no word: archive side and prompt side.
	ix := NewIndex()
	for i := range 30 {
		s := fmt.Sprintf("tool bash: ran the suite again, %d passed", i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	ix.Add(40, "x", 12, "s", "tool bash: the pottery order was read from settings.py")
	ix.Add(41, "y", 12, "s", "assistant: the serializr handles it")
	for prompt, want := range map[string]int{"what about the potery?": 40, "what about the serializer?": 41} {
		if r := ix.Scan(prompt, DefaultParams()); len(r.Picks) == 0 || r.Picks[0].Step != want {
			t.Errorf("%q: picks %+v, want %d first", prompt, r.Picks, want)
		}
	}
}

// The embedded dictionary of rule "two words are no typo" is sorted and
// without duplicates, as its binary search needs, and the search finds
// every line of it and nothing between or around them.
func TestLexiconSearch(t *testing.T) {
	text := lexicon()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 10000 || !strings.HasSuffix(text, "\n") {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		if i > 0 && lines[i-1] >= l {
			t.Fatalf("line %d %q after %q: not sorted or duplicated", i, l, lines[i-1])
		}
		if !IsWord(l) {
			t.Fatalf("%q not found", l)
		}
		for _, miss := range []string{l + "a", l[:len(l)-1], "0" + l, l + "~"} {
			if !slices.Contains(lines, miss) && IsWord(miss) {
				t.Fatalf("%q found", miss)
			}
		}
		if i > 2000 {
			break // the misses' slices.Contains is linear
		}
	}
	for _, w := range []string{"", "a", "zzzzzzzz", "\n"} {
		if IsWord(w) {
			t.Errorf("%q found", w)
		}
	}
	for _, small := range []string{"", "b\n", "b\nd\n", "b\nd\nf\n"} {
		for _, w := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			want := strings.Contains("\n"+small, "\n"+w+"\n")
			if got := inSortedLines(small, w); got != want {
				t.Errorf("inSortedLines(%q, %q) = %v", small, w, got)
			}
		}
	}
}
