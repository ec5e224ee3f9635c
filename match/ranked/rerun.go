package ranked

import "strings"

// Rule "an output is updated by its re-run" (Params.Rerun).
//
// Intent ownership (spec §4, CONF-13) lets a newer node about the same
// entity stand for an older one: the newest node owns the fact. In an agent
// session the nodes that hold a tool output's words again are mostly not
// updates of it. The assistant's next note restates it or acts on it
// ("Let's examine getdoc in sphinx/util/inspect.py"); the output of another
// command reads the same thing another way (`sed -n '2237,2370p'` after
// `grep -n "class AttributeDocumenter"`, which alone printed the line
// number 2237); a later note names the function again while working on
// something else. Each held every word of a question about the output
// and shared a path with it, so it superseded the output that answers:
// of the hand-written end-of-session questions (`cfeval questions`) 14 of
// the 23 misses were this. What updates an output is the same command
// run again: a test run after a fix, a grep after an edit, the same lines
// read again. So a tool's output is superseded only by a newer output of
// the same command (the text its summary gives after "$ ", an "[error]"
// mark aside): an output of no command (OpenHands' editor view after a
// `grep -r`) is no re-run of one. An output whose summary names no command
// (Claude Code's Read, Grep and Edit) takes its call's instead, when its
// call is known (Params.RerunCall, callOf: the tool name and the arguments
// its call's summary gives, `Read: {"file_path":"/…/docker-compose.yml"}`),
// so a file read is updated only by a re-read of the same file; else
// (OpenHands' editor, a call that shows no arguments) it is superseded by
// any newer tool output, as it was by any newer node. Nodes that are no
// tool output (the assistant's notes, the user's prompts) are superseded
// as before.

// rerunOf is what rule "an output is updated by its re-run" knows of an
// older candidate: whether it is a tool's output, and its command ("" when
// neither its summary nor its call names one); called: the command is its
// call's (runCommand).
type rerunOf struct {
	tool    bool
	called  bool
	command string
	// call: the node is an assistant's call naming command, and
	// Params.CallNext is on: the assistant's next call does not update it.
	call bool
}

// newRerunOf reads a node's summary for rule "an output is updated by its
// re-run"; call is the summary of its call node (Index.callOf), "" when
// unknown or not looked up.
func newRerunOf(summary, call string) *rerunOf {
	r := &rerunOf{tool: RoleOf(summary) == "tool", command: commandOf(summary)}
	if r.tool && r.command == "" {
		r.command = callCommand(summary, call)
		r.called = r.command != ""
	}
	return r
}

// updatedBy reports whether a newer node, of the given summary (call: the
// summary of its call node, needed only when the older node's command is
// its call's and the newer's summary names none), that holds every
// prompt term of the older node and shares an entity with it is an update
// of it under the rule: always, when the older node is no tool output;
// else when the newer is a tool output of the same command, or of any
// command when the older's is unknown.
func (r *rerunOf) updatedBy(summary, call string) bool {
	if !r.tool {
		return true
	}
	if RoleOf(summary) != "tool" {
		return false
	}
	return r.command == "" || runCommand(summary, call) == r.command
}

// runCommand is a tool output's command for rule "an output is updated by
// its re-run": the one its summary names (commandOf), else its call's
// (callCommand), else "".
func runCommand(summary, call string) string {
	if c := commandOf(summary); c != "" {
		return c
	}
	return callCommand(summary, call)
}

// toolOf is the tool a call's or an output's summary names after its role
// ("tool Read: 1 services:" and "assistant Read: {…}" → "Read"), "" when
// it names none ("assistant: done").
func toolOf(summary string) string {
	_, rest, ok := strings.Cut(summary, " ")
	if !ok || RoleOf(summary) == "" {
		return ""
	}
	name, _, ok := strings.Cut(rest, ":")
	if !ok || name == "" || strings.ContainsAny(name, " $") {
		return ""
	}
	return name
}

// callCommand is the command a tool output whose summary names none takes
// from its call (rule "an output is updated by its re-run",
// Params.RerunCall): the call's tool name and the arguments its summary
// gives (`assistant Read: {"file_path":"/…/balance.go"}` → `Read:
// {"file_path":"/…/balance.go"}`), when the call is an assistant's node of
// the output's tool whose summary shows its arguments as a JSON object;
// "" otherwise (no call known, another tool, a call summarised by the
// sentence the agent wrote: "assistant Edit: Summing floats loses cents").
func callCommand(output, call string) string {
	tool := toolOf(output)
	if tool == "" || RoleOf(call) != "assistant" || toolOf(call) != tool {
		return ""
	}
	_, rest, _ := strings.Cut(call, " ")
	args := strings.TrimSpace(strings.TrimPrefix(rest, tool+":"))
	if !strings.HasPrefix(args, "{") {
		return ""
	}
	return tool + ": " + args
}

// callOf returns the summary of the call node of doc d, a tool output
// whose summary names no command, for rule "an output is updated by its
// re-run" (Params.RerunCall); "" when there is none to pair it with. The
// call is at the step before: or, where an assistant turn made n calls
// and their n outputs follow (Claude Code writes each tool_use and each
// tool_result as a node of its own: calls at steps c…c+n−1, outputs at
// c+n…c+2n−1), the output's call is the call of its rank in the run.
// The runs are read by step, each node's summary once; a run of calls
// and one of outputs of different lengths pairs nothing. Callers hold
// ix.mu.
func (ix *Index) callOf(d int32) string {
	summaryAt := func(step int) string {
		if e, ok := ix.stepDoc(step); ok {
			return ix.summaryOf(e)
		}
		return ""
	}
	isCall := func(s string) bool { return RoleOf(s) == "assistant" && toolOf(s) != "" }
	step := ix.docs[d].step
	first, last := step, step
	for RoleOf(summaryAt(first-1)) == "tool" {
		first--
	}
	for RoleOf(summaryAt(last+1)) == "tool" {
		last++
	}
	n := last - first + 1
	for i := 1; i <= n; i++ {
		if !isCall(summaryAt(first - i)) {
			return ""
		}
	}
	if isCall(summaryAt(first - n - 1)) {
		return ""
	}
	return summaryAt(first - n + (step - first))
}

// AsksFirst reports whether a prompt asks for the first or original one
// (rule "a first asks for the oldest", Params.FirstAsks): it holds first,
// original, originally, initial or initially as a word of its own, not
// inside an identifier or a path. Package match orders a first-asking
// prompt's re-runs oldest first by it (Params.FirstRunFirst).
func AsksFirst(prompt string) bool { return asksFirst(prompt) }

// CommandOf is the command a tool call's or a tool output's summary names
// after "$ ", as package ingest and the proxy write it ("tool bash $ pytest
// -x tests/: 3 failed" and "assistant bash $ pytest -x tests/: Let me run
// the tests" → "pytest -x tests/"), the " [error]" mark of a failed run
// taken off; "" when it names none. Package match pairs a call with its
// output by it (rule "an output answers for its exchange").
func CommandOf(summary string) string { return commandOf(summary) }

// commandOf returns the command a tool node's summary names, as package
// ingest and the proxy write it ("tool bash $ pytest -x tests/: 3 failed"
// → "pytest -x tests/"; a summary whose command was cut ends in "…"), with
// the " [error]" mark of a failed run taken off; "" when the summary names
// none. A command holding ": " is cut there: both runs of it are cut alike.
func commandOf(summary string) string {
	_, rest, ok := strings.Cut(summary, " $ ")
	if !ok {
		return ""
	}
	cmd, _, _ := strings.Cut(rest, ": ")
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(cmd), "[error]"))
}
