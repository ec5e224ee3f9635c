package match_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// agentSession folds what an agent session looks like to the store: short
// calls and results, a few long outputs, questions and answers. Each long
// output holds one answer line among hundreds of ordinary ones.
func agentSession(t *testing.T) *contextfold.Store {
	t.Helper()
	s := newStore(t, "")
	var build, listing, tests strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&build, "cc -O2 -Wall -fPIC -c src/module_%d.c -o build/module_%d.o\n", i, i)
	}
	build.WriteString("ld: error: undefined symbol: frobnicate_v2 (referenced by build/module_17.o)\ncollect2: error: ld returned 1 exit status\n")
	for i := 1; i <= 250; i++ {
		fmt.Fprintf(&listing, "github.com/vendor%d/lib%d v1.%d.0 h1:deadbeef%d\n", i, i, i, i)
	}
	listing.WriteString("github.com/pgvector/pgvector-go v0.3.1 pinned by ops ticket OPS-4471\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&tests, "--- PASS: TestReplicaCase_%d (0.0%ds)\n", i, i)
	}
	tests.WriteString("--- FAIL: TestSegv (0.42s)\npanic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4b1f2a]\n")
	turns := []contextfold.Turn{
		{StepID: 1, Summary: "user: build", RawContent: "run the build session, one shell step at a time"},
		{StepID: 2, Summary: "Bash make", RawContent: "$ make all"},
		{StepID: 3, Summary: "tool: make all", RawContent: build.String()},
		{StepID: 4, Summary: "Bash go list", RawContent: "$ go list -m all"},
		{StepID: 5, Summary: "tool: go list -m all", RawContent: listing.String()},
		{StepID: 6, Summary: "Bash go test", RawContent: "$ go test ./replica/..."},
		{StepID: 7, Summary: "tool: go test", RawContent: tests.String()},
	}
	for i := 8; i < 40; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprintf("step %d", i), RawContent: fmt.Sprintf("step %d ok: %d files checked in pkg/part_%d", i, i*7, i)})
	}
	fold(t, s, turns...)
	return s
}

// Rule "tool and failure names": a question that names the tool by its
// role ("the linker") or the failure by its kind ("segfault") finds the
// output that names the program ("ld", "collect2") or the signal
// ("SIGSEGV"), and focused hydration places the window on that line.
func TestRankedToolAndFailureNames(t *testing.T) {
	s := agentSession(t)
	for prompt, want := range map[string]struct {
		step int
		line string
	}{
		"what did the linker say at the end of the build?": {3, "ld: error: undefined symbol: frobnicate_v2"},
		"where did the replica tests segfault?":            {7, "[signal SIGSEGV: segmentation violation"},
	} {
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Selected) == 0 || res.Selected[0].StepID != want.step {
			t.Errorf("%q selected %v (dropped %v), want %d first", prompt, steps(res.Selected), steps(res.Dropped), want.step)
			continue
		}
		if why := strings.Join(res.Selected[0].Why, "; "); !strings.Contains(why, "name in tool output for") {
			t.Errorf("%q: the pick's why does not name the alias: %s", prompt, why)
		}
		h, err := match.Hydrate(s, want.step, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.Content, want.line) || (h.Truncated && len(h.Windows) == 0) {
			t.Errorf("%q: the focused hydration misses %q: %.300q", prompt, want.line, h.Content)
		}
	}
	// Without the role word, the alias is not looked for: "ld" alone
	// does not make "what did it say" a question about the build.
	if res, _ := match.Scan(s, "thanks, what did it say?", match.Ranked); len(res.Selected) != 0 {
		t.Errorf("a question about nothing hydrates %v", steps(res.Selected))
	}
}

