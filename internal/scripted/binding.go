package scripted

// Reasoning bound to its prefix, as the model vendors check it.
//
// Anthropic ("preserved thinking", "Prefix checks on thinking blocks"): a
// thinking or redacted_thinking block that comes back in a request is valid
// only when everything before it — the top-level system, the tools and
// every message (and earlier block) before it — is what the request that
// produced it carried; cache_control markers are left out of the
// comparison, and a string content compares equal to a single text block.
// A change invalidates every block already after it — leaving a thinking
// block out from between others, or moving it, changes the prefix of the
// ones after it — while thinking produced after the change stays valid. A failed check is a 400 naming the first
// invalid block's path, unless the request sets
// thinking.block_binding.prefix_mismatch_behavior to "drop_block" and sends
// the beta header anthropic-beta: thinking-binding-controls-2026-08-01; then
// the invalid blocks are dropped and listed in the response's
// input_transformations (type thinking_dropped, with the block's path).
//
// OpenAI ("Keep the prefix unchanged"): a Responses API reasoning item whose
// prefix (instructions, tools, text.format and every input item before it)
// changed is dropped without an error, and the response lists it in
// input_transformations (type reasoning, action removed, the item's id,
// reason prefix_mismatch).
//
// The Binder here is the stand-in for the vendors' signatures: a keyed
// digest (HMAC-SHA-256) of the block's canonical prefix and of the block's
// own text. It is deterministic for a given secret, so that a replay is
// byte-identical.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// BetaThinkingBinding is the anthropic-beta header value that a request must
// carry for thinking.block_binding to be accepted.
const BetaThinkingBinding = "thinking-binding-controls-2026-08-01"

// DropBlock is the value of thinking.block_binding.prefix_mismatch_behavior
// that asks the API to drop invalid thinking blocks instead of failing.
const DropBlock = "drop_block"

// Binder signs thinking blocks and reasoning items over their prefix and
// checks the ones a request sends back. Its methods are safe for concurrent
// use (a Binder is immutable).
type Binder struct{ key []byte }

// NewBinder returns a Binder keyed with secret (any string; the same secret
// gives the same signatures).
func NewBinder(secret string) *Binder {
	return &Binder{key: []byte("ipcf-scripted-binding\x00" + secret)}
}

// BlockRef names one thinking block of a Messages API request.
type BlockRef struct {
	// Path is "messages.N.content.M", the form the API's errors and
	// input_transformations use (N indexes the request's messages, M that
	// message's content array).
	Path           string
	Message, Block int
	// Type is "thinking" or "redacted_thinking".
	Type string
}

// ThinkingCheck is the outcome of the prefix check of one Messages API
// request.
type ThinkingCheck struct {
	// Blocks is the number of thinking and redacted_thinking blocks the
	// request sends back.
	Blocks int
	// Invalid are the blocks that fail the check, in request order: each
	// one whose signature does not match its prefix as the request carries
	// it. A change invalidates every block produced before it and placed
	// after it (their prefix covers it, and a block left out or moved
	// changes the prefix of the ones after); a block produced after the
	// change was signed over the changed prefix and stays valid.
	Invalid []BlockRef
}

// Valid is the number of blocks that pass the check.
func (c ThinkingCheck) Valid() int { return c.Blocks - len(c.Invalid) }

// ErrorMessage is the documented 400 message for the first invalid block
// ("" when every block is valid).
func (c ThinkingCheck) ErrorMessage() string {
	if len(c.Invalid) == 0 {
		return ""
	}
	b := c.Invalid[0]
	return fmt.Sprintf("%s: Invalid `signature` in `%s` block. The block is bound to a different conversation. "+
		"Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".", b.Path, b.Type)
}

// ErrorBody is the documented 400 response body for the first invalid
// block (nil when every block is valid).
func (c ThinkingCheck) ErrorBody() []byte {
	if len(c.Invalid) == 0 {
		return nil
	}
	return errorBody(c.ErrorMessage())
}

func errorBody(msg string) []byte {
	return []byte(marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}}))
}

// Transformations are the input_transformations entries of a response that
// dropped the invalid blocks: {"type":"thinking_dropped","path":…} each.
func (c ThinkingCheck) Transformations() []map[string]any {
	out := []map[string]any{}
	for _, b := range c.Invalid {
		out = append(out, map[string]any{"type": "thinking_dropped", "path": b.Path})
	}
	return out
}

