package pgsessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/scripted"
)

// lineageRequest posts an Anthropic Messages body of msgs offering the
// tools Bash and Edit to a proxy at base, under Claude Code's conversation
// id (no X-Contextfold-Session: the proxy session is derived from the
// conversation's start, as for a client that names none).
func lineageRequest(t *testing.T, base, convID string, msgs []any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(lineageBody(t, msgs)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("X-Claude-Code-Session-Id", convID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

// lineageBody is an Anthropic Messages body of msgs offering the tools
// Bash and Edit.
func lineageBody(t *testing.T, msgs []any) []byte {
	t.Helper()
	tools := []any{
		map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}},
		map[string]any{"name": "Edit", "input_schema": map[string]any{"type": "object"}},
	}
	body, err := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
		"system": "You are a coding agent.", "tools": tools, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// widgetBuild is a long agent session: 40 builds whose outputs are
// folded, the third holding the linker's line about frobnicator.
func widgetBuild() []any {
	msgs := []any{map[string]any{"role": "user", "content": "Make every package of the widget service build."}}
	for i := 1; i <= 40; i++ {
		id := fmt.Sprintf("toolu_%04d", i)
		var out strings.Builder
		for l := range 60 {
			fmt.Fprintf(&out, "pkg%02d: compiling unit %d of the widget service, cache warm, 0 warnings\n", i, l)
		}
		if i == 3 {
			out.WriteString("pkg03: the linker wrote frobnicator-7f3a.so at 0x4000 and stopped\n")
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("go build ./pkg%02d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out.String()}}})
	}
	return append(msgs, map[string]any{"role": "assistant", "content": "All packages build."},
		map[string]any{"role": "user", "content": "Good. Now tidy the README."})
}

// TestCompactedConversationReadsItsEarlierStoreAcrossReplicas: a fleet's
// conversation compacted by its client (a new first message, so a new
// proxy session) and served by another replica than the one that folded
// its turns still hydrates a turn folded before the compaction, read from
// the earlier session's store (the lineage is in the database,
// cf_proxy_lineages); the earlier store gains no entry, and a
// conversation under another id reads nothing of it.
func TestCompactedConversationReadsItsEarlierStoreAcrossReplicas(t *testing.T) {
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	dbURL := pgtest.URL(t)
	a, b := replica(t, dbURL, up.URL), replica(t, dbURL, up.URL)

	msgs := widgetBuild()
	const conv = "5f1c2d7e-1111-4c2b-9a77-0d5a1e2f3b4c"
	lineageRequest(t, a.URL, conv, msgs)

	compacted := []any{
		map[string]any{"role": "user", "content": "This session is being continued from an earlier conversation: the widget service builds."},
		map[string]any{"role": "assistant", "content": "Understood, continuing."},
		map[string]any{"role": "user", "content": "What did the linker write for frobnicator?"},
	}
	lineageRequest(t, b.URL, conv, compacted)
	other := append([]any{map[string]any{"role": "user", "content": "This session is being continued from another conversation: the gadget service builds."}}, compacted[1:]...)
	lineageRequest(t, b.URL, "another-conversation-0001", other)

	got := up.ModelRequests(scripted.Anthropic)
	if len(got) != 3 {
		t.Fatalf("upstream got %d requests, want 3", len(got))
	}
	if bytes.Contains(got[0].Body, []byte("pkg03: compiling unit 30 ")) {
		t.Fatal("the long conversation was forwarded unfolded: the test covers nothing")
	}
	if !bytes.Contains(got[1].Body, []byte("frobnicator-7f3a.so")) || !bytes.Contains(got[1].Body, []byte(` from=\"s-`)) {
		t.Fatalf("the compacted conversation's question on replica b did not hydrate the earlier store's turn:\n%s", got[1].Body)
	}
	if bytes.Contains(got[2].Body, []byte("frobnicator-7f3a.so")) {
		t.Fatal("a conversation under another id hydrated the earlier conversation's turn")
	}

	// The lineage row holds proxy session ids only, and the earlier store
	// was read, not written: its entries are the fold's.
	pool := poolOf(t, dbURL)
	var sessions []string
	if err := pool.QueryRow(context.Background(), `SELECT sessions FROM `+LineageTable+` ORDER BY cardinality(sessions) DESC LIMIT 1`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	var leaks int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+LineageTable+` WHERE key LIKE '%' || $1 || '%' OR $1 = ANY (sessions)`, conv).Scan(&leaks); err != nil || leaks != 0 {
		t.Fatalf("the client's conversation id reached the lineage table (%d rows, %v)", leaks, err)
	}
	if len(sessions) != 2 {
		t.Fatalf("lineage sessions %v, want the conversation before and after its compaction", sessions)
	}
	var rev0, rev1 int64
	q := `SELECT rev FROM cf_sessions WHERE name = $1`
	if err := pool.QueryRow(context.Background(), q, sessions[0]).Scan(&rev0); err != nil {
		t.Fatal(err)
	}
	lineageRequest(t, a.URL, conv, compacted) // asked again, on the other replica
	if err := pool.QueryRow(context.Background(), q, sessions[0]).Scan(&rev1); err != nil {
		t.Fatal(err)
	}
	if rev1 != rev0 {
		t.Fatalf("hydrating from the earlier store wrote to it: revision %d → %d", rev0, rev1)
	}
}

// poolOf is a pool to the database of dbURL, closed with the test.
func poolOf(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestRewrittenConversationReadsItsEarlierGeneration: a fleet session whose
// client rewrote its history (the same X-Contextfold-Session, another
// start) moves to a new store generation; a question there about a turn
// the first generation folded hydrates it from that generation, on another
// replica than the one that folded it.
func TestRewrittenConversationReadsItsEarlierGeneration(t *testing.T) {
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	dbURL := pgtest.URL(t)
	a, b := replica(t, dbURL, up.URL), replica(t, dbURL, up.URL)
	if code, warn, err := send(a.URL, "sess-rw", lineageBody(t, widgetBuild())); err != nil || code != 200 {
		t.Fatalf("%d %q %v", code, warn, err)
	}
	rewritten := []any{
		map[string]any{"role": "user", "content": "Start again from a clean checkout of the widget service."},
		map[string]any{"role": "assistant", "content": "Done."},
		map[string]any{"role": "user", "content": "What did the linker write for frobnicator?"},
	}
	if code, warn, err := send(b.URL, "sess-rw", lineageBody(t, rewritten)); err != nil || code != 200 {
		t.Fatalf("%d %q %v", code, warn, err)
	}
	got := up.ModelRequests(scripted.Anthropic)
	if len(got) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(got))
	}
	if !bytes.Contains(got[1].Body, []byte("frobnicator-7f3a.so")) || !bytes.Contains(got[1].Body, []byte(`from=\"sess-rw/g1\"`)) {
		t.Fatalf("the rewritten conversation's question did not hydrate generation 1's turn:\n%.600s", got[1].Body)
	}
}

// TestLineagesBounded: the lineage table is bounded like a directory
// proxy's lineage files (MaxLineages, 8 here): a new lineage that takes it
// past the bound prunes it to seven eighths of it, keeping the new lineage
// and the most recently joined others (a join of an existing lineage makes
// it recent again); a lineage still listed keeps its sessions, oldest
// first. Before, cf_proxy_lineages only grew.
func TestLineagesBounded(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	s, err := Connect(ctx, dbURL, func(string, string) (*contextfold.Store, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.MaxLineages = 8
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	keys := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT key FROM `+LineageTable+` ORDER BY key`)
		if err != nil {
			t.Fatal(err)
		}
		ks, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	for i := 1; i <= 8; i++ {
		if _, err := s.JoinLineage(ctx, fmt.Sprintf("k%d", i), fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
		// Distinct times, oldest first, whatever the clock's resolution.
		if _, err := pool.Exec(ctx, `UPDATE `+LineageTable+` SET updated_at = timestamptz '2026-01-01' + $2 * interval '1 minute' WHERE key = $1`,
			fmt.Sprintf("k%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	if got := keys(); len(got) != 8 {
		t.Fatalf("at the bound: %v, want the 8 lineages", got)
	}
	// k1, the oldest, gains a session: the most recent now.
	if earlier, err := s.JoinLineage(ctx, "k1", "s1b"); err != nil || !slices.Equal(earlier, []string{"s1"}) {
		t.Fatalf("k1's second session: earlier %v, %v", earlier, err)
	}
	if _, err := s.JoinLineage(ctx, "k9", "s9"); err != nil {
		t.Fatal(err)
	}
	// 9 > 8: down to 7, k9 and the 6 most recent others.
	if got, want := keys(), []string{"k1", "k4", "k5", "k6", "k7", "k8", "k9"}; !slices.Equal(got, want) {
		t.Errorf("after the bound was passed: %v, want %v", got, want)
	}
	if earlier, err := s.JoinLineage(ctx, "k1", "s1c"); err != nil || !slices.Equal(earlier, []string{"s1", "s1b"}) {
		t.Errorf("k1 after the prune: earlier %v, %v; want its two sessions", earlier, err)
	}
	// A pruned lineage is forgotten: its next session starts it anew.
	if earlier, err := s.JoinLineage(ctx, "k2", "s2b"); err != nil || len(earlier) != 0 {
		t.Errorf("pruned k2 joined again: earlier %v, %v; want none", earlier, err)
	}
	if got := keys(); len(got) != 8 {
		t.Errorf("after k2 came back: %d lineages %v, want 8 (at the bound, not past it)", len(got), got)
	}
}
