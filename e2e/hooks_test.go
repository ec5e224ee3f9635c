package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/scripted"
)

// hookSettings writes the project's .claude/settings.json: the four
// contextfold hooks, each logging "<event> <exit status>" to log, plus two
// UserPromptSubmit hooks that fail on a corrupt store (exit 0 with a note
// on stderr; with --strict, exit 1) to show that a failing hook never
// blocks the agent.
func hookSettings(t *testing.T, work, bin, log string) {
	t.Helper()
	cmd := func(event, extra string) map[string]any {
		c := fmt.Sprintf(`%q hook claude-code %s %s; rc=$?; echo "%s%s $rc" >> %q; exit $rc`, bin, event, extra, event, strings.ReplaceAll(extra, " ", ""), log)
		return map[string]any{"hooks": []any{map[string]any{"type": "command", "command": c, "timeout": 60}}}
	}
	notAStore := filepath.Join(work, "broken-store")
	if err := os.MkdirAll(notAStore, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notAStore, "recall_index.json"), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{"hooks": map[string]any{
		"SessionStart": []any{cmd("SessionStart", "")},
		"UserPromptSubmit": []any{cmd("UserPromptSubmit", ""),
			cmd("UserPromptSubmit", "--dir "+notAStore),
			cmd("UserPromptSubmit", "--strict --dir "+notAStore)},
		"Stop":       []any{cmd("Stop", "")},
		"PreCompact": []any{cmd("PreCompact", "")},
	}}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.MkdirAll(filepath.Join(work, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// storeSteps returns the step ids the session's store has folded.
func storeSteps(t *testing.T, dir string) []int {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "recall_index.json")); err != nil {
		return nil
	}
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int, len(es))
	for i, e := range es {
		ids[i] = e.StepID
	}
	return ids
}

// lastStringWith returns the last JSON string value of body (in document
// order of the arrays: the latest message) that contains sub.
func lastStringWith(body []byte, sub string) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if strings.Contains(x, sub) {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	if len(out) == 0 {
		return ""
	}
	return out[len(out)-1]
}

