package ranked

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
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
	weight := func(p Params, word string) float64 { return wordWeight(t, ix, prompt, p, word) }
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

// Rule "everyday words in an agent session" (Params.BackgroundAgent, off):
// the same prompt over the same words damps its everyday word in an agent
// session (tool outputs, an assistant's notes) and not in a chat (a
// speaker's turns), and the store's kind follows its nodes as they are
// added and removed: once chat turns are the majority the damping stops,
// and it comes back when they are replaced.
func TestBackgroundAgentOnly(t *testing.T) {
	ix := NewIndex()
	for i := range 40 {
		s := fmt.Sprintf("tool bash $ make: the build was fine on day %d", i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	ix.Add(40, "a", 12, "tool bash $ cat notes.txt", "what a weekend that was")
	ix.Add(41, "b", 12, "assistant: another weekend gone", "another weekend gone")
	ix.Add(42, "c", 12, "tool bash $ cat class.txt", "the pottery class was fun")
	ix.Add(43, "d", 12, "assistant: I love pottery", "I love pottery")
	prompt := "what happened to pottery on the weekend"
	weight := func(p Params, word string) float64 { return wordWeight(t, ix, prompt, p, word) }
	on, off := DefaultParams(), DefaultParams()
	on.BackgroundAgent = 0.25
	if a, b := weight(on, "weekend"), weight(off, "weekend"); a != b*0.75 {
		t.Errorf("agent session: weekend %v, want 3/4 of %v", a, b)
	}
	// 50 chat turns: the store is a chat now, and nothing is damped.
	for i := range 50 {
		s := fmt.Sprintf("%s: the weather was fine on day %d", []string{"Melanie", "Caroline"}[i%2], i)
		ix.Add(100+i, fmt.Sprint("chat", i), 12, s, s)
	}
	if a, b := weight(on, "weekend"), weight(off, "weekend"); a != b {
		t.Errorf("chat: weekend %v, want %v (undamped)", a, b)
	}
	for i := range 50 { // each chat turn replaced by a tool output
		s := fmt.Sprintf("tool bash $ ls: the listing of day %d", i)
		ix.Add(100+i, fmt.Sprint("tool", i), 12, s, s)
	}
	if a, b := weight(on, "weekend"), weight(off, "weekend"); a != b*0.75 {
		t.Errorf("agent session again: weekend %v, want 3/4 of %v", a, b)
	}
}

// wordWeight is the weight the prompt's word (a KindWord term of that
// source) takes in ix under p.
func wordWeight(t *testing.T, ix *Index, prompt string, p Params, word string) float64 {
	t.Helper()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, tm := range ix.query(prompt, p).terms {
		if tm.src == word && tm.kind == KindWord {
			return tm.weight
		}
	}
	t.Fatalf("no term for %q", word)
	return 0
}

// BenchmarkBackgroundScan is the cost of rule "everyday words" on a chat of
// 3,000 turns of common words and on an agent session of 3,000 nodes
// (testgen): off, multiplicative (Background 0.25) and as a pseudo-count
// (BackgroundDF 0.002). The scans of one index are read-only, so the
// settings share it.
func BenchmarkBackgroundScan(b *testing.B) {
	words := strings.Fields("job work child kid married wedding husband wife painting paint art picture photo sad happy trip travel country hobby music song friend mother dad house home car dog cat game book read write story movie school teacher class study family party dinner food cook garden flower beach park summer winter weekend pottery camping guitar")
	questions := []string{"What is Caroline's job?", "Is Melanie married?", "What did Caroline paint for her child?", "Why was Melanie sad after the trip?", "What did Melanie do on the weekend?", "What hobby does Caroline have?"}
	x := uint32(1)
	next := func(n int) int { x = x*1664525 + 1013904223; return int(x>>8) % n }
	g := testgen.New(31)
	for _, c := range []struct {
		name   string
		build  func(ix *Index)
		prompt func(i int) string
	}{
		{"chat", func(ix *Index) {
			for i := range 3000 {
				var sb strings.Builder
				sb.WriteString([]string{"Caroline", "Melanie"}[i%2] + ":")
				for range 8 + next(10) {
					sb.WriteString(" " + words[next(len(words))])
				}
				s := sb.String()
				ix.Add(i, fmt.Sprint(i), 12, s[:min(100, len(s))], s)
			}
		}, func(i int) string { return questions[i%len(questions)] }},
		{"agent", func(ix *Index) {
			for _, tn := range g.Turns(0, 3000) {
				ix.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
			}
		}, g.Prompt},
	} {
		b.Run(c.name, func(b *testing.B) {
			ix := NewIndex()
			c.build(ix)
			for _, s := range []struct {
				name   string
				bg, df float64
			}{{"off", 0, 0}, {"mul", 0.25, 0}, {"df", 0, 0.002}} {
				p := DefaultParams()
				p.Background, p.BackgroundDF, p.BackgroundAgent = s.bg, s.df, 0
				b.Run(s.name, func(b *testing.B) {
					for i := range 20 {
						ix.Scan(c.prompt(i), p)
					}
					for i := 0; b.Loop(); i++ {
						ix.Scan(c.prompt(i%20), p)
					}
				})
			}
		})
	}
}
