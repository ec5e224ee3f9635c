package match_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// callCase is one planted exchange whose question's words are in the
// assistant's call (the sentence it wrote around the command), and the
// answer in the call's own output: kind names which (see plantCallOutputs).
type callCase struct {
	kind   string
	prompt string
	answer string // the output's line that answers
	call   int    // the call's step; its output is at call+1
}

// callKinds are the outputs a question about their call does not find on
// their own, as the end-of-session questions showed them (`cfeval
// questions`): "no word" a traceback holding none of the question's words
// ("what did the reproduction script fail with?"); "one word" a long
// output holding one word of the question, on the answer line, below the
// cut-off behind its call ("what did the first reproduction print for
// Logistic?"); "needle call" the output of a call whose sentence quotes
// the token the question quotes, freed from intent ownership by rule "an
// output is updated by its re-run" (a later note names it again) and so
// left out behind the exact needle ("what does Figure.__getstate__ say
// about the canvas?").
var callKinds = []string{"no word", "one word", "needle call"}

// plantCallOutputs plants, on n generated small turns, three cases of each
// of callKinds, each with words of its own: at step call the assistant's
// call, at call+1 its output.
func plantCallOutputs(g testgen.Gen, n int) ([]contextfold.Turn, []callCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "dril", "mab", "sef", "kri", "nol", "budo", "gav", "wen", "fip", "yul", "hask", "rog", "tum", "cep"}
	word := func(i, a, b int) string { return syll[(i+a)%len(syll)] + syll[(i+b)%len(syll)] }
	var cases []callCase
	for k, kind := range callKinds {
		for r := 0; r < 3; r++ {
			i := 3*k + r
			base := 10 + i*(n-80)/(3*len(callKinds))
			c := callCase{kind: kind, call: base}
			w1, w2 := word(i, 2, 9)+"k", word(i, 4, 13)+"d"
			script := fmt.Sprintf("check_%d.py", i)
			var out strings.Builder
			var summary, thought, command string
			switch kind {
			case "no word":
				c.prompt = fmt.Sprintf("what did the %s %s reproduction script fail with?", w1, w2)
				c.answer = fmt.Sprintf("ValueError: queue %s cannot hold %d items", word(i, 6, 11)+"x", 40+i)
				command = "python " + script
				thought = fmt.Sprintf("Now I will run the %s %s reproduction script to confirm the current behaviour.", w1, w2)
				out.WriteString("Traceback (most recent call last):\n")
				for l := 0; l < 6; l++ {
					fmt.Fprintf(&out, "  File \"/srv/lib/queue_%d.py\", line %d, in drain\n    self.items.pop(%d)\n", l, 100+l, l)
				}
				out.WriteString(c.answer + "\n")
				summary = "tool bash $ " + command + " [error]: Traceback (most recent call last):"
			case "one word":
				name := strings.ToUpper(w2[:1]) + w2[1:]
				c.prompt = fmt.Sprintf("what did the first %s reproduction script print for %s?", w1, name)
				c.answer = fmt.Sprintf("%s: Sum(x**%d, (x, 0, %d))", name, i+2, 9+i)
				command = "python " + script
				thought = fmt.Sprintf("Now I will run the %s reproduction script to confirm the current behaviour.", w1)
				for l := 0; l < 40; l++ {
					if l == 23 {
						out.WriteString(c.answer + "\n")
						continue
					}
					fmt.Fprintf(&out, "Distribution_%d: Integral(exp(-x)*x**%d, (x, 0, oo)) timed out after %d seconds\n", l, l, 5+l%3)
				}
				summary = "tool bash $ " + command + ": Distribution_0: Integral(exp(-x)"
			case "needle call":
				camel := strings.ToUpper(w1[:1]) + w1[1:]
				method := "__" + w2 + "__"
				path := fmt.Sprintf("lib/app/figure_%d.py", i)
				w3 := word(i, 5, 16) + "s"
				c.prompt = fmt.Sprintf("what does %s.%s say about the %s?", camel, method, w3)
				c.answer = fmt.Sprintf("%d        # The %s cannot currently be pickled", 3162+i, w3)
				command = fmt.Sprintf("nl -ba %s | grep -A 20 \"def %s\"", path, method)
				thought = fmt.Sprintf("Let's see `%s.%s`.", camel, method)
				fmt.Fprintf(&out, "%d    def %s(self):\n%d        state = super().%s()\n", 3159+i, method, 3160+i, method)
				out.WriteString(c.answer + "\n")
				for l := 0; l < 14; l++ {
					fmt.Fprintf(&out, "%d        state[\"_dpi_%d\"] = state.get('_original_dpi', %d)\n", 3163+i+l, l, l)
				}
				summary = "tool bash $ " + command + fmt.Sprintf(": %d    def %s(self):", 3159+i, method)
				// A later note quotes the token again and holds every prompt
				// term the output holds: intent ownership would have it
				// stand for the output, but it is no re-run of the command.
				note := fmt.Sprintf("`%s.%s` pops the %s from the state in %s; %s stays as it is.", camel, method, w3, path, method)
				turns[base+30] = contextfold.Turn{StepID: base + 30, Summary: "assistant: " + note, RawContent: "[assistant]\n\n" + note + "\n"}
			}
			turns[base] = contextfold.Turn{StepID: base, Summary: "assistant bash $ " + command + ": " + thought,
				RawContent: fmt.Sprintf("[assistant tool_call bash]\n\nTHOUGHT: %s\n\n```bash\n%s\n```\n", thought, command)}
			turns[base+1] = contextfold.Turn{StepID: base + 1, Summary: summary,
				RawContent: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n" + out.String() + "</output>\n"}
			cases = append(cases, c)
		}
	}
	return turns, cases
}

