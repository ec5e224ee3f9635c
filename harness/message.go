package harness

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Roles of the neutral message model.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part is one piece of a message's content.
type Part struct {
	// Text is the text of the part (for a tool result: its output).
	Text string
	// Foldable is true when the part may be replaced by a folded-step record:
	// plain text and tool output. Parts that must reach the model unchanged
	// (thinking blocks, tool calls, images) are not foldable; an adapter may
	// leave them out of the neutral model altogether.
	Foldable bool
	// ToolResult is true for the output of a tool call (it stays first in its
	// message, before any hydrated content).
	ToolResult bool
	// Reasoning is true for the model's own reasoning as the client sent it
	// back: an Anthropic thinking or redacted_thinking block, an OpenAI
	// Responses reasoning item. Never foldable (its bytes are bound to the
	// conversation before it); stored with its message when the message
	// folds, so reasoning the proxy leaves out of a request stays in the
	// store, verifiable and hydratable.
	Reasoning bool
	// Tokens is what the part takes on the wire (its encoded form), in
	// tokens; 0 means counted from Text. The proxy sets it.
	Tokens int
}

// Message is one message of a conversation in the transport-neutral model.
// The proxy builds it from Anthropic and OpenAI request bodies; a Go agent
// loop builds it directly.
type Message struct {
	Role  string // one of the Role* constants
	Parts []Part
	// Human is true when the message carries words of the human (a prompt),
	// not only tool results. Hydration follows the latest human message.
	Human bool
	// Tool and Command name the tool call this message answers or makes, when
	// known ("Bash", "go test ./..."); they shape the folded-step record.
	Tool    string
	Command string
	// IsError is true for a tool result the tool flagged as failed.
	IsError bool
	// AnswersTool is true for a message that carries tool results (an
	// Anthropic tool_result block, an OpenAI tool message): it stays right
	// after the message that made the calls, and the two leave the prompt
	// together or not at all.
	AnswersTool bool
	// Pin is true for a message the working set must keep as it is: an
	// opaque summary of the history before it that the client resends in
	// that history's place (the Responses API's "compaction" item, which
	// Codex sends after a remote compaction). Under a token budget the
	// pinned prefix reaches through the last such message, so no fold
	// event folds or removes it or anything before it.
	Pin bool
	// Tokens is what the whole message takes on the wire, in tokens; 0
	// means counted from its parts. The proxy sets it.
	Tokens int
	// Key identifies the message as sent (a hash of its encoded bytes; 0:
	// unknown). A step whose message keeps the key it had when the harness
	// last verified it against the store is not hashed again.
	Key uint64
	// PrefixKey, when not 0, stands for the Keys of this message and of
	// every message before it (the caller's hash of them): a conversation
	// whose message at position i has the PrefixKey the last dispatch's
	// had there repeats that dispatch's first i+1 keys, and the harness
	// compares one key instead of all of them. 0: unknown. The
	// proxy sets it.
	PrefixKey uint64
}

