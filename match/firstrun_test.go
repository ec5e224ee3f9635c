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

// runCase is one planted reproduction run three times: kind "same" runs
// one command each time, kind "rewritten" runs it first as `python
// repro_<w>.py` and then as `rm -rf build && python repro_<w>.py`, with
// a `cat build/<w>.txt` after each run (the sphinx session of `cfeval
// questions`: `sphinx-build …`, then `rm -rf _build && sphinx-build …`).
type runCase struct {
	kind   string
	words  string // the reproduction's subject in plain words
	answer string // the first run's line that answers
	first  int    // the step of the first run's output that holds answer
	runs   []int  // every run's output holding the words, oldest first
}

// plantRuns plants, on n generated small turns, three cases of each kind:
// the first run's output is long (its answer line, then 30 lines of log),
// the re-runs' short and dense, so that a length-normalised score ranks a
// re-run over the first run.
func plantRuns(g testgen.Gen, n int) ([]contextfold.Turn, []runCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "dril", "mab", "sef", "kri", "nol", "budo", "gav", "wen", "fip", "yul", "hask", "rog", "tum", "cep"}
	var cases []runCase
	for i := 0; i < 6; i++ {
		m := len(syll)
		c := runCase{kind: []string{"same", "rewritten"}[i/3], words: syll[(i+3)%m] + syll[(i+11)%m] + "k " + syll[(i+5)%m] + syll[(i+14)%m] + "d"}
		a, _, _ := strings.Cut(c.words, " ")
		script := "repro_" + a + ".py"
		base := 10 + i*(n-140)/6
		for r := 0; r < 3; r++ {
			at := base + 40*r
			cmd := "python " + script
			if c.kind == "rewritten" && r > 0 {
				cmd = "rm -rf build && python " + script
			}
			result := "0.25"
			if r == 0 {
				result = "TIMEOUT"
			}
			line := fmt.Sprintf("%s result %s", c.words, result)
			var out strings.Builder
			out.WriteString(line + "\n")
			if r == 0 {
				for l := 1; l <= 30; l++ {
					fmt.Fprintf(&out, "DEBUG step %d: queue drained %d items in %d ms\n", l, 3*l, 7*l)
				}
			}
			turns[at] = contextfold.Turn{StepID: at, Summary: "assistant bash $ " + cmd + ": Run the reproduction.",
				RawContent: fmt.Sprintf("[assistant tool_call bash]\n\nTHOUGHT: Run the reproduction.\n\n```bash\n%s\n```\n", cmd)}
			turns[at+1] = contextfold.Turn{StepID: at + 1, Summary: "tool bash $ " + cmd + ": " + line,
				RawContent: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n" + out.String() + "</output>\n"}
			if c.kind == "rewritten" {
				// The run prints nothing of the words; the page it wrote
				// holds them.
				turns[at+1].Summary = "tool bash $ " + cmd + ": build finished"
				turns[at+1].RawContent = "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\nbuild finished\n</output>\n"
				cat := "cat build/" + a + ".txt"
				turns[at+2] = contextfold.Turn{StepID: at + 2, Summary: "assistant bash $ " + cat + ": Read what it wrote.",
					RawContent: fmt.Sprintf("[assistant tool_call bash]\n\nTHOUGHT: Read what it wrote.\n\n```bash\n%s\n```\n", cat)}
				turns[at+3] = contextfold.Turn{StepID: at + 3, Summary: "tool bash $ " + cat + ": " + line,
					RawContent: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n" + out.String() + "</output>\n"}
				c.runs = append(c.runs, at+3)
			} else {
				c.runs = append(c.runs, at+1)
			}
			if r == 0 {
				c.answer = line
				c.first = c.runs[0]
			}
		}
		cases = append(cases, c)
	}
	return turns, cases
}

// Rule "the first run first" (ranked.Params.FirstRunFirst), both kinds, on
// a store of 1,000 generated nodes: asked what the first run printed, the
// scan hydrates the first run's output first, ahead of the re-runs a
// length-normalised score puts over it (the end-of-session questions of
// `cfeval questions`: "what did the first text build of the reproduction
// render for the Sub class?" put the last build first). The rule only
// orders: the picks are the same set with it and without; and a prompt
// that does not ask for the first is ordered as without the rule.
func TestFirstRunFirst(t *testing.T) {
	turns, cases := plantRuns(testgen.New(1007), 1000)
	s := foldedAgentStore(t, turns)
	off := ranked.DefaultParams()
	off.FirstRunFirst = false
	for _, c := range cases {
		prompt := firstRunPrompt(c)
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := stepsOf(res.Selected)
		if len(got) == 0 || got[0] != c.first {
			t.Errorf("%s %q: hydrated steps %v, want the first run %d first", c.kind, c.words, got, c.first)
			continue
		}
		h, err := match.Hydrate(s, got[0], prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.Content, c.answer) {
			t.Errorf("%s %q: the first run %d hydrated without its line %q", c.kind, c.words, c.first, c.answer)
		}
		match.SetRankedParams(off)
		was, err := match.Scan(s, prompt, match.Ranked)
		last, err2 := match.Scan(s, lastRunPrompt(c), match.Ranked)
		match.SetRankedParams(ranked.DefaultParams())
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		if a, b := pickSet(res), pickSet(was); !slices.Equal(a, b) {
			t.Errorf("%s %q: picks %v with the rule, %v without: it must only order them", c.kind, c.words, a, b)
		}
		on, err := match.Scan(s, lastRunPrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := stepsOf(on.Selected), stepsOf(last.Selected); !slices.Equal(a, b) {
			t.Errorf("%s %q: a prompt not asking for the first hydrated %v with the rule, %v without", c.kind, c.words, a, b)
		}
	}
}

// With the rule off, no case's first pick is the first run: a re-run
// comes first, and the test exercises the rule. Rule "the first of its
// kind" is off too: where the prompt names the runs' program it orders
// them as well.
func TestFirstRunFirstFailsWithoutRule(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.FirstRunFirst, p.FirstOfKind = false, false })
	turns, cases := plantRuns(testgen.New(1007), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, firstRunPrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if got := stepsOf(res.Selected); len(got) > 0 && got[0] == c.first {
			t.Errorf("%s %q: the first run %d first without the rule (%v): the case does not exercise it", c.kind, c.words, c.first, got)
		}
	}
}

// firstRunPrompt asks about case c's first run.
func firstRunPrompt(c runCase) string {
	return fmt.Sprintf("what was the %s result in the first run of the reproduction?", c.words)
}

// lastRunPrompt asks about case c's reproduction without asking for the
// first run.
func lastRunPrompt(c runCase) string {
	return fmt.Sprintf("what was the %s result in the run of the reproduction?", c.words)
}