// Judgement is what the API does with a Messages API request after the
// prefix check.
type Judgement struct {
	Check ThinkingCheck
	// Status is 200 when the request goes on (with Dropped blocks taken
	// out), else 400 with ErrorBody.
	Status    int
	ErrorBody []byte
	// Dropped are the paths of the blocks dropped (drop_block with the
	// beta header, or a model that drops without an error).
	Dropped []string
	// Report is true when the response lists Dropped in
	// input_transformations (drop_block with the beta header).
	Report bool
}

// Mismatch is how a model handles an invalid block when the request does
// not ask for drop_block.
type Mismatch int

// The outcomes per model the docs describe.
const (
	// MismatchReject answers 400 naming the first invalid block (enforced
	// by default on accounts created on or after 2026-08-31).
	MismatchReject Mismatch = iota
	// MismatchDrop drops the invalid blocks without an error and without
	// reporting them (models that do not fail the request).
	MismatchDrop
	// MismatchIgnore does not check (a model without preserved thinking).
	MismatchIgnore
)

// Judge runs the prefix check of a Messages API request (its header and
// body) as the API does under mode: a 400 with the documented message for
// the first invalid block; with thinking.block_binding.prefix_mismatch_behavior
// "drop_block" and the beta header, the invalid blocks dropped and reported;
// "drop_block" without the beta header is a 400 asking for it. A body that
// is not a Messages API request is judged valid (the caller reports its own
// error).
func (b *Binder) Judge(h http.Header, body []byte, mode Mismatch) Judgement {
	behaviour := bindingBehaviour(body)
	if behaviour != "" && !hasBeta(h, BetaThinkingBinding) {
		return Judgement{Status: http.StatusBadRequest, ErrorBody: errorBody(
			"thinking.block_binding: this field is in beta; send the header `anthropic-beta: " + BetaThinkingBinding + "` with the request to use it.")}
	}
	if mode == MismatchIgnore && behaviour == "" {
		return Judgement{Status: http.StatusOK}
	}
	c, err := b.CheckAnthropic(body)
	if err != nil {
		return Judgement{Status: http.StatusOK}
	}
	j := Judgement{Check: c, Status: http.StatusOK}
	if len(c.Invalid) == 0 {
		return j
	}
	switch {
	case behaviour == DropBlock:
		j.Report = true
	case mode == MismatchReject:
		j.Status, j.ErrorBody = http.StatusBadRequest, c.ErrorBody()
		return j
	}
	for _, r := range c.Invalid {
		j.Dropped = append(j.Dropped, r.Path)
	}
	return j
}

// bindingBehaviour is thinking.block_binding.prefix_mismatch_behavior of a
// request body ("" when absent).
func bindingBehaviour(body []byte) string {
	var req struct {
		Thinking struct {
			BlockBinding struct {
				PrefixMismatchBehavior string `json:"prefix_mismatch_behavior"`
			} `json:"block_binding"`
		} `json:"thinking"`
	}
	_ = json.Unmarshal(body, &req)
	return req.Thinking.BlockBinding.PrefixMismatchBehavior
}

// hasBeta reports whether the anthropic-beta header (comma-separated, any
// number of headers) names beta.
func hasBeta(h http.Header, beta string) bool {
	for _, v := range h.Values("anthropic-beta") {
		for _, p := range strings.Split(v, ",") {
			if strings.TrimSpace(p) == beta {
				return true
			}
		}
	}
	return false
}

