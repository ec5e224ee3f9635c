package ranked

import (
	"fmt"
	"testing"
)

func TestAsksType(t *testing.T) {
	for _, c := range []struct {
		prompt string
		want   answerType
	}{
		{"Where did Caroline move from 4 years ago?", typePlace},
		{"where has melanie camped", typePlace},
		{"What city did they visit?", typePlace},
		{"How many children does Melanie have?", typeQuantity},
		{"how much did the bike cost", typeQuantity},
		{"Who performed at the concert?", typePerson},
		{"Who did John go to yoga with?", typePerson},
		{"When did Caroline go to the support group?", typeNone},
		{"How long has she been painting?", typeNone},
		{"What did the person who called say?", typeNone},
		{"the file where the parser lives", typeNone},
		{"fix the test in internal/ledger/fx.go", typeNone},
	} {
		if got := asksType(c.prompt); got != c.want {
			t.Errorf("asksType(%q) = %d, want %d", c.prompt, got, c.want)
		}
	}
}

func TestAnswerTyped(t *testing.T) {
	names := map[string]bool{"caroline": true, "melanie": true}
	prompt := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range []string{s} {
			m[w] = true
		}
		return m
	}
	for _, c := range []struct {
		text   string
		t      answerType
		prompt string
		want   bool
	}{
		{"a gift from my grandma in my home country, Sweden.", typePlace, "grandma", true},
		{"I got the idea from that trip to England a few years ago", typePlace, "idea", true},
		{"Thanks, Caroline! It was awesome.", typePlace, "x", false},
		{"we went camping at the beach", typePlace, "camping", true},
		{"we went camping at the beach", typePlace, "beach", false},
		{"I got a puppy two weeks ago", typeQuantity, "puppy", true},
		{"one of my friends came once", typeQuantity, "friends", false}, // "one" and "once" are too common to be counts
		{"I have 3 kids and twelve cats", typeQuantity, "kids", true},
		{"back in 2019 it rained", typeQuantity, "rained", false},
		{"It was Matt Patterson, he is so talented!", typePerson, "concert", true},
		{"Thanks, Melanie! It was great.", typePerson, "great", false},
		{"Matt sang. Then we left on Sunday", typePerson, "sang", false},
		{"my colleague invited me to yoga", typePerson, "yoga", true},
		{"my colleague invited me to yoga", typePerson, "colleague", false},
	} {
		if got := answerTyped(c.text, c.t, prompt(c.prompt), names); got != c.want {
			t.Errorf("answerTyped(%q, %d) = %v, want %v", c.text, c.t, got, c.want)
		}
	}
}

// Rule "a question is answered by its type" in a scan: of two chat turns
// holding the question's words, the one holding a place ranks first for
// a where-question with the rule; without it the newer one does. Agent
// nodes (role labels) are never lifted, and a question of no type is
// ranked as without the rule.
func TestTypeRankOrders(t *testing.T) {
	build := func(label string) *Index {
		ix := NewIndex()
		for i := range 30 {
			s := fmt.Sprintf("%s: the weather was fine on day %d", label, i)
			ix.Add(i, fmt.Sprint(i), 12, s, s)
		}
		for k, s := range []string{label + ": we moved from Sweden when I was young", label + ": we moved when I was young, it was hard"} {
			ix.Add(40+k, fmt.Sprint(40+k), 12, s, s)
		}
		return ix
	}
	first := func(ix *Index, prompt string, p Params) int {
		r := ix.Scan(prompt, p)
		if len(r.Picks) == 0 {
			t.Fatalf("%q: no picks", prompt)
		}
		return r.Picks[0].Step
	}
	off := DefaultParams()
	off.AnswerType = 0
	on := DefaultParams()
	if on.AnswerType != 0.3 {
		t.Fatalf("AnswerType %g by default", on.AnswerType)
	}
	chat := build("Caroline")
	const q = "Where did Caroline say they moved when young?"
	if got := first(chat, q, off); got != 41 {
		t.Fatalf("without the rule the newer turn ranks first, got %d: the test no longer shows the rule", got)
	}
	if got := first(chat, q, on); got != 40 {
		t.Errorf("with the rule: first pick %d, want 40 (moved from Sweden)", got)
	}
	if a, b := first(chat, "What did Caroline say they moved when young?", on), first(chat, "What did Caroline say they moved when young?", off); a != b {
		t.Errorf("a question of no type: first pick %d with the rule, %d without", a, b)
	}
	agent := build("tool Bash")
	if a, b := first(agent, q, on), first(agent, q, off); a != b {
		t.Errorf("agent nodes: first pick %d with the rule, %d without", a, b)
	}
}
