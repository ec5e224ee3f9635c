package match_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// exchangeCase is one planted exchange (an assistant's call and its tool
// output) and the assistant's nodes that restate it: kind names which
// (see plantExchanges).
type exchangeCase struct {
	kind   string
	words  string // the class in plain words (zorvex plimtar)
	answer string // the output's line that answers
	output int    // the output's step
}

// exchangeKinds are the assistant's nodes that a length-normalised score
// puts over the tool output holding the evidence, as an agent session
// writes them: "call" the call whose sentence holds the question's words
// ("Let me grep for the zorvex plimtar class and see what it prints"),
// "echo" the assistant's next call restating what the output showed,
// "later note" a note forty steps on restating it, "all" the three.
var exchangeKinds = []string{"call", "echo", "later note", "all"}

// plantExchanges plants, on n generated small turns, three cases of each
// of exchangeKinds, each with words of its own: at step base the
// assistant's call `grep -n -A 24 "class <Camel>" <path>`, at base+1 its
// output (the class's line and the 24 after it), then the kind's
// restatements, short and dense: each holds only words the output holds.
func plantExchanges(g testgen.Gen, n int) ([]contextfold.Turn, []exchangeCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "dril", "mab", "sef", "kri", "nol", "budo", "gav", "wen", "fip", "yul", "hask", "rog", "tum", "cep"}
	var cases []exchangeCase
	for k, kind := range exchangeKinds {
		for r := 0; r < 3; r++ {
			i := 3*k + r
			m := len(syll)
			cases = append(cases, exchangeCase{kind: kind, words: syll[(i+2)%m] + syll[(i+9)%m] + "k " + syll[(i+4)%m] + syll[(i+13)%m] + "d"})
		}
	}
	for i := range cases {
		c := &cases[i]
		a, b, _ := strings.Cut(c.words, " ")
		camel := strings.ToUpper(a[:1]) + a[1:] + strings.ToUpper(b[:1]) + b[1:]
		base := 10 + i*(n-80)/len(cases)
		path := fmt.Sprintf("src/app/module_%d.py", i)
		line := 1000 + 37*i
		grep := fmt.Sprintf("grep -n -A 24 \"class %s\" %s", camel, path)
		c.answer = fmt.Sprintf("%d:class %s(Base):", line, camel)
		c.output = base + 1
		thought := "Searching the sources."
		if c.kind == "call" || c.kind == "all" {
			thought = "Let me grep for the " + c.words + " class and see what it prints."
		}
		turns[base] = contextfold.Turn{StepID: base, Summary: "assistant bash $ " + grep + ": " + thought,
			RawContent: fmt.Sprintf("[assistant tool_call bash]\n\nTHOUGHT: %s\n\n```bash\n%s\n```\n", thought, grep)}
		var out strings.Builder
		out.WriteString(c.answer + "\n")
		for l := 1; l <= 24; l++ {
			fmt.Fprintf(&out, "%d-    def step_%d(self, item): return self.queue.drain(item, %d)\n", line+l, l, l)
		}
		turns[base+1] = contextfold.Turn{StepID: base + 1, Summary: "tool bash $ " + grep + ": " + c.answer,
			RawContent: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n" + out.String() + "</output>\n"}
		if c.kind == "echo" || c.kind == "all" {
			sed := fmt.Sprintf("sed -n '%d,%dp' %s", line, line+30, path)
			turns[base+2] = contextfold.Turn{StepID: base + 2, Summary: "assistant bash $ " + sed + ": grep found the " + c.words + " class.",
				RawContent: fmt.Sprintf("[assistant tool_call bash]\n\nTHOUGHT: grep found the %s class.\n\n```bash\n%s\n```\n", c.words, sed)}
		}
		if c.kind == "later note" || c.kind == "all" {
			turns[base+40] = contextfold.Turn{StepID: base + 40, Summary: "assistant: grep found the " + c.words + " class.",
				RawContent: "[assistant]\n\ngrep found the " + c.words + " class.\n"}
		}
	}
	return turns, cases
}

// exchangePrompt is the question asked about case c.
func exchangePrompt(c exchangeCase) string {
	return fmt.Sprintf("what did grep print for the %s class?", c.words)
}

// Rule "an output answers for its exchange" (ranked.Params.OutputFirst),
// every kind, on a store of 1,000 generated nodes: asked what a command
// printed, the scan puts the tool output that holds it first, not the
// call whose sentence holds the question's words nor the assistant's
// notes restating it, short and dense, which a length-normalised score
// ranks above it (the end-of-session questions of `cfeval questions`:
// "What version of urllib3 was installed in the environment?" put the
// `pip show urllib3` call first, its output third). The rule only orders:
// the scan's picks (hydrated or dropped) are the same with it and without.
func TestOutputFirstEveryKind(t *testing.T) {
	testExchanges(t, 1000)
}

// The same at 100,000 nodes: run with CONTEXTFOLD_BENCH_LARGE=1.
func TestOutputFirstEveryKindLarge(t *testing.T) {
	skipUnlessLarge(t)
	testExchanges(t, 100_000)
}

