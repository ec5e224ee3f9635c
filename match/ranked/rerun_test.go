package ranked

import (
	"fmt"
	"testing"
)

// Rule "an output is updated by its re-run": which newer node updates
// which older one, from their summaries as package ingest writes them.
func TestRerunUpdatedBy(t *testing.T) {
	grep := `tool bash $ grep -n "def getdoc" sphinx/util/inspect.py: 891:def getdoc(obj: Any,`
	for _, c := range []struct {
		older, newer string
		want         bool
	}{
		{grep, `tool bash $ grep -n "def getdoc" sphinx/util/inspect.py: 893:def getdoc(obj: Any,`, true},
		{`tool bash $ python reproduce.py [error]: Traceback (most recent call last):`, `tool bash $ python reproduce.py: ok`, true},
		{`tool bash $ python reproduce.py: ok`, `tool bash $ python reproduce.py [error]: Traceback`, true},
		{grep, `assistant bash $ sed -n '891,950p' sphinx/util/inspect.py: Let's examine getdoc.`, false},
		{grep, `tool bash $ sed -n '891,950p' sphinx/util/inspect.py: def getdoc(obj: Any,`, false},
		{grep, "tool str_replace_editor: Here's the result of running `cat -n` on /workspace/sphinx/util/inspect.py:", false},
		{grep, `user: where is getdoc defined?`, false},
		{`tool Read: 1 services:`, `tool Read: 1 services:`, true},
		{`tool Read: 1 services:`, `tool Bash $ cat docker-compose.yml: services:`, true},
		{`tool Read: 1 services:`, `assistant: the compose file maps 5433`, false},
		{`assistant bash $ grep -n "def getdoc" sphinx/util/inspect.py: Find it.`, `assistant: getdoc is on line 891`, true},
		{`assistant: getdoc is on line 891`, grep, true},
		{`user: fix getdoc`, `tool bash $ ls: a`, true},
	} {
		if got := newRerunOf(c.older, "").updatedBy(c.newer, ""); got != c.want {
			t.Errorf("%q updated by %q: %v, want %v", c.older, c.newer, got, c.want)
		}
	}
	for in, want := range map[string]string{
		grep: `grep -n "def getdoc" sphinx/util/inspect.py`,
		`tool bash $ python reproduce.py [error]: Traceback`: "python reproduce.py",
		`tool bash $ cat <<'EOF' > x.py import os…: exit 0`:  `cat <<'EOF' > x.py import os…`,
		`tool Read: 1 services:`:                             "",
		`assistant: done`:                                    "",
	} {
		if got := commandOf(in); got != want {
			t.Errorf("commandOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// Params.RerunCall: a tool output whose summary names no command takes its
// call's tool name and arguments (callOf pairs it with its call, by rank
// where an assistant turn made several calls), so a Read is updated by a
// re-read of the same file only; a call that shows no arguments gives
// none, and the output is updated by any newer tool output as before.
func TestRerunCallCommand(t *testing.T) {
	ix := NewIndex()
	for step, s := range []string{
		`user: set it up`,
		`assistant Read: {"file_path":"/w/docker-compose.yml"}`, // 1
		`tool Read: 1 services:`,                                // 2
		`assistant Read: {"file_path":"/w/a.go"}`,               // 3: two calls,
		`assistant Grep: {"pattern":"Balance","path":"/w"}`,     // 4
		`tool Read: 1 package a`,                                // 5: then their outputs
		`tool Grep: /w/balance.go:14:func Balance(`,             // 6
		`assistant Edit: Summing floats loses cents.`,           // 7
		`tool Edit: The file /w/balance.go has been updated.`,   // 8
		`assistant Read: {"file_path":"/w/docker-compose.yml"}`, // 9
		`tool Read: 1 services:`,                                // 10
		`assistant: done`,                                       // 11
		`tool Read: 1 orphan`,                                   // 12: no call before it
	} {
		ix.Add(step, fmt.Sprint("r", step), 10, s, s)
	}
	compose := `Read: {"file_path":"/w/docker-compose.yml"}`
	for step, want := range map[int]string{2: compose, 5: `Read: {"file_path":"/w/a.go"}`, 6: `Grep: {"pattern":"Balance","path":"/w"}`, 8: "", 10: compose, 12: ""} {
		d, _ := ix.stepDoc(step)
		if got := newRerunOf(ix.summaryOf(d), ix.callOf(d)).command; got != want {
			t.Errorf("step %d: command %q, want %q", step, got, want)
		}
	}
	at := func(step int) (string, string) {
		d, _ := ix.stepDoc(step)
		return ix.summaryOf(d), ix.callOf(d)
	}
	read := newRerunOf(at(2))
	for step, want := range map[int]bool{5: false, 6: false, 8: false, 10: true, 11: false} {
		if got := read.updatedBy(at(step)); got != want {
			t.Errorf("the compose read updated by step %d: %v, want %v", step, got, want)
		}
	}
	if edit := newRerunOf(at(8)); !edit.updatedBy(at(10)) {
		t.Error("an Edit whose call shows no arguments is no longer updated by any newer tool output")
	}
}
