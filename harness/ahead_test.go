package harness

import (
	"bytes"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// aheadConv is an agent session whose tool outputs vary: passing and
// failing runs, file paths, a path holding a token (scrubbed from a
// record's files), an Aider edit block. Every message has a Key.
func aheadConv(steps int) []Message {
	conv := []Message{
		{Role: RoleSystem, Parts: []Part{{Text: "You are a coding agent."}}},
		{Role: RoleUser, Human: true, Parts: []Part{{Text: "Fix the widget parser so that empty input is accepted.", Foldable: true}}},
	}
	for i := 0; i < steps; i++ {
		n := strconv.Itoa(i)
		out := strings.Repeat("ok  example.com/widget/pkg"+n+" line of output in src/pkg"+n+"/parse.go\n", 30)
		switch i % 5 {
		case 1:
			out += "--- FAIL: TestParse" + n + " (0.00s)\n    parse_test.go:12: ValueError: empty\nFAIL\n"
		case 2:
			out += "wrote /srv/keys/ghp_" + "Q7wErT9yUiOp3AsDfGh5JkLzXcVbNm1q2W8" + n + ".json\n"
		case 3:
			out = "pkg/widget.go\n```go\n<<<<<<< SEARCH\nold" + n + "\n=======\nnew\n>>>>>>> REPLACE\n```\n" + out
		}
		conv = append(conv,
			Message{Role: RoleAssistant, Tool: "bash", Command: "go test ./pkg" + n,
				Parts: []Part{{Text: "Let me run the tests of pkg" + n, Foldable: true}, {Text: `bash {"command":"go test ./pkg` + n + `"}`}}},
			Message{Role: RoleTool, Tool: "bash", Command: "go test ./pkg" + n, AnswersTool: true, IsError: i%7 == 4,
				Parts: []Part{{Text: out, Foldable: true, ToolResult: true}}})
		if i%10 == 9 {
			conv = append(conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "now look at pkg" + strconv.Itoa(i-5) + " again", Foldable: true}}})
		}
	}
	for i := range conv {
		f := fnv.New64a()
		f.Write([]byte(conv[i].Role + "\x00" + conv[i].Text()))
		conv[i].Key = f.Sum64() | 1
	}
	return conv
}

