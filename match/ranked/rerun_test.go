package ranked

import "testing"

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
		if got := newRerunOf(c.older).updatedBy(c.newer); got != c.want {
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
