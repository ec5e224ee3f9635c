package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/mcpserver"
)

// TestFoldRefusesLoneSurrogate: fold_turn arguments holding a lone UTF-16
// surrogate escape (in the content, a list item, or a high half followed by
// another high half) are refused with BadArgument naming the escape and the
// remedy, and nothing is folded; a whole surrogate pair, an escaped
// backslash before "u" and a written \ufffd fold unchanged. Before,
// encoding/json stored U+FFFD in its place, silently.
func TestFoldRefusesLoneSurrogate(t *testing.T) {
	s := demoStore(t)
	cs := connect(t, s)
	for _, args := range []string{
		`{"step_id":9001,"summary":"s","content":"a \ud800 b"}`,
		`{"step_id":9001,"summary":"s","files":["ok.go","x\udc00.go"]}`,
		`{"step_id":9001,"summary":"pair? \ud83d\ud83d"}`,
	} {
		res := call(t, cs, mcpserver.ToolFold, json.RawMessage(args), nil)
		if !res.IsError || !strings.Contains(text(res), "lone UTF-16 surrogate") {
			t.Errorf("%s: %v %s", args, res.IsError, text(res))
		}
	}
	if _, err := s.Hydrate(9001); err == nil {
		t.Fatal("a refused turn was folded")
	}
	var f mcpserver.FoldResult
	res := call(t, cs, mcpserver.ToolFold, json.RawMessage(`{"step_id":9002,"summary":"kept \ufffd","content":"pair \ud83d\ude00, path C:\\udir"}`), &f)
	if res.IsError {
		t.Fatalf("a pair, an escaped backslash and U+FFFD: %s", text(res))
	}
	n, err := s.Hydrate(9002)
	if err != nil || n.RawContent != "pair \U0001F600, path C:\\udir" {
		t.Fatalf("hydrated %q, %v", n.RawContent, err)
	}
}
