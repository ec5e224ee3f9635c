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

// kindSession plants, among generated turns, a first run of a program
// (call at step 10, output at 11) and twelve re-runs written otherwise,
// whose calls' notes hold the question's words: the session of a user
// who asks at the end about the first one.
func kindSession(first, firstOut string, rerun func(i int) (call, out string)) []contextfold.Turn {
	turns := testgen.New(11).SmallTurns(0, 120)
	turns[10] = contextfold.Turn{StepID: 10, Summary: "assistant bash $ " + first + ": start with the index page", RawContent: "[assistant tool_call bash]\nStart with the index page.\n```bash\n" + first + "\n```"}
	turns[11] = contextfold.Turn{StepID: 11, Summary: "tool bash $ " + first + ": " + strings.SplitN(firstOut, "\n", 2)[0], RawContent: "[tool observation bash]\n" + firstOut}
	for i := range 12 {
		step := 30 + 6*i
		call, out := rerun(i)
		turns[step] = contextfold.Turn{StepID: step, Summary: "assistant bash $ " + call + ": again", RawContent: fmt.Sprintf("[assistant tool_call bash]\nThe page came back as before; try run %d and see what comes back from the page this time.\n```bash\n%s\n```", i, call)}
		turns[step+1] = contextfold.Turn{StepID: step + 1, Summary: "tool bash $ " + call + ": " + strings.SplitN(out, "\n", 2)[0], RawContent: "[tool observation bash]\n" + out}
	}
	return turns
}

// Rule "the first of its kind" (ranked.Params.FirstOfKind): a prompt
// asking for the first run of a program it names hydrates that run's
// output, though each re-run is written otherwise (rule "the first run
// first" orders runs of one command only) and the re-runs' notes hold
// more of the prompt's words. The rule only orders: the same picks with
// and without it. Without it the first run is left out.
func TestFirstOfKind(t *testing.T) {
	for _, c := range []struct {
		name, prompt, first, firstOut string
		rerun                         func(i int) (string, string)
	}{
		{"curl", "first curl of the index page, how many bytes came back?", "curl http://web.example.test:8000",
			"100   293  100   293    0     0  12993      0 --:--:-- --:--:-- --:--:-- 15421\n<html><title>Perl Examples</title></html>",
			func(i int) (string, string) {
				return fmt.Sprintf("curl -X POST -d 'name=x%d' http://web.example.test:8000/cgi-bin/forms.pl", i), fmt.Sprintf("<html><body>Hello x%d, the page echoes the name back</body></html>", i)
			}},
		{"repro", "in the first repro run, what did the page count come back as?", "cd /testbed && python reproduce.py",
			"pages: 0 (expected 3)\nTraceback (most recent call last):\nValueError: empty document",
			func(i int) (string, string) {
				return fmt.Sprintf("sed -i 's/a/b/' doc.py && python reproduce_v%d.py", i+2), fmt.Sprintf("page count came back as %d pages", 3+i)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, agentPolicy)
			if err := match.FoldBatch(s, match.Ranked, kindSession(c.first, c.firstOut, c.rerun)); err != nil {
				t.Fatal(err)
			}
			on, err := match.Scan(s, c.prompt, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			off := ranked.DefaultParams()
			off.FirstOfKind = false
			match.SetRankedParams(off)
			was, err := match.Scan(s, c.prompt, match.Ranked)
			match.SetRankedParams(ranked.DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(stepsOf(on.Selected), 11) {
				t.Errorf("%q hydrated %v (dropped %v), want the first run's output 11", c.prompt, stepsOf(on.Selected), stepsOf(on.Dropped))
			}
			if slices.Contains(stepsOf(was.Selected), 11) {
				t.Errorf("%q hydrated the first run without the rule (%v): the case does not exercise it", c.prompt, stepsOf(was.Selected))
			}
			if a, b := pickSet(on), pickSet(was); !slices.Equal(a, b) {
				t.Errorf("picks %v with the rule, %v without: it must only order them", a, b)
			}
		})
	}
}
