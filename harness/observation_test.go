package harness

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestIsObservation(t *testing.T) {
	for text, want := range map[string]bool{
		"<returncode>0</returncode>\n<output>\nok\n</output>":                            true,
		"  <returncode>1</returncode>\n<output>E ValueError</output>":                    true,
		"The last command <command>sleep 999</command> timed out and has been killed.":   true,
		"Please always provide EXACTLY ONE action in triple backticks, found 2 actions.": true,
		"Observation: total 12\ndrwxr-xr-x":                                              true,
		"OBSERVATION:\nFile created successfully":                                        true,
		"EXECUTION RESULT of [execute_bash]:\nok":                                        true,
		"I ran this command:\n\npytest -x\n\nAnd got this output:\n\n1 failed":           true,
		"What did the returncode of the last test run say?":                              false,
		"Fix the widget parser so that empty input is accepted.":                         false,
		"Earlier a tool output mentioned <returncode>. What exactly did that line say?":  false,
		"": false,
	} {
		if got := IsObservation(text); got != want {
			t.Errorf("IsObservation(%q) = %v, want %v", text, got, want)
		}
	}
}

// miniConv is a mini-swe-agent session: the task, then each command as an
// assistant message and its output as a user message (<returncode>…), the
// outputs naming a distinct identifier each.
func miniConv(steps int) []Message {
	conv := []Message{
		{Role: RoleSystem, Parts: []Part{{Text: "You are a helpful assistant that can interact with a computer shell."}}},
		{Role: RoleUser, Human: true, Parts: []Part{{Text: "<pr_description>\nFix the widget parser so that empty input is accepted; run the tests of every package.\n</pr_description>", Foldable: true}}},
	}
	for i := 0; i < steps; i++ {
		n := strconv.Itoa(i)
		conv = append(conv,
			Message{Role: RoleAssistant, Parts: []Part{{Text: "THOUGHT: run the tests of pkg" + n + ".\n\n```bash\ngo test ./pkg" + n + "\n```", Foldable: true}}},
			Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "<returncode>0</returncode>\n<output>\n" +
				strings.Repeat("ok  example.com/widget/pkg"+n+" checked widgetParser"+n+"Case line of output\n", 45) + "</output>", Foldable: true}}})
	}
	return conv
}

// A scaffold's observation sent as a user message is not a question: under
// a budget that folds, no request whose latest message is an observation
// gets hydration, however much its output repeats folded terms; a human
// question in the same session still does. Before the fix every
// observation was scanned as a new human turn and hydrated the folded
// outputs of the same package names.
func TestNoHydrationForObservations(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 6000, Match: "ranked"})
	events := 0
	for steps := 1; steps <= 40; steps++ {
		conv := miniConv(steps)
		d, err := h.DispatchRequest(conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkingSet.FoldEvent {
			events++
		}
		if d.PromptIndex != 1 {
			t.Fatalf("%d steps: prompt index %d, want the task (1): an observation was taken for a human prompt", steps, d.PromptIndex)
		}
		if len(d.Hydrated) > 0 || d.HydrationText != "" {
			t.Fatalf("%d steps: hydrated %d nodes into a request whose latest message is an observation", steps, len(d.Hydrated))
		}
		if _, err := h.PostTurnResponse(d); err != nil {
			t.Fatal(err)
		}
	}
	if events == 0 {
		t.Fatal("no fold event: the test does not exercise folded outputs")
	}
	conv := append(miniConv(40), Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "What did the test of widgetParser3Case print earlier?", Foldable: true}}})
	d, err := h.DispatchRequest(conv, 50)
	if err != nil {
		t.Fatal(err)
	}
	if d.PromptIndex != len(conv)-1 {
		t.Fatalf("the question is not the prompt: prompt index %d of %d messages", d.PromptIndex, len(conv))
	}
	found := false
	for _, n := range d.Hydrated {
		found = found || n.StepID == 2+2*3+1
	}
	if !found {
		t.Fatalf("the question did not hydrate step %d (the output of pkg3): hydrated %v", 2+2*3+1, d.Hydrated)
	}
}

