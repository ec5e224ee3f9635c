package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// detectLines is how many lines of a JSONL file Detect looks at.
const detectLines = 64

// claudeRecordTypes are record types that occur in Claude Code session files.
var claudeRecordTypes = map[string]bool{
	"user": true, "assistant": true, "system": true, "summary": true, "attachment": true,
	"file-history-snapshot": true, "queue-operation": true, "progress": true,
}

// Detect recognises the transcript format of data. The error for unknown
// input names the accepted formats and wraps [ErrUnknownFormat].
func Detect(data []byte) (Format, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return "", unknownFormat("the input is empty")
	}
	if why, ok := binaryInput(data); ok {
		return "", binaryFormat(why)
	}
	if why, ok := truncatedDoc(data); ok {
		return "", unknownFormat(why)
	}
	switch trimmed[0] {
	case '[':
		a, ok := decodeArr(trimmed)
		if !ok {
			return "", unknownFormat("the input starts with '[' but is not a valid JSON array (" + jsonErr(trimmed) + ")")
		}
		if f, ok := chatFormat(a, nil); ok {
			return f, nil
		}
		return "", unknownFormat("the JSON array does not hold chat messages (objects with \"role\")")
	case '{':
		if json.Valid(trimmed) {
			o, _ := decodeObj(trimmed)
			if f, ok := objectFormat(o); ok {
				return f, nil
			}
			return "", unknownFormat("the JSON object has none of the expected fields (\"messages\", \"history\", a Claude Code record's \"type\"/\"uuid\")")
		}
		return detectJSONL(data)
	}
	if isAider(data) {
		return FormatAider, nil
	}
	return "", unknownFormat("the input is neither JSON, JSONL nor an Aider chat history")
}

// detectJSONL classifies a JSONL file by its first well-formed object lines.
func detectJSONL(data []byte) (Format, error) {
	rest := data
	return detectJSONLLines(func() ([]byte, bool, error) {
		if len(rest) == 0 {
			return nil, false, nil
		}
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		return line, true, nil
	})
}

// detectJSONLLines is detectJSONL over the lines next returns in file order
// (ok false at the end); it reads at most detectLines of them.
func detectJSONLLines(next func() (line []byte, ok bool, err error)) (Format, error) {
	seen := 0
	for n := 0; n < detectLines; n++ {
		line, ok, err := next()
		if err != nil {
			return "", err
		}
		if !ok {
			break
		}
		o, ok := decodeObj(line)
		if !ok {
			continue
		}
		seen++
		if o.has("history") && (o.has("instance_id") || o.has("instruction") || o.has("test_result")) {
			return FormatOpenHands, nil
		}
		if events := o.arr("history"); len(events) > 0 {
			if e, ok := decodeObj(events[0]); ok && (e.has("action") || e.has("observation") || e.has("source")) {
				return FormatOpenHands, nil
			}
		}
		if isClaudeRecord(o) {
			return FormatClaudeCode, nil
		}
	}
	if seen == 0 {
		return "", unknownFormat("no line of the input is a JSON object")
	}
	return "", unknownFormat("the JSON lines are neither Claude Code records (\"type\", \"uuid\", \"message\") nor OpenHands runs (\"history\")")
}

func isClaudeRecord(o obj) bool {
	t := o.str("type")
	if t == "" {
		return false
	}
	if o.has("uuid") || o.has("parentUuid") || o.has("sessionId") || o.has("leafUuid") {
		return true
	}
	return claudeRecordTypes[t] && (o.has("message") || t == "summary" || t == "queue-operation" || t == "file-history-snapshot")
}

// objectFormat classifies a single JSON object document.
func objectFormat(o obj) (Format, bool) {
	if strings.HasPrefix(o.str("trajectory_format"), "mini-swe-agent") {
		return FormatMiniSWEAgent, true
	}
	if h, ok := o["history"]; ok {
		if events, ok := decodeArr(h); ok {
			for _, raw := range events {
				e, ok := decodeObj(raw)
				if !ok {
					continue
				}
				if e.has("role") {
					return FormatSWEAgent, true
				}
				if e.has("action") || e.has("observation") || e.has("source") {
					return FormatOpenHands, true
				}
				break
			}
			if o.has("instance_id") && (o.has("test_result") || o.has("instruction")) {
				return FormatOpenHands, true
			}
			if o.has("trajectory") || o.has("info") {
				return FormatSWEAgent, true
			}
		}
	}
	if m, ok := o["messages"]; ok {
		if msgs, ok := decodeArr(m); ok {
			if info := o.obj("info"); info != nil && (info.has("mini_version") || strings.Contains(info.str("config"), "mini")) {
				return FormatMiniSWEAgent, true
			}
			if f, ok := chatFormat(msgs, o); ok {
				return f, true
			}
			if len(msgs) == 0 {
				if o.has("system") {
					return FormatAnthropic, true
				}
				return FormatOpenAI, true
			}
		}
	}
	if isClaudeRecord(o) {
		return FormatClaudeCode, true
	}
	return "", false
}

