package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/match"
)

// linkerAnswer is the line a question about the linker needs; linkerLog
// prints it at the end of lines build lines.
const linkerAnswer = "ld: error: undefined symbol: frobnicate_v2 (referenced by build/module_17.o)"

func linkerLog(lines int) string {
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "cc -O2 -Wall -fPIC -c src/module_%d.c -o build/module_%d.o\n", i, i)
	}
	b.WriteString(linkerAnswer + "\ncollect2: error: ld returned 1 exit status\n")
	return b.String()
}

// buildConversation is an Anthropic conversation as SDK params: the task,
// then one Bash call per output (tool_use / tool_result pairs), then the
// extra messages.
func buildConversation(outputs []string, extra ...anthropic.MessageParam) []anthropic.MessageParam {
	conv := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Build the project and fix what fails."))}
	for i, out := range outputs {
		id := "toolu_" + itoa(i)
		conv = append(conv,
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(id, map[string]any{"command": "make step" + itoa(i)}, "Bash")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, out, false)))
	}
	return append(conv, extra...)
}

func sendAnthropic(t *testing.T, tp *testProxy, conv []anthropic.MessageParam) {
	t.Helper()
	c := anthropicClient(tp)
	if _, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: conv}); err != nil {
		t.Fatal(err)
	}
}

