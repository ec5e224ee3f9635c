package e2e

import (
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/scripted"
)

// TestCodexTwoSessionsOneDirectory runs two Codex sessions, one after the
// other, in one working directory through one proxy, with no session
// header. The second is another conversation: it must get a store of its
// own, leave the first session's store in its first generation, and not be
// answered from the first session's turns. (Codex 0.171's two sessions
// derive different ids; a client whose sessions start alike is separated
// by the derived id's branches instead, proxy/branch.go: this test guards
// the outcome whichever way it is reached.)
func TestCodexTwoSessionsOneDirectory(t *testing.T) {
	bin := agentBin(t, "codex")
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	px := newProxyBudget(t, up, codexThinkingBudget)
	home, work := t.TempDir(), t.TempDir()
	env := codexSetup(t, home, px.http.URL+"/v1")
	if out := runCodex(t, bin, work, env, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	first := px.records()
	folds := 0
	for _, r := range first {
		if r.WorkingSet != nil && r.WorkingSet.FoldEvent {
			folds++
		}
	}
	if folds == 0 {
		t.Fatal("no fold event in the first session: the test covers nothing")
	}
	firstSession := first[len(first)-1].Session
	answer := lastLine(runCodex(t, bin, work, env, askPrompt(probes[0]), false))
	recs := px.records()
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
		if i < len(first) {
			continue
		}
		if r.Session == firstSession || r.Generation != 1 {
			t.Errorf("request %d of the second session went to %s/g%d (the first session's is %s/g1; warnings %v)", i, r.Session, r.Generation, firstSession, r.Warnings)
		}
		for _, h := range r.Hydrated {
			t.Errorf("request %d of the second session hydrated step %d from %q", i, h.StepID, h.From)
		}
	}
	if strings.HasPrefix(answer, "SEEN ") {
		t.Errorf("the second session was answered from the first one's turns: %q", answer)
	}
	checkBinding(t, up)
}
