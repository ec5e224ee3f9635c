package e2e

import (
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
)

// thinkingSteps is the length of the session of the thinking tests: long
// enough for fold events at the e2e context budget (the three long outputs
// are steps 0, 4 and 8), short enough to run in a minute or two.
const thinkingSteps = 13

// thinkingOptions are the scripted model's options in the thinking tests:
// thinking on, invalid thinking answered 400 (the default on accounts
// created on or after 2026-08-31), and every fourth reply's thinking
// redacted, so that redacted_thinking blocks are checked too.
var thinkingOptions = scripted.Options{RedactEvery: 4}

// checkBinding fails on any request the model rejected over a thinking
// block, naming the first, and logs the prefix-check counts.
func checkBinding(t *testing.T, up *scripted.Server) scripted.BindingStats {
	t.Helper()
	b := up.Binding()
	t.Logf("prefix checks: %v", b)
	if b.Rejected > 0 {
		for _, r := range up.Requests() {
			if r.Status == 400 {
				t.Errorf("%d requests were answered 400 over a thinking block; the first: %s", b.Rejected, r.Thinking.ErrorMessage())
				break
			}
		}
	}
	return b
}

// TestClaudeCodeThinkingDirect runs Claude Code straight at the checking
// model: the real client is append-only, so every thinking block it sends
// back passes the check. This holds the checker to the real client (string
// content and a single text block, cache_control markers that move from
// turn to turn) before it judges the proxy.
func TestClaudeCodeThinkingDirect(t *testing.T) {
	bin := agentBin(t, "claude")
	up := scripted.NewWith(stepsScript(thinkingSteps, nil), thinkingOptions)
	defer up.Close()
	t.Cleanup(func() { dump(t, up) })
	home, work := t.TempDir(), t.TempDir()
	env := claudeEnv(home, up.URL)
	res := runClaude(t, bin, work, env, runPrompt, "")
	if !strings.Contains(res.Result, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q (turns %d)", res.Result, res.NumTurns)
	}
	r := runClaude(t, bin, work, env, askPrompt(probes[0]), res.SessionID)
	if !strings.HasPrefix(r.Result, "SEEN "+probes[0].Name) {
		t.Errorf("the resumed question: %q", r.Result)
	}
	b := checkBinding(t, up)
	if b.Blocks == 0 || b.Invalid != 0 {
		t.Errorf("Claude Code sent back %d thinking blocks, %d invalid (want some, none invalid)", b.Blocks, b.Invalid)
	}
}

// TestClaudeCodeThinkingThroughProxy runs Claude Code through the proxy
// against the checking model: the 13-step session, then the resumed
// question about step 0's output. Done when no request is rejected, the
// steps are done, the answer line reaches the model and the forwarded
// prompt is smaller than the client's.
func TestClaudeCodeThinkingThroughProxy(t *testing.T) {
	bin := agentBin(t, "claude")
	up := scripted.NewWith(stepsScript(thinkingSteps, nil), thinkingOptions)
	defer up.Close()
	px := newProxy(t, up)
	home, work := t.TempDir(), t.TempDir()
	env := claudeEnv(home, px.http.URL)
	res := runClaude(t, bin, work, env, runPrompt, "")
	if !strings.Contains(res.Result, "Build session done: ran 13 steps") {
		t.Errorf("the session did not finish: %q (turns %d)", res.Result, res.NumTurns)
	}
	answers, hyd := askUntilCounted(px, func(p probe) string {
		return runClaude(t, bin, work, env, askPrompt(p), res.SessionID).Result
	})
	checkAnswers(t, answers, hyd, px.clientHad)
	b := checkBinding(t, up)
	folds, maxClient, maxFwd := logFolds(t, px)
	if folds == 0 || maxFwd >= maxClient {
		t.Errorf("the proxy did not fold: %d fold events, client max %d tokens, forwarded max %d", folds, maxClient, maxFwd)
	}
	if b.Signed == 0 || b.Blocks == 0 {
		t.Errorf("no thinking went round: %v", b)
	}
}

