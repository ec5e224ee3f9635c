package pgsessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/contextfold/contextfold/internal/testgen"
)

// conversation is one long agent session in the Anthropic Messages API, as
// a client sends it: request k carries the first k steps. Every 8th step is
// a human prompt asking about an earlier step's output (so the proxy
// hydrates), the others an assistant tool call and its tool result (about
// 2 KB of realistic output from testgen, so the proxy folds).
type conversation struct {
	msgs []map[string]any
	ends []int // ends[k]: messages in request k
}

func newConversation(seed uint64, steps int) *conversation {
	g := testgen.New(seed)
	c := &conversation{msgs: []map[string]any{{"role": "user", "content": "Fix the failing billing migration in the ledger service; run the tests."}}}
	for i := 1; i <= steps; i++ {
		if i%8 == 0 {
			c.msgs = append(c.msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Done with step %d.", i)}}},
				map[string]any{"role": "user", "content": g.Prompt(i / 2)})
		} else {
			turn := g.Turn(i)
			id := fmt.Sprintf("toolu_%04d", i)
			c.msgs = append(c.msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "run step " + fmt.Sprint(i)}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": turn.RawContent}}})
		}
		c.ends = append(c.ends, len(c.msgs))
	}
	return c
}

// body is request k's body (0-based).
func (c *conversation) body(k int) []byte {
	b, err := json.Marshal(map[string]any{"model": "claude-test", "max_tokens": 256,
		"system": "You are a coding agent.", "messages": c.msgs[:c.ends[k]]})
	if err != nil {
		panic(err)
	}
	return b
}

// send posts request k of session sid to a proxy at base.
func send(base, sid string, body []byte) (int, string, error) {
	code, warn, _, err := sendBody(base, sid, body)
	return code, warn, err
}

// sendBody is send returning the response body too.
func sendBody(base, sid string, body []byte) (int, string, []byte, error) {
	req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Contextfold-Session", sid)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Contextfold-Warning"), b, err
}

// firstDiff describes where two forwarded bodies first differ.
func firstDiff(a, b []byte) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	lo := max(n-120, 0)
	return fmt.Sprintf("at byte %d of %d/%d:\n  got  …%s\n  want …%s", n, len(a), len(b),
		strings.ReplaceAll(string(a[lo:min(n+120, len(a))]), "\n", `\n`), strings.ReplaceAll(string(b[lo:min(n+120, len(b))]), "\n", `\n`))
}
