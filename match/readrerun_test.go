package match_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// readCase is one planted Claude Code file read (a Read call and its
// output, whose summary names no command: "tool Read: 1 services:") and
// what follows it: kind "grep" a Grep of the same words whose output holds
// every word of the question but the port; "parallel" the same with the
// Read made beside a Read of another file (two calls, then two outputs);
// "reread" the same file read again after an edit, with a new port.
type readCase struct {
	kind   string
	words  string
	answer string // the port line the question's answer is in
	read   int    // the first Read's output step
	again  int    // "reread": the re-read's output step
}

var readKinds = []string{"grep", "parallel", "reread"}

// plantReads plants three cases of each of readKinds on n generated
// small turns, as package ingest folds a Claude Code session.
func plantReads(g testgen.Gen, n int) ([]contextfold.Turn, []readCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "mab", "kri", "nol", "budo", "gav", "fip", "yul", "hask", "tum", "cep"}
	var cases []readCase
	for i := 0; i < 3*len(readKinds); i++ {
		m := len(syll)
		c := readCase{kind: readKinds[i/3], words: syll[(i+1)%m] + syll[(i+7)%m] + "k " + syll[(i+4)%m] + syll[(i+11)%m] + "d"}
		a, _, _ := strings.Cut(c.words, " ")
		base := 10 + i*(n-80)/(3*len(readKinds))
		path := fmt.Sprintf("/home/dev/work/%s/compose.yml", a)
		port := 5400 + 7*i
		c.answer = fmt.Sprintf("- \"%d:5432\"", port)
		read := func(at, port int) {
			turns[at] = contextfold.Turn{StepID: at, Summary: `assistant Read: {"file_path":"` + path + `"}`,
				RawContent: "[assistant tool_call Read]\n\n" + `{"file_path":"` + path + `"}` + "\n"}
		}
		output := func(at, port int) {
			turns[at] = contextfold.Turn{StepID: at, Summary: "tool Read: 1 services:",
				RawContent: fmt.Sprintf("[tool tool_result Read]\n\n1 services:\n2   %sdb: # the %s service\n3     image: postgres:16\n4     ports:\n5       - \"%d:5432\"\n", a, c.words, port)}
		}
		switch c.kind {
		case "parallel":
			other := fmt.Sprintf("/home/dev/work/%s/Makefile", a)
			read(base, port)
			turns[base+1] = contextfold.Turn{StepID: base + 1, Summary: `assistant Read: {"file_path":"` + other + `"}`,
				RawContent: "[assistant tool_call Read]\n\n" + `{"file_path":"` + other + `"}` + "\n"}
			output(base+2, port)
			turns[base+3] = contextfold.Turn{StepID: base + 3, Summary: "tool Read: 1 build:",
				RawContent: "[tool tool_result Read]\n\n1 build:\n2 \tgo build ./...\n"}
			c.read = base + 2
		default:
			read(base, port)
			output(base+1, port)
			c.read = base + 1
		}
		if c.kind == "reread" {
			read(base+20, port)
			output(base+21, port+1)
			c.again = base + 21
		} else {
			grep := fmt.Sprintf(`{"pattern":"%s","path":"/home/dev/work/%s"}`, a, a)
			turns[base+20] = contextfold.Turn{StepID: base + 20, Summary: "assistant Grep: " + grep,
				RawContent: "[assistant tool_call Grep]\n\n" + grep + "\n"}
			turns[base+21] = contextfold.Turn{StepID: base + 21, Summary: "tool Grep: " + path + ":2: " + a + "db:",
				RawContent: fmt.Sprintf("[tool tool_result Grep]\n\n%s:1:services:\n%s:2:  %sdb: # the %s service\n%s:4:    ports:\n", path, path, a, c.words, path)}
		}
		cases = append(cases, c)
	}
	return turns, cases
}

// readPrompt asks which port case c's compose file maps.
func readPrompt(c readCase) string {
	return fmt.Sprintf("which ports does the %s service map in compose.yml?", c.words)
}

// Rule "an output is updated by its re-run" with Params.RerunCall: a
// Claude Code Read's output takes its call's tool name and arguments for
// its command, so a newer Grep of the same words (holding every word of
// the question but the port) does not supersede it, nor does the output
// of the Read made beside it; a re-read of the same file does, and the
// older read is never hydrated ahead of it. Without RerunCall (any newer
// tool output updated a Read), the Grep superseded the Read: the
// question about the port hydrated the Grep only.
func TestRerunCallEveryKind(t *testing.T) {
	testReads(t, true)
}

// Without RerunCall, the "grep" and "parallel" cases' Read is superseded:
// the test exercises the switch.
func TestRerunCallFailsWithoutRule(t *testing.T) {
	testReads(t, false)
}

func testReads(t *testing.T, on bool) {
	withRankedParams(t, func(p *ranked.Params) { p.RerunCall = on })
	turns, cases := plantReads(testgen.New(1009), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, readPrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := stepsOf(res.Selected)
		i := slices.Index(got, c.read)
		switch {
		case c.kind == "reread":
			if j := slices.Index(got, c.again); j < 0 || (i >= 0 && i < j) {
				t.Errorf("on=%v %s %q: hydrated %v, want the re-read %d and the older read %d not ahead of it", on, c.kind, c.words, got, c.again, c.read)
			}
		case on && i < 0:
			t.Errorf("%s %q: hydrated %v, want the Read's output %d", c.kind, c.words, got, c.read)
		case on:
			h, err := match.Hydrate(s, c.read, readPrompt(c), match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(h.Content, c.answer) {
				t.Errorf("%s %q: the Read %d hydrated without %q", c.kind, c.words, c.read, c.answer)
			}
		case i >= 0:
			t.Errorf("%s %q: the Read's output %d hydrated without RerunCall (%v): the case does not exercise it", c.kind, c.words, c.read, got)
		}
	}
}
