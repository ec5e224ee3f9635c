package harness

import "testing"

func TestDeriveStatusSeesFailureLines(t *testing.T) {
	tool := Message{Role: "tool", Tool: "Bash"}
	tests := []struct {
		payload string
		want    string
	}{
		{"collected 3 items\nFAILED tests/test_api.py::test_invoice - AssertionError", StatusFailed},
		{"--- FAIL: TestFold (0.00s)\nFAIL", StatusFailed},
		{"Traceback (most recent call last):\n  File \"x.py\"", StatusFailed},
		{"make: *** [Makefile:12: test] Error 2", StatusFailed},
		{"panic: runtime error: index out of range", StatusFailed},
		{"error: could not compile `foo`", StatusFailed},
		{"ok  \texample.com/pkg\t0.01s\nPASS", StatusSuccess},
		{"the word FAILED inside a sentence is fine", StatusSuccess},
	}
	for _, tt := range tests {
		if got := deriveStatus(tool, "tool Bash $ make test: x", tt.payload); got != tt.want {
			t.Errorf("%q: %s, want %s", tt.payload, got, tt.want)
		}
	}
	// A user's prompt that mentions a failure is not a failed step.
	if got := deriveStatus(Message{Role: "user"}, "user: why FAILED?", "FAILED tests/x.py"); got != StatusSuccess {
		t.Errorf("user prompt: %s", got)
	}
}
