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

// fillCase is one planted question of rule "a budget left is filled from
// below the cut-off" (ranked.Params.Fill): the assistant's note (note)
// names the widget with three made-up words, and the tool output that
// answers (output, far from the note) names it by the last word only, so
// that it scores about a quarter of the note: under the cut-off (Ratio
// 0.3 × the best), over the rule's bar (0.2 ×).
type fillCase struct {
	words  []string
	answer string
	note   int
	output int
}

// plantFill plants six cases on n generated small turns.
func plantFill(g testgen.Gen, n int) ([]contextfold.Turn, []fillCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "mab", "kri", "nol", "budo", "gav", "fip", "yul", "hask", "tum", "cep"}
	var cases []fillCase
	for i := 0; i < 6; i++ {
		m := len(syll)
		var c fillCase
		for k := 0; k < 3; k++ {
			c.words = append(c.words, syll[(i+3*k)%m]+syll[(i+5*k+7)%m]+"q")
		}
		c.note = 20 + i*(n-100)/6
		c.output = c.note + 30
		c.answer = fmt.Sprintf("value settled at %d.%d kPa", 40+i, 7*i)
		note := "assistant: The " + strings.Join(c.words, " ") + " widget is wired up; its gauge needs a check."
		turns[c.note] = contextfold.Turn{StepID: c.note, Summary: note, RawContent: note + "\n"}
		out := "tool bash $ ./probe.sh: probing the " + c.words[2] + " line"
		turns[c.output] = contextfold.Turn{StepID: c.output, Summary: out,
			RawContent: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\nprobing the " + c.words[2] + " line\n" + c.answer + "\n</output>\n"}
		cases = append(cases, c)
	}
	return turns, cases
}

func fillPrompt(c fillCase) string {
	return "what did the " + strings.Join(c.words, " ") + " gauge read?"
}

func selectedSteps(res *contextfold.ScanResult) []int {
	var got []int
	for _, p := range res.Selected {
		got = append(got, p.StepID)
	}
	return got
}

// Rule "a budget left is filled from below the cut-off", on a store of
// 1,000 generated nodes: the output that answers scores under the cut-off
// (checked: the scan without the rule lists it there) and is hydrated with
// the rule, after every pick the scan made without it, in the same order,
// within the per-turn budget, its reasons naming the rule.
func TestFillBelowCutOff(t *testing.T) {
	turns, cases := plantFill(testgen.New(2047), 1000)
	s := foldedAgentStore(t, turns)
	off := map[string][]int{}
	withRankedParams(t, func(p *ranked.Params) { p.Fill = 0 })
	for _, c := range cases {
		ex, err := match.ExplainRanked(s, fillPrompt(c))
		if err != nil {
			t.Fatal(err)
		}
		got := selectedSteps(ex.Result)
		if len(got) == 0 || slices.Contains(got, c.output) {
			t.Fatalf("%v: hydrated %v without the rule; the case must leave the output %d out", c.words, got, c.output)
		}
		if !slices.ContainsFunc(ex.CutOff, func(p contextfold.ScanPick) bool { return p.StepID == c.output }) {
			t.Fatalf("%v: the output %d is not under the cut-off (%v): the case does not exercise the rule", c.words, c.output, ex.CutOff)
		}
		off[strings.Join(c.words, " ")] = got
	}
	withRankedParams(t, func(p *ranked.Params) { p.Fill = 0.2 })
	for _, c := range cases {
		res, err := match.Scan(s, fillPrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got, before := selectedSteps(res), off[strings.Join(c.words, " ")]
		at := slices.Index(got, c.output)
		switch {
		case at < 0:
			t.Errorf("%v: hydrated %v, not the output %d under the cut-off", c.words, got, c.output)
		case !slices.Equal(got[:len(before)], before):
			t.Errorf("%v: hydrated %v, not the picks %v first", c.words, got, before)
		case res.UsedTokens > res.BudgetTokens:
			t.Errorf("%v: %v tokens of a %v budget", c.words, res.UsedTokens, res.BudgetTokens)
		case !strings.Contains(strings.Join(res.Selected[at].Why, " "), "filled from below the cut-off"):
			t.Errorf("%v: the output's reasons %q do not name the rule", c.words, res.Selected[at].Why)
		}
	}
}

// On generated prompts over a generated store, the rule only adds: the
// picks without it come first, in the same order, and the hydration stays
// within the per-turn budget; after an exact needle it adds nothing.
func TestFillOnlyAdds(t *testing.T) {
	g := testgen.New(2053)
	s := foldedAgentStore(t, g.SmallTurns(0, 1500))
	prompts := make([]string, 0, 310)
	for i := 0; i < 150; i++ {
		prompts = append(prompts, g.Prompt(i), g.Query(i))
	}
	for i := 0; i < 10; i++ {
		f := strings.Fields(g.SmallTurn(100*i + 7).Summary)
		prompts = append(prompts, fmt.Sprintf("what did `%s` print? %s", f[len(f)-1], g.Query(i)))
	}
	off := map[string]*contextfold.ScanResult{}
	withRankedParams(t, func(p *ranked.Params) { p.Fill = 0 })
	for _, q := range prompts {
		res, err := match.Scan(s, q, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		off[q] = res
	}
	withRankedParams(t, func(p *ranked.Params) { p.Fill = 0.2 })
	added, needles := 0, 0
	for _, q := range prompts {
		res, err := match.Scan(s, q, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got, before := selectedSteps(res), selectedSteps(off[q])
		if len(got) < len(before) || !slices.Equal(got[:len(before)], before) {
			t.Fatalf("%q: hydrated %v with the rule, %v without: not the picks first", q, got, before)
		}
		if res.UsedTokens > res.BudgetTokens {
			t.Fatalf("%q: %v tokens of a %v budget", q, res.UsedTokens, res.BudgetTokens)
		}
		needled := len(res.Selected) > 0 && strings.Contains(strings.Join(res.Selected[0].Why, " "), "verbatim")
		if needled {
			needles++
		}
		if needled && len(got) > len(before) {
			t.Errorf("%q: the rule added %v after an exact needle", q, got[len(before):])
		}
		added += len(got) - len(before)
	}
	t.Logf("%d picks added over %d prompts, %d prompts with an exact needle", added, len(prompts), needles)
	if added == 0 || needles < 5 {
		t.Fatalf("the rule added %d picks, %d prompts hydrated an exact needle: the test does not exercise the rule and its gate", added, needles)
	}
}
