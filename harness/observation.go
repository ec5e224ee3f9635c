package harness

import "strings"

// observationPrefixes are the openings of the messages coding-agent
// scaffolds send in the user role that carry a tool's output or the
// scaffold's own feedback, not words of a person (the same shapes package
// ingest reads as observations):
//
//   - mini-swe-agent: every command's output ("<returncode>0</returncode>
//     <output>…"), its timeout notice ("The last command <command>…") and
//     its format error ("Please always provide EXACTLY ONE action in triple
//     backticks…");
//   - SWE-agent: "Observation: …" (its templates also write "OBSERVATION:");
//   - OpenHands, function calls by prompt (models without native tool
//     calls): "EXECUTION RESULT of [execute_bash]: …";
//   - Aider: a command the user had it run ("I ran this command: … And got
//     this output: …").
//
// Compared with the message's leading text, ASCII case folded.
var observationPrefixes = []string{
	"<returncode>",
	"the last command <command>",
	"please always provide exactly one action in triple backticks",
	"observation:",
	"execution result of [",
	"i ran this command:",
}

// IsObservation reports whether text, a user message's text, is a
// scaffold's observation (see observationPrefixes): a tool's output or the
// scaffold's feedback sent in the user role. Such a message is not a
// question: it starts no human turn, so it is never scanned and nothing is
// hydrated for it. Leading white space is ignored.
func IsObservation(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	for _, p := range observationPrefixes {
		if len(t) >= len(p) && strings.EqualFold(t[:len(p)], p) {
			return true
		}
	}
	return false
}

// isObservation reports whether message m's leading text (its first text
// part with words, tool results aside) is a scaffold's observation.
func (m Message) isObservation() bool {
	for _, p := range m.Parts {
		if p.ToolResult || strings.TrimSpace(p.Text) == "" {
			continue
		}
		return IsObservation(p.Text)
	}
	return false
}