// anthropicReq is the part of a Messages API request the prefix covers.
type anthropicReq struct {
	System   json.RawMessage `json:"system"`
	Tools    json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// chain is a running digest over a canonical prefix.
type chain [sha256.Size]byte

func (c chain) add(parts ...[]byte) chain {
	h := sha256.New()
	h.Write(c[:])
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	var out chain
	h.Sum(out[:0])
	return out
}

// anthropicWalk calls visit with the prefix digest before every content
// block of every message (the digest covers system, tools, the messages
// before and the blocks before in the same message), and returns the
// digest of the whole conversation followed by the start of a new
// assistant message: the prefix of the first block of a reply.
func anthropicWalk(body []byte, visit func(i, j int, block map[string]json.RawMessage, at chain)) (chain, error) {
	var req anthropicReq
	if err := json.Unmarshal(body, &req); err != nil {
		return chain{}, errors.New("request body is not a Messages API request: " + err.Error())
	}
	if req.Messages == nil {
		return chain{}, errors.New(`request body has no "messages" array`)
	}
	c := chain{}.add([]byte("anthropic-prefix-v1"), canonSystem(req.System), canonTools(req.Tools))
	for i, m := range req.Messages {
		c = c.add([]byte("message"), []byte(m.Role))
		for j, blk := range contentBlocks(m.Content, "text") {
			if visit != nil {
				visit(i, j, blk, c)
			}
			c = c.add(canonBlock(blk))
		}
		c = c.add([]byte("end"))
	}
	return c.add([]byte("message"), []byte("assistant")), nil
}

// SignThinking returns the signature of a thinking block with text thinking
// that the model returns first in its reply to the Messages API request
// body.
func (b *Binder) SignThinking(body []byte, thinking string) (string, error) {
	at, err := anthropicWalk(body, nil)
	if err != nil {
		return "", err
	}
	return b.sign(at, "thinking", thinking), nil
}

// SignRedacted returns the data of a redacted_thinking block that the model
// returns first in its reply to the Messages API request body.
func (b *Binder) SignRedacted(body []byte) (string, error) {
	at, err := anthropicWalk(body, nil)
	if err != nil {
		return "", err
	}
	return b.sign(at, "redacted_thinking", ""), nil
}

func (b *Binder) sign(at chain, kind, text string) string {
	m := hmac.New(sha256.New, b.key)
	t := sha256.Sum256([]byte(text))
	m.Write([]byte(kind))
	m.Write(at[:])
	m.Write(t[:])
	return "scripted1." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckAnthropic runs the prefix check over every thinking and
// redacted_thinking block of a Messages API request body.
func (b *Binder) CheckAnthropic(body []byte) (ThinkingCheck, error) {
	var c ThinkingCheck
	_, err := anthropicWalk(body, func(i, j int, blk map[string]json.RawMessage, at chain) {
		typ := str(blk["type"])
		var want, got string
		switch typ {
		case "thinking":
			want, got = b.sign(at, typ, str(blk["thinking"])), str(blk["signature"])
		case "redacted_thinking":
			want, got = b.sign(at, typ, ""), str(blk["data"])
		default:
			return
		}
		c.Blocks++
		if !hmac.Equal([]byte(want), []byte(got)) {
			c.Invalid = append(c.Invalid, BlockRef{Path: fmt.Sprintf("messages.%d.content.%d", i, j), Message: i, Block: j, Type: typ})
		}
	})
	return c, err
}

// DropPaths returns body without the content blocks at paths (as a
// ThinkingCheck names them), each message's other blocks unchanged. A
// message whose every block was dropped keeps an empty content array.
func DropPaths(body []byte, paths []string) ([]byte, error) {
	if len(paths) == 0 {
		return body, nil
	}
	drop := map[string]bool{}
	for _, p := range paths {
		drop[p] = true
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return nil, err
	}
	for i, m := range msgs {
		var blocks []json.RawMessage
		if json.Unmarshal(m["content"], &blocks) != nil {
			continue
		}
		kept := []json.RawMessage{}
		for j, blk := range blocks {
			if !drop[fmt.Sprintf("messages.%d.content.%d", i, j)] {
				kept = append(kept, blk)
			}
		}
		if len(kept) != len(blocks) {
			m["content"], _ = json.Marshal(kept)
		}
	}
	top["messages"], _ = json.Marshal(msgs)
	return json.Marshal(top)
}

// contentBlocks reads a content value as blocks: a string is one block of
// type textType (a string and a single text block compare equal).
func contentBlocks(raw json.RawMessage, textType string) []map[string]json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, _ := json.Marshal(textType)
		v, _ := json.Marshal(s)
		return []map[string]json.RawMessage{{"type": t, "text": v}}
	}
	var blocks []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

// canonBlock is a content block's canonical JSON: keys sorted, no
// insignificant whitespace, cache_control left out (also in a
// tool_result's nested blocks), a tool_result's string content as a single
// text block.
func canonBlock(blk map[string]json.RawMessage) []byte {
	m := map[string]json.RawMessage{}
	for k, v := range blk {
		if k != "cache_control" {
			m[k] = v
		}
	}
	if c, ok := m["content"]; ok && str(m["type"]) == "tool_result" {
		var nested []json.RawMessage
		for _, nb := range contentBlocks(c, "text") {
			nested = append(nested, canonBlock(nb))
		}
		m["content"], _ = json.Marshal(nested)
	}
	return canonJSON(mustMarshal(m))
}

// canonSystem is the top-level system's canonical form: a string as one
// text block, blocks without cache_control; absent as null.
func canonSystem(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return []byte("null")
	}
	var out []json.RawMessage
	for _, blk := range contentBlocks(raw, "text") {
		out = append(out, canonBlock(blk))
	}
	return mustMarshal(out)
}

