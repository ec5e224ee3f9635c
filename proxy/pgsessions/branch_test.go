package pgsessions

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/scripted"
)

// taggedBuild is a long agent session that opens like every other one of
// the test (so the same derived session id) and goes on with outputs of its
// own, named by tag: steps builds, the third holding a line about
// <tag>lib-7f3a.so; question, when set, is asked after them.
func taggedBuild(tag string, steps int, question string) []any {
	msgs := []any{map[string]any{"role": "user", "content": "Make every package of the widget service build."}}
	for i := 1; i <= steps; i++ {
		id := fmt.Sprintf("toolu_%s%04d", tag, i)
		var out strings.Builder
		for l := range 60 {
			fmt.Fprintf(&out, "%s pkg%02d: compiling unit %d of the widget service, cache warm, 0 warnings\n", tag, i, l)
		}
		if i == 3 {
			fmt.Fprintf(&out, "pkg03: the linker wrote %slib-7f3a.so at 0x4000 and stopped\n", tag)
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("go build ./%s%02d", tag, i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out.String()}}})
	}
	if question != "" {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "Built."}, map[string]any{"role": "user", "content": question})
	}
	return msgs
}

// TestSameStartConversationsAcrossReplicas: two conversations without a
// session header that open alike (one derived session id), interleaved over
// two replicas, each keep a store of their own (a branch of the derived
// id), found again by whichever replica serves the next request; neither
// is moved to a new generation at every switch, and a question of one never
// hydrates the other's turn.
func TestSameStartConversationsAcrossReplicas(t *testing.T) {
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	dbURL := pgtest.URL(t)
	a, b := replica(t, dbURL, up.URL), replica(t, dbURL, up.URL)
	replicas := []string{a.URL, b.URL}
	n := 0
	for _, steps := range []int{20, 28, 36} {
		for _, tag := range []string{"alpha", "beta"} {
			lineageRequest(t, replicas[n%2], "conv-"+tag, taggedBuild(tag, steps, ""))
			n++
		}
	}
	lineageRequest(t, replicas[n%2], "conv-beta", taggedBuild("beta", 36, "What did the linker write for alphalib?"))
	lineageRequest(t, replicas[(n+1)%2], "conv-alpha", taggedBuild("alpha", 36, "What did the linker write for alphalib?"))
	got := up.ModelRequests(scripted.Anthropic)
	if len(got) != n+2 {
		t.Fatalf("upstream got %d requests, want %d", len(got), n+2)
	}
	if bytes.Contains(got[0].Body, []byte("alpha pkg01: compiling unit 30 ")) {
		t.Fatal("the first conversation was forwarded unfolded: the test covers nothing")
	}
	if bytes.Contains(got[n].Body, []byte("alphalib-7f3a.so")) {
		t.Fatal("beta's question hydrated alpha's turn")
	}
	if !bytes.Contains(got[n+1].Body, []byte("alphalib-7f3a.so")) {
		t.Fatalf("alpha's question did not hydrate its turn:\n%.600s", got[n+1].Body)
	}
	rows, err := poolOf(t, dbURL).Query(context.Background(), `SELECT session, generation FROM `+Table+` ORDER BY session`)
	if err != nil {
		t.Fatal(err)
	}
	var sessions []string
	for rows.Next() {
		var s string
		var g int
		if err := rows.Scan(&s, &g); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, fmt.Sprintf("%s/g%d", s, g))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(sessions) != 2 || !strings.HasSuffix(sessions[0], "/g1") || !strings.HasSuffix(sessions[1], "-b2/g1") {
		t.Fatalf("proxy sessions %v, want the derived id and its branch b2, each in its first generation", sessions)
	}
}