// A node under the store policy's per-call cap (3000 tokens) but over the
// share of the context budget one turn may hydrate (20 % of 8000 = 1600
// tokens) is focused on its matched lines within that share: the answer
// line at its end reaches the model (it used to be cut at its head).
func TestHydrationFocusedWithinHarnessCap(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{ContextBudget: 8000, Match: match.Ranked})
	log := linkerLog(170) // about 2,300 tokens: under the policy's cap, over the harness's
	if n := contextfold.TokenEstimate(log); n <= 1600 || n >= 3000 {
		t.Fatalf("the linker log is %d tokens; the test needs 1600 < n < 3000", n)
	}
	outputs := []string{log}
	for i := 1; i < 20; i++ {
		outputs = append(outputs, bigLog("pkg"+itoa(i), 40))
	}
	conv := buildConversation(outputs,
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("The build failed at the link step.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("thanks, carry on with the other packages")))
	sendAnthropic(t, tp, conv)
	if rec := tp.record(t, 1); rec.StepsFolded+rec.StepsCollapsed == 0 {
		t.Fatalf("nothing folded: %+v", rec.Accounting)
	}
	conv = append(conv, anthropic.NewAssistantMessage(anthropic.NewTextBlock("Done.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("Which module referenced frobnicate_v2 when the linker failed?")))
	sendAnthropic(t, tp, conv)
	rec := tp.record(t, 2)
	fwd := string(up.last(t).Body)
	if len(rec.Hydrated) == 0 {
		t.Fatalf("nothing hydrated: %+v", rec.Accounting)
	}
	if !strings.Contains(fwd, linkerAnswer) {
		t.Fatalf("the answer line did not reach the model; hydrated %+v", rec.Hydrated)
	}
	if rec.HydratedTokens > 1600 {
		t.Fatalf("hydrated %d tokens, over the turn's share of the budget (1600)", rec.HydratedTokens)
	}
	if !strings.Contains(fwd, "[contextfold: lines ") {
		t.Fatal("the hydration is not focused (no window marker)")
	}
}

// A resumed session (a new X-Contextfold-Session replaying the whole
// conversation plus a question) hydrates on its first request: the scan runs
// after that request's fold event, on the store holding what it folded. A
// retry of the same request gets the same hydration.
func TestResumedSessionHydratesOnFirstRequest(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{ContextBudget: 8000, Match: match.Ranked})
	var outputs []string
	for i := 0; i < 50; i++ {
		out := bigLog("pkg"+itoa(i), 30)
		if i == 7 {
			out += "--- FAIL: TestQuorumElection (0.42s)\n    quorum_test.go:88: leader term mismatch: got 7 want 9\n"
		}
		outputs = append(outputs, out)
	}
	conv := buildConversation(outputs, anthropic.NewUserMessage(anthropic.NewTextBlock("Which quorum test failed, and what leader term mismatch did it report?")))
	if len(conv) != 102 {
		t.Fatalf("%d messages", len(conv))
	}
	var bodies []string
	for k := 1; k <= 2; k++ {
		c := anthropicClient(tp)
		_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: conv},
			aoption.WithHeader(HeaderSession, "resumed-1"))
		if err != nil {
			t.Fatal(err)
		}
		rec := tp.record(t, k)
		fwd := string(up.last(t).Body)
		if rec.StepsFolded+rec.StepsCollapsed == 0 {
			t.Fatalf("request %d: nothing folded", k)
		}
		if !strings.Contains(fwd, "quorum_test.go:88: leader term mismatch: got 7 want 9") {
			st := tp.store(t, rec)
			res, _ := match.Scan(st, "Which quorum test failed, and what leader term mismatch did it report?", match.Ranked)
			t.Fatalf("request %d: the answer line did not reach the model (hydrated %+v); a scan of the store now selects %+v", k, rec.Hydrated, res.Selected)
		}
		bodies = append(bodies, hydrationPart(fwd))
	}
	if bodies[0] != bodies[1] {
		t.Fatal("the retry of the same turn got another hydration")
	}
}

// hydrationPart returns the forwarded body from its first hydration element.
func hydrationPart(body string) string {
	if i := strings.Index(body, harness.HydrationOpen); i >= 0 {
		return body[i:]
	}
	return ""
}

// The context budget is honoured: a hot tail larger than the budget shrinks
// (down to the latest message and its tool pair), so every forwarded
// request fits, without a warning.
func TestBudgetHotTailShrinks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    harness.Config
		output int // lines per tool output (about 12 tokens a line)
	}{
		{"budget-8000", harness.Config{ContextBudget: 8000}, 190},
		{"budget-3000-hot-4", harness.Config{ContextBudget: 3000, HotWindow: 4}, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			tp := newProxy(t, up, tc.cfg)
			var outputs []string
			for n := 0; n < 14; n++ {
				outputs = append(outputs, bigLog("pkg"+itoa(n), tc.output))
				conv := buildConversation(outputs)
				c := anthropicClient(tp)
				var resp *http.Response
				if _, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: conv},
					aoption.WithResponseInto(&resp)); err != nil {
					t.Fatal(err)
				}
				rec := tp.record(t, n+1)
				fwd := up.last(t).Body
				if got := contextfold.TokenEstimate(string(fwd)); got > tc.cfg.ContextBudget || rec.ForwardedTokens > tc.cfg.ContextBudget {
					t.Fatalf("request %d: %d tokens forwarded (record %d), budget %d; working set %+v", n+1, got, rec.ForwardedTokens, tc.cfg.ContextBudget, rec.WorkingSet)
				}
				if w := resp.Header.Get(HeaderWarning); w != "" || rec.OverBudget {
					t.Fatalf("request %d: warning %q", n+1, w)
				}
				checkPairs(t, APIAnthropic, fwd)
				// The latest tool pair is verbatim.
				if !strings.Contains(string(fwd), "compiled pkg"+itoa(n)+" module ok") {
					t.Fatalf("request %d: the latest tool result is not verbatim", n+1)
				}
			}
		})
	}
}

// A request that cannot fit the budget (a pinned task statement of 1 MB)
// goes out with an X-Contextfold-Warning and is counted in
// stats.over_budget.
func TestBudgetOverWarns(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{})
	huge := strings.Repeat("the task statement, repeated at length. ", 1<<20/40)
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10,
		"messages": []any{map[string]any{"role": "user", "content": huge}}})
	resp, _ := post(t, tp.http.URL+PathAnthropic, body, nil)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if w := resp.Header.Get(HeaderWarning); !strings.Contains(w, "over the context budget") {
		t.Fatalf("no over-budget warning: %q", w)
	}
	rec := tp.record(t, 1)
	if !rec.OverBudget {
		t.Fatalf("record not marked over budget: %+v", rec)
	}
	r, err := http.Get(tp.http.URL + PathStats)
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	err = json.NewDecoder(r.Body).Decode(&st)
	r.Body.Close()
	if r.StatusCode != 200 || err != nil || st.OverBudget != 1 {
		t.Fatalf("stats over_budget = %d (%s)", st.OverBudget, r.Status)
	}
	// A request under the budget is not counted.
	small, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if resp, _ := post(t, tp.http.URL+PathAnthropic, small, nil); resp.Header.Get(HeaderWarning) != "" {
		t.Fatal("a small request was warned about")
	}
	tp.record(t, 2)
	if st := tp.srv.Stats(); st.OverBudget != 1 {
		t.Fatalf("over_budget = %d after a small request", st.OverBudget)
	}
}