// Within a tool loop the scan runs for the request that ends with the human
// prompt only; a later request of the turn (ending with a tool result)
// keeps that hydration and is never scanned again, even when a fold event
// added steps to the store since. The question names a step still in the
// hot tail when asked (nothing to hydrate then); before the fix, the fold
// event that later folded that step rescanned the prompt and hydrated it
// into a request ending with a tool result.
func TestToolResultRequestNotScanned(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 5000, Match: "ranked"})
	conv := agentConv(30)
	conv = append(conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "What did go test ./pkg29 print earlier?", Foldable: true}}})
	d, err := h.DispatchRequest(conv, 50)
	if err != nil {
		t.Fatal(err)
	}
	h.PostTurnResponse(d)
	first := d.HydrationText
	if first != "" {
		t.Fatalf("the question hydrated %v while its step is in the hot tail: the test needs an empty first hydration", d.Hydrated)
	}
	events := 0
	for i := 0; i < 10; i++ {
		conv = append(conv,
			Message{Role: RoleAssistant, Tool: "bash", Command: "go test ./pkg" + strconv.Itoa(i), Parts: []Part{{Text: `bash {"command":"go test ./pkg` + strconv.Itoa(i) + `"}`}}},
			Message{Role: RoleTool, Tool: "bash", AnswersTool: true, Parts: []Part{{Text: strings.Repeat("ok  example.com/widget/pkg"+strconv.Itoa(i)+" line of output\n", 45), Foldable: true, ToolResult: true}}})
		d, err := h.DispatchRequest(conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		if d.HydrationText != first {
			t.Fatalf("request %d of the turn: hydration changed (%d bytes, was %d): a tool result was scanned", i+2, len(d.HydrationText), len(first))
		}
		if d.WorkingSet.FoldEvent {
			events++
		}
		h.PostTurnResponse(d)
	}
	if events == 0 {
		t.Fatal("no fold event during the turn: the test does not exercise a rescan")
	}
}

// The cost rule's fold target: a fold event folds deep enough to pay for
// itself within PaybackRequests requests at Anthropic's prices, never
// shallower than the plain fold target, never below what stays cached.
func TestFoldTargetPaysBack(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 40_000})
	ws := newWorkset()
	conv := miniConv(0)
	kept := 50 + h.cost(conv[0]) + h.cost(conv[1])
	for _, n := range []int{1, 2, 4} {
		h.cfg.PaybackRequests = n
		for _, est := range []int{40_001, 60_000} {
			T := h.foldTarget(conv, ws, 2, 50, est)
			if T > 40_000*DefaultFoldTarget/100 || T < kept {
				t.Fatalf("n=%d est=%d: target %d outside [%d, %d]", n, est, T, kept, 40_000*DefaultFoldTarget/100)
			}
			pays := float64(n+1) * float64(est-T) * FoldCacheRead
			costs := float64(T-kept) * (FoldCacheWrite - FoldCacheRead)
			if pays+1 < costs {
				t.Fatalf("n=%d est=%d: target %d: saves %.0f over %d requests, rewrite costs %.0f more", n, est, T, pays, n+1, costs)
			}
		}
	}
	h.cfg.PaybackRequests = -1
	if T := h.foldTarget(conv, ws, 2, 50, 40_001); T != 40_000*DefaultFoldTarget/100 {
		t.Fatalf("rule off: target %d, want the plain %d", T, 40_000*DefaultFoldTarget/100)
	}
}