// Rule "rare terms in long nodes": the 250-line listing that alone holds
// the prompt's rare words (pgvector, pinned, ticket) on one line wins over
// short turns that hold fewer of them more often — here the user's own tag
// word and an answer next to it — and is hydrated on that line.
func TestRankedRareTermsInLongNodes(t *testing.T) {
	s := agentSession(t)
	fold(t, s,
		contextfold.Turn{StepID: 40, Summary: "user: CFASK linker", RawContent: "CFASK linker: What undefined symbol did the linker report at the end of the first build?"},
		contextfold.Turn{StepID: 41, Summary: "assistant: SEEN linker", RawContent: "SEEN linker: ld: error: undefined symbol: frobnicate_v2 (referenced by build/module_17.o)"},
	)
	prompt := "CFASK pin: Which ops ticket pinned the pgvector module in the dependency listing?"
	res, err := match.Scan(s, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Selected) == 0 || res.Selected[0].StepID != 5 {
		t.Fatalf("selected %v (dropped %v), want the listing 5 first", steps(res.Selected), steps(res.Dropped))
	}
	h, err := match.Hydrate(s, 5, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Content, "pinned by ops ticket OPS-4471") {
		t.Errorf("the focused hydration misses the pinned line: %.300q", h.Content)
	}
}