// markerOf returns the "[contextfold: left out …]" line of a hook context.
func markerOf(ctx string) string {
	i := strings.Index(ctx, "[contextfold: left out")
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(ctx[i:], "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}

func readLog(t *testing.T, path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
}

// TestClaudeCodeHooks runs Claude Code straight at the scripted model with
// contextfold's hooks in the project settings: the Stop hook folds the real
// session JSONL (incrementally, turn after turn), SessionStart gives the
// page table on resume, UserPromptSubmit's context carries the early
// output, PreCompact folds before /compact, and the failing hooks block
// nothing.
func TestClaudeCodeHooks(t *testing.T) {
	bin := agentBin(t, "claude")
	cf := needContextfold(t)
	up := scripted.NewWith(sessionScript(nil), thinkingOptions)
	defer up.Close()
	t.Cleanup(func() { dump(t, up) })
	home, work := t.TempDir(), t.TempDir()
	if keep := os.Getenv("CF_E2E_KEEP"); keep != "" {
		// Keep the project (and its .contextfold store) for a look
		// afterwards.
		work = filepath.Join(keep, t.Name())
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(t.TempDir(), "hooks.log")
	hookSettings(t, work, cf, log)
	env := claudeEnv(home, up.URL)

	res := runClaude(t, bin, work, env, runPrompt, "")
	if !strings.Contains(res.Result, "Build session done: ran 42 steps") {
		t.Fatalf("the session did not finish: %q", res.Result)
	}
	store := filepath.Join(work, ".contextfold", "sessions", res.SessionID)
	first := storeSteps(t, store)
	if len(first) < 3 {
		t.Fatalf("the Stop hook folded %d steps of the session into %s; hooks ran: %v", len(first), store, readLog(t, log))
	}
	transcripts, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", res.SessionID+".jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("no session JSONL under %s/.claude/projects", home)
	}

	var answers, hyd []string
	prev := first
	for i, p := range probes {
		n := len(up.Requests())
		r := runClaude(t, bin, work, env, askPrompt(p), res.SessionID)
		if !strings.HasPrefix(r.Result, "SEEN") {
			t.Errorf("%s: the transcript itself keeps every output in hook mode, yet the model answered %q", p.Name, r.Result)
		}
		// What the hooks put in front of the model on this turn. In hook
		// mode nothing is folded, so the answer line is in the request
		// anyway; the question is whether the UserPromptSubmit context
		// carries it.
		var body []byte
		for _, rq := range up.Requests()[n:] {
			if rq.Turn != nil && strings.Contains(rq.Turn.Prompt, askMarker+" "+p.Name) {
				body = rq.Body
				break
			}
		}
		if body == nil {
			t.Fatalf("%s: the question never reached the model", p.Name)
		}
		ctx := lastStringWith(body, "Verified archived context for this prompt")
		answers = append(answers, answer([]byte(ctx), p))
		switch {
		case ctx == "":
			hyd = append(hyd, "nothing (no UserPromptSubmit context in the request)")
		case strings.Contains(ctx, "left out"):
			hyd = append(hyd, fmt.Sprintf("UserPromptSubmit context of %d characters, cut at --max-chars: %s", len(ctx), markerOf(ctx)))
		default:
			hyd = append(hyd, fmt.Sprintf("UserPromptSubmit context of %d characters, whole", len(ctx)))
		}
		if i == 0 && lastStringWith(body, "Folded turns of this session (IPCF-1.1 page table") == "" {
			t.Errorf("the SessionStart page table did not reach the model on resume")
		}
		// The Stop hook folds the new turn and keeps what it folded.
		now := storeSteps(t, store)
		if len(now) < len(prev) || fmt.Sprint(now[:len(prev)]) != fmt.Sprint(prev) {
			t.Fatalf("after turn %d the store's steps %v do not extend %v", i+2, now, prev)
		}
		prev = now
	}
	checkAnswers(t, answers, hyd, nil)
	if len(prev) <= len(first) {
		t.Errorf("the resumed turns folded nothing new: %d steps after the first turn, %d at the end", len(first), len(prev))
	}

	// /compact runs PreCompact; folding is idempotent, so the store keeps
	// its steps and adds nothing twice.
	runClaude(t, bin, work, env, "/compact", res.SessionID)
	after := storeSteps(t, store)
	if fmt.Sprint(after[:len(prev)]) != fmt.Sprint(prev) {
		t.Errorf("PreCompact changed folded steps: %v → %v", prev, after)
	}

	ran := strings.Join(readLog(t, log), " ")
	for _, want := range []string{"SessionStart 0", "UserPromptSubmit 0", "Stop 0", "PreCompact 0", "UserPromptSubmit--dir", "UserPromptSubmit--strict--dir"} {
		if !strings.Contains(ran, want) {
			t.Errorf("hook %q did not run (or failed); log: %s", want, ran)
		}
	}
	bad := filepath.Join(work, "broken-store")
	if !strings.Contains(ran, "UserPromptSubmit--dir"+bad+" 0") || !strings.Contains(ran, "UserPromptSubmit--strict--dir"+bad+" 1") {
		t.Errorf("the failing hooks should exit 0 (default) and 1 (--strict); log: %s", ran)
	}
	t.Logf("hooks: %d steps folded after the first turn, %d after the resumed turns, %d after /compact; %d model requests",
		len(first), len(prev), len(after), len(up.ModelRequests(scripted.Anthropic)))
	// Thinking is on: the hooks add context at the end of a turn and never
	// rewrite the history, so no thinking block the client sends back is
	// invalid.
	if b := checkBinding(t, up); b.Invalid != 0 || b.Blocks == 0 {
		t.Errorf("with the hooks, %d of %d thinking blocks sent back were invalid (want some blocks, none invalid)", b.Invalid, b.Blocks)
	}
}
