package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/harness"
)

// lineageBody is an OpenAI chat body of msgs offering tools (names).
func lineageBody(t *testing.T, msgs []any, tools ...string) []byte {
	t.Helper()
	body := map[string]any{"model": "gpt-4.1", "messages": msgs}
	var ts []any
	for _, name := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}})
	}
	if ts != nil {
		body["tools"] = ts
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompactedConversationReadsItsEarlierStore: a client that compacts
// its conversation (Claude Code's /compact: a summary replaces the
// history) starts a new proxy session; a question about a turn folded
// before is answered from the earlier session's store, read-only, when the
// request carries the same client conversation id and offers the same
// tools. A side request under the same id offering no tools, and a
// conversation without the id, read nothing of it; neither does a proxy
// with NoLineage. The lineage survives a restart (its file).
func TestCompactedConversationReadsItsEarlierStore(t *testing.T) {
	const convID = "5f1c2d7e-1111-4c2b-9a77-0d5a1e2f3b4c"
	hdr := map[string]string{"X-Claude-Code-Session-Id": convID}
	var long []any
	if err := json.Unmarshal(decodeRaw(t, conversationOf(70, false), "messages"), &long); err != nil {
		t.Fatal(err)
	}
	question := map[string]any{"role": "user", "content": "what did the pkg12 build print?"}
	compacted := []any{long[0],
		map[string]any{"role": "user", "content": "This session is being continued from an earlier conversation: the widget packages build."},
		map[string]any{"role": "assistant", "content": "Understood, continuing."}, question}

	run := func(t *testing.T, set func(*Options), restart bool) (*testProxy, []RequestRecord) {
		up := newUpstream(t)
		tp := newProxyWith(t, up, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000}; set(o) })
		sent := 0 // requests sent to tp
		send := func(body []byte, h map[string]string) RequestRecord {
			if resp, b := post(t, tp.http.URL+PathOpenAI, body, h); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			sent++
			return tp.record(t, sent)
		}
		var recs []RequestRecord
		first := send(lineageBody(t, long, "bash", "edit"), hdr)
		if first.WorkingSet == nil || !first.WorkingSet.FoldEvent {
			t.Fatal("the long conversation made no fold event: the test covers nothing")
		}
		recs = append(recs, first)
		if restart {
			waitBackground(tp.srv)
			tp.srv.Close()
			up2 := newUpstream(t)
			dir := tp.dir
			tp = newProxyWith(t, up2, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000}; o.Dir = dir; set(o) })
			tp.dir = dir
			sent = 0
		}
		recs = append(recs, send(lineageBody(t, compacted, "edit", "bash"), hdr))
		// Other conversations (another system prompt): a side request
		// under the same id offering no tools, and one without the id.
		side := slices.Clone(compacted)
		side[0] = map[string]any{"role": "system", "content": "Write a title for the conversation."}
		recs = append(recs, send(lineageBody(t, side), hdr))
		side[0] = map[string]any{"role": "system", "content": "You are another coding agent."}
		recs = append(recs, send(lineageBody(t, side, "bash", "edit"), nil))
		return tp, recs
	}
	fromEarlier := func(r RequestRecord) bool {
		for _, h := range r.Hydrated {
			if h.From != "" {
				return true
			}
		}
		return false
	}

	for _, restart := range []bool{false, true} {
		tp, recs := run(t, func(*Options) {}, restart)
		c := recs[1]
		if c.Session == recs[0].Session {
			t.Fatal("the compacted conversation is the same proxy session: the test covers nothing")
		}
		if len(c.Hydrated) == 0 || c.Hydrated[0].From != recs[0].Session+"/g1" {
			t.Fatalf("restart %v: the compacted conversation's question hydrated %+v, want a node of %s/g1 (warnings %v)", restart, c.Hydrated, recs[0].Session, c.Warnings)
		}
		if recs[2].Session == c.Session || recs[3].Session == c.Session {
			t.Fatal("a side request is the compacted conversation's session: the test covers nothing")
		}
		if recs[2].Hydrated != nil || recs[3].Hydrated != nil || fromEarlier(recs[2]) || fromEarlier(recs[3]) {
			t.Fatalf("restart %v: a side request hydrated %+v, a request without the id %+v", restart, recs[2].Hydrated, recs[3].Hydrated)
		}
		// The lineage file holds session ids, never the client's id.
		files, _ := filepath.Glob(filepath.Join(tp.dir, LineageDir, "*.json"))
		if len(files) != 2 {
			t.Fatalf("lineage files %v, want the main conversation's and the side request's", files)
		}
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), convID) {
				t.Fatalf("%s holds the client's conversation id: %s", f, b)
			}
		}
	}

	_, recs := run(t, func(o *Options) { o.NoLineage = true }, false)
	if recs[1].Hydrated != nil {
		t.Fatalf("with NoLineage the compacted conversation hydrated %+v", recs[1].Hydrated)
	}
}

// decodeRaw returns the raw JSON of body's top-level field.
func decodeRaw(t *testing.T, body []byte, field string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}