// When the pinned messages and the hot tail take more than the fold target,
// fold events stay rare (the tail shrinks to bring the request under the
// target, leaving room to grow) and the cache-stable prefix holds between
// them.
func TestBudgetFoldEventsRare(t *testing.T) {
	up := newUpstream(t)
	const budget = 8000
	tp := newProxy(t, up, harness.Config{ContextBudget: budget})
	task := "Build the project and fix what fails.\n" + strings.Repeat("Constraint: keep the public API of package widget stable.\n", 200) // ~3,000 tokens, pinned
	var outputs []string
	events, requests := 0, 40
	for n := 0; n < requests; n++ {
		outputs = append(outputs, bigLog("pkg"+itoa(n), 45)) // ~500 tokens
		conv := buildConversation(outputs)
		conv[0] = anthropic.NewUserMessage(anthropic.NewTextBlock(task))
		sendAnthropic(t, tp, conv)
		rec := tp.record(t, n+1)
		if w := rec.WorkingSet; w != nil && w.FoldEvent {
			events++
			// A fold event folds to the target what lies before the hot
			// tail; it ends above the target only when nothing is left
			// there to fold (the pinned task, the hot tail and the page
			// table within its share are what stays).
			if w.Estimate > budget/2 && (w.VerbatimTokens > 0 || w.Records > 0) {
				t.Fatalf("request %d: a fold event ended at %d tokens, target %d, with %d verbatim tokens and %d records left to fold", n+1, w.Estimate, budget/2, w.VerbatimTokens, w.Records)
			}
			if w.TailStart < rec.Messages-harness.DefaultHotWindow {
				t.Fatalf("request %d: the hot tail starts at %d of %d: under the budget it stays verbatim", n+1, w.TailStart, rec.Messages)
			}
		}
		if rec.ForwardedTokens > budget {
			t.Fatalf("request %d: %d tokens forwarded, budget %d", n+1, rec.ForwardedTokens, budget)
		}
	}
	if events == 0 || events > requests/5 {
		t.Fatalf("%d fold events over %d requests (want 1 to %d: large, rare folds)", events, requests, requests/5)
	}
}

// When the pinned task and the hot tail exceed the budget itself, the hot
// tail shrinks (oldest first, never below the latest tool pair) until the
// request fits: the request is not left over the budget while something in
// the tail can fold.
func TestBudgetHotTailShrinksOverBudget(t *testing.T) {
	up := newUpstream(t)
	const budget = 8000
	tp := newProxy(t, up, harness.Config{ContextBudget: budget})
	task := "Build the project and fix what fails.\n" + strings.Repeat("Constraint: keep the public API of package widget stable.\n", 200) // ~3,000 tokens, pinned
	var outputs []string
	for n := 0; n < 12; n++ {
		outputs = append(outputs, bigLog("pkg"+itoa(n), 180)) // ~2,000 tokens: the 8 messages of the tail take ~8,000
		conv := buildConversation(outputs)
		conv[0] = anthropic.NewUserMessage(anthropic.NewTextBlock(task))
		sendAnthropic(t, tp, conv)
		rec := tp.record(t, n+1)
		if rec.ForwardedTokens > budget || rec.OverBudget {
			t.Fatalf("request %d: %d tokens forwarded, budget %d (tail from %d of %d)", n+1, rec.ForwardedTokens, budget, rec.WorkingSet.TailStart, rec.Messages)
		}
	}
}