// A request that comes after the provider's cache expired (CacheTTL idle)
// gets a fold event once the conversation is past the middle between the
// fold target and the budget: it rewrites nothing cached. Without the idle
// time the same request is forwarded unchanged.
func TestColdCacheFolds(t *testing.T) {
	for _, idle := range []time.Duration{time.Second, 6 * time.Minute} {
		now := time.Unix(1772445600, 0)
		h := newHarness(t, Config{ContextBudget: 12_000, Now: func() time.Time { return now }})
		var conv []Message
		for steps := 1; ; steps++ {
			conv = miniConv(steps)
			if tokensOf(h, conv) > 9_500 {
				break
			}
		}
		d, err := h.DispatchRequest(conv[:len(conv)-2], 50)
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkingSet.FoldEvent {
			t.Fatalf("a fold event under the budget with a warm cache (%d tokens)", d.WorkingSet.Estimate)
		}
		h.PostTurnResponse(d)
		now = now.Add(idle)
		d, err = h.DispatchRequest(conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		if cold := idle >= DefaultCacheTTL; d.WorkingSet.FoldEvent != cold {
			t.Fatalf("idle %v: fold event %v, want %v (estimate %d of the budget %d)", idle, d.WorkingSet.FoldEvent, cold, d.WorkingSet.Estimate, d.WorkingSet.Budget)
		}
	}
}

// unseenConv is miniConv under a scaffold no list knows: its actions are
// fenced blocks in the assistant's text, each output comes back as a user
// message opened by its own template ("Execution log (exit status N):").
func unseenConv(steps int) []Message {
	conv := []Message{
		{Role: RoleSystem, Parts: []Part{{Text: "You operate a shell. Write one command per reply in a fenced block."}}},
		{Role: RoleUser, Human: true, Parts: []Part{{Text: "Fix the widget parser so that empty input is accepted; run the tests of every package.", Foldable: true}}},
	}
	for i := 0; i < steps; i++ {
		n := strconv.Itoa(i)
		conv = append(conv,
			Message{Role: RoleAssistant, Parts: []Part{{Text: "Next I run the tests of pkg" + n + ".\n\n```sh\ngo test ./pkg" + n + "\n```", Foldable: true}}},
			Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "Execution log (exit status " + strconv.Itoa(i%3) + "):\n" +
				strings.Repeat("ok  example.com/widget/pkg"+n+" checked widgetParser"+n+"Case line of output\n", 45), Foldable: true}}})
	}
	return conv
}

// The template signal: a scaffold that is in no list of openings still
// fills one template for every output, and from its second output on no
// request whose latest message is such an output is scanned or hydrated;
// a human question after it still is. Before the signal every output of
// this scaffold was taken for a human prompt and hydrated folded outputs.
func TestNoHydrationForUnseenScaffold(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 6000, Match: "ranked"})
	events := 0
	for steps := 1; steps <= 40; steps++ {
		conv := unseenConv(steps)
		d, err := h.DispatchRequest(conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkingSet.FoldEvent {
			events++
		}
		if steps >= 2 && d.PromptIndex != 1 {
			t.Fatalf("%d steps: prompt index %d, want the task (1): an output was taken for a human prompt", steps, d.PromptIndex)
		}
		if steps >= 2 && (len(d.Hydrated) > 0 || d.HydrationText != "") {
			t.Fatalf("%d steps: hydrated %d nodes into a request whose latest message is an output", steps, len(d.Hydrated))
		}
		if _, err := h.PostTurnResponse(d); err != nil {
			t.Fatal(err)
		}
	}
	if events == 0 {
		t.Fatal("no fold event: the test does not exercise folded outputs")
	}
	conv := append(unseenConv(40), Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "What did the test of widgetParser3Case print earlier?", Foldable: true}}})
	d, err := h.DispatchRequest(conv, 50)
	if err != nil {
		t.Fatal(err)
	}
	if d.PromptIndex != len(conv)-1 {
		t.Fatalf("the question is not the prompt: prompt index %d of %d messages", d.PromptIndex, len(conv))
	}
	if len(d.Hydrated) == 0 {
		t.Fatal("the question hydrated nothing")
	}
}

