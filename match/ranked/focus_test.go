package ranked

import (
	"fmt"
	"strings"
	"testing"
)

// Focus: in a run of chat messages the line that asks lends its score to
// the line after it, its answer: focused within room for two lines, the
// window holds the question and the answer, not the question and another
// line that repeats one of its words.
func TestFocusAnswerLine(t *testing.T) {
	content := strings.Join([]string{
		"Mel: the weather was grey all week and the kids stayed in",
		"Ana: what made you start painting sunsets?",
		"Mel: my grandmother kept a sketchbook by the window every evening",
		"Ana: lovely, I tried painting once but gave up",
		"Mel: the bakery on the corner closed last month",
	}, "\n")
	weights := map[string]float64{"paint": 3, "start": 2, "sunset": 3}
	text, wins := Focus(content, weights, 160)
	if !strings.Contains(text, "what made you start painting sunsets?") || !strings.Contains(text, "my grandmother kept a sketchbook") {
		t.Fatalf("focused without the answer line: %q %+v", text, wins)
	}
	if strings.Contains(text, "gave up") {
		t.Errorf("the line repeating a word of the question took the answer's room: %q", text)
	}
}

// Rule "the needle's lines, then the question's words": a quoted token
// printed on many lines of a log names where to look, the question's
// other words what to read there. Generated pip logs (8 seeds): the
// package quoted on 30 lines, the answer line ("Downloading execnet… (40
// kB)") holding the question's words but not the token, anywhere among
// them. The focused text must hold the answer line and a line of the
// token. Before the rule every line of the token came first and filled
// the window (8 of 8 seeds fail with needleHeadLines past 30).
func TestNeedleThenWords(t *testing.T) {
	weights := map[string]float64{"execnet": 3, "download": 2}
	needles := []string{"pytest-xdist"}
	answer := "Downloading execnet-2.1.2-py3-none-any.whl (40 kB)"
	for seed := range 8 {
		var lines []string
		for i := range 30 {
			if i == 14+seed*2 {
				lines = append(lines, answer)
			}
			lines = append(lines, "Requirement already satisfied: dep"+strings.Repeat("x", i%5)+" in /opt/site-packages (from pytest-xdist==1.34.0)")
		}
		text, wins := FocusNeedles(strings.Join(lines, "\n"), weights, needles, 1200)
		if !strings.Contains(text, answer) {
			t.Errorf("seed %d: the answer line is not placed (%d windows): %q", seed, len(wins), text)
		}
		if !strings.Contains(text, "pytest-xdist") {
			t.Errorf("seed %d: no line of the needle placed: %q", seed, text)
		}
	}
	// The line three below a def the question quotes: "what does
	// _print_Indexed return" (context alone, two lines, stops short of
	// it): the def's line is placed, and the return line with it.
	var listing []string
	for n := 380; n < 437; n++ {
		listing = append(listing, fmt.Sprintf("%6d\t        x%d = precedence(expr) + %d", n, n, n))
	}
	listing = append(listing, []string{
		"   437\t        return self._operators['not'] + self.parenthesize(expr.args[0], PREC)",
		"   438\t",
		"   439\t    def _print_Indexed(self, expr):",
		"   440\t        base = expr.args[0]",
		"   441\t        index = expr.args[1:]",
		`   442	        return "{}[{}]".format(str(base), ", ".join([self._print(ind) for ind in index]))`,
		"   443\t",
		"   444\t    def _print_Pow(self, expr, rational=False):",
		"   445\t        PREC = precedence(expr)",
		"   446\t        return self._hprint_Pow(expr, rational=rational)",
	}...)
	for n := 447; n < 500; n++ {
		listing = append(listing, fmt.Sprintf("%6d\t        y%d = precedence(expr) - %d", n, n, n))
	}
	code := strings.Join(listing, "\n")
	text, _ := FocusNeedles(code, map[string]float64{"return": 2, "index": 1, "pycode": 3, "print": 1, "_print_indexed": 6}, []string{"_print_Indexed"}, 1200)
	if !strings.Contains(text, "def _print_Indexed") || !strings.Contains(text, `return "{}[{}]"`) {
		t.Errorf("the def and its return line not both placed: %q", text)
	}
}
