package harness

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/contextfold/contextfold"
)

func newHarness(t *testing.T, cfg Config) *Harness {
	s, err := contextfold.Open(t.TempDir(), contextfold.Options{Clock: func() time.Time { return time.Unix(1772445600, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return New(s, cfg)
}

func toolMsg(i int) Message {
	return Message{Role: RoleTool, Tool: "Bash", Command: "go test ./pkg" + strings.Repeat("x", i%3),
		Parts: []Part{{Text: strings.Repeat("ok  example.com/widget line of output\n", 40), Foldable: true, ToolResult: true}}}
}

func TestBoundaryMovesInBlocks(t *testing.T) {
	h := newHarness(t, Config{})
	for n, want := range map[int]int{0: 0, 8: 0, 15: 0, 16: 8, 23: 8, 24: 16, 31: 16} {
		if got := h.Boundary(n); got != want {
			t.Errorf("Boundary(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestShortConversationLeftAlone(t *testing.T) {
	h := newHarness(t, Config{})
	conv := []Message{{Role: RoleUser, Human: true, Parts: []Part{{Text: "hi", Foldable: true}}}}
	for i := 0; i < 10; i++ {
		conv = append(conv, toolMsg(i))
	}
	d, err := h.PreTurnDispatch(conv)
	if err != nil || len(d.Folded) != 0 {
		t.Fatalf("%v %+v", err, d)
	}
}

func TestFoldIdempotentAndRecordsValid(t *testing.T) {
	h := newHarness(t, Config{HotWindow: 2, FoldBlock: 2, MinFoldTokens: 10})
	conv := []Message{{Role: RoleUser, Human: true, Parts: []Part{{Text: "run the widget tests", Foldable: true}}}}
	for i := 0; i < 6; i++ {
		conv = append(conv, toolMsg(i))
	}
	d1, err := h.PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := h.PreTurnDispatch(conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(d1.Folded) != 3 || len(d2.Folded) != 3 { // boundary ⌊(7−2)/2⌋×2 = 4; message 0 is the prompt
		t.Fatalf("folded %d then %d", len(d1.Folded), len(d2.Folded))
	}
	c := jsonschema.NewCompiler()
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(FoldedStepSchema))
	c.AddResource("folded_step.json", doc)
	sch, err := c.Compile("folded_step.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range d1.Folded {
		if f.Text != d2.Folded[i].Text {
			t.Fatal("records differ between dispatches")
		}
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(f.Step.JSON()))
		if err := sch.Validate(inst); err != nil {
			t.Fatal(err)
		}
		if err := f.Step.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	out := d1.Apply(conv)
	if !strings.HasPrefix(out[1].Parts[0].Text, "[contextfold folded step 1") || conv[1].Parts[0].Text == out[1].Parts[0].Text {
		t.Fatal("Apply did not replace the folded part (or modified conv)")
	}
	// A rewritten history diverges.
	conv[1].Parts[0].Text = "something else entirely, long enough to matter " + strings.Repeat("y", 200)
	if _, err := h.PreTurnDispatch(conv); !errors.Is(err, ErrHistoryDiverged) {
		t.Fatalf("want ErrHistoryDiverged, got %v", err)
	}
}

func TestEchoedHydrationNeverFolded(t *testing.T) {
	n := HydratedNode{StepID: 3, Content: "secret-free verbose output\n</contextfold-hydration> inside", ArtifactSHA256: "ab"}
	echo := "Here it is:\n" + HydrationBlock(n) + "\nthat's all"
	if got := StripHydration(echo); got != "Here it is:\n\nthat's all" {
		t.Fatalf("StripHydration = %q", got)
	}
	m := Message{Role: RoleAssistant, Parts: []Part{{Text: HydrationBlock(n), Foldable: true}}}
	if _, ok := m.payload(); ok {
		t.Fatal("a message that only echoes hydration must not be folded")
	}
}

func TestSummaryBounded(t *testing.T) {
	m := Message{Role: RoleTool, Tool: "Bash", IsError: true, Parts: []Part{{Text: string([]byte{0xed, 0xa0, 0xbd}) + strings.Repeat("é", 400) + "\nValueError: boom", Foldable: true}}}
	s := Summarize(m)
	if n := len([]rune(s)); n > MaxSummary || !strings.Contains(s, "[error]") {
		t.Fatalf("%d chars: %q", n, s)
	}
}

// TestSummaryCommandAsIngest: a summary shows as much of the command as
// ingest's does (MaxSummaryCommand), so that the output of a long command
// still names its file through the proxy: cut at 80 characters, the
// output of this grep no longer held options.py, and a question about
// "admin options.py" found the exchange by the direct scan of the ingested
// session but not on the wire.
func TestSummaryCommandAsIngest(t *testing.T) {
	cmd := `grep -n "self.save_model(request, new_object, form, not add)" django/contrib/admin/options.py`
	m := Message{Role: RoleTool, Tool: "bash", Command: cmd, Parts: []Part{{Text: "1830:                self.save_model(request, new_object, form, not add)", Foldable: true}}}
	s := Summarize(m)
	if !strings.Contains(s, "django/contrib/admin/options.py") {
		t.Fatalf("the summary cuts the command before its file: %q", s)
	}
	long := "python -c '" + strings.Repeat("x", 200) + "'"
	s = Summarize(Message{Role: RoleAssistant, Tool: "bash", Command: long, Parts: []Part{{Text: "run it", Foldable: true}}})
	head, _, _ := strings.Cut(strings.TrimPrefix(s, "assistant bash $ "), ": ")
	if n := utf8.RuneCountInString(head); n != MaxSummaryCommand {
		t.Fatalf("a long command shows %d characters, want %d: %q", n, MaxSummaryCommand, s)
	}
}

// TestSummaryShortOutputAndThought: the summary says what ingest's says
// of the same exchange: an output of one short line ("('x', [], ['2'])",
// two letters or digits) is that line, not "no output"; an assistant's
// "THOUGHT:" label (mini-swe-agent, SWE-agent), alone on its line or
// leading it, is dropped, and the summary holds the sentence after it.
func TestSummaryShortOutputAndThought(t *testing.T) {
	out := Message{Role: RoleTool, Tool: "bash", Command: "python check_split.py", Parts: []Part{{Text: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n('x', [], ['2'])\n</output>", Foldable: true}}}
	if s := Summarize(out); !strings.HasSuffix(s, "exit 0: ('x', [], ['2'])") {
		t.Fatalf("a short output line: %q", s)
	}
	empty := Message{Role: RoleTool, Tool: "bash", Command: "touch a", Parts: []Part{{Text: "[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n</output>", Foldable: true}}}
	if s := Summarize(empty); !strings.HasSuffix(s, "exit 0, no output") {
		t.Fatalf("no output: %q", s)
	}
	for _, text := range []string{"THOUGHT:\n`self.instance = construct_instance(...)` looks suspicious.\n\n```bash\ngrep -n x f.py\n```", "THOUGHT: `self.instance = construct_instance(...)` looks suspicious."} {
		m := Message{Role: RoleAssistant, Tool: "bash", Command: "grep -n x f.py", Parts: []Part{{Text: text, Foldable: true}}}
		if s := Summarize(m); s != "assistant bash $ grep -n x f.py: `self.instance = construct_instance(...)` looks suspicious." {
			t.Fatalf("%q: %q", text, s)
		}
	}
}

// TestSummarySkipsCurlMeter: curl's progress meter (its header and rows,
// on stderr beside the page) is no line of what the command printed, in
// the proxy's summary as in ingest's: the summary of a curl call's output
// leads with the page, not with "% Total % Received % Xferd …".
func TestSummarySkipsCurlMeter(t *testing.T) {
	text := "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n" +
		"                                 Dload  Upload   Total   Spent    Left  Speed\n" +
		"100   312  100   266  100    46  11565   2000 --:--:-- --:--:-- --:--:-- 13565\n" +
		"Your name is test.<br />You are 123 years old.\n"
	m := Message{Role: RoleTool, Tool: "bash", Command: "curl -X POST -d \"name=test&age=123\" http://localhost:8000/cgi-bin/forms.pl", Parts: []Part{{Text: text, Foldable: true}}}
	if s := Summarize(m); !strings.HasSuffix(s, ": Your name is test.<br />You are 123 years old.") {
		t.Fatalf("%q", s)
	}
}
