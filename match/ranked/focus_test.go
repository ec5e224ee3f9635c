package ranked

import (
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