// TestDivergedConversationReadsItsEarlierGeneration: a client that rewinds
// its conversation before what was folded (a rewritten message, the rest
// dropped) continues in a new generation of the session's store; a question
// about a turn only the earlier generation holds is answered from it,
// read-only, with no client conversation id needed.
func TestDivergedConversationReadsItsEarlierGeneration(t *testing.T) {
	var long []any
	if err := json.Unmarshal(decodeRaw(t, conversationOf(70, false), "messages"), &long); err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000} })
	hdr := map[string]string{HeaderSession: "alpha"}
	for i, body := range [][]byte{lineageBody(t, long, "bash"), nil} {
		if i == 1 {
			// Rewound: message 22 (pkg11's call) rewritten, everything
			// after it dropped, and a question about pkg12.
			rewound := slices.Clone(long[:22])
			rewound = append(rewound, map[string]any{"role": "user", "content": "skip pkg11; what did the pkg12 build print?"})
			body = lineageBody(t, rewound, "bash")
		}
		if resp, b := post(t, tp.http.URL+PathOpenAI, body, hdr); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	first, second := tp.record(t, 1), tp.record(t, 2)
	if first.WorkingSet == nil || !first.WorkingSet.FoldEvent {
		t.Fatal("no fold event: the test covers nothing")
	}
	if second.Generation != 2 {
		t.Fatalf("the rewound conversation is generation %d (warnings %v), want 2", second.Generation, second.Warnings)
	}
	if len(second.Hydrated) == 0 || second.Hydrated[0].From != "alpha/g1" {
		t.Fatalf("the question hydrated %+v, want a node of alpha/g1", second.Hydrated)
	}
	if !bytes.Contains(up.last(t).Body, []byte(`from=\"alpha/g1\"`)) || !bytes.Contains(up.last(t).Body, []byte("compiled pkg12 module ok")) {
		t.Fatal("the forwarded body lacks the earlier generation's node")
	}
}

// TestLineageIDHeaders: the client conversation ids the agents send (Claude
// Code 2.1.332, Codex 0.171 and earlier) are read; an outsized value or
// none is no lineage.
func TestLineageIDHeaders(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        bool
	}{
		{"X-Claude-Code-Session-Id", "5f1c2d7e-1111", true},
		{"session-id", "01a24a24-0489-72e3", true},
		{"session_id", "01a24a24-0489-72e3", true},
		{"X-Request-Id", "01a24a24", false},
		{"session-id", strings.Repeat("x", 300), false},
	} {
		h := http.Header{}
		h.Set(c.name, c.value) // canonical, as the server reads it
		_, v := lineageID(h)
		if (v != "") != c.want {
			t.Errorf("%s: %q read %q", c.name, c.value, v)
		}
	}
}

// TestLineageFilesBounded: past the bound, a new lineage prunes the
// lineage files to seven eighths of it, those whose sessions are all gone
// first, then the least recently used; a lineage whose session was opened
// again counts as used; the lineage just written stays; a pruned lineage
// is forgotten in memory too, and starts anew.
func TestLineageFilesBounded(t *testing.T) {
	dir := t.TempDir()
	l := &lineages{dir: dir, max: 8}
	key := func(i int) string { return lineageKey("chat", "Session-Id", "conv-"+itoa(i), []string{"bash"}) }
	sid := func(i int) string { return "s-" + itoa(i) }
	path := func(i int) string { return filepath.Join(dir, LineageDir, key(i)+".json") }
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 8; i++ {
		if err := os.MkdirAll(filepath.Join(dir, sid(i)), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := l.join(key(i), sid(i)); err != nil {
			t.Fatal(err)
		}
		// Modification times in the order of the lineages, hours apart.
		at := old.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(path(i), at, at); err != nil {
			t.Fatal(err)
		}
	}
	// Lineage 5's store was removed; lineage 0's session is opened again
	// after a restart (a new lineages object): it is in use.
	if err := os.RemoveAll(filepath.Join(dir, sid(5))); err != nil {
		t.Fatal(err)
	}
	l = &lineages{dir: dir, max: 8}
	if earlier, err := l.join(key(0), sid(0)); err != nil || len(earlier) != 0 {
		t.Fatalf("join again: %v %v", earlier, err)
	}
	for i := 1; i < 8; i++ {
		if _, err := l.join(key(i), sid(i)); err != nil { // into memory; touches them
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(path(i), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.join(key(8), sid(8)); err != nil { // the ninth: past the bound
		t.Fatal(err)
	}
	var kept []int
	for i := 0; i <= 8; i++ {
		if _, err := os.Stat(path(i)); err == nil {
			kept = append(kept, i)
		}
	}
	// 9 files, pruned to 7: lineage 5 (sessions gone), then lineage 1 (the
	// least recently used; lineage 0 was used after it).
	if want := []int{0, 2, 3, 4, 6, 7, 8}; !slices.Equal(kept, want) {
		t.Fatalf("lineage files kept %v, want %v", kept, want)
	}
	for _, i := range []int{1, 5} {
		if _, ok := l.mem[key(i)]; ok {
			t.Errorf("lineage %d pruned but still in memory", i)
		}
	}
	// Lineage 1 is forgotten: its next session reads nothing earlier.
	if earlier, err := l.join(key(1), "s-1b"); err != nil || len(earlier) != 0 {
		t.Fatalf("a pruned lineage's next session: earlier %v, %v", earlier, err)
	}
	// A kept lineage still lists its sessions.
	if earlier, err := l.join(key(2), "s-2b"); err != nil || !slices.Equal(earlier, []string{sid(2)}) {
		t.Fatalf("a kept lineage's next session: earlier %v, %v", earlier, err)
	}
}
