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
// (Claude Code's Read and Edit, OpenHands' editor) is superseded by any
// newer tool output, as it was by any newer node. Nodes that are no tool
// output (the assistant's notes, the user's prompts) are superseded as
// before.

// rerunOf is what rule "an output is updated by its re-run" knows of an
// older candidate: whether it is a tool's output, and its command ("" when
// its summary names none).
type rerunOf struct {
	tool    bool
	command string
}

// newRerunOf reads a node's summary for rule "an output is updated by its
// re-run".
func newRerunOf(summary string) *rerunOf {
	return &rerunOf{tool: RoleOf(summary) == "tool", command: commandOf(summary)}
}

// updatedBy reports whether a newer node, of the given summary, that holds
// every prompt term of the older node and shares an entity with it is an
// update of it under the rule: always, when the older node is no tool
// output; else when the newer is a tool output of the same command, or
// of any command when the older names none.
func (r *rerunOf) updatedBy(summary string) bool {
	if !r.tool {
		return true
	}
	if RoleOf(summary) != "tool" {
		return false
	}
	return r.command == "" || commandOf(summary) == r.command
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
