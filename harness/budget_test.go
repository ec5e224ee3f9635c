package harness

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// agentConv is a coding-agent session: a system prompt, the task, then
// assistant tool calls each answered by a tool result of about 500 tokens.
func agentConv(steps int) []Message {
	conv := []Message{
		{Role: RoleSystem, Parts: []Part{{Text: "You are a coding agent."}}},
		{Role: RoleUser, Human: true, Parts: []Part{{Text: "<pr_description>\nFix the widget parser so that empty input is accepted.\n</pr_description>", Foldable: true}}},
	}
	for i := 0; i < steps; i++ {
		conv = append(conv,
			Message{Role: RoleAssistant, Tool: "bash", Command: "go test ./pkg" + strconv.Itoa(i),
				Parts: []Part{{Text: "Let me run the tests of pkg" + strconv.Itoa(i), Foldable: true}, {Text: `bash {"command":"go test ./pkg` + strconv.Itoa(i) + `"}`}}},
			Message{Role: RoleTool, Tool: "bash", Command: "go test ./pkg" + strconv.Itoa(i), AnswersTool: true,
				Parts: []Part{{Text: strings.Repeat("ok  example.com/widget/pkg"+strconv.Itoa(i)+" line of output\n", 45), Foldable: true, ToolResult: true}}})
	}
	return conv
}

func tokensOf(h *Harness, conv []Message) int {
	n := 0
	for _, m := range conv {
		n += h.cost(m)
	}
	return n
}

func TestBudgetShortSessionUnchanged(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 100_000})
	conv := agentConv(20)
	d, err := h.PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Folded) != 0 || len(d.WorkingSet.Removed) != 0 || d.WorkingSet.FoldEvent {
		t.Fatalf("a session under the budget was changed: %+v", d.WorkingSet)
	}
	if !reflect.DeepEqual(d.Apply(conv), conv) {
		t.Fatal("Apply changed a session under the budget")
	}
}

func TestBudgetLongSessionBoundedPinnedPaired(t *testing.T) {
	const budget = 6000
	h := newHarness(t, Config{ContextBudget: budget})
	var prev []Message
	events := 0
	for steps := 5; steps <= 120; steps++ {
		conv := agentConv(steps)
		d, err := h.PreTurnDispatch(conv)
		if err != nil {
			t.Fatal(err)
		}
		w := d.WorkingSet
		out := d.Apply(conv)
		if got := tokensOf(h, out); got > budget {
			t.Fatalf("%d steps: %d tokens forwarded, budget %d", steps, got, budget)
		}
		// Pinned: the system prompt and the task go out as the client wrote them.
		if !reflect.DeepEqual(out[0], conv[0]) || !reflect.DeepEqual(out[1], conv[1]) {
			t.Fatalf("%d steps: the pinned prefix changed", steps)
		}
		// The hydration is the last part of a user or tool-result message
		// forwarded verbatim, at or after the prompt (when a fold event
		// folds its host, it moves on).
		if d.HydrationText != "" {
			i := d.HydrationIndex
			if i < d.PromptIndex || i >= len(conv) || (conv[i].Role != RoleUser && conv[i].Role != RoleTool) {
				t.Fatalf("%d steps: hydration host %d (prompt %d)", steps, i, d.PromptIndex)
			}
			hosts := 0
			for _, o := range out {
				if n := len(o.Parts); n > 0 && o.Parts[n-1].Text == d.HydrationText {
					hosts++
					if !reflect.DeepEqual(o.Parts[:n-1], conv[i].Parts) {
						t.Fatalf("%d steps: the hydration's host %d is not forwarded verbatim", steps, i)
					}
				}
			}
			if hosts != 1 {
				t.Fatalf("%d steps: the hydration is in %d messages", steps, hosts)
			}
		}
		// The hot tail is verbatim (the hydration's host may carry it as
		// an extra, last part).
		for k := 1; k <= DefaultHotWindow; k++ {
			o := out[len(out)-k]
			if len(conv)-k == d.HydrationIndex && d.HydrationText != "" {
				if last := o.Parts[len(o.Parts)-1]; last.Text != d.HydrationText {
					t.Fatalf("%d steps: the hydration is not the last part of its host", steps)
				}
				o.Parts = o.Parts[:len(o.Parts)-1]
			}
			if !reflect.DeepEqual(o, conv[len(conv)-k]) {
				t.Fatalf("%d steps: hot tail message -%d changed", steps, k)
			}
		}
		// A tool call and its result leave the prompt together.
		gone := map[int]bool{}
		for _, i := range w.Removed {
			gone[i] = true
		}
		for i := 1; i < len(conv); i++ {
			if answersTool(conv[i]) && gone[i] != gone[i-1] {
				t.Fatalf("%d steps: message %d and the call it answers were split", steps, i)
			}
		}
		if w.FoldEvent {
			events++
		} else if prev != nil {
			// Between fold events the forwarded requests are append-only,
			// the hydration included: it stays in the message it was
			// placed in, so a provider's prefix cache holds every byte of
			// the request before.
			if !reflect.DeepEqual(out[:len(prev)], prev) {
				t.Fatalf("%d steps: the forwarded request before changed without a fold event", steps)
			}
		}
		prev = out
	}
	if events < 2 || events > 30 {
		t.Fatalf("%d fold events over 115 requests: folds should be large and rare", events)
	}
	d, _ := h.PreTurnDispatch(agentConv(120))
	w := d.WorkingSet
	if w.PageTable == "" || !strings.HasPrefix(w.PageTable, PageTableOpen) {
		t.Fatalf("no page table after 240 messages: %+v", w)
	}
	out := d.Apply(agentConv(120))
	if out[2].Parts[0].Text != w.PageTable {
		t.Fatal("the page table does not follow the pinned prefix")
	}
	// Every removed step is still in the store.
	for _, i := range w.Removed {
		if _, err := h.Store().Entry(i); err != nil {
			t.Fatalf("removed step %d is not in the store: %v", i, err)
		}
	}
}