// Text returns the message's text: its parts joined by a blank line.
func (m Message) Text() string {
	var b strings.Builder
	for i, p := range m.Parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// payload is what a folded message stores: its foldable parts with any
// hydrated content removed, then its reasoning parts, joined by a blank
// line. ok is false when the message has nothing foldable.
func (m Message) payload() (string, bool) {
	// The common case, one foldable part without hydration: no copy.
	only, n, reasoning := -1, 0, false
	for k, p := range m.Parts {
		if p.Foldable {
			only, n = k, n+1
		}
		reasoning = reasoning || p.Reasoning
	}
	if n == 1 && !reasoning {
		t := m.Parts[only].Text
		if !strings.Contains(t, HydrationOpen) {
			if strings.TrimSpace(t) == "" {
				return "", false
			}
			return t, true
		}
	}
	var b strings.Builder
	n = 0
	for _, p := range m.Parts {
		if !p.Foldable {
			continue
		}
		t := StripHydration(p.Text)
		if strings.TrimSpace(t) == "" {
			continue
		}
		if n > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
		n++
	}
	if n > 0 && reasoning {
		// The turn's reasoning is stored with it (the proxy may leave it
		// out of the prompt at a fold event: it must not be lost).
		for _, p := range m.Parts {
			if p.Reasoning && strings.TrimSpace(p.Text) != "" {
				b.WriteString("\n\n")
				b.WriteString(p.Text)
			}
		}
	}
	return b.String(), n > 0
}

// storePayload is what a message stores when it is folded: its payload, or
// for a message with nothing foldable (a tool call), the text of its other
// parts.
func (m Message) storePayload() (string, bool) {
	if p, ok := m.payload(); ok {
		return p, true
	}
	var b strings.Builder
	for _, p := range m.Parts {
		t := StripHydration(p.Text)
		if strings.TrimSpace(t) == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	return b.String(), b.Len() > 0
}

// promptText is the text a scan matches: the non-tool-result text parts of a
// human message, hydrated content removed (the ranked scan leaves out the
// agent's own markup as well: match/ranked, rule "the human's words").
func (m Message) promptText() string {
	var parts []string
	for _, p := range m.Parts {
		if p.ToolResult {
			continue
		}
		if t := strings.TrimSpace(StripHydration(p.Text)); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// Hydration markers. A hydrated node is placed in the prompt as
//
//	<contextfold-hydration step_id="137" artifact_sha256="…" chars="N" truncated="false">
//	…content (N code points)…
//	</contextfold-hydration>
//
// A node read from an earlier store (HydratedNode.Source) carries its name
// last, as from="s-1a2b3c4d5e6f7a8b/g1": its step_id is that store's.
const (
	HydrationOpen  = "<contextfold-hydration "
	HydrationClose = "</contextfold-hydration>"
)

// IsHydration reports whether s holds hydrated content (a block the harness
// injected, possibly echoed back by a client).
func IsHydration(s string) bool { return strings.Contains(s, HydrationOpen) }

// HydrationBlock renders one hydrated node as the element the harness injects.
func HydrationBlock(h HydratedNode) string {
	var b strings.Builder
	b.WriteString(HydrationOpen)
	b.WriteString(`step_id="` + strconv.Itoa(h.StepID) + `" artifact_sha256="` + h.ArtifactSHA256 +
		`" chars="` + strconv.Itoa(utf8.RuneCountInString(h.Content)) + `" truncated="` + strconv.FormatBool(h.Truncated) + `"`)
	if h.Source != "" {
		b.WriteString(` from="` + h.Source + `"`)
	}
	b.WriteString(">\n")
	b.WriteString(h.Content)
	b.WriteString("\n" + HydrationClose)
	return b.String()
}

// StripHydration removes every hydration element from s, using the declared
// length of its content when it is intact and the next closing tag otherwise.
// Text outside the elements is kept; surrounding blank lines are trimmed.
func StripHydration(s string) string {
	if !strings.Contains(s, HydrationOpen) {
		return s
	}
	var out strings.Builder
	rest := s
	for {
		i := strings.Index(rest, HydrationOpen)
		if i < 0 {
			out.WriteString(rest)
			break
		}
		out.WriteString(rest[:i])
		rest = rest[i:]
		end := hydrationEnd(rest)
		rest = rest[end:]
	}
	return strings.TrimSpace(out.String())
}

// HydrationBlocks parses the hydration elements of s (HydrationBlock's
// form) in order: each one's step id, truncated flag and content. An element
// without a readable step_id is skipped; text outside the elements is
// ignored.
func HydrationBlocks(s string) []HydratedNode {
	var out []HydratedNode
	for {
		i := strings.Index(s, HydrationOpen)
		if i < 0 {
			return out
		}
		s = s[i:]
		end := hydrationEnd(s)
		el := s[:end]
		s = s[end:]
		gt := strings.IndexByte(el, '>')
		if gt < 0 {
			continue
		}
		step, ok := attrInt(el[:gt], "step_id")
		if !ok {
			continue
		}
		body := strings.TrimPrefix(el[gt+1:], "\n")
		body = strings.TrimSuffix(body, "\n"+HydrationClose)
		out = append(out, HydratedNode{StepID: step, Truncated: strings.Contains(el[:gt], ` truncated="true"`), Content: body,
			Source: attrString(el[:gt], "from")})
	}
}

// hydrationEnd returns the length of the hydration element at the start of s.
func hydrationEnd(s string) int {
	gt := strings.IndexByte(s, '>')
	if gt < 0 {
		return len(s)
	}
	head := s[:gt]
	if n, ok := attrInt(head, "chars"); ok && n >= 0 {
		// skip ">\n", n code points, then "\n</contextfold-hydration>".
		pos := gt + 1
		if pos < len(s) && s[pos] == '\n' {
			pos++
		}
		for k := 0; k < n && pos < len(s); k++ {
			_, size := utf8.DecodeRuneInString(s[pos:])
			pos += size
		}
		tail := "\n" + HydrationClose
		if strings.HasPrefix(s[pos:], tail) {
			return pos + len(tail)
		}
	}
	if j := strings.Index(s[gt:], HydrationClose); j >= 0 {
		return gt + j + len(HydrationClose)
	}
	return len(s)
}

// attrString returns the value of attribute name in an element's head, ""
// when it has none.
func attrString(head, name string) string {
	k := strings.Index(head, " "+name+`="`)
	if k < 0 {
		return ""
	}
	v := head[k+len(name)+3:]
	if q := strings.IndexByte(v, '"'); q >= 0 {
		return v[:q]
	}
	return ""
}

func attrInt(head, name string) (int, bool) {
	k := strings.Index(head, " "+name+`="`)
	if k < 0 {
		return 0, false
	}
	v := head[k+len(name)+3:]
	q := strings.IndexByte(v, '"')
	if q < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(v[:q])
	return n, err == nil
}