// Rule "a call brings its output" (ranked.Params.CallOutput), every kind,
// on a store of 1,000 generated nodes: asked about what a call printed in
// the words of the call, the scan hydrates the call's own output, directly
// before the call, with its answer line; every pick the scan makes
// without the rule it makes with it (hydrated or dropped).
func TestCallOutputEveryKind(t *testing.T) {
	testCallOutputs(t, 1000)
}

// The same at 100,000 nodes: run with CONTEXTFOLD_BENCH_LARGE=1.
func TestCallOutputEveryKindLarge(t *testing.T) {
	skipUnlessLarge(t)
	testCallOutputs(t, 100_000)
}

func testCallOutputs(t *testing.T, n int) {
	withRankedParams(t, func(p *ranked.Params) { p.CallOutput = true })
	turns, cases := plantCallOutputs(testgen.New(uint64(n)+7), n)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, c.prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := stepsOf(res.Selected)
		at := slices.Index(got, c.call+1)
		if at < 0 {
			t.Errorf("%s %q: hydrated steps %v, want the output %d", c.kind, c.prompt, got, c.call+1)
			continue
		}
		if k := slices.Index(got, c.call); k >= 0 && k != at+1 {
			t.Errorf("%s %q: hydrated steps %v, want the output %d directly before its call", c.kind, c.prompt, got, c.call+1)
		}
		h, err := match.Hydrate(s, c.call+1, c.prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.Content, c.answer) {
			t.Errorf("%s %q: the output %d hydrated without its line %q", c.kind, c.prompt, c.call+1, c.answer)
		}
		// The rule adds: every pick made without it is made with it.
		match.SetRankedParams(ranked.DefaultParams())
		was, err := match.Scan(s, c.prompt, match.Ranked)
		withRankedParams(t, func(p *ranked.Params) { p.CallOutput = true })
		if err != nil {
			t.Fatal(err)
		}
		with := pickSet(res)
		for _, st := range pickSet(was) {
			if !slices.Contains(with, st) {
				t.Errorf("%s %q: step %d picked without the rule, not with it (%v, %v)", c.kind, c.prompt, st, pickSet(was), with)
			}
		}
	}
}

// With the rule off, no case hydrates its output: the test exercises the
// rule.
func TestCallOutputFailsWithoutRule(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.CallOutput = false })
	turns, cases := plantCallOutputs(testgen.New(1007), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, c.prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if got := stepsOf(res.Selected); slices.Contains(got, c.call+1) {
			t.Errorf("%s %q: the output %d hydrated without the rule (%v): the case does not exercise it", c.kind, c.prompt, c.call+1, got)
		}
	}
}

// agentLongCase is one planted node between two and four times the
// store's mean node, of an agent's role or a chat speaker's, whose one
// line answers a question in its words (see plantAgentLong).
type agentLongCase struct {
	kind   string // "tool", "assistant" or "chat"
	step   int
	prompt string
	answer string
}

