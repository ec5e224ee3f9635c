package scripted

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// With store on (left out: the API's default), a function_call sent back by
// its id without the reasoning item its response produced with it is a 400
// naming both; with the reasoning item, without the id, or with store false
// it passes.
func TestResponsesStoredItemNeedsReasoning(t *testing.T) {
	s := New(script)
	defer s.Close()
	post := func(req map[string]any) (int, []byte) {
		body, _ := json.Marshal(req)
		resp, err := http.Post(s.URL+"/v1/responses", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	user := map[string]any{"role": "user", "content": "run it"}
	code, b := post(map[string]any{"model": "gpt-x", "reasoning": map[string]any{"effort": "low"}, "input": []any{user}})
	var r struct {
		Output []map[string]any `json:"output"`
	}
	if err := json.Unmarshal(b, &r); code != 200 || err != nil || len(r.Output) != 2 || r.Output[0]["type"] != "reasoning" || r.Output[1]["type"] != "function_call" {
		t.Fatalf("%d %s", code, b)
	}
	rs, fc := r.Output[0], r.Output[1]
	out := map[string]any{"type": "function_call_output", "call_id": fc["call_id"], "output": "ok"}
	noID := map[string]any{}
	for k, v := range fc {
		if k != "id" {
			noID[k] = v
		}
	}
	for _, c := range []struct {
		name  string
		store any
		input []any
		want  int
	}{
		{"without its reasoning", nil, []any{user, fc, out}, 400},
		{"store true, without its reasoning", true, []any{user, fc, out}, 400},
		{"with its reasoning", nil, []any{user, rs, fc, out}, 200},
		{"without its id", nil, []any{user, noID, out}, 200},
		{"store false", false, []any{user, fc, out}, 200},
	} {
		req := map[string]any{"model": "gpt-x", "input": c.input}
		if c.store != nil {
			req["store"] = c.store
		}
		code, b := post(req)
		if code != c.want {
			t.Fatalf("%s: %d %s", c.name, code, b)
		}
		if code == 400 && !strings.Contains(string(b), "Item '"+fc["id"].(string)+"' of type 'function_call' was provided without its required 'reasoning' item: '"+rs["id"].(string)+"'.") {
			t.Fatalf("%s: %s", c.name, b)
		}
	}
	if got := s.Binding().ReasoningRejected; got != 2 {
		t.Fatalf("rejected %d, want 2", got)
	}
}
