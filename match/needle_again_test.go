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

// plantNeedlesAgain plants every case as plantNeedles does (the call, the
// output holding the token's line, the restatement) and then mentions the
// token again in two later nodes (four and seven steps after the output:
// a re-run's log holding the token on another line, an assistant's note),
// as an agent session does with a path or a version it works on: the
// token is held by five nodes, the answer line by the output only.
func plantNeedlesAgain(g testgen.Gen, n int, cases []needleCase) ([]contextfold.Turn, []int) {
	turns, outputs := plantNeedles(g, n, cases)
	for i, c := range cases {
		out := outputs[i]
		turns[out+4] = contextfold.Turn{StepID: out + 4, Summary: "tool: rerun output",
			RawContent: fmt.Sprintf("[tool observation bash]\nrerun: %s still listed, nothing new\n", c.token)}
		turns[out+7] = contextfold.Turn{StepID: out + 7, Summary: "assistant: moving on from " + c.token,
			RawContent: fmt.Sprintf("I will leave %s as it is and look at the scheduler next.\n", c.token)}
	}
	return turns, outputs
}

// Rule "exact needles" for a token held by two to five nodes: the line of
// the output that holds it reaches the model even though newer nodes
// mention the token again (intent ownership orders them first, and the
// output follows within the budget). Before, the output was superseded by
// the newer mentions and never hydrated: a user quoting a path, a version
// or an identifier the agent kept working on got the later mentions and
// not the output that answers (the end-of-session questions of
// `cfeval questions`: ledger `internal/ratelimit`, `RedisAddr`,
// requests `proxy_from_url`).
func TestExactNeedlesHeldAgainEveryClass(t *testing.T) {
	testNeedlesAgain(t, 1000)
}

// The same at 100,000 nodes: run with CONTEXTFOLD_BENCH_LARGE=1.
func TestExactNeedlesHeldAgainEveryClassLarge(t *testing.T) {
	skipUnlessLarge(t)
	testNeedlesAgain(t, 100_000)
}