// plantAgentLong plants, on n generated small turns, two nodes of each
// kind of 12 lines, one of them the answer: a tool's output (a test
// run), an assistant's call writing a script, a chat message of one
// speaker (a label, no agent role).
func plantAgentLong(g testgen.Gen, n int) ([]contextfold.Turn, []agentLongCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "dril", "mab", "sef", "kri", "nol", "budo", "gav", "wen", "fip", "yul", "hask", "rog", "tum", "cep"}
	var cases []agentLongCase
	for k, kind := range []string{"tool", "assistant", "chat"} {
		for r := 0; r < 2; r++ {
			i := 2*k + r
			w1 := syll[(i+3)%len(syll)] + syll[(i+11)%len(syll)] + "n"
			w2 := syll[(i+7)%len(syll)] + syll[(i+15)%len(syll)] + "t"
			c := agentLongCase{kind: kind, step: 20 + i*(n-40)/6,
				prompt: fmt.Sprintf("what was the %s %s value?", w1, w2),
				answer: fmt.Sprintf("the %s %s value was %d.%d", w1, w2, 40+i, 7*i)}
			var b strings.Builder
			for l := 0; l < 12; l++ {
				if l == 8 {
					b.WriteString(c.answer + "\n")
					continue
				}
				fmt.Fprintf(&b, "checkpoint %d drained %d items in %d ms\n", l, 3*l, 11*l)
			}
			var t contextfold.Turn
			switch kind {
			case "tool":
				t = contextfold.Turn{Summary: "tool bash $ python run_checks.py: checkpoint 0 of the queue", RawContent: "[tool observation bash]\n\n<output>\n" + b.String() + "</output>\n"}
			case "assistant":
				t = contextfold.Turn{Summary: "assistant bash $ cat <<'EOF' > notes.txt: Writing the checkpoints down.", RawContent: "[assistant tool_call bash]\n\n```bash\ncat <<'EOF' > notes.txt\n" + b.String() + "EOF\n```\n"}
			case "chat":
				t = contextfold.Turn{Summary: "ana: checkpoint 0 of the queue", RawContent: "ana: " + b.String()}
			}
			t.StepID = c.step
			turns[c.step] = t
			cases = append(cases, c)
		}
	}
	return turns, cases
}