func testExchanges(t *testing.T, n int) {
	turns, cases := plantExchanges(testgen.New(uint64(n)+5), n)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		prompt := exchangePrompt(c)
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := stepsOf(res.Selected)
		if len(got) == 0 || got[0] != c.output {
			t.Errorf("%s %q: hydrated steps %v, want the output %d first", c.kind, c.words, got, c.output)
			continue
		}
		h, err := match.Hydrate(s, got[0], prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.Content, c.answer) {
			t.Errorf("%s %q: the output %d hydrated without its line %q", c.kind, c.words, c.output, c.answer)
		}
		// Only an order: the same picks without the rule.
		off := ranked.DefaultParams()
		off.OutputFirst = false
		match.SetRankedParams(off)
		was, err := match.Scan(s, prompt, match.Ranked)
		match.SetRankedParams(ranked.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		if a, b := pickSet(res), pickSet(was); !slices.Equal(a, b) {
			t.Errorf("%s %q: picks %v with the rule, %v without: it must only order them", c.kind, c.words, a, b)
		}
	}
}

// With the rule off, every case's first pick is the assistant's call or
// note, not the output: the test exercises the rule.
func TestOutputFirstFailsWithoutRule(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.OutputFirst, p.CallOutput = false, false })
	turns, cases := plantExchanges(testgen.New(1005), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, exchangePrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if got := stepsOf(res.Selected); len(got) > 0 && got[0] == c.output {
			t.Errorf("%s %q: the output %d first without the rule (%v): the case does not exercise it", c.kind, c.words, c.output, got)
		}
	}
}

func stepsOf(ps []contextfold.ScanPick) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.StepID)
	}
	return out
}

// pickSet is every step a scan picked, hydrated or dropped, sorted.
func pickSet(r *contextfold.ScanResult) []int {
	out := append(stepsOf(r.Selected), stepsOf(r.Dropped)...)
	slices.Sort(out)
	return out
}

// BenchmarkOutputFirstScan is the ranked scan (match.Scan) of the
// generated exchanges' questions on 1,000 nodes, with rule "an output
// answers for its exchange" on and off: what the ordering costs a scan.
func BenchmarkOutputFirstScan(b *testing.B) {
	turns, cases := plantExchanges(testgen.New(1005), 1000)
	s := foldedAgentStore(b, turns)
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("on=%v", on), func(b *testing.B) {
			withRankedParams(b, func(p *ranked.Params) { p.OutputFirst = on })
			for i := 0; b.Loop(); i++ {
				if _, err := match.Scan(s, exchangePrompt(cases[i%len(cases)]), match.Ranked); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOutputFirstOrder is the rule alone: ordering the ranked picks
// (ranked.Index.ScanPicksBefore) of the generated exchanges' questions on
// 1,000 nodes, each question's picks in turn.
func BenchmarkOutputFirstOrder(b *testing.B) {
	turns, cases := plantExchanges(testgen.New(1005), 1000)
	s := foldedAgentStore(b, turns)
	ix, err := ranked.For(s)
	if err != nil {
		b.Fatal(err)
	}
	var picks [][]ranked.Pick
	n := 0
	for _, c := range cases {
		r := ix.ScanPicksBefore(exchangePrompt(c), ranked.DefaultParams(), -1)
		picks = append(picks, r.Picks)
		n += len(r.Picks)
	}
	for i := 0; b.Loop(); i++ {
		match.OutputFirstOrder(picks[i%len(picks)])
	}
	b.ReportMetric(float64(n)/float64(len(picks)), "picks/scan")
}

// Rule "an output answers for its exchange" through the proxy's Responses
// items: each step id from a planted output on moves one on, so that an
// empty step (a function_call item, never folded) lies between every
// planted call and its output, as a Codex session's store holds them.
// Every kind still puts the output first.
func TestOutputFirstAcrossCallItem(t *testing.T) {
	turns, cases := plantExchanges(testgen.New(1005), 1000)
	shift := func(step int) int {
		n := 0
		for _, c := range cases {
			if step >= c.output {
				n++
			}
		}
		return step + n
	}
	for i := range turns {
		turns[i].StepID = shift(turns[i].StepID)
	}
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		out := shift(c.output)
		res, err := match.Scan(s, exchangePrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if got := stepsOf(res.Selected); len(got) == 0 || got[0] != out {
			t.Errorf("%s %q: hydrated steps %v, want the output %d first", c.kind, c.words, got, out)
		}
	}
}

// The own output of rule "an output answers for its exchange" is the pick
// at the step the index names next (ranked.Index.NextStep), not at the
// step after: a Codex call's output lies two steps after its note through
// the proxy. An output sharing one term of its call's (not covering them,
// which the rule's second branch asks) comes first only so.
func TestOutputFirstOwnOutputNextStep(t *testing.T) {
	picks := []ranked.Pick{
		{Step: 10, Summary: "assistant bash $ python check.py: Now I will run the zorvex plimtar check.", Terms: []string{"plimtar", "zorvex"}},
		{Step: 40, Summary: "tool bash $ ls: a.py"},
		{Step: 12, Summary: "tool bash $ python check.py: zorvex 3", Terms: []string{"zorvex"}},
	}
	next := func(step int) (int, bool) { return step + 2, true }
	got := []int{}
	for _, p := range match.OutputFirstOrderNext(picks, next) {
		got = append(got, p.Step)
	}
	if !slices.Equal(got, []int{12, 10, 40}) {
		t.Fatalf("order %v, want the output 12 before its call 10", got)
	}
	got = got[:0]
	for _, p := range match.OutputFirstOrder(picks) {
		got = append(got, p.Step)
	}
	if !slices.Equal(got, []int{10, 40, 12}) {
		t.Fatalf("order %v with the next step: the case does not exercise the index's next step", got)
	}
}