// checkReasoning fails unless the Responses API client sent reasoning items
// back (with encrypted_content), and logs how many the model dropped after a
// prefix change (reported in input_transformations).
func checkReasoning(t *testing.T, up *scripted.Server) scripted.BindingStats {
	t.Helper()
	b := up.Binding()
	t.Logf("prefix checks: %v", b)
	if b.ReasoningSigned == 0 || b.ReasoningItems == 0 {
		t.Errorf("no reasoning went round: %v", b)
	}
	return b
}

// TestCodexReasoningDirect runs Codex straight at the model on the
// Responses API with reasoning items: Codex resends every reasoning item
// with its encrypted_content and keeps its history append-only, so none is
// dropped.
func TestCodexReasoningDirect(t *testing.T) {
	bin := agentBin(t, "codex")
	up := scripted.NewWith(stepsScript(thinkingSteps, nil), thinkingOptions)
	defer up.Close()
	t.Cleanup(func() { dump(t, up) })
	home, work := t.TempDir(), t.TempDir()
	env := codexSetup(t, home, up.URL+"/v1")
	out := runCodex(t, bin, work, env, runPrompt, false)
	if !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	if a := lastLine(runCodex(t, bin, work, env, askPrompt(probes[0]), true)); !strings.HasPrefix(a, "SEEN "+probes[0].Name) {
		t.Errorf("the resumed question: %q", a)
	}
	if b := checkReasoning(t, up); b.ReasoningDropped != 0 {
		t.Errorf("%d reasoning items dropped without a proxy", b.ReasoningDropped)
	}
}

// codexThinkingBudget is the proxy's context budget for the 13-step Codex
// session (tokens): its peak is about 24k (Codex's instructions and tools
// are smaller than Claude Code's), so that fold events happen.
const codexThinkingBudget = 16000

// TestCodexReasoningThroughProxy runs Codex through the proxy: the session
// and the resumed question succeed, and the reasoning items the model drops
// after a fold event are counted.
func TestCodexReasoningThroughProxy(t *testing.T) {
	bin := agentBin(t, "codex")
	up := scripted.NewWith(stepsScript(thinkingSteps, nil), thinkingOptions)
	defer up.Close()
	px := newProxyBudget(t, up, codexThinkingBudget)
	home, work := t.TempDir(), t.TempDir()
	env := codexSetup(t, home, px.http.URL+"/v1")
	out := runCodex(t, bin, work, env, runPrompt, false)
	if !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	answers, hyd := askUntilCounted(px, func(p probe) string {
		return lastLine(runCodex(t, bin, work, env, askPrompt(p), true))
	})
	checkAnswers(t, answers, hyd, px.clientHad)
	checkReasoning(t, up)
	if folds, maxClient, maxFwd := logFolds(t, px); folds == 0 || maxFwd >= maxClient {
		t.Errorf("the proxy did not fold: %d fold events, client max %d tokens, forwarded max %d", folds, maxClient, maxFwd)
	}
}

// logFolds logs the proxy's fold events (requests whose working set
// changed the forwarded conversation before its end), the requests that
// went out with steps folded or collapsed, and the token counts.
func logFolds(t *testing.T, px *proxyUnder) (folds, maxClient, maxFwd int) {
	t.Helper()
	carried, over := 0, 0
	for _, rec := range px.records() {
		if rec.WorkingSet != nil && rec.WorkingSet.FoldEvent {
			folds++
		}
		if rec.StepsFolded+rec.StepsCollapsed > 0 {
			carried++
		}
		if rec.OverBudget {
			over++
		}
		maxClient, maxFwd = max(maxClient, rec.ClientTokens), max(maxFwd, rec.ForwardedTokens)
	}
	t.Logf("%d proxied requests: %d fold events, %d with steps folded or collapsed, %d over the budget; tokens client max %d → forwarded max %d",
		len(px.records()), folds, carried, over, maxClient, maxFwd)
	return
}