func testNeedlesAgain(t *testing.T, n int) {
	var cases []needleCase
	for _, c := range needleCases(uint64(n) + 1) {
		if c.decoys == nil {
			cases = append(cases, c)
		}
	}
	turns, outputs := plantNeedlesAgain(testgen.New(uint64(n)+1), n, cases)
	s := foldedAgentStore(t, turns)
	for i, c := range cases {
		prompt := fmt.Sprintf("Going back to the start: what did we find about %s?", c.quoted)
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		found := false
		for _, p := range res.Selected {
			got = append(got, p.StepID)
			h, err := match.Hydrate(s, p.StepID, prompt, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			found = found || strings.Contains(h.Content, c.line)
		}
		if !found {
			t.Errorf("%s %s: hydrated steps %v, none holding the output %d's line %q", c.class, c.quoted, got, outputs[i], c.line)
		}
	}
}

// Rule "the output, not the echo" when the call and the restatement are
// the longer nodes: a tool call writing a script (a heredoc of 120 lines
// naming the token once) and an assistant's long reasoning quoting it are
// both fuller than the 80-line output, and the output still comes first,
// for every class. Before, the needle stage ordered by size alone and put
// the script or the reasoning first (the end-of-session questions of
// `cfeval questions`: requests `1.26.20` and `dXNlcjpwYXNz`, matplotlib
// `UnpickleableCanvas`).
func TestExactNeedlesOutputBeforeLongCall(t *testing.T) {
	s := newStore(t, agentPolicy)
	var cases []needleCase
	for _, c := range needleCases(2) {
		if c.decoys == nil {
			cases = append(cases, c)
		}
	}
	turns, outputs := plantNeedles(testgen.New(2), 1000, cases)
	for i, c := range cases {
		out := outputs[i]
		var script, thought strings.Builder
		script.WriteString("[assistant tool_call bash]\n$ cat <<'EOF' > check.py\n")
		for l := 0; l < 120; l++ {
			if l == 60 {
				fmt.Fprintf(&script, "EXPECTED = %q\n", c.token)
				continue
			}
			fmt.Fprintf(&script, "def step_%d(x): return x + %d\n", l, l)
		}
		script.WriteString("EOF\n")
		turns[out-1] = contextfold.Turn{StepID: out - 1, Summary: "assistant bash $ cat <<'EOF' > check.py", RawContent: script.String()}
		for l := 0; l < 100; l++ {
			fmt.Fprintf(&thought, "Reasoning step %d about the scheduler and its queue.\n", l)
		}
		fmt.Fprintf(&thought, "So %s is what the handler check reported.\n", c.token)
		turns[out+1] = contextfold.Turn{StepID: out + 1, Summary: "assistant: So " + c.token + " is what the check reported", RawContent: thought.String()}
	}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	checkNeedles(t, s, cases, outputs)
}

// Rule "exact needles" with long holders: a token held by five tool
// outputs, four of them logs of two to four times the store's mean node
// that name it on one line, the fifth the short output whose line answers.
// Each needle node costs the per-turn budget what its hydration places
// (the long ones are hydrated as their windows, rule "an agent's node is
// its matched lines"), so all five fit, the short answer included, for
// every class. Before, a needle node cost its whole size: the four logs
// (fuller, so first) spent the budget and the answer was dropped (the
// end-of-session question of `cfeval questions` on requests' site-packages
// path: four pip logs ahead of the `pip show` output).
func TestExactNeedlesCostTheirWindows(t *testing.T) {
	var cases []needleCase
	for _, c := range needleCases(3) {
		if c.decoys == nil {
			cases = append(cases, c)
		}
	}
	turns, outputs := plantNeedles(testgen.New(3), 1000, cases)
	for i, c := range cases {
		out := outputs[i]
		// The call and the restatement name the token no more.
		turns[out-1] = contextfold.Turn{StepID: out - 1, Summary: "assistant: run the check",
			RawContent: "[assistant tool_call bash]\n$ ./check.sh\n"}
		turns[out] = contextfold.Turn{StepID: out, Summary: "tool: check output",
			RawContent: "[tool observation bash]\nchecking the handler, the scheduler and the queue of the worker pool\n" + c.line + "\nchecked 14 handlers, 3 schedulers and 2 queues of the worker pool in 0.41 s\n"}
		turns[out+1] = contextfold.Turn{StepID: out + 1, Summary: "assistant: the check is done",
			RawContent: "The check is done; the scheduler is next.\n"}
		for k := 0; k < 4; k++ {
			var log strings.Builder
			log.WriteString("[tool observation bash]\n")
			for l := 0; l < 12; l++ {
				if l == 6 {
					fmt.Fprintf(&log, "Requirement already satisfied in %s (from run %d)\n", c.token, k)
					continue
				}
				fmt.Fprintf(&log, "Collecting package_%d_%d from the index and building its wheel for later\n", k, l)
			}
			st := out + 3 + k
			turns[st] = contextfold.Turn{StepID: st, Summary: fmt.Sprintf("tool bash $ pip install package_%d: Collecting", k), RawContent: log.String()}
		}
	}
	s := foldedAgentStore(t, turns)
	ix, err := ranked.For(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		out := outputs[i]
		e, err := s.Entry(out + 3)
		if err != nil {
			t.Fatal(err)
		}
		if tk, mean := float64(e.TokenEstimate), ix.MeanTokens(); tk <= 2*mean || tk > 300 {
			t.Fatalf("a log of %v tokens, want over twice the mean %.0f and within the per-call cap: the case does not test the rule", tk, mean)
		}
		prompt := fmt.Sprintf("Going back to the start: what did we find about %s?", c.quoted)
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range res.Selected {
			h, err := match.HydrateWithin(s, p.StepID, prompt, match.Ranked, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.TokenCost != float64(h.TokenEstimate) {
				t.Errorf("%s %s: step %d costs the budget %v tokens, its hydration places %d", c.class, c.quoted, p.StepID, p.TokenCost, h.TokenEstimate)
			}
			found = found || p.StepID == out && strings.Contains(h.Content, c.line)
		}
		if !found {
			t.Errorf("%s %s: hydrated %v (dropped %v), not the output %d holding %q", c.class, c.quoted, stepsOf(res.Selected), stepsOf(res.Dropped), out, c.line)
		}
	}
}

// A needle node (here a quoted phrase's: no specific term, so the ranked
// scan ranks it after the log that holds more of the prompt's words) that
// the ranked scan also picks, after another ranked pick was admitted, keeps the ranked scan's terms, score and reasons beside its
// "verbatim" one. Before, the needle picks were kept as pointers into the
// list of hydrated picks, which the first ranked pick's append could move:
// the merge then went to the old copy and the scan reported the needle
// node with score 0 and its needle reason alone.
func TestNeedlePickKeepsRankedReasons(t *testing.T) {
	turns := testgen.New(5).SmallTurns(0, 1000)
	turns[100] = contextfold.Turn{StepID: 100, Summary: "tool: probe output",
		RawContent: "[tool observation bash]\nprobe report: the probe stalled twice at midnight\n"}
	turns[200] = contextfold.Turn{StepID: 200, Summary: "tool: worker log",
		RawContent: "[tool observation bash]\nscheduler queue drained by the workers, backlog flushed, shards rebalanced\n"}
	s := foldedAgentStore(t, turns)
	prompt := `what did the scheduler queue drained by workers, the backlog flushed and shards rebalanced have to do with "the probe stalled twice at midnight"?`
	res, err := match.Scan(s, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	var needle *contextfold.ScanPick
	for i := range res.Selected {
		if res.Selected[i].StepID == 100 {
			needle = &res.Selected[i]
		}
	}
	if needle == nil || len(res.Selected) < 2 {
		t.Fatalf("hydrated %v, want the needle node 100 and the log 200", stepsOf(res.Selected))
	}
	if needle.Score <= 0 || len(needle.Why) < 2 || !slices.Contains(needle.MatchedTerms, "stall") {
		t.Errorf("the needle node reports score %v, terms %v, reasons %q: the ranked scan's pick of it was lost", needle.Score, needle.MatchedTerms, needle.Why)
	}
}
