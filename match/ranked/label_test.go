package ranked

import (
	"fmt"
	"testing"
)

// Rule "a label is no entity" (Params.SkipLabel): in a chat written under
// user handles, every message of a speaker holds the handle, a specific
// term. A newer message of the same speaker repeating the question's
// words is not an update of the older one's fact: both are picked. The
// shared path of two file reads still is (intent ownership holds).
func TestLabelIsNoEntity(t *testing.T) {
	build := func(turns []string) *Index {
		ix := NewIndex()
		for i := range 20 {
			s := fmt.Sprintf("melanie42: the weather was fine on day %d", i)
			ix.Add(i, fmt.Sprint(i), 12, s, s)
		}
		for k, s := range turns {
			ix.Add(20+2*k, fmt.Sprint(20+2*k), 14, s, s)
			f := "melanie42: lol"
			ix.Add(21+2*k, fmt.Sprint(21+2*k), 3, f, f)
		}
		return ix
	}
	has := func(r *Result, step int) bool {
		for _, p := range r.Picks {
			if p.Step == step {
				return true
			}
		}
		return false
	}
	chat := build([]string{"caroline37: I went to my pottery class on saturday and made a bowl",
		"caroline37: pottery class again tonight, so much fun"})
	prompt := "What did Caroline do at her pottery class?"
	r := chat.Scan(prompt, DefaultParams())
	if !has(r, 20) || !has(r, 22) {
		t.Errorf("handles: picks %+v superseded %+v, want steps 20 and 22 both picked", r.Picks, r.Superseded)
	}
	// Without the rule, and without rule "a chat repeats" (ChatOwn), which
	// would keep every chat turn from being superseded whatever its label.
	off := DefaultParams()
	off.SkipLabel, off.ChatOwn = false, false
	if r := chat.Scan(prompt, off); has(r, 20) {
		t.Errorf("without the rule the older turn is picked too (%+v): the test no longer shows the loss", r.Picks)
	}
	// The same label, and a path both nodes hold: the newer read owns the
	// fact.
	reads := build([]string{"tool Read: config/app.yaml sets request_timeout 30",
		"tool Read: config/app.yaml sets request_timeout 60"})
	r = reads.Scan("what is the request_timeout", DefaultParams())
	if has(r, 20) || !has(r, 22) {
		t.Errorf("reads: picks %+v, want 22 and not 20 (superseded)", r.Picks)
	}
}

func TestLabelOf(t *testing.T) {
	for in, want := range map[string]string{
		"caroline37: hi":                   "caroline37",
		"[8 May 2023] user_2: hello":       "user_2",
		"Dr Ana Lopez: yes":                "Dr Ana Lopez",
		"tool Bash $ go test ./...: ok":    "",
		"no label here":                    "",
		"a b c d: too many words":          "",
		"tool mcp__fs__read: file content": "tool mcp__fs__read",
	} {
		if got := labelOf(in); got != want {
			t.Errorf("labelOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// Rule "a chat repeats, it does not update" (Params.ChatOwn, on by
// default): two turns of a chat sharing a specific term of their text
// ("10am") and the question's words are both picked with the rule; an
// agent's tool reads of one path still supersede.
func TestChatOwn(t *testing.T) {
	ix := NewIndex()
	for i := range 20 {
		s := fmt.Sprintf("Melanie: the weather was fine on day %d", i)
		ix.Add(i, fmt.Sprint(i), 12, s, s)
	}
	for k, s := range []string{"Caroline: my pottery class starts at 10am on saturday", "Caroline: pottery class at 10am again, so much fun"} {
		ix.Add(20+k, fmt.Sprint(20+k), 14, s, s)
	}
	for k, s := range []string{"tool Read: config/app.yaml sets request_timeout 30", "tool Read: config/app.yaml sets request_timeout 60"} {
		ix.Add(30+k, fmt.Sprint(30+k), 14, s, s)
	}
	has := func(r *Result, step int) bool {
		for _, p := range r.Picks {
			if p.Step == step {
				return true
			}
		}
		return false
	}
	prompt := "What did Caroline say about her pottery class?"
	off := DefaultParams()
	off.ChatOwn = false
	if r := ix.Scan(prompt, off); has(r, 20) {
		t.Fatalf("without the rule: the older turn is not superseded (%+v): the test no longer shows the rule", r.Picks)
	}
	p := DefaultParams()
	if !p.ChatOwn {
		t.Fatal("ChatOwn is off by default")
	}
	if r := ix.Scan(prompt, p); !has(r, 20) || !has(r, 21) {
		t.Errorf("ChatOwn: picks %+v, want 20 and 21", r.Picks)
	}
	if r := ix.Scan("what is the request_timeout", p); has(r, 30) || !has(r, 31) {
		t.Errorf("ChatOwn, tool reads: picks %+v, want 31 and not 30", r.Picks)
	}
}

// chatTurn: a speaker's label (a capitalised name, a handle with a digit)
// makes a chat turn; an agent role or a lower-case heading does not.
func TestChatTurnLabels(t *testing.T) {
	ix := NewIndex()
	for i, c := range []struct {
		summary string
		chat    bool
	}{
		{"Caroline: I went to the support group", true},
		{"[8 May 2023] Dr Ana Lopez: see you", true},
		{"caroline37: omg same", true},
		{"mike_88: lol", true},
		{"user: fix the build", false},
		{"tool mcp__fs__read: config.yaml", false},
		{"Assistant: done", false},
		{"config: db_port_main", false},
		{"step 12: ledger fx", false},
		{"no label at all", false},
	} {
		ix.Add(i, fmt.Sprint(i), 10, c.summary, c.summary)
		if got := ix.chatTurn(int32(i)); got != c.chat {
			t.Errorf("chatTurn(%q) = %v, want %v", c.summary, got, c.chat)
		}
	}
}

// RoleOf: a tool's result that reached the proxy in a user message (an
// Anthropic tool_result block, a scaffold's observation) is a tool's
// output, as ingest labels the same turn; a human prompt, or a summary a
// person wrote, keeps its role.
func TestRoleOfToolResultInUserMessage(t *testing.T) {
	for summary, want := range map[string]string{
		"user Bash $ go test ./...: ok":                           "tool",
		"user bash $ python test_complex.py [error]: exit 1: Tra": "tool",
		"user Read: 1 services:":                                  "tool",
		"user Grep [error]: no matches":                           "tool",
		"user [error]: permission denied":                         "tool",
		"user $ make: make: *** [all] Error 2":                    "tool",
		"user bash $ python -c 'print(\"a: b\")': a: b":           "tool",
		"user Bash":                        "tool",
		"user: what did the build print?":  "user",
		"user: Bash $ ls":                  "user",
		"user wants the cache flushed":     "user",
		"user":                             "user",
		"tool Bash $ ls: a b":              "tool",
		"assistant Bash $ ls: Look first.": "assistant",
		"Caroline: I went hiking":          "",
	} {
		if got := RoleOf(summary); got != want {
			t.Errorf("RoleOf(%q) = %q, want %q", summary, got, want)
		}
	}
}