// templateObservation never takes a person for a scaffold: replies that
// open alike without markup or a label, replies after an answer that ran
// nothing, and a template seen once only.
func TestTemplateObservationPeople(t *testing.T) {
	act := Message{Role: RoleAssistant, Parts: []Part{{Text: "Run this:\n\n```sh\nmake test\n```"}}}
	talk := Message{Role: RoleAssistant, Parts: []Part{{Text: "The tests pass now; the parser accepts empty input."}}}
	user := func(s string) Message { return Message{Role: RoleUser, Human: true, Parts: []Part{{Text: s}}} }
	for name, c := range map[string]struct {
		conv []Message
		want bool
	}{
		"same words twice":         {[]Message{user("task"), act, user("Can you also check the parser tests?"), act, user("Can you also check the lexer tests?")}, false},
		"continue twice":           {[]Message{user("task"), act, user("continue please, go on"), act, user("continue please, go on")}, false},
		"label after no action":    {[]Message{user("task"), act, user("Output (exit 0):\nok"), talk, user("Output (exit 1):\nFAIL")}, false},
		"label seen once":          {[]Message{user("task"), talk, user("Output (exit 0):\nok"), act, user("Output (exit 1):\nFAIL")}, false},
		"label twice after action": {[]Message{user("task"), act, user("Output (exit 0):\nok"), act, user("Output (exit 1):\nFAIL")}, true},
		"markup twice":             {[]Message{user("task"), act, user("<result status=0>\nok"), act, user("<result status=2>\nboom")}, true},
		"element action":           {[]Message{user("task"), {Role: RoleAssistant, Parts: []Part{{Text: "<function=bash>\nls\n</function>"}}}, user("[exit 0] stdout follows\nx"), {Role: RoleAssistant, Parts: []Part{{Text: "<function=bash>\npwd\n</function>"}}}, user("[exit 0] stdout follows\ny")}, true},
	} {
		if got := templateObservation(c.conv, len(c.conv)-1); got != c.want {
			t.Errorf("%s: templateObservation = %v, want %v", name, got, c.want)
		}
	}
}

// keyed sets every message's PrefixKey, as the proxy does (a hash of the
// message and its history; here its position, the history being one).
func keyed(conv []Message) []Message {
	for i := range conv {
		conv[i].PrefixKey = uint64(i + 1)
	}
	return conv
}

// The memoized prompt index (a dispatch's) equals PromptIndex's at every
// length of a growing session of an unseen scaffold, its first output
// included (a prompt until the second arrives), and with a human question
// at the end.
func TestPromptIndexMemoized(t *testing.T) {
	h := &Harness{}
	conv := keyed(append(unseenConv(30), Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "What did pkg3 print?"}}}))
	for k := 1; k <= len(conv); k++ {
		if got, want := h.promptIndex(conv[:k]), PromptIndex(conv[:k]); got != want {
			t.Fatalf("%d messages: memoized prompt index %d, PromptIndex %d", k, got, want)
		}
	}
	if len(h.observed) == 0 {
		t.Fatal("nothing memoized")
	}
}

// BenchmarkPromptIndex is the prompt index of a session of 4,000 outputs
// (8,002 messages) whose only human prompt is the task, the whole
// conversation scanned: under a scaffold the table knows (mini), under one
// it does not, each output classed by the template signal (unseen), and
// the same memoized as a dispatch does (unseen-memo).
func BenchmarkPromptIndex(b *testing.B) {
	mini, unseen := keyed(miniConv(4000)), keyed(unseenConv(4000))
	b.Run("mini", func(b *testing.B) {
		for range b.N {
			PromptIndex(mini)
		}
	})
	b.Run("unseen", func(b *testing.B) {
		for range b.N {
			PromptIndex(unseen)
		}
	})
	b.Run("unseen-memo", func(b *testing.B) {
		h := &Harness{}
		for range b.N {
			h.promptIndex(unseen)
		}
	})
}
