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

// Template observations: a signal that needs no list of scaffolds.
//
// A scaffold that runs the model's actions itself (the action written in
// the assistant's text, not as a native tool call) sends each result back
// as a user message filled from one template: "<returncode>0</returncode>
// <output>…", "OBSERVATION:\n…", "EXECUTION RESULT of [execute_bash]:…",
// "Tool output:\n…". A person does not open every reply identically, nor
// with markup. So a user message is a template observation when
//
//   - the message before it is the assistant's and writes an action in its
//     text (actionInText: a fenced block, or an element such as
//     <function=…>…</function> on lines of its own);
//   - another user message of the same conversation, also right after
//     such an action, opens with the same template (sameTemplate: the first
//     minTemplateOpening bytes or more of both openings agree, digits
//     counting as equal, and the agreeing part holds markup or a label
//     colon, not only words);
//   - that other message is among the templateLookback messages before or
//     after it (a scaffold fills its template at every step; the bound
//     keeps the check's cost independent of the conversation's length).
//
// The first observation of a session has no other one yet: the request
// that ends with it is scanned as a human turn (observationPrefixes may
// know it). From the second on, both are observations, and the prompt is
// the human message before them.

// minTemplateOpening is the shortest opening, in bytes, two user messages
// must share to count as one template.
const minTemplateOpening = 12

// templateOpeningBytes is how much of a message's opening is compared.
const templateOpeningBytes = 64

// templateLookback is how many messages before a user message are searched
// for an earlier one of the same template.
const templateLookback = 64

// leadingText returns m's leading text: its first text part with words,
// tool results and reasoning aside, leading white space trimmed (hydrated
// content, which the proxy appends after a message's own text, only when
// it comes first).
func (m Message) leadingText() string {
	for _, p := range m.Parts {
		if p.ToolResult || p.Reasoning {
			continue
		}
		t := strings.TrimLeft(p.Text, " \t\r\n")
		if strings.HasPrefix(t, HydrationOpen) {
			t = strings.TrimLeft(StripHydration(t), " \t\r\n")
		}
		if t != "" {
			return t
		}
	}
	return ""
}

// actionInText reports whether the assistant's message m writes an action
// in its text: a fenced block (a line opening with ``` or ~~~), or an
// element whose opening tag starts a line and whose closing tag (</name>)
// follows (<function=execute_bash>…</function>, <execute_bash>…
// </execute_bash>). Cost: a few substring searches over the text.
func actionInText(m Message) bool {
	if m.Role != RoleAssistant {
		return false
	}
	for _, p := range m.Parts {
		if p.ToolResult || p.Reasoning {
			continue
		}
		if lineOpens(p.Text, "```") || lineOpens(p.Text, "~~~") || elementLine(p.Text) {
			return true
		}
	}
	return false
}

// lineOpens reports whether a line of t opens with mark (after spaces).
func lineOpens(t, mark string) bool {
	for off := 0; ; {
		k := strings.Index(t[off:], mark)
		if k < 0 {
			return false
		}
		k += off
		b := k
		for b > 0 && (t[b-1] == ' ' || t[b-1] == '\t') {
			b--
		}
		if b == 0 || t[b-1] == '\n' {
			return true
		}
		off = k + len(mark)
	}
}

// elementLine reports whether a line of t opens with a tag <name…> whose
// closing tag </name> follows.
func elementLine(t string) bool {
	for off := 0; off < len(t); {
		k := strings.IndexByte(t[off:], '<')
		if k < 0 {
			return false
		}
		k += off
		off = k + 1
		b := k
		for b > 0 && (t[b-1] == ' ' || t[b-1] == '\t') {
			b--
		}
		if b > 0 && t[b-1] != '\n' {
			continue
		}
		e := k + 1
		for e < len(t) && isTagByte(t[e]) {
			e++
		}
		if e > k+1 && strings.Contains(t[e:], "</"+t[k+1:e]+">") {
			return true
		}
	}
	return false
}

func isTagByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// sameTemplate reports whether two messages' leading texts open with one
// template: their first templateOpeningBytes bytes agree on at least
// minTemplateOpening bytes (a digit matching any digit: an exit code, a
// count), and the agreeing part holds markup (< > [ ] { } | = #) or a
// colon ending a label: not a sentence a person may start twice.
func sameTemplate(a, b string) bool {
	n := min(len(a), len(b), templateOpeningBytes)
	k := 0
	for k < n && (a[k] == b[k] || isDigit(a[k]) && isDigit(b[k])) {
		k++
	}
	if k < minTemplateOpening {
		return false
	}
	return strings.ContainsAny(a[:k], "<>[]{}|=#") || labelColon(a[:k])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// labelColon reports whether s holds a colon on its first line that ends
// a label: right after a word or a bracket, and followed by a space or the
// end of the line (OBSERVATION:, Tool output (exit 0):), not a clock time
// or a URL.
func labelColon(s string) bool {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i+1]
	}
	for i := 1; i < len(s); i++ {
		if s[i] == ':' && (isTagByte(s[i-1]) || s[i-1] == ')' || s[i-1] == ']') && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\r') {
			return true
		}
	}
	return false
}

// templateObservation reports whether conv[i], a user message, is a
// template observation (see above).
func templateObservation(conv []Message, i int) bool {
	if i < 1 || conv[i].Role != RoleUser || conv[i-1].Role != RoleAssistant {
		return false
	}
	open := conv[i].leadingText()
	if len(open) < minTemplateOpening {
		return false
	}
	for d := 2; d <= templateLookback; d++ {
		for _, j := range [2]int{i - d, i + d} {
			if j >= 1 && j < len(conv) && conv[j].Role == RoleUser && sameTemplate(open, conv[j].leadingText()) && actionInText(conv[j-1]) {
				return actionInText(conv[i-1])
			}
		}
	}
	return false
}
