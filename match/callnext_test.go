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

// nextCase is one planted agent exchange of rule "a call is not updated by
// the next call" (ranked.Params.CallNext): a call fetching a page (step
// call), its output listing the page's links (call+1), then the next call,
// whose note restates what the page listed and which fetches another page
// (call+2), and that page's output (call+3).
type nextCase struct {
	words  string // the server's name, two made-up words
	answer string // a link only the first output holds
	call   int
}

// plantNextCalls plants six cases on n generated small turns, as package
// ingest folds a SWE-agent session.
func plantNextCalls(g testgen.Gen, n int) ([]contextfold.Turn, []nextCase) {
	turns := g.SmallTurns(0, n)
	syll := []string{"zor", "vex", "plim", "tar", "quon", "mab", "kri", "nol", "budo", "gav", "fip", "yul", "hask", "tum", "cep"}
	var cases []nextCase
	for i := 0; i < 6; i++ {
		m := len(syll)
		c := nextCase{words: syll[(i+2)%m] + syll[(i+9)%m] + "k " + syll[(i+5)%m] + syll[(i+12)%m] + "d"}
		a, _, _ := strings.Cut(c.words, " ")
		c.call = 10 + i*(n-80)/6
		c.answer = fmt.Sprintf("/cgi-bin/%s%d.pl", a, i)
		host := fmt.Sprintf("http://%s.example:8000", a)
		hello := host + "/cgi-bin/hello.pl"
		put := func(at int, summary, raw string) {
			turns[at] = contextfold.Turn{StepID: at, Summary: summary, RawContent: raw}
		}
		put(c.call, "assistant $ curl "+host+": I will fetch the index page of the "+c.words+" server.",
			"[assistant tool_call]\n\nI will fetch the index page of the "+c.words+" server.\n\ncurl "+host+"\n")
		put(c.call+1, "tool $ curl "+host+": <html>",
			fmt.Sprintf("[tool observation]\n\n<html><body><ul>\n<li><a href=\"%s\">%s</a></li>\n<li><a href=\"/cgi-bin/hello.pl\">hello</a></li>\n</ul></body></html>\n", c.answer, c.answer))
		put(c.call+2, "assistant $ curl "+hello+": The index page of the "+c.words+" server lists Perl CGI scripts. I will check hello.pl first.",
			"[assistant tool_call]\n\nThe index page of the "+c.words+" server lists Perl CGI scripts. I will check hello.pl first.\n\ncurl "+hello+"\n")
		put(c.call+3, "tool $ curl "+hello+": Hello World from Perl!", "[tool observation]\n\nHello World from Perl!\n")
		cases = append(cases, c)
	}
	return turns, cases
}

// nextPrompt asks which scripts case c's index page listed: only the next
// call's note says "scripts"; the output lists them as links (asked as
// "links", rule "tool and failure names" would find its href by itself).
func nextPrompt(c nextCase) string {
	return fmt.Sprintf("which scripts did the index page of the %s server list?", c.words)
}

// Rule "a call is not updated by the next call" (ranked.Params.CallNext):
// the next call's note restates the index page and holds every word of the
// question, but its command is another page's; the index call is kept and
// brings its output, which holds the link asked for.
func TestCallNextEveryCase(t *testing.T) {
	testCallNext(t, true)
}

// Without CallNext, the next call supersedes the index call and brings its
// own output (hello.pl's): the index page's output is not hydrated, so the
// test exercises the switch.
func TestCallNextFailsWithoutRule(t *testing.T) {
	testCallNext(t, false)
}

func testCallNext(t *testing.T, on bool) {
	withRankedParams(t, func(p *ranked.Params) { p.CallNext = on })
	turns, cases := plantNextCalls(testgen.New(2027), 1000)
	s := foldedAgentStore(t, turns)
	for _, c := range cases {
		res, err := match.Scan(s, nextPrompt(c), match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		got := stepsOf(res.Selected)
		hit := false
		for _, step := range got {
			h, err := match.Hydrate(s, step, nextPrompt(c), match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			hit = hit || strings.Contains(h.Content, c.answer)
		}
		switch {
		case on && !hit:
			t.Errorf("%q: hydrated %v, want the index page's output %d (%s)", c.words, got, c.call+1, c.answer)
		case !on && (hit || slices.Contains(got, c.call+1)):
			t.Errorf("%q: the index page's output %d hydrated without CallNext (%v): the case does not exercise it", c.words, c.call+1, got)
		}
	}
}