// canonTools is the tools array's canonical form, without cache_control;
// absent as an empty array.
func canonTools(raw json.RawMessage) []byte {
	var tools []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &tools)
	out := []json.RawMessage{}
	for _, t := range tools {
		delete(t, "cache_control")
		out = append(out, canonJSON(mustMarshal(t)))
	}
	return mustMarshal(out)
}

// canonJSON re-encodes JSON with sorted keys, no insignificant whitespace
// and numbers as written.
func canonJSON(raw []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// Responses API reasoning items.

// ReasoningCheck is the outcome of the prefix check of one Responses API
// request.
type ReasoningCheck struct {
	// Items is the number of reasoning items with encrypted_content the
	// request sends back.
	Items int
	// Dropped are the reasoning items the API drops (their prefix changed
	// since they were produced), in request order.
	Dropped []ReasoningRef
}

// ReasoningRef names one reasoning item of a Responses API request.
type ReasoningRef struct {
	Index int    // position in the request's input array
	ID    string // the original reasoning item id
}

// Transformations are the response's input_transformations entries for the
// dropped items: {"type":"reasoning","action":"removed","id":…,
// "reason":"prefix_mismatch"} each.
func (c ReasoningCheck) Transformations() []map[string]any {
	out := []map[string]any{}
	for _, r := range c.Dropped {
		out = append(out, map[string]any{"type": "reasoning", "action": "removed", "id": r.ID, "reason": "prefix_mismatch"})
	}
	return out
}

// responsesWalk calls visit with the prefix digest before every input item
// and returns the digest after the last one (the prefix of the first output
// item of a reply). The prefix covers instructions, tools and text.format.
func responsesWalk(body []byte, visit func(k int, item map[string]json.RawMessage, at chain)) (chain, error) {
	var req struct {
		Instructions json.RawMessage `json:"instructions"`
		Tools        json.RawMessage `json:"tools"`
		Text         struct {
			Format json.RawMessage `json:"format"`
		} `json:"text"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return chain{}, errors.New("request body is not a Responses API request: " + err.Error())
	}
	c := chain{}.add([]byte("responses-prefix-v1"), canonJSON(orNull(req.Instructions)), canonTools(req.Tools), canonJSON(orNull(req.Text.Format)))
	var items []map[string]json.RawMessage
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		t, _ := json.Marshal(s)
		items = []map[string]json.RawMessage{{"role": json.RawMessage(`"user"`), "content": t}}
	} else {
		_ = json.Unmarshal(req.Input, &items)
	}
	for k, it := range items {
		if visit != nil {
			visit(k, it, c)
		}
		c = c.add(canonItem(it))
	}
	return c, nil
}

func orNull(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("null")
	}
	return raw
}

// canonItem is an input item's canonical JSON: a message's string content
// as a single text part (input_text, or output_text for the assistant),
// type "message" when left out.
func canonItem(it map[string]json.RawMessage) []byte {
	m := map[string]json.RawMessage{}
	for k, v := range it {
		m[k] = v
	}
	if _, ok := m["role"]; ok {
		if _, ok := m["type"]; !ok {
			m["type"] = json.RawMessage(`"message"`)
		}
		part := "input_text"
		if str(m["role"]) == "assistant" {
			part = "output_text"
		}
		if c, ok := m["content"]; ok {
			var parts []json.RawMessage
			for _, p := range contentBlocks(c, part) {
				parts = append(parts, canonJSON(mustMarshal(p)))
			}
			m["content"] = mustMarshal(parts)
		}
	}
	return canonJSON(mustMarshal(m))
}

// SignReasoning returns the encrypted_content of a reasoning item with id
// that the model returns first in its reply to the Responses API request
// body. The id travels inside it, so that a dropped item is reported by its
// id even when the client resends it without one.
func (b *Binder) SignReasoning(body []byte, id string) (string, error) {
	at, err := responsesWalk(body, nil)
	if err != nil {
		return "", err
	}
	return b.sealReasoning(at, id), nil
}

func (b *Binder) sealReasoning(at chain, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(id)) + "." + strings.TrimPrefix(b.sign(at, "reasoning", id), "scripted1.")
}

// CheckResponses runs the prefix check over every reasoning item with
// encrypted_content of a Responses API request body.
func (b *Binder) CheckResponses(body []byte) (ReasoningCheck, error) {
	var c ReasoningCheck
	_, err := responsesWalk(body, func(k int, it map[string]json.RawMessage, at chain) {
		enc := str(it["encrypted_content"])
		if str(it["type"]) != "reasoning" || enc == "" {
			return
		}
		c.Items++
		id := str(it["id"])
		if head, _, ok := strings.Cut(enc, "."); ok {
			if raw, err := base64.RawURLEncoding.DecodeString(head); err == nil {
				id = string(raw)
			}
		}
		if !hmac.Equal([]byte(b.sealReasoning(at, id)), []byte(enc)) {
			c.Dropped = append(c.Dropped, ReasoningRef{Index: k, ID: id})
		}
	})
	return c, err
}

// FirstChange compares two requests of one conversation in api's format the
// way the prefix check does (canonical JSON, cache_control left out, a
// string content as a single text block) and returns the index of the
// first message (Messages API, Chat Completions) or input item (Responses
// API) of prev that next does not carry unchanged at the same place; -1
// when next extends prev at its end only. A changed top-level system,
// tools (or instructions, text.format) is reported as 0.
func FirstChange(api API, prev, next []byte) (int, error) {
	a, err := canonicalUnits(api, prev)
	if err != nil {
		return 0, err
	}
	b, err := canonicalUnits(api, next)
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(a[0], b[0]) {
		return 0, nil
	}
	for i := 1; i < len(a); i++ {
		if i >= len(b) || !bytes.Equal(a[i], b[i]) {
			return i - 1, nil
		}
	}
	return -1, nil
}

// canonicalUnits is a request's canonical head (system and tools, or
// instructions, tools and text.format) followed by each message's or input
// item's canonical form.
func canonicalUnits(api API, body []byte) ([][]byte, error) {
	var units [][]byte
	var err error
	switch api {
	case Responses:
		_, err = responsesWalk(body, func(k int, it map[string]json.RawMessage, at chain) {
			units = append(units, canonItem(it))
		})
		var req struct {
			Instructions json.RawMessage `json:"instructions"`
			Tools        json.RawMessage `json:"tools"`
			Text         struct {
				Format json.RawMessage `json:"format"`
			} `json:"text"`
		}
		_ = json.Unmarshal(body, &req)
		h := bytes.Join([][]byte{canonJSON(orNull(req.Instructions)), canonTools(req.Tools), canonJSON(orNull(req.Text.Format))}, []byte{0})
		units = append([][]byte{h}, units...)
	default:
		var req struct {
			System   json.RawMessage `json:"system"`
			Tools    json.RawMessage `json:"tools"`
			Messages []map[string]json.RawMessage
		}
		if err = json.Unmarshal(body, &req); err != nil {
			return nil, err
		}
		units = append(units, bytes.Join([][]byte{canonSystem(req.System), canonTools(req.Tools)}, []byte{0}))
		for _, m := range req.Messages {
			var parts [][]byte
			for _, blk := range contentBlocks(m["content"], "text") {
				parts = append(parts, canonBlock(blk))
			}
			rest := map[string]json.RawMessage{}
			for k, v := range m {
				if k != "content" {
					rest[k] = v
				}
			}
			parts = append([][]byte{canonJSON(mustMarshal(rest))}, parts...)
			units = append(units, bytes.Join(parts, []byte{0}))
		}
	}
	return units, err
}