func TestBudgetTamperedNodeForwardedVerbatimAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clock := func() time.Time { return time.Unix(1772445600, 0) }
	open := func() *Harness {
		s, err := contextfold.Open(dir, contextfold.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return New(s, Config{ContextBudget: 6000, PageTableShare: 100, FoldTarget: 80, PaybackRequests: -1}) // records in place: the plain fold target
	}
	conv := agentConv(40)
	d, err := open().PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Folded) == 0 {
		t.Fatal("nothing folded in place")
	}
	victim := d.Folded[0].Index
	// Tamper with the victim's cold node, then restart.
	h := open()
	path := h.Store().NodePath(victim)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "line of output", "line of 0utput", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = h.PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Folded {
		if f.Index == victim {
			t.Fatalf("step %d fails verification but went out as its record", victim)
		}
	}
	for _, i := range d.WorkingSet.Removed {
		if i == victim {
			t.Fatalf("step %d fails verification but left the prompt", victim)
		}
	}
	out := d.Apply(conv)
	found := false
	for _, m := range out {
		if reflect.DeepEqual(m, conv[victim]) {
			found = true
		}
	}
	if !found {
		t.Fatalf("step %d is not forwarded verbatim", victim)
	}
}

func TestRecordsFormatAware(t *testing.T) {
	conv := []Message{
		{Role: RoleAssistant, Parts: []Part{{Text: "THOUGHT: run the tests\n\n```bash\npython -m pytest tests/test_requests.py -x\n```", Foldable: true}}},
		{Role: RoleUser, Parts: []Part{{Text: "<returncode>1</returncode>\n<output>\n\r 45%|████▌     | 9/20\n============ test session starts ============\nrequests.py:12: in get\nE   ValueError: bad proxy 172.16.1.1/-172.16.1.1\nsee README.rst\n</output>", Foldable: true}}},
	}
	m := conv[1]
	m.Command = commandFor(conv, 1)
	if m.Command != "python -m pytest tests/test_requests.py -x" {
		t.Fatalf("command %q", m.Command)
	}
	s := Summarize(m)
	for _, want := range []string{"$ python -m pytest tests/test_requests.py -x", "exit 1", "ValueError: bad proxy"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "returncode") || strings.Contains(s, "45%") {
		t.Errorf("summary %q leads with a tag or a progress meter", s)
	}
	e := &contextfold.Entry{StepID: 1, FoldedAt: "2026-03-02T10:00:00Z", FilePath: "cold_nodes/step_000001.json", Summary: s,
		Files: []string{"README.rs", "equests.py", "172.16.1.1/-172.16.1.1"}}
	st := Project(m, e)
	want := []string{"tests/test_requests.py", "requests.py", "README.rst"}
	if !reflect.DeepEqual(st.TargetFiles, want) {
		t.Errorf("target_files %q, want %q", st.TargetFiles, want)
	}
	if st.Status != StatusFailed {
		t.Errorf("status %s", st.Status)
	}
	if err := st.Validate(); err != nil {
		t.Error(err)
	}
	// A label line says nothing: the line after it leads.
	if s := Summarize(Message{Role: RoleTool, Parts: []Part{{Text: "[tool observation execute_bash]\nsrc/libponyc/options/options.c:12: warning: unused", Foldable: true}}}); !strings.Contains(s, "warning: unused") {
		t.Errorf("summary %q leads with a label line", s)
	}
	// Aider edit blocks name their files.
	aider := Message{Role: RoleAssistant, Parts: []Part{{Text: "I'll fix it.\n\nsrc/widget/parse.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```", Foldable: true}}}
	if s := Summarize(aider); !strings.Contains(s, "edits src/widget/parse.py") {
		t.Errorf("aider summary %q", s)
	}
	for tok, want := range map[string]bool{"README.rst": true, "requests.py": true, "172.16.1.1": false, "-172.16.1.1": false,
		"v1.2.3": false, "https://x.io/a.py": false, "Makefile": true, "go.mod": true, "1.2.go": false} {
		if got := looksLikeFile(tok); got != want {
			t.Errorf("looksLikeFile(%q) = %v", tok, got)
		}
	}
}

