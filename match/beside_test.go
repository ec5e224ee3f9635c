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

// besideCase is one planted check script of rule "an older run beside its
// re-run" (ranked.Params.RerunBeside), run before a fix and again after
// it: the first run's output (step first) prints the failure asked about,
// the re-run's (rerun) that the check passed; with kind "chain" a run in
// between (middle) failed another way (an import error, holding no word of
// the question but the script's name); with kind "same" the re-run printed
// the first run's failure again (the fix did not take).
type besideCase struct {
	kind   string
	words  string // the widget's name, two made-up words
	answer string // the first run's line that answers
	newer  string // the re-run's line
	first  int
	middle int // -1 unless kind "chain"
	rerun  int
}

// plantBeside plants six cases (two of each kind) on n generated
// small turns, as package ingest folds a mini-swe-agent session: each run
// is the assistant's call `python check_<i>.py` and its output, the re-run
// 40 steps after the first.
func plantBeside(g testgen.Gen, n int) ([]contextfold.Turn, []besideCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "mab", "kri", "nol", "budo", "gav", "fip", "yul", "hask", "tum", "cep"}
	var cases []besideCase
	for i := 0; i < 6; i++ {
		m := len(syll)
		c := besideCase{kind: "fix", words: syll[(i+4)%m] + syll[(i+11)%m] + "v " + syll[(i+1)%m] + syll[(i+8)%m] + "w", middle: -1}
		c.kind = [...]string{"fix", "chain", "same"}[i%3]
		a, b, _ := strings.Cut(c.words, " ")
		camel := strings.ToUpper(a[:1]) + a[1:] + strings.ToUpper(b[:1]) + b[1:]
		script := fmt.Sprintf("check_%d.py", i)
		c.first = 11 + i*(n-100)/6
		c.rerun = c.first + 40
		c.answer = fmt.Sprintf("Serialising failed as expected: cannot serialise '%sCanvas' object", camel)
		c.newer = "Serialising succeeded"
		if c.kind == "same" {
			c.newer = c.answer
		}
		put := func(at int, summary, raw string) {
			turns[at] = contextfold.Turn{StepID: at, Summary: summary, RawContent: raw}
		}
		run := func(at int, note, out string, failed bool) {
			put(at, "assistant bash $ python "+script+": "+note,
				"[assistant tool_call bash]\n\nTHOUGHT: "+note+"\n\n```bash\npython "+script+"\n```\n")
			mark, code := "", 0
			if failed {
				mark, code = " [error]", 1
			}
			first, _, _ := strings.Cut(out, "\n")
			put(at+1, "tool bash $ python "+script+mark+": "+first,
				fmt.Sprintf("[tool observation bash]\n\n<returncode>%d</returncode>\n<output>\n%s\n</output>\n", code, out))
		}
		run(c.first-1, "Run the check of the "+c.words+" widget.", "Attempting to serialise the "+c.words+" widget...\n"+c.answer, false)
		if c.kind == "chain" {
			c.middle = c.first + 20
			run(c.middle-1, "Check the fix.", fmt.Sprintf("Traceback (most recent call last):\n  File \"/testbed/%s\", line 1, in <module>\nImportError: cannot import name 'Helper%d'", script, i), true)
		}
		run(c.rerun-1, "Check the fix again.", "Attempting to serialise the "+c.words+" widget...\n"+c.newer, false)
		cases = append(cases, c)
	}
	return turns, cases
}

// besidePrompt asks what case c's check printed when it serialised.
func besidePrompt(c besideCase) string {
	return fmt.Sprintf("what did the check print when it tried to serialise the %s widget?", c.words)
}

