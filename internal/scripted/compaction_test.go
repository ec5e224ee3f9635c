package scripted

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A Responses request ending in a compaction_trigger gets one compaction
// item (streamed and not); the item sent back byte for byte passes, an
// altered one is answered 400.
func TestResponsesRemoteCompaction(t *testing.T) {
	s := New(func(t *Turn) Reply {
		if t.Compact {
			return Reply{Text: "summary of " + t.Prompt}
		}
		return Reply{Text: "ok"}
	})
	defer s.Close()
	post := func(body string) (int, []byte) {
		resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	const user = `{"type":"message","role":"user","content":[{"type":"input_text","text":"build it"}]}`
	code, b := post(`{"model":"m","input":[` + user + `,{"type":"compaction_trigger"}]}`)
	var r struct {
		Output []map[string]any `json:"output"`
	}
	if err := json.Unmarshal(b, &r); code != 200 || err != nil || len(r.Output) != 1 || r.Output[0]["type"] != "compaction" {
		t.Fatalf("%d %s", code, b)
	}
	item, _ := json.Marshal(r.Output[0])
	if code, b := post(`{"model":"m","stream":true,"input":[` + user + `,{"type":"compaction_trigger"}]}`); code != 200 ||
		!bytes.Contains(b, []byte(`"type":"compaction"`)) || !bytes.Contains(b, []byte("response.completed")) {
		t.Fatalf("stream: %d %s", code, b)
	}
	if code, b := post(`{"model":"m","input":[` + string(item) + `,` + user + `]}`); code != 200 {
		t.Fatalf("the compaction item sent back: %d %s", code, b)
	}
	bad := bytes.Replace(item, []byte("cfcompact."), []byte("cfcompact.9"), 1)
	if code, _ := post(`{"model":"m","input":[` + string(bad) + `,` + user + `]}`); code != 400 {
		t.Fatalf("an altered compaction item: %d, want 400", code)
	}
	if b := s.Binding(); b.Compactions != 2 || b.CompactionsBack != 1 || b.CompactionRejected != 1 {
		t.Fatalf("binding %+v", b)
	}
	if rs := s.Requests(); !rs[0].Turn.Compact || rs[2].Turn.Compact {
		t.Fatalf("Turn.Compact: %v %v", rs[0].Turn.Compact, rs[2].Turn.Compact)
	}
}