// A prompt is about what came before it: the task that starts a human turn
// never hydrates the turn's own calls and outputs, however well they match
// it (ranked matching; step ids are message positions), while a later
// question about one of them does.
func TestPromptNeverHydratesItsOwnTurn(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 6000, Match: match.Ranked})
	conv := agentConv(60)
	conv[1].Parts[0].Text = "<pr_description>\nFix the widget parser so that empty input is accepted. If the frobnicator check hits its deadline, say so.\n</pr_description>"
	const out = 2 + 2*7 + 1 // the tool output of pkg7
	conv[out].Parts[0].Text += "frobnicator check: deadline exceeded after 30s\n"
	d, err := h.PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store().Entry(out); err != nil {
		t.Fatalf("step %d was not folded: %v", out, err)
	}
	if len(d.Hydrated) != 0 {
		t.Fatalf("the task hydrated its own turn's steps %v", d.Accounting.StepsHydrated)
	}
	conv = append(conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "Did the frobnicator check hit its deadline?"}}})
	d, err = h.PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hydrated) == 0 || d.Hydrated[0].StepID != out || !strings.Contains(d.HydrationText, "deadline exceeded after 30s") {
		t.Fatalf("the question hydrated %v, want step %d with its line", d.Accounting.StepsHydrated, out)
	}
}

// DispatchHeld starts no fold event: a session that outgrows its budget
// keeps its working set (over the budget) while held, and the next
// DispatchRequest folds.
func TestBudgetDispatchHeld(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 6000})
	held := 0
	for steps := 5; steps <= 30; steps++ {
		conv := agentConv(steps)
		prev, _ := h.DispatchRequest(agentConv(steps-1), 0)
		d, err := h.DispatchHeld(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkingSet.FoldEvent {
			t.Fatalf("%d steps: a held dispatch started a fold event", steps)
		}
		if !reflect.DeepEqual(d.Folded, prev.Folded) || !reflect.DeepEqual(d.WorkingSet.Removed, prev.WorkingSet.Removed) {
			t.Fatalf("%d steps: a held dispatch changed the working set", steps)
		}
		if d.WorkingSet.OverBudget {
			held++
			if d2, err := h.DispatchRequest(conv, 0); err != nil || !d2.WorkingSet.FoldEvent {
				t.Fatalf("%d steps: the dispatch after a held one over the budget did not fold (%v)", steps, err)
			}
		}
	}
	if held == 0 {
		t.Fatal("no held dispatch went over the budget")
	}
}
