package harness

import (
	"strings"
	"unicode"
)

// textActionType classifies a folded step (spec §8) from its summary, payload
// and stored lists alone, for turns whose tool and command say nothing
// (deriveActionType answered OTHER). The rules, first match wins:
//
//  1. commands present → COMMAND_EXECUTION
//  2. files and diff markers in the payload ("diff --git", "+++ ", "--- ",
//     "@@ ") → CODE_MODIFICATION
//  3. a refactor word → REFACTOR
//  4. files and an edit word (patched, edited, modified, updated, fixed…) →
//     CODE_MODIFICATION
//  5. a test or verify word (test, verified, validate, check, passing…) →
//     VERIFICATION
//  6. files, or a reading word (read, inspect, explore, search, found…) →
//     EXPLORATION
//  7. otherwise OTHER
func textActionType(summary, payload string, files, commands []string) string {
	if len(commands) > 0 {
		return ActionCommandExecution
	}
	if len(files) > 0 && hasDiffMarkers(payload) {
		return ActionCodeModification
	}
	words := wordSetOf(summary + "\n" + payload)
	has := func(prefixes ...string) bool {
		for w := range words {
			for _, p := range prefixes {
				if strings.HasPrefix(w, p) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("refactor"):
		return ActionRefactor
	case len(files) > 0 && has("patch", "edit", "modif", "updat", "fix", "rewrit", "chang", "added", "adding", "remov", "renam"):
		return ActionCodeModification
	case has("test", "pytest", "verif", "validat", "check", "passing", "passed", "assert", "lint"):
		return ActionVerification
	case len(files) > 0 || has("read", "inspect", "explor", "search", "grep", "found", "look", "list", "investigat"):
		return ActionExploration
	}
	return ActionOther
}

// hasDiffMarkers reports whether a payload looks like a unified diff.
func hasDiffMarkers(payload string) bool {
	for _, line := range strings.Split(payload, "\n") {
		if strings.HasPrefix(line, "diff --git ") || strings.HasPrefix(line, "+++ ") ||
			strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "@@ ") {
			return true
		}
	}
	return false
}

// wordSet returns the lower-cased letter runs of s.
func wordSetOf(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		out[strings.ToLower(w)] = true
	}
	return out
}
