package harness

// ReasoningCounts counts what fold events did to the reasoning a client sends
// back (Anthropic thinking and redacted_thinking blocks, OpenAI Responses
// reasoning items), which the model APIs bind to the conversation before it:
// a fold event invalidates the reasoning after its first changed message. The
// proxy fills it (docs/proxy.md, "Thinking and reasoning at fold events"); in
// a WorkingSetRecord it counts that request.
type ReasoningCounts struct {
	// FoldEvents counts fold events: requests whose forwarded conversation
	// changed before its end (every other request extends the one before).
	FoldEvents int `json:"fold_events"`
	// Invalidated counts the blocks or items a fold event bound to a changed
	// prefix (each once, at its fold event), and their tokens.
	Invalidated       int `json:"invalidated"`
	InvalidatedTokens int `json:"invalidated_tokens"`
	// Removed counts the blocks or items the proxy left out of forwarded
	// requests (summed over requests), and their tokens.
	Removed       int `json:"removed_by_proxy"`
	RemovedTokens int `json:"removed_by_proxy_tokens"`
	// KeptDropBlock counts invalidated blocks kept because a tool-use
	// continuation needs them; the API drops them (drop_block).
	KeptDropBlock int `json:"kept_drop_block"`
	// DropBlock counts requests sent with prefix_mismatch_behavior
	// "drop_block" and the beta header.
	DropBlock int `json:"drop_block"`
	// DroppedByAPI counts the blocks or items the API reported dropping
	// (input_transformations: thinking_dropped, reasoning removed).
	DroppedByAPI int `json:"dropped_by_api"`
	// Rejected counts upstream 400s whose error names a thinking block or a
	// reasoning item.
	Rejected int `json:"rejected"`
	// Held counts requests on which a fold was due and postponed: tool-use
	// continuations whose client set the thinking binding to reject a
	// changed prefix (Dispatch.FoldHeld).
	Held int `json:"held_continuations,omitempty"`
}

// Add adds b's counts to c.
func (c *ReasoningCounts) Add(b ReasoningCounts) {
	c.FoldEvents += b.FoldEvents
	c.Invalidated += b.Invalidated
	c.InvalidatedTokens += b.InvalidatedTokens
	c.Removed += b.Removed
	c.RemovedTokens += b.RemovedTokens
	c.KeptDropBlock += b.KeptDropBlock
	c.DropBlock += b.DropBlock
	c.DroppedByAPI += b.DroppedByAPI
	c.Rejected += b.Rejected
	c.Held += b.Held
}
