package testgen

import (
	"encoding/json"
	"fmt"
)

// Conversation is one long agent session in the Anthropic Messages API as a
// client sends it: request k carries the task and the first k+1 steps. Every
// 8th step is a human prompt asking about earlier output (a proxy hydrates
// for it); the others are an assistant tool call and its tool result (a
// Turn's payload, 0.5–4 KB, so a proxy under a small budget folds). A pure
// function of (seed, steps), for the proxy fleet tests and benchmarks.
type Conversation struct {
	msgs []map[string]any
	ends []int // ends[k]: messages in request k
}

// NewConversation returns the session of steps steps of seed.
func NewConversation(seed uint64, steps int) *Conversation {
	g := New(seed)
	c := &Conversation{msgs: []map[string]any{{"role": "user", "content": "Fix the failing billing migration in the ledger service; run the tests."}}}
	for i := 1; i <= steps; i++ {
		if i%8 == 0 {
			c.msgs = append(c.msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Done with step %d.", i)}}},
				map[string]any{"role": "user", "content": g.Prompt(i / 2)})
		} else {
			id := fmt.Sprintf("toolu_%04d", i)
			c.msgs = append(c.msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": fmt.Sprint("run step ", i)}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": g.Turn(i).RawContent}}})
		}
		c.ends = append(c.ends, len(c.msgs))
	}
	return c
}

// Requests is the number of requests of the session.
func (c *Conversation) Requests() int { return len(c.ends) }

// Body is request k's body (0-based): JSON with model, max_tokens, system
// and messages.
func (c *Conversation) Body(k int) []byte {
	b, err := json.Marshal(map[string]any{"model": "claude-test", "max_tokens": 256,
		"system": "You are a coding agent.", "messages": c.msgs[:c.ends[k]]})
	if err != nil {
		panic(err)
	}
	return b
}
