package ranked

import "testing"

// asksFirst: the words first, original(ly), initial(ly) as words of their
// own; not inside an identifier or a path.
func TestAsksFirst(t *testing.T) {
	for prompt, want := range map[string]bool{
		"what did the first run print?":          true,
		"Where was it defined originally?":       true,
		"the initial value, please":              true,
		"FIRST, what failed":                     true,
		"what is first_name set to?":             false,
		"the test-first approach":                false,
		"what is in docs/first.md?":              false,
		"what did the run print?":                false,
		"what did `first` return?":               false, // a quoted token
		"the firstly-named thing and the firsts": false,
	} {
		if got := asksFirst(prompt); got != want {
			t.Errorf("asksFirst(%q) = %v, want %v", prompt, got, want)
		}
	}
}
