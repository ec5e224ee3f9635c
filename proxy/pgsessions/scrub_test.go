package pgsessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/pgstore"
	"github.com/contextfold/contextfold/proxy"
	"github.com/contextfold/contextfold/scrub"
)

// Two replicas on one database with a scrub allowlist, serving a session
// whose X-Contextfold-Session is a GitHub token: the database names the
// session by its SHA-256 (the token is in no session name and no stored
// byte), both replicas agree on that name, and the session's store holds
// the allowlist and the allowed fixture credential as is, the token
// redacted.
func TestSharedSessionNamedByTokenAndAllowlist(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	const token = "ghp_R8mZq2Lx7VtK4pW9nHc3Jd6Fs1Yb5GuE0aTo"
	const pw = "Zx9Kq-Pw-8812ab"
	fixture := "postgres://app:" + pw + "@db.test:5432/app"
	allow := &scrub.Allowlist{Secrets: []string{pw}}
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	dbURL := pgtest.URL(t)
	db, err := pgstore.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	var rs []*httptest.Server
	var shs []*Sessions
	for range 2 {
		sh, err := Connect(context.Background(), dbURL, func(name, id string) (*contextfold.Store, error) {
			return db.Session(name, contextfold.Options{Clock: fixedClock, SessionID: id})
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sh.Close)
		shs = append(shs, sh)
		srv, err := proxy.New(proxy.Options{Shared: sh, Upstream: up.URL, Clock: fixedClock, ScrubAllowlist: allow,
			Harness: harness.Config{ContextBudget: 4000}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		rs = append(rs, hs)
	}
	body := func(n int) []byte {
		msgs := []any{map[string]any{"role": "user", "content": "run every package's tests"}}
		for i := 1; i <= n; i++ {
			var log strings.Builder
			for k := 0; k < 40; k++ {
				fmt.Fprintf(&log, "--- PASS: TestPkg%d_%d (0.0%ds) in pkg%d/file_%d.go\n", i, k, k%10, i, k)
			}
			if i == 3 {
				fmt.Fprintf(&log, "connecting to %s\nGITHUB_TOKEN=ghp_Q7wErT9yUiOp3AsDfGh5JkLzXcVbNm1q2W8e\n", fixture)
			}
			id := fmt.Sprintf("toolu_%02d", i)
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "bash", "input": map[string]any{"command": fmt.Sprintf("go test ./pkg%d", i)}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": log.String()}}})
		}
		b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": msgs})
		return b
	}
	for k, n := range []int{20, 21, 22} {
		if code, warn, err := send(rs[k%2].URL, token, body(n)); err != nil || code != 200 || (warn != "" && !strings.HasPrefix(warn, "over the context budget")) {
			t.Fatalf("request %d: %d %q %v", k, code, warn, err)
		}
	}
	sum := sha256.Sum256([]byte(token))
	want := scrub.SafeNamePrefix + hex.EncodeToString(sum[:])
	infos, err := pgstore.Sessions(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Name != want || infos[0].Entries == 0 {
		t.Fatalf("database sessions %+v, want one named %s with folded entries", infos, want)
	}
	var rows int
	if err := shs[0].pool.QueryRow(context.Background(), `SELECT count(*) FROM `+Table+` WHERE session LIKE '%ghp_%'`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%s rows naming the token: %d %v", Table, rows, err)
	}
	st, err := db.Session(want, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Setting(contextfold.SettingScrubAllowlist); !ok {
		t.Fatal("the session store does not hold the allowlist")
	}
	entries, err := st.Entries()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		n, err := st.ReadColdNode(e.StepID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(n.RawContent, "ghp_") || strings.Contains(n.SessionID, "ghp_") {
			t.Fatalf("step %d holds a token: session %q", e.StepID, n.SessionID)
		}
		if strings.Contains(n.RawContent, fixture) && strings.Contains(n.RawContent, "[REDACTED:github-pat]") {
			found = true
		}
	}
	if !found {
		t.Fatal("no folded step holds the allowed fixture with the token redacted")
	}
}