func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(d.Name(), "lock") {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A session whose turns are prepared ahead (PrepareAhead, its work run on
// another goroutine while the next requests are dispatched, as the proxy
// does) forwards the very same messages, records and page tables, and its
// store holds the very same bytes, as one whose turns are not; and the
// prepared summaries and files are used. Run with -race.
func TestPrepareAheadChangesNothing(t *testing.T) {
	clock := func() time.Time { return time.Unix(1772445600, 0) }
	open := func() (*Harness, string) {
		dir := filepath.Join(t.TempDir(), "store") // index paths name the directory
		s, err := contextfold.Open(dir, contextfold.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return New(s, Config{ContextBudget: 9000}), dir
	}
	plain, plainDir := open()
	ahead, aheadDir := open()
	var wg sync.WaitGroup
	events := 0
	for steps := 4; steps <= 90; steps += 2 {
		conv := aheadConv(steps)
		dp, err := plain.DispatchRequest(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		da, err := ahead.DispatchRequest(conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		if work := ahead.PrepareAhead(conv); work != nil {
			wg.Add(1)
			go func() { defer wg.Done(); work() }()
		}
		if steps%8 == 0 {
			wg.Wait() // some fold events find every turn prepared
		}
		if !reflect.DeepEqual(dp.Apply(conv), da.Apply(conv)) {
			t.Fatalf("%d steps: the forwarded messages differ when turns are prepared ahead", steps)
		}
		if !reflect.DeepEqual(dp.WorkingSet, da.WorkingSet) {
			t.Fatalf("%d steps: the working sets differ:\n%+v\n%+v", steps, dp.WorkingSet, da.WorkingSet)
		}
		if dp.WorkingSet.FoldEvent {
			events++
		}
	}
	wg.Wait()
	if events < 3 {
		t.Fatalf("only %d fold events", events)
	}
	// The preparations made spare files for the cold nodes (empty, no
	// part of the store); once removed, the stores hold the same files.
	spares, _ := filepath.Glob(filepath.Join(aheadDir, contextfold.ColdNodesDir, ".spare-*"))
	if len(spares) == 0 {
		t.Error("no spare files were made for the next fold event")
	}
	if err := ahead.Store().RemoveSpares(); err != nil {
		t.Fatal(err)
	}
	a, b := dirFiles(t, plainDir), dirFiles(t, aheadDir)
	for name, want := range a {
		if !bytes.Equal(b[name], want) {
			t.Errorf("%s differs when turns are prepared ahead", name)
		}
	}
	if len(a) != len(b) || len(a) < 20 {
		t.Errorf("%d files unprepared, %d prepared", len(a), len(b))
	}
	if ahead.ahead.summaryHits == 0 || ahead.ahead.filesHits == 0 {
		t.Errorf("prepared summaries used %d times, files %d times", ahead.ahead.summaryHits, ahead.ahead.filesHits)
	}
}

// A prepared turn is used only for the message it was prepared from.
func TestPrepareAheadStale(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 9000})
	conv := aheadConv(3)
	h.PrepareAhead(conv)()
	i := 3 // a tool output
	m := conv[i]
	m.Command = commandFor(conv, i)
	if s, ok := h.ahead.summary(i, m, summaryText(m)); !ok || s != Summarize(m) {
		t.Fatalf("prepared summary %q, %v; want %q", s, ok, Summarize(m))
	}
	changed := m
	changed.Parts = []Part{{Text: "error: something else entirely\n", Foldable: true, ToolResult: true}}
	if _, ok := h.ahead.summary(i, changed, summaryText(changed)); ok {
		t.Fatal("a summary prepared from another text was used")
	}
	flagged := m
	flagged.IsError = !m.IsError
	if _, ok := h.ahead.summary(i, flagged, summaryText(flagged)); ok {
		t.Fatal("a summary prepared without the error flag was used")
	}
	if f := h.ahead.files(i, changed); f != nil {
		t.Fatalf("files prepared from another payload were used: %v", f)
	}
}

// A preparation yields to a later dispatch: it stops, and what it did not
// prepare is handed to the next PrepareAhead.
func TestPrepareAheadYields(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 100_000})
	conv := aheadConv(10)
	work := h.PrepareAhead(conv)
	if work == nil {
		t.Fatal("nothing to prepare")
	}
	if _, err := h.DispatchRequest(conv, 0); err != nil {
		t.Fatal(err)
	}
	work() // a dispatch began since: it yields at once
	if n := len(h.ahead.turns); n != 0 {
		t.Fatalf("%d messages prepared by a preparation that should have yielded", n)
	}
	again := h.PrepareAhead(conv)
	if again == nil {
		t.Fatal("the messages not prepared were not handed over again")
	}
	again()
	if n := len(h.ahead.turns); n < 20 {
		t.Fatalf("%d messages prepared, want every one but the system prompt", n)
	}
	if h.PrepareAhead(conv) != nil {
		t.Fatal("prepared messages were handed over again")
	}
}

// A preparation prepares its turns before it makes the spare files of the
// next fold event: a request dispatched once the turns are prepared finds
// them so (they are off its fold event's path), and the spares, which
// spare only the fold event's durable part (after the request is
// forwarded), are left to a later preparation.
func TestPrepareAheadTurnsBeforeSpares(t *testing.T) {
	h := newHarness(t, Config{ContextBudget: 9000})
	conv := aheadConv(40)
	d, err := h.DispatchRequest(conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !d.WorkingSet.FoldEvent {
		t.Fatal("no fold event: the store has no cold_nodes/ for spares")
	}
	conv = aheadConv(50)
	if _, err := h.DispatchRequest(conv, 0); err != nil {
		t.Fatal(err)
	}
	work := h.PrepareAhead(conv)
	if work == nil {
		t.Fatal("nothing to prepare")
	}
	spares := func() []string {
		m, _ := filepath.Glob(filepath.Join(h.Store().Dir(), contextfold.ColdNodesDir, ".spare-*"))
		return m
	}
	if n := len(spares()); n != 0 {
		t.Fatalf("%d spare files before the preparation", n)
	}
	prepared := -1
	h.ahead.turnsDone = func() {
		prepared = len(h.ahead.turns)
		h.ahead.gen.Add(1) // a dispatch begins
	}
	work()
	if prepared < 10 {
		t.Fatalf("%d turns prepared before the spare files, want the 10 new tool calls and outputs and more", prepared)
	}
	if n := len(spares()); n != 0 {
		t.Fatalf("%d spare files made after a dispatch began", n)
	}
	h.ahead.turnsDone = nil
	if again := h.PrepareAhead(conv); again != nil {
		again()
	}
	if len(spares()) == 0 {
		t.Fatal("the next preparation made no spare files")
	}
}