// Rule "the human's words": the date note an agent wraps around the
// human's prompt (<system-reminder>) changes neither the picks nor the
// cut-off; a prompt that is only such a note asks about nothing.
func TestRankedIgnoresAgentMarkup(t *testing.T) {
	s := agentSession(t)
	const note = "<system-reminder>\nThe current date is: Tuesday, December 1, 2026. Note: This is the authoritative current date — it may differ from the \"Today's date\" mentioned earlier in the conversation startup context.\n</system-reminder>\n"
	prompt := "Which ops ticket pinned the pgvector module in the dependency listing?"
	bare, err := match.Scan(s, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := match.Scan(s, note+prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(bare.Selected) == 0 || fmt.Sprint(steps(bare.Selected)) != fmt.Sprint(steps(wrapped.Selected)) {
		t.Errorf("bare prompt selects %v, wrapped in the agent's note %v", steps(bare.Selected), steps(wrapped.Selected))
	}
	if res, _ := match.Scan(s, note, match.Ranked); len(res.Selected) != 0 {
		t.Errorf("the note alone hydrates %v", steps(res.Selected))
	}
	// An element that is not the agent's, or not closed, stays a prompt.
	if res, _ := match.Scan(s, "<system-reminderish> pgvector pinned ticket", match.Ranked); len(res.Selected) == 0 {
		t.Error("a look-alike tag was stripped")
	}
}

// Rule "cost": the long node holding the prompt's rare words and the
// largest share of its information is not dropped behind a short node that
// scored higher on fewer words said many times.
func TestRankedExactLongNodeNotDroppedBehindBroadOne(t *testing.T) {
	s := agentSession(t)
	fold(t, s, contextfold.Turn{StepID: 40, Summary: "notes", RawContent: strings.Repeat("quarterly upgrade policy: upgrades wait for the quarterly window. ", 12)})
	prompt := "which module did the quarterly upgrade policy pin with an ops ticket for pgvector?"
	res, err := match.Scan(s, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	var sel []int
	for _, p := range res.Selected {
		sel = append(sel, p.StepID)
	}
	if !strings.Contains(fmt.Sprint(sel), "5") {
		t.Fatalf("selected %v, dropped %v: the listing 5 is not selected", sel, steps(res.Dropped))
	}
}

// Rule "only common words": a prompt for new work in the session's own
// vocabulary ("run the build session, one shell step at a time") matches
// every call of the session on words most nodes hold and hydrates
// nothing; a question naming what one output holds still finds it.
func TestRankedOnlyCommonWordsHydrateNothing(t *testing.T) {
	s := newStore(t, "")
	var turns []contextfold.Turn
	for i := 0; i < 40; i++ {
		desc := "step" // the agent's description of the call: the later ones name the session
		if i >= 15 {
			desc = "build session step"
		}
		turns = append(turns, contextfold.Turn{StepID: 2 * i, Summary: fmt.Sprintf("assistant run_shell_command %s %d", desc, i),
			RawContent: fmt.Sprintf(`run_shell_command {"command": ": build-step %d; echo ok %d", "description": "%s %d"}`, i, i*i, desc, i)})
		turns = append(turns, contextfold.Turn{StepID: 2*i + 1, Summary: fmt.Sprintf("tool run_shell_command build-step %d", i),
			RawContent: fmt.Sprintf("Command: : build-step %d; echo ok %d\nOutput: ok %d\nExit Code: 0", i, i*i, i*i)})
	}
	turns[21].RawContent += "\nwarning: deprecated flag -fno-plt ignored by the assembler"
	fold(t, s, turns...)
	for _, p := range []string{"CFRUN: run the build session, one shell step at a time, and tell me when it is done.", "run the next build step"} {
		if res, _ := match.Scan(s, p, match.Ranked); len(res.Selected) != 0 {
			t.Errorf("%q hydrates %v: %v", p, steps(res.Selected), res.Selected[0].Why)
		}
	}
	res, err := match.Scan(s, "which flag did the assembler ignore in the build session?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Selected) == 0 || res.Selected[0].StepID != 21 {
		t.Errorf("selected %v, want 21 first", steps(res.Selected))
	}
}

// Rule "the prompt's past": ScanBefore leaves out the nodes from the
// prompt's own position on, companions included; Exact ignores it.
func TestRankedScanBefore(t *testing.T) {
	s := agentSession(t)
	prompt := "what did the linker say at the end of the build?"
	all, err := match.ScanBefore(s, prompt, match.Ranked, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Selected) == 0 || all.Selected[0].StepID != 3 {
		t.Fatalf("selected %v, want 3 first", steps(all.Selected))
	}
	for _, before := range []int{3, 2} {
		res, err := match.ScanBefore(s, prompt, match.Ranked, before)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range append(res.Selected, res.Dropped...) {
			if p.StepID >= before {
				t.Errorf("before %d: step %d picked", before, p.StepID)
			}
		}
	}
	ex1, _ := match.ScanBefore(s, "frobnicate_v2", match.Exact, 1)
	ex2, _ := s.Scan("frobnicate_v2")
	if fmt.Sprint(steps(ex1.Selected)) != fmt.Sprint(steps(ex2.Selected)) {
		t.Errorf("exact ScanBefore %v differs from the reference scan %v", steps(ex1.Selected), steps(ex2.Selected))
	}
}

// Rule "the named thing first": the file read that alone holds the
// identifier the human names is admitted before the nodes that match only
// the question's generic words, so it is not left over the per-turn budget
// behind them.
func TestRankedNamedThingFirst(t *testing.T) {
	s := newStore(t, "")
	var turns []contextfold.Turn
	for i := 0; i < 30; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprintf("step %d", i), RawContent: fmt.Sprintf("go vet ./pkg%d: ok", i)})
	}
	for i := 30; i < 36; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprintf("notes %d", i),
			RawContent: fmt.Sprintf("the tool output of run %d mentioned one line earlier.\n", i) + strings.Repeat(fmt.Sprintf("filler%d ", i), 400)})
	}
	var read strings.Builder
	for i := 1; i <= 300; i++ {
		if i == 129 {
			read.WriteString("129\t\ts.mux.HandleFunc(\"GET /v1/accounts/{id}\", s.getAccount)\n")
			continue
		}
		fmt.Fprintf(&read, "%d\t\t// handler plumbing, nothing to see on row %d\n", i, i)
	}
	turns = append(turns, contextfold.Turn{StepID: 40, Summary: "Read server.go", RawContent: read.String()})
	fold(t, s, turns...)
	prompt := "Earlier a tool output mentioned HandleFunc. What exactly did that line say?"
	res, err := match.Scan(s, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Selected) == 0 || res.Selected[0].StepID != 40 {
		t.Fatalf("selected %v, dropped %v: want the file read 40 first", steps(res.Selected), steps(res.Dropped))
	}
	h, err := match.Hydrate(s, 40, prompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Content, "s.mux.HandleFunc(") {
		t.Errorf("the hydration misses the HandleFunc line: %.200q", h.Content)
	}
}