// anthropicBlocks are content block types only the Anthropic API uses.
var anthropicBlocks = map[string]bool{
	"tool_use": true, "tool_result": true, "thinking": true, "redacted_thinking": true,
	"server_tool_use": true, "web_search_tool_result": true, "document": true,
	"mcp_tool_use": true, "mcp_tool_result": true,
}

// openAIParts are content part types only the OpenAI API uses.
var openAIParts = map[string]bool{
	"image_url": true, "input_audio": true, "refusal": true, "file": true, "input_text": true,
}

// chatFormat decides between the OpenAI and Anthropic message layouts.
// top is the enclosing object, if any.
func chatFormat(msgs []json.RawMessage, top obj) (Format, bool) {
	var c chatCounts
	for _, raw := range msgs {
		c.add(raw)
	}
	return c.format(top)
}

// chatCounts tallies the evidence chatFormat weighs, one message at a time.
type chatCounts struct {
	anthropic, openai, roles int
}

// add counts one element of a messages array.
func (c *chatCounts) add(raw json.RawMessage) {
	if m, ok := decodeObj(raw); ok {
		c.addObj(m)
	}
}

// addObj counts one element of a messages array that is an object.
func (c *chatCounts) addObj(m obj) {
	if !m.has("role") {
		return
	}
	c.roles++
	switch m.str("role") {
	case "tool", "function", "system", "developer":
		c.openai++
	}
	if m.has("tool_calls") || m.has("tool_call_id") || m.has("function_call") {
		c.openai++
	}
	for _, b := range m.arr("content") {
		bo, ok := decodeObj(b)
		if !ok {
			continue
		}
		t := bo.str("type")
		switch {
		case anthropicBlocks[t]:
			c.anthropic++
		case openAIParts[t]:
			c.openai++
		case t == "image" && bo.has("source"):
			c.anthropic++
		}
	}
}

// format is chatFormat's decision on the messages counted.
func (c chatCounts) format(top obj) (Format, bool) {
	if c.roles == 0 {
		return "", false
	}
	switch {
	case c.anthropic > c.openai:
		return FormatAnthropic, true
	case c.openai > c.anthropic:
		return FormatOpenAI, true
	case top != nil && (top.has("system") || top.has("stop_sequences") || top.has("thinking")):
		return FormatAnthropic, true
	}
	return FormatOpenAI, true
}

// isAider reports whether data looks like an Aider chat history.
func isAider(data []byte) bool {
	if bytes.HasPrefix(data, []byte(aiderSessionPrefix)) || bytes.Contains(data, []byte("\n"+aiderSessionPrefix)) {
		return true
	}
	first := bytes.TrimLeft(data, " \t\r\n")
	return bytes.HasPrefix(first, []byte("#### "))
}

// binarySniff is how much of the input binaryInput looks at.
const binarySniff = 64 << 10

// binaryInput reports whether data is not text (an executable, an archive,
// an image): every format ingest reads is UTF-8 text, where a NUL byte
// never occurs and invalid UTF-8 is rare (a Latin-1 file or a lone
// surrogate is still text: ingest replaces such bytes). It looks at the
// first 64 KiB: a NUL byte (executables, archives, images have them within
// their first bytes), or more than a third of at least 64 bytes in invalid
// UTF-8 sequences, is binary.
// why names what was found, for the error.
func binaryInput(data []byte) (why string, binary bool) {
	head := data
	if len(head) > binarySniff {
		head = head[:binarySniff]
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return fmt.Sprintf("the input is binary, not a transcript (a NUL byte at offset %d)%s", i, compressedHint(head)), true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 && len(head)-i >= utf8.UTFMax {
			bad++
		}
		i += n
	}
	if len(head) >= 64 && bad*3 > len(head) {
		return fmt.Sprintf("the input is binary, not a transcript (%d of its first %d bytes are not UTF-8 text)%s", bad, len(head), compressedHint(head)), true
	}
	return "", false
}

// compressedHint names the compression of binary input that starts with
// the magic number of a compressed stream (a session.jsonl.gz), and how to
// ingest it: decompressed into standard input. Else "".
func compressedHint(head []byte) string {
	for _, c := range []struct{ magic, name, tool string }{
		{"\x1f\x8b", "gzip", "zcat"},
		{"\x28\xb5\x2f\xfd", "zstd", "zstdcat"},
		{"\xfd7zXZ\x00", "xz", "xzcat"},
		{"BZh", "bzip2", "bzcat"},
	} {
		if bytes.HasPrefix(head, []byte(c.magic)) {
			return fmt.Sprintf("; it is %s-compressed: decompress it first, e.g. %s FILE | contextfold ingest -", c.name, c.tool)
		}
	}
	return ""
}
