package ranked

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
)

// The embedded table holds WordNet's derivations and first-sense
// synonyms, keyed and valued by the analyser's stems.
func TestRelatedTable(t *testing.T) {
	for _, c := range []struct{ stem, want string }{
		{"marri", "marriag"}, // married → marriage (derivation)
		{"marriag", "marri"},
		{"job", "occup"},     // job → occupation (first sense)
		{"paint", "painter"}, // paint → painter (derivation)
	} {
		if !slices.Contains(Related(c.stem), c.want) {
			t.Errorf("Related(%q) = %q, want it to hold %q", c.stem, Related(c.stem), c.want)
		}
	}
	if r := Related("the"); r != nil {
		t.Errorf("a stop word has links %q", r)
	}
	for _, r := range Related("child") {
		if r == "child" {
			t.Error("child is related to itself")
		}
	}
}

// Rule "related words" (Params.Related, off by default): a turn that says
// the question's word in another word ("job" / "occupation") is found
// with the rule and not without it; a turn holding the word itself ranks
// first.
func TestRelatedFindsOtherWord(t *testing.T) {
	ix := NewIndex()
	for i := range 30 {
		s := fmt.Sprintf("%s: the weather was fine on day %d", []string{"Melanie", "Caroline"}[i%2], i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	ix.Add(30, "a", 12, "s", "Caroline: my occupation is nursing at the clinic")
	ix.Add(40, "b", 12, "s", "Caroline: I start the new job on monday")
	prompt := "What is Caroline's job?"
	has := func(r *Result, step int) bool {
		return slices.ContainsFunc(r.Picks, func(p Pick) bool { return p.Step == step })
	}
	off := DefaultParams()
	off.Related = 0
	if r := ix.Scan(prompt, off); has(r, 30) || !has(r, 40) {
		t.Fatalf("without the rule: picks %+v", r.Picks)
	}
	on := DefaultParams()
	on.Related = 0.5
	r := ix.Scan(prompt, on)
	if len(r.Picks) < 2 || r.Picks[0].Step != 40 || !has(r, 30) {
		t.Fatalf("with the rule: picks %+v, want 40 (job) then 30 (occupation)", r.Picks)
	}
	for _, p := range r.Picks {
		if p.Step == 30 && (len(p.Why) == 0 || !strings.HasPrefix(p.Why[0], `occup (related to "job", rule "related words")`)) {
			t.Errorf("why %q", p.Why)
		}
	}
	// The same bytes every scan (the table's order, no map order).
	for range 3 {
		if again := ix.Scan(prompt, on); fmt.Sprint(again.Picks) != fmt.Sprint(r.Picks) {
			t.Fatalf("scan differs: %+v against %+v", again.Picks, r.Picks)
		}
	}
}

// A related word is never looked up for a word the prompt does not hold
// as a plain word (an identifier part, a compound), and at most
// relatedMax related words join one prompt word.
func TestRelatedTermsBounded(t *testing.T) {
	ix := NewIndex()
	words := Related("child")
	if len(words) <= relatedMax {
		t.Skipf("child has %d related words, not more than %d", len(words), relatedMax)
	}
	// Every related word of "child" is held by some node (as its stem,
	// which the analyser gives back for these words).
	for i, w := range words {
		ix.Add(i, fmt.Sprint(i), 12, "s", "Bob: "+w+" "+w)
	}
	on := DefaultParams()
	on.Related = 0.5
	ix.mu.Lock()
	q := ix.query("the child", on)
	ix.mu.Unlock()
	n := 0
	for _, qt := range q.terms {
		if qt.kind == KindRelated {
			n++
			if qt.primary || qt.src != "child" {
				t.Errorf("related term %+v: primary or not in the word's group", qt)
			}
		}
	}
	if n == 0 || n > relatedMax {
		t.Errorf("%d related terms, want 1..%d", n, relatedMax)
	}
	ix.mu.Lock()
	q = ix.query("child_care.go", on)
	ix.mu.Unlock()
	for _, qt := range q.terms {
		if qt.kind == KindRelated {
			t.Errorf("related term %+v of an identifier part", qt)
		}
	}
}

// BenchmarkRelatedScan is the cost of rule "related words": a scan after a
// fold, as BenchmarkScanAfterFold, with the rule off (Related 0) and on
// (0.5), on the generated agent store (3,000 nodes) and on a generated
// chat of 3,000 turns of common words, many of which have related words
// the chat also says (job / occupation / work, child / kid, married /
// marriage / wedding …), asked questions of those words. Each store is
// built in its own sub-benchmark (-bench 'RelatedScan/chat/' builds only
// the chat).
func BenchmarkRelatedScan(b *testing.B) {
	words := strings.Fields("job occupation work worker child kid children married marriage wedding husband wife painting painter paint art picture photo photograph sad unhappy upset happy glad trip journey travel country nation land hobby pursuit music musical song friend buddy mother mom father dad house home car dog puppy cat game book read write story movie film school teacher class study family party dinner food cook cooking garden flower beach park summer winter")
	questions := []string{"What is Caroline's job?", "Is Melanie married?", "What did Caroline paint for her child?", "Why was Melanie sad after the trip?", "Which country did they travel to?", "What hobby does Caroline have?"}
	x := uint32(1)
	next := func(n int) int { x = x*1664525 + 1013904223; return int(x>>8) % n }
	chatTurn := func(i int) string {
		var sb strings.Builder
		sb.WriteString([]string{"Caroline", "Melanie"}[i%2] + ":")
		for range 8 + next(10) {
			sb.WriteString(" " + words[next(len(words))])
		}
		return sb.String()
	}
	g := testgen.New(31)
	for _, c := range []struct {
		name   string
		build  func(ix *Index, from, n int) // adds nodes from..from+n-1
		prompt func(i int) string
	}{
		{"agent", func(ix *Index, from, n int) {
			for _, tn := range g.Turns(from, n) {
				ix.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
			}
		}, g.Prompt},
		{"chat", func(ix *Index, from, n int) {
			for i := from; i < from+n; i++ {
				s := chatTurn(i)
				ix.Add(i, fmt.Sprint(i), 12, s[:min(100, len(s))], s)
			}
		}, func(i int) string { return questions[i%len(questions)] }},
	} {
		b.Run(c.name, func(b *testing.B) {
			ix := NewIndex()
			c.build(ix, 0, 3000)
			next := 3000
			for _, w := range []float64{0, 0.5} {
				p := DefaultParams()
				p.Related = w
				name := "off"
				if w > 0 {
					name = "on"
				}
				b.Run(name, func(b *testing.B) {
					for i := range 20 {
						ix.Scan(c.prompt(i), p)
					}
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						b.StopTimer()
						c.build(ix, next, 1)
						next++
						b.StartTimer()
						ix.Scan(c.prompt(i%20), p)
					}
				})
			}
		})
	}
}
