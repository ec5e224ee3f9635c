package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/contextfold/contextfold/internal/scripted"
)

// The session every agent plays: the human asks (RunMarker) for a build
// session; the scripted model makes the agent run sessionSteps shell
// commands, one per model call, then says it is done. In a later human turn
// (AskMarker) the human asks about an early output; the model answers
// whether the request it received carries that output's answer line.
const (
	runMarker = "CFRUN"
	askMarker = "CFASK"
)

// probe is an early output the human asks about later.
type probe struct {
	Name     string // key in the question
	Step     int    // the step whose output holds Answer
	Answer   string // the answer line (plain ASCII, no JSON escapes)
	Question string
}

var probes = []probe{
	{"linker", 0, "ld: error: undefined symbol: frobnicate_v2 (referenced by build/module_17.o)",
		"What undefined symbol did the linker report at the end of the first build?"},
	{"quorum", 4, "quorum_test.go:88: leader term mismatch: got 7 want 9",
		"In the test run, which quorum test failed and what leader term mismatch did it report?"},
	{"pin", 8, "github.com/pgvector/pgvector-go v0.3.1 pinned by ops ticket OPS-4471",
		"Which ops ticket pinned the pgvector module in the dependency listing?"},
}

// sessionSteps is the number of shell steps of the session (40+ tool calls).
const sessionSteps = 42

// stepCommand is the shell command of step i: three steps print hundreds of
// lines with one answer line; every third step prints a medium listing;
// the rest print a line.
//
// Every command starts with the no-op ": build-step N;", by which the
// scripted model knows how far the session got from the request alone: a
// proxy with a context budget takes folded turns out of the prompt, so
// counting the tool results in the request does not tell.
func stepCommand(i int) string {
	return ": build-step " + strconv.Itoa(i) + "; " + stepBody(i)
}

// lastStep returns the highest step whose command the request carries, or
// -1.
func lastStep(body []byte) int {
	last := -1
	for _, m := range stepRE.FindAllSubmatch(body, -1) {
		if n, _ := strconv.Atoi(string(m[1])); n > last {
			last = n
		}
	}
	return last
}

var stepRE = regexp.MustCompile(`: build-step (\d+);`)

func stepBody(i int) string {
	switch i {
	case 0:
		return `for i in $(seq 1 400); do echo "cc -O2 -Wall -fPIC -c src/module_$i.c -o build/module_$i.o"; done; ` + emit(probes[0].Answer) + `; echo "collect2: error: ld returned 1 exit status"`
	case 4:
		return `for i in $(seq 1 300); do echo "--- PASS: TestReplicaCase_$i (0.0${i}s)"; done; echo "--- FAIL: TestQuorumElection (0.42s)"; ` + emit("    "+probes[1].Answer) + `; echo "FAIL	example.com/raft	3.107s"`
	case 8:
		return `for i in $(seq 1 250); do echo "github.com/vendor$i/lib$i v1.$i.0 h1:deadbeef$i"; done; ` + emit(probes[2].Answer)
	}
	if i%3 == 0 {
		return fmt.Sprintf(`for i in $(seq 1 60); do echo "step %d: checked file pkg/part_$i.go (lines $((i*7)))"; done`, i)
	}
	return fmt.Sprintf(`echo "step %d ok: $((%d*%d))"`, i, i, i)
}

// emit is a shell command printing line without the line appearing in the
// command (rot13 through tr): the answer line reaches the model only as the
// tool's output, never as the tool call's input.
func emit(line string) string {
	return "echo '" + rot13(line) + "' | tr 'A-Za-z' 'N-ZA-Mn-za-m'"
}

func rot13(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, s)
}

// shellCall makes the agent run cmd with whichever shell tool it offers.
func shellCall(t *scripted.Turn, step int, cmd string) (scripted.Call, bool) {
	desc := fmt.Sprintf("build session step %d", step)
	switch {
	case t.HasTool("Bash"): // Claude Code
		return scripted.Call{Name: "Bash", Input: map[string]any{"command": cmd, "description": desc}}, true
	case t.HasTool("exec_command"): // Codex CLI (unified exec)
		return scripted.Call{Name: "exec_command", Input: map[string]any{"cmd": cmd, "yield_time_ms": 10000}}, true
	case t.HasTool("shell_command"): // Codex CLI (older tool set)
		return scripted.Call{Name: "shell_command", Input: map[string]any{"command": cmd}}, true
	case t.HasTool("shell"):
		return scripted.Call{Name: "shell", Input: map[string]any{"command": []string{"bash", "-lc", cmd}}}, true
	case t.HasTool("run_shell_command"): // Qwen Code
		return scripted.Call{Name: "run_shell_command", Input: map[string]any{"command": cmd, "description": desc}}, true
	}
	return scripted.Call{}, false
}

// sessionScript is the scripted model of the build session. extra, when
// set, is tried first (a test's own turns).
func sessionScript(extra scripted.Script) scripted.Script { return stepsScript(sessionSteps, extra) }

// stepsScript is the scripted model of a build session of steps shell
// steps.
func stepsScript(steps int, extra scripted.Script) scripted.Script {
	return func(t *scripted.Turn) scripted.Reply {
		if extra != nil {
			if r := extra(t); r.Text != "" || len(r.Calls) > 0 {
				return r
			}
		}
		switch {
		case strings.Contains(t.Prompt, runMarker):
			k := 0
			if len(t.Results) > 0 {
				k = lastStep(t.Body) + 1
			}
			if k < steps {
				if c, ok := shellCall(t, k, stepCommand(k)); ok {
					return scripted.Reply{Calls: []scripted.Call{c}}
				}
				return scripted.Reply{Text: "NO-SHELL-TOOL offered: " + strings.Join(t.Tools, ",")}
			}
			return scripted.Reply{Text: fmt.Sprintf("Build session done: ran %d steps.", k)}
		case strings.Contains(t.Prompt, askMarker):
			for _, p := range probes {
				if strings.Contains(t.Prompt, askMarker+" "+p.Name) {
					return scripted.Reply{Text: answer(t.Body, p)}
				}
			}
		}
		return scripted.Reply{Text: "OK."}
	}
}

// answer says whether the request carries the probe's answer line.
func answer(body []byte, p probe) string {
	if bodyHas(body, p.Answer) {
		return "SEEN " + p.Name + ": " + p.Answer
	}
	return "MISSING " + p.Name
}

// bodyHas reports whether the body carries s, verbatim or JSON-escaped.
func bodyHas(body []byte, s string) bool {
	if strings.Contains(string(body), s) {
		return true
	}
	enc, _ := json.Marshal(s)
	return strings.Contains(string(body), strings.Trim(string(enc), `"`))
}

func askPrompt(p probe) string { return askMarker + " " + p.Name + ": " + p.Question }

const runPrompt = runMarker + ": run the build session, one shell step at a time, and tell me when it is done."