// Rule "an agent's node is its matched lines" (ranked.Params.FocusAgentOver),
// on 1,000 generated nodes: a tool's output or an assistant's node of two
// to four times the store's mean node, asked about in the words of one of
// its lines, is hydrated as the windows around that line and costs the
// per-turn budget what they cost; a chat message of the same length (a
// speaker's label) is hydrated whole, as rule "focus long picks" has it
// below FocusOver × the mean. Without the rule every one is whole.
func TestFocusAgentNodes(t *testing.T) {
	turns, cases := plantAgentLong(testgen.New(1009), 1000)
	s := foldedAgentStore(t, turns)
	ix, err := ranked.For(s)
	if err != nil {
		t.Fatal(err)
	}
	mean := ix.MeanTokens()
	for _, on := range []bool{true, false} {
		withRankedParams(t, func(p *ranked.Params) {
			p.FocusAgentOver = 0
			if on {
				p.FocusAgentOver = 2
			}
		})
		for _, c := range cases {
			e, err := s.Entry(c.step)
			if err != nil {
				t.Fatal(err)
			}
			if tk := float64(e.TokenEstimate); tk <= 2*mean || tk > 4*mean {
				t.Fatalf("%s: a node of %v tokens, want two to four times the mean %.0f: the case does not test the rule", c.kind, tk, mean)
			}
			res, err := match.Scan(s, c.prompt, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			var pick *contextfold.ScanPick
			for i := range res.Selected {
				if res.Selected[i].StepID == c.step {
					pick = &res.Selected[i]
				}
			}
			if pick == nil {
				t.Fatalf("%s on=%v %q: hydrated %v, want step %d", c.kind, on, c.prompt, stepsOf(res.Selected), c.step)
			}
			h, err := match.Hydrate(s, c.step, c.prompt, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(h.Content, c.answer) {
				t.Errorf("%s on=%v: hydrated without its line %q", c.kind, on, c.answer)
			}
			focused := on && c.kind != "chat"
			if got := len(h.Windows) > 0; got != focused {
				t.Errorf("%s on=%v: focused %v (%d of %d tokens), want %v", c.kind, on, got, h.TokenEstimate, e.TokenEstimate, focused)
			}
			if focused && (pick.TokenCost != float64(h.TokenEstimate) || h.TokenEstimate >= e.TokenEstimate) {
				t.Errorf("%s: the scan costs %v tokens, the focused hydration %d of %d", c.kind, pick.TokenCost, h.TokenEstimate, e.TokenEstimate)
			}
		}
	}
}

// The focusing a scan costs for a long pick (rule "an agent's node is its
// matched lines") is kept for the hydration of the same pick for the same
// prompt: the hydration reuses it (no second analysis of the node's
// lines) and is exactly the one made without it, every field.
func TestFocusReusedByHydration(t *testing.T) {
	turns, cases := plantAgentLong(testgen.New(1009), 1000)
	s := foldedAgentStore(t, turns)
	withRankedParams(t, func(p *ranked.Params) { p.FocusAgentOver = 2 })
	hits := match.FocusMemoHits()
	focusedPicks := 0
	for _, c := range cases {
		res, err := match.Scan(s, c.prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		var reused []*contextfold.Hydration
		for _, p := range res.Selected {
			h, err := match.HydrateWithin(s, p.StepID, c.prompt, match.Ranked, 0)
			if err != nil {
				t.Fatal(err)
			}
			reused = append(reused, h)
		}
		match.ClearFocusMemo()
		for i, p := range res.Selected {
			h, err := match.HydrateWithin(s, p.StepID, c.prompt, match.Ranked, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, reused[i]) {
				t.Fatalf("%q step %d: the hydration reusing the scan's focusing differs from the one without:\n%+v\n%+v", c.prompt, p.StepID, reused[i], h)
			}
			if len(h.Windows) > 0 {
				focusedPicks++
			}
		}
	}
	if got := match.FocusMemoHits() - hits; focusedPicks == 0 || got < int64(focusedPicks) {
		t.Fatalf("%d focused hydrations, %d reused the scan's focusing", focusedPicks, got)
	}
}

// BenchmarkCallOutputScan is the ranked scan (match.Scan) of the
// generated call-output questions on 1,000 nodes, with rule "a call
// brings its output" (on by default) and rule "an agent's node is its
// matched lines" (FocusAgentOver 2, the default) on and off: what the
// two rules cost a scan.
func BenchmarkCallOutputScan(b *testing.B) {
	turns, cases := plantCallOutputs(testgen.New(1007), 1000)
	s := foldedAgentStore(b, turns)
	for _, on := range []string{"both", "calloutput", "focusagent", "neither"} {
		b.Run("on="+on, func(b *testing.B) {
			withRankedParams(b, func(p *ranked.Params) {
				p.FocusAgentOver = 2
				if on != "both" && on != "calloutput" {
					p.CallOutput = false
				}
				if on != "both" && on != "focusagent" {
					p.FocusAgentOver = 0
				}
			})
			for i := 0; b.Loop(); i++ {
				if _, err := match.Scan(s, cases[i%len(cases)].prompt, match.Ranked); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Rule "a call brings its output" and rule "an output answers for its
// exchange" through the proxy's Responses items: a Codex call's note, its
// function_call item (never folded: no node) and its output are three
// steps, the output two after the note. Every planted case, with the
// output moved one step on and the step between left empty, hydrates its
// output directly before its call, as the ingested exchange does: the
// needle stage once paired a call with the node at the next step only,
// and "what does Figure.__getstate__ say about the canvas?" hydrated the
// notes without the output through the proxy in Codex's wire format.
func TestCallOutputAcrossCallItem(t *testing.T) {
	withRankedParams(t, func(p *ranked.Params) { p.CallOutput = true })
	turns, cases := plantCallOutputs(testgen.New(1007), 1000)
	moved := map[int]contextfold.Turn{}
	for _, c := range cases {
		o := turns[c.call+1]
		o.StepID = c.call + 2
		moved[c.call+2] = o
	}
	var gapped []contextfold.Turn
	for _, tr := range turns {
		if o, ok := moved[tr.StepID]; ok {
			gapped = append(gapped, o)
		} else if _, ok := moved[tr.StepID+1]; !ok {
			gapped = append(gapped, tr) // the step between stays empty
		}
	}
	s := foldedAgentStore(t, gapped)
	for _, c := range cases {
		res, err := match.Scan(s, c.prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := stepsOf(res.Selected)
		at := slices.Index(got, c.call+2)
		if at < 0 {
			t.Errorf("%s %q: hydrated steps %v, want the output %d", c.kind, c.prompt, got, c.call+2)
			continue
		}
		if k := slices.Index(got, c.call); k >= 0 && k != at+1 {
			t.Errorf("%s %q: hydrated steps %v, want the output %d directly before its call", c.kind, c.prompt, got, c.call+2)
		}
	}
}
