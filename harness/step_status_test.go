package harness

import (
	"testing"

	"github.com/contextfold/contextfold"
)

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

// TestFailureMarkersAcrossTools: a folded turn whose output reports a
// failure in any common toolchain's words is FAILED, whether it was folded
// by an agent's tool call or by hand (no role: `contextfold fold --file`),
// and its record's summary (the page-table line) shows the failure, not the
// output's first line; outputs that succeed, or merely mention errors, stay
// SUCCESS with their summary unchanged. Before: "error TS2339 … Build failed"
// was SUCCESS, and the line read "compiling … ok".
func TestFailureMarkersAcrossTools(t *testing.T) {
	failed := map[string]string{
		"tsc":      "[step 3] compiling web app ... ok\nsrc/app.ts(12,5): error TS2339: Property 'total' does not exist on type 'Cart'.\nBuild failed",
		"gcc":      "cc -c main.c\nmain.c:3:5: error: expected ';' before 'return'\n1 error generated.",
		"rustc":    "   Compiling ledger v0.1.0\nerror[E0308]: mismatched types\n  --> src/lib.rs:4:5",
		"dotnet":   "Build started...\nProgram.cs(7,10): error CS1002: ; expected",
		"go build": "# example.com/ledger\n./ledger.go:14:2: undefined: Balance",
		"python":   "running migrations\nValueError: invalid literal for int() with base 10: 'x'",
		"node":     "> app@1.0.0 start\nTypeError: cart.total is not a function\n    at Object.<anonymous> (/app/index.js:3:6)",
		"maven":    "[INFO] Scanning for projects...\n[ERROR] Failed to execute goal on project ledger\n[INFO] BUILD FAILURE",
		"gradle":   "> Task :compileJava\nFAILURE: Build failed with an exception.\nBUILD FAILED in 2s",
		"pytest":   "collected 12 items\n\ntests/test_ledger.py ..F.\n\n========= 1 failed, 11 passed in 0.52s =========",
		"jest":     " PASS  src/a.test.js\nTests:       2 failed, 10 passed, 12 total",
		"cargo":    "running 3 tests\ntest result: FAILED. 2 passed; 1 failed; 0 ignored",
		"shell":    "deploying\nbash: kubectl: command not found",
		"segv":     "starting worker\nSegmentation fault (core dumped)",
		"yarn":     "yarn run v1.22.19\nerror Command failed with exit code 1.",
		"ruby":     "rake aborted!\nNameError: uninitialized constant Ledger",
	}
	for name, out := range failed {
		for _, role := range []string{"", "tool"} {
			e := &contextfold.Entry{StepID: 3, Summary: "compiling web app", FilePath: "cold_nodes/step_000003.json", FoldedAt: "2026-01-01T00:00:00Z"}
			if role == "tool" {
				e.Summary = "tool Bash $ make build: compiling web app"
			}
			st := ProjectEntry(e, out)
			if st.Status != StatusFailed {
				t.Errorf("%s (role %q): %s, want FAILED", name, role, st.Status)
				continue
			}
			line := PageLine(st)
			if !errLine.MatchString(line) && !errName.MatchString(line) && !failureLine.MatchString(line) {
				t.Errorf("%s (role %q): the page-table line does not show the failure: %q", name, role, line)
			}
		}
	}
	succeeded := []string{
		"ok  \texample.com/pkg\t0.01s\nPASS",
		"Build succeeded.\n    0 Warning(s)\n    0 Error(s)",
		"========= 12 passed in 0.40s =========",
		"Found 0 errors. Watching for file changes.",
		"refactored the error handling of the parser; no failures",
		"Tests:       12 passed, 12 total",
		"test result: ok. 3 passed; 0 failed; 0 ignored",
	}
	for _, out := range succeeded {
		e := &contextfold.Entry{StepID: 4, Summary: "ran the build", FilePath: "cold_nodes/step_000004.json", FoldedAt: "2026-01-01T00:00:00Z"}
		if st := ProjectEntry(e, out); st.Status != StatusSuccess || st.Summary != "ran the build" {
			t.Errorf("%q: %s %q, want SUCCESS with the summary as it is", out, st.Status, st.Summary)
		}
	}
	// A person's note that quotes an error stays what it is.
	if st := ProjectEntry(&contextfold.Entry{StepID: 5, Summary: "user: why does it say error TS2339?", FilePath: "x", FoldedAt: "t"}, "why does it say error TS2339: Property 'total'?"); st.Status != StatusSuccess {
		t.Errorf("a user's question: %s", st.Status)
	}
}