// TestQwenCodeReasoningThroughProxy runs Qwen Code through the proxy on
// Chat Completions with the model's reasoning_content on: Chat Completions
// has no reasoning bound to a prefix, so the check is that the session, the
// fold events and the resumed question go as without reasoning, and how
// much reasoning Qwen Code sends back is logged.
func TestQwenCodeReasoningThroughProxy(t *testing.T) {
	bin := agentBin(t, "qwen")
	up := scripted.NewWith(stepsScript(thinkingSteps, nil), thinkingOptions)
	defer up.Close()
	// Qwen Code's system prompt, tools and first message (its environment
	// context) take about 19k tokens that cannot fold: a budget below that
	// leaves every request over the budget and a fold event on each.
	px := newProxyBudget(t, up, qwenLifecycleBudget)
	home, work := t.TempDir(), t.TempDir()
	env := qwenSetup(t, home, px.http.URL+"/v1")
	out := runQwen(t, bin, work, env, runPrompt, false)
	if !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	answers, hyd := askUntilCounted(px, func(p probe) string {
		return lastLine(runQwen(t, bin, work, env, askPrompt(p), true))
	})
	checkAnswers(t, answers, hyd, px.clientHad)
	t.Logf("prefix checks: %v", up.Binding())
	over := 0
	for i, r := range px.records() {
		if r.Status != 200 {
			t.Errorf("request %d: status %d", i, r.Status)
		}
		if !r.OverBudget {
			continue
		}
		// Over the budget is right only when what cannot fold is over it
		// too (the fold rule then folds only when the event pays).
		if ws := r.WorkingSet; ws != nil && ws.FloorTokens > qwenLifecycleBudget {
			t.Logf("request %d: over the budget with a floor of %d tokens (fold skipped: %v)", i, ws.FloorTokens, ws.FoldSkipped)
			continue
		}
		over++
	}
	if over > 0 {
		t.Errorf("%d requests went out over the context budget of %d tokens with what cannot fold under it", over, qwenLifecycleBudget)
	}
	if folds, maxClient, maxFwd := logFolds(t, px); folds == 0 || maxFwd >= maxClient {
		t.Errorf("the proxy did not fold: %d fold events, client max %d tokens, forwarded max %d", folds, maxClient, maxFwd)
	}
}

// TestQwenCodeFloorOverBudget runs Qwen Code through the proxy at a context
// budget below what it cannot fold (its system prompt, tools and first
// message, about 19k tokens, against 16,000): every request is over the
// budget and no fold event can bring one under it. A fold event is made
// only when it pays for itself at the depth it can reach (docs/proxy.md,
// "When what cannot fold is over the budget"): fewer than one request in
// two (before the rule: 14 of 16 requests), and the session's
// cache-adjusted input cost, at the dearest prices for a rewrite
// (Anthropic's), is at most the client's own.
func TestQwenCodeFloorOverBudget(t *testing.T) {
	bin := agentBin(t, "qwen")
	up := scripted.NewWith(stepsScript(thinkingSteps, nil), thinkingOptions)
	defer up.Close()
	const budget = 16000
	px := newProxyBudget(t, up, budget)
	home, work := t.TempDir(), t.TempDir()
	env := qwenSetup(t, home, px.http.URL+"/v1")
	if out := runQwen(t, bin, work, env, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	folds, _, _ := logFolds(t, px)
	recs := px.records()
	over, floorOver, warned := 0, 0, 0
	var client, fwd float64
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d", i, r.Status)
		}
		if r.OverBudget {
			over++
		}
		if r.WorkingSet != nil && r.WorkingSet.FloorTokens > budget {
			floorOver++
			for _, w := range r.Warnings {
				if strings.Contains(w, "raise --context-budget above") {
					warned++
					break
				}
			}
		}
		client += harness.AnthropicPricing.Cost(r.ClientTokens, r.ClientCachedTokens)
		fwd += harness.AnthropicPricing.Cost(r.ForwardedTokens, r.ForwardedCachedTokens)
	}
	t.Logf("%d requests, %d over the budget, %d with the floor over it (%d warned), %d fold events; cost at Anthropic's prices %.0f through the proxy, %.0f the client's (%.1f %%)",
		len(recs), over, floorOver, warned, folds, fwd, client, 100*fwd/client)
	if floorOver == 0 {
		t.Fatalf("no request had its floor over the budget %d: the test does not cover the rule", budget)
	}
	if warned == 0 {
		t.Errorf("no request over a floor above the budget warned what to raise --context-budget to")
	}
	if 2*folds >= len(recs) {
		t.Errorf("%d fold events in %d requests: fold events that cannot reach the budget were made without paying for themselves", folds, len(recs))
	}
	if fwd > client*1.0001 {
		t.Errorf("cost at Anthropic's prices %.0f through the proxy, above the client's %.0f", fwd, client)
	}
}