// Rule "an older run beside its re-run" (ranked.Params.RerunBeside), on a
// store of 1,000 generated nodes: the first run's output holds every word
// of the question the re-run holds and is superseded by it (intent
// ownership: the same command run again); the re-run is hydrated, and the
// first run's failure right after it, never ahead of it, within the
// per-turn budget, one older run for the re-run. With kind "chain" the
// run in between (an import error, the question's words but the script's
// name held by it alone) is superseded too, and ranks below the first
// run: the re-run brings the first run only. With kind "same" the re-run
// shows every specific term the first run did (the same failure): it
// stands for the first run, which is not hydrated.
func TestOlderRunBesideItsRerun(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.RerunBeside = true })
	turns, cases := plantBeside(testgen.New(2031), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, besidePrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, p := range res.Selected {
			got = append(got, p.StepID)
		}
		older, newer := slices.Index(got, c.first), slices.Index(got, c.rerun)
		switch {
		case newer < 0:
			t.Errorf("%s %q: hydrated %v, not the re-run %d", c.kind, c.words, got, c.rerun)
		case c.kind == "same" && older >= 0:
			t.Errorf("%s %q: hydrated %v, the first run %d beside a re-run %d that repeats it", c.kind, c.words, got, c.first, c.rerun)
		case c.kind == "same":
		case older < 0:
			t.Errorf("%s %q: hydrated %v, not the first run %d beside the re-run %d", c.kind, c.words, got, c.first, c.rerun)
		case older != newer+1:
			t.Errorf("%s %q: hydrated %v, the first run %d not right after the re-run %d", c.kind, c.words, got, c.first, c.rerun)
		case c.middle >= 0 && slices.Contains(got, c.middle):
			t.Errorf("%s %q: hydrated %v, a second older run %d beside the re-run %d", c.kind, c.words, got, c.middle, c.rerun)
		case res.UsedTokens > res.BudgetTokens:
			t.Errorf("%s %q: %v tokens of a %v budget", c.kind, c.words, res.UsedTokens, res.BudgetTokens)
		}
		if older >= 0 && c.kind != "same" {
			h, err := match.Hydrate(s, c.first, besidePrompt(c), match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(h.Content, c.answer) {
				t.Errorf("%s %q: the first run's hydration lacks %q", c.kind, c.words, c.answer)
			}
			if why := res.Selected[older].Why; len(why) == 0 || !strings.Contains(why[0], fmt.Sprintf("beside its re-run at step %d", c.rerun)) {
				t.Errorf("%s %q: the first run's reasons %q do not name its re-run", c.kind, c.words, why)
			}
		}
	}
}

// Without the switch the first run is superseded by its re-run and never
// hydrated: the test exercises the rule, not a store where nothing
// supersedes.
func TestOlderRunBesideFailsWithoutRule(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.RerunBeside = false })
	turns, cases := plantBeside(testgen.New(2031), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, besidePrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Selected {
			if p.StepID == c.first {
				t.Errorf("%s %q: the first run %d hydrated without the rule", c.kind, c.words, c.first)
			}
		}
	}
}

// After an exact needle the rule admits no older run that does not hold
// it (as a freed pick is gated): a question quoting a token only a note
// between the runs holds hydrates the note first, then the re-run as a
// ranked pick, and no first run beside it.
func TestOlderRunBesideNotAfterNeedle(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.RerunBeside = true })
	turns, cases := plantBeside(testgen.New(2031), 1000)
	for i, c := range cases {
		note := fmt.Sprintf("assistant: Applied the patch fix_%d_qzv.", i)
		turns[c.first+10] = contextfold.Turn{StepID: c.first + 10, Summary: note, RawContent: note + "\n"}
	}
	s := foldedAgentStore(t, turns)
	for i, c := range cases {
		prompt := fmt.Sprintf("after `fix_%d_qzv`, what did the check print when it tried to serialise the %s widget?", i, c.words)
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, p := range res.Selected {
			got = append(got, p.StepID)
		}
		if len(got) == 0 || got[0] != c.first+10 {
			t.Errorf("%s %q: hydrated %v, not the needle's node %d first", c.kind, c.words, got, c.first+10)
		}
		if !slices.Contains(got, c.rerun) {
			t.Errorf("%s %q: hydrated %v, not the re-run %d (the case does not exercise the gate)", c.kind, c.words, got, c.rerun)
		}
		if slices.Contains(got, c.first) {
			t.Errorf("%s %q: hydrated %v, the first run %d after an exact needle it does not hold", c.kind, c.words, got, c.first)
		}
	}
}
