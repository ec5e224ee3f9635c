package sessiondir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// fold writes turns into the store at dir, folded at the given time.
func fold(t *testing.T, dir string, at time.Time, turns ...contextfold.Turn) {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
}

func ids(ss []Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

// The proxy's layout: <dir>/<session>/g<N>, one store per history; a
// session that never folded and stray files are skipped; the session
// directory itself is a directory of its generations; a store is not a
// directory of session stores.
func TestFindProxyLayout(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	fold(t, filepath.Join(root, "s-b", "g1"), t0, contextfold.Turn{StepID: 1, Summary: "first history", RawContent: "port 5432"})
	fold(t, filepath.Join(root, "s-b", "g10"), t0.Add(time.Hour), contextfold.Turn{StepID: 1, Summary: "tenth history", RawContent: "port 5433"})
	fold(t, filepath.Join(root, "s-b", "g2"), t0.Add(2*time.Hour), contextfold.Turn{StepID: 1, Summary: "second history", RawContent: "port 5434"})
	fold(t, filepath.Join(root, "s-a", "g1"), t0.Add(3*time.Hour), contextfold.Turn{StepID: 4, Summary: "other session", RawContent: "port 6000"})
	os.MkdirAll(filepath.Join(root, "s-empty"), 0o755)
	os.WriteFile(filepath.Join(root, "s-empty", "workset.jsonl"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "s-b", "gx"), 0o755)

	ss, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(ss), []string{"s-a/g1", "s-b/g1", "s-b/g10", "s-b/g2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Find(proxy dir) = %v, want %v", got, want)
	}
	if ss, _ := Find(filepath.Join(root, "s-b")); !reflect.DeepEqual(ids(ss), []string{"g1", "g10", "g2"}) {
		t.Errorf("Find(session dir) = %v", ids(ss))
	}
	// A proxy session whose id is "sessions" is a session, not the hooks' layout.
	fold(t, filepath.Join(root, "sessions", "g1"), t0, contextfold.Turn{StepID: 1, Summary: "named sessions", RawContent: "x"})
	if ss, _ := Find(root); len(ss) != 5 || ss[4].ID != "sessions/g1" {
		t.Errorf("Find with a proxy session named sessions = %v", ids(ss))
	}
	os.RemoveAll(filepath.Join(root, "sessions"))
	if ss, err := Find(filepath.Join(root, "s-b", "g1")); ss != nil || err != nil {
		t.Errorf("a store is not a directory of session stores: %v %v", ss, err)
	}
	if ss, err := Find(filepath.Join(root, "missing")); ss != nil || err != nil {
		t.Errorf("a missing directory: %v %v", ss, err)
	}

	set, err := Open(root, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := set.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, in := range ins {
		order = append(order, in.ID)
	}
	if want := []string{"s-a/g1", "s-b/g2", "s-b/g10", "s-b/g1"}; !reflect.DeepEqual(order, want) {
		t.Errorf("Sessions newest first = %v, want %v", order, want)
	}
	if ins[0].Nodes != 1 || ins[0].FirstFoldedAt != "2026-12-01T12:00:00Z" || ins[0].LastFoldedAt != ins[0].FirstFoldedAt {
		t.Errorf("info: %+v", ins[0])
	}

	// Every session holds "port": equal scores go newest session first.
	hits, sr, err := set.Recall("", "port", match.Exact)
	if err != nil || sr.Sessions != 4 || len(sr.Failures) != 0 {
		t.Fatalf("recall: %v %+v", err, sr)
	}
	var got []string
	for _, h := range hits {
		got = append(got, h.ID)
	}
	if !reflect.DeepEqual(got, order) {
		t.Errorf("recall order %v, want the newest session first %v", got, order)
	}
	if _, _, err := set.Recall("s-c/g1", "port", match.Exact); err == nil {
		t.Error("an unknown session must be an error")
	}
}

// The hooks' layout: .contextfold/sessions/<id>; .contextfold and
// sessions/ name the same sessions. A damaged store is a failure, the
// others are searched; a scan across sessions stays within one budget.
func TestHooksLayoutAndFailures(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".contextfold")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var big []contextfold.Turn
	for i := 0; i < 6; i++ {
		raw := "PostgreSQL port 5433 in docker-compose.yml\n"
		for k := 0; k < 400; k++ {
			raw += "log line of the database container\n"
		}
		big = append(big, contextfold.Turn{StepID: i, Summary: "PostgreSQL port", RawContent: raw})
	}
	fold(t, filepath.Join(root, "sessions", "a"), t0, big...)
	fold(t, filepath.Join(root, "sessions", "c"), t0.Add(time.Minute), big...)
	bad := filepath.Join(root, "sessions", "b")
	os.MkdirAll(filepath.Join(bad, contextfold.ColdNodesDir), 0o755)
	os.WriteFile(filepath.Join(bad, contextfold.IndexFile), []byte("{"), 0o644)

	for _, r := range []string{root, filepath.Join(root, "sessions")} {
		ss, err := Find(r)
		if err != nil || !reflect.DeepEqual(ids(ss), []string{"a", "b", "c"}) {
			t.Errorf("Find(%s) = %v %v", r, ids(ss), err)
		}
	}
	set, err := Open(root, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := set.Sessions()
	if len(ins) != 3 || ins[0].ID != "c" || ins[2].ID != "b" || ins[2].Err == nil {
		t.Fatalf("sessions: %+v", ins)
	}
	res, sr, err := set.Scan("", "which PostgreSQL port?", match.Ranked)
	if err != nil || sr.Sessions != 2 || len(sr.Failures) != 1 || sr.Failures[0].ID != "b" {
		t.Fatalf("scan: %v %+v", err, sr)
	}
	if len(res.Selected) == 0 || res.UsedTokens > res.BudgetTokens {
		t.Errorf("scan across sessions over budget: %+v", res)
	}
	one, _, err := set.Scan("c", "which PostgreSQL port?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if res.BudgetTokens != one.BudgetTokens {
		t.Errorf("budget across sessions %v, one session's %v", res.BudgetTokens, one.BudgetTokens)
	}
	if _, _, err := set.Scan("b", "port", match.Ranked); err == nil {
		t.Error("a scan of the damaged session must be an error")
	}
}

// One directory both the proxy (its --dir) and the Claude Code hooks
// (.contextfold) write into: every session of both kinds is found, each
// with its Source; a store directly below the directory named like a hooks
// session keeps its id and the hooks session becomes "sessions/<id>". A
// store the hooks wrote elsewhere (their transcript state) is a hooks
// session; a directory named sessions given itself holds hooks sessions.
// Before, the hooks' sessions/ hid everything else in the directory: the
// proxy's sessions were not listed, searched or fetched.
func TestFindProxyAndHooksInOneDirectory(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".contextfold")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	fold(t, filepath.Join(root, "sessions", "5a9d"), t0, contextfold.Turn{StepID: 1, Summary: "hooks turn", RawContent: "port 5433"})
	fold(t, filepath.Join(root, "sessions", "mine"), t0, contextfold.Turn{StepID: 1, Summary: "hooks turn", RawContent: "port 5434"})
	fold(t, filepath.Join(root, "s-067b", "g1"), t0.Add(time.Hour), contextfold.Turn{StepID: 2, Summary: "proxy turn", RawContent: "port 5435"})
	fold(t, filepath.Join(root, "mine"), t0.Add(2*time.Hour), contextfold.Turn{StepID: 3, Summary: "a store", RawContent: "port 5436"})
	fold(t, filepath.Join(root, "elsewhere"), t0.Add(3*time.Hour), contextfold.Turn{StepID: 4, Summary: "hooks --dir", RawContent: "port 5437"})
	os.WriteFile(filepath.Join(root, "elsewhere", HookStateFile), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(root, ".contextfold-proxy"), []byte("marker\n"), 0o600)

	ss, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ss {
		got = append(got, x.ID+" "+x.Source)
	}
	want := []string{"5a9d hooks", "elsewhere hooks", "mine store", "s-067b/g1 proxy", "sessions/mine hooks"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find = %v, want %v", got, want)
	}
	if n := Sources(ss); n[SourceHooks] != 3 || n[SourceProxy] != 1 || n[SourceStore] != 1 {
		t.Errorf("Sources = %v", n)
	}
	set, err := Open(root, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !set.Mixed() {
		t.Error("Mixed() = false for proxy and hooks sessions")
	}
	for id, dir := range map[string]string{"mine": filepath.Join(root, "mine"), "sessions/mine": filepath.Join(root, "sessions", "mine"), "s-067b": filepath.Join(root, "s-067b", "g1")} {
		if _, x, err := set.Store(id); err != nil || x.Dir != dir {
			t.Errorf("Store(%s) = %+v %v, want %s", id, x, err, dir)
		}
	}
	if _, _, err := set.Store("sessions"); err == nil {
		t.Error(`Store("sessions"): the hooks' directory is not a proxy session`)
	}
	hits, sr, err := set.Recall("", "port", match.Exact)
	if err != nil || sr.Sessions != 5 || len(hits) != 5 {
		t.Fatalf("recall across both kinds: %d hits, %+v, %v", len(hits), sr, err)
	}
	// The hooks' sessions/ given itself: its stores are the hooks'.
	ss, _ = Find(filepath.Join(root, "sessions"))
	if len(ss) != 2 || ss[0].Source != SourceHooks || ss[1].Source != SourceHooks {
		t.Errorf("Find(sessions/) = %+v", ss)
	}
	one, _ := Open(filepath.Join(root, "sessions"), contextfold.Options{})
	if one.Mixed() {
		t.Error("Mixed() = true for hooks sessions alone")
	}
}

// TestResolve: an id names a session by its whole ID, a proxy session's
// name alone (its only store), or the start of one ID alone; the start of
// several is an *AmbiguousError naming them with their sources, the start
// that ends at a '/' is no prefix, and the hooks session whose ID is also a
// proxy session's name is named exactly with that proxy session as Alike.
// Before, only whole IDs and proxy names were accepted.
func TestResolve(t *testing.T) {
	const a, b = "0d7c2a41-aaaa-4bbb-8ccc-000000000001", "0d7c9e55-bbbb-4ccc-8ddd-000000000002"
	ss := []Session{
		{ID: a, Source: SourceHooks}, {ID: a + "/g1", Source: SourceProxy},
		{ID: b, Source: SourceHooks},
		{ID: "s-4e1f/g1", Source: SourceProxy}, {ID: "s-77/g1", Source: SourceProxy}, {ID: "s-77/g2", Source: SourceProxy},
		{ID: "sessions/x", Source: SourceHooks},
	}
	for id, want := range map[string][2]string{
		a: {a, ByID}, a + "/g1": {a + "/g1", ByID}, "0d7c9": {b, ByPrefix}, b[:len(b)-1]: {b, ByPrefix},
		"s-4e1f": {"s-4e1f/g1", ByName}, "s-4": {"s-4e1f/g1", ByPrefix}, "s-77/g": {"", ""}, "sessions/": {"sessions/x", ByPrefix},
	} {
		m, err := Resolve("/r", ss, id)
		if want[0] == "" {
			var amb *AmbiguousError
			if !errors.As(err, &amb) || len(amb.Candidates) != 2 {
				t.Errorf("Resolve(%q) = %+v, %v; want ambiguous", id, m, err)
			}
			continue
		}
		if err != nil || m.ID != want[0] || m.How != want[1] {
			t.Errorf("Resolve(%q) = %s %s %v, want %v", id, m.ID, m.How, err, want)
		}
	}
	if m, _ := Resolve("/r", ss, a); len(m.Alike) != 1 || m.Alike[0].ID != a+"/g1" {
		t.Errorf("Resolve(a).Alike = %+v", m.Alike)
	}
	_, err := Resolve("/r", ss, "0d7c")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 3 || amb.Generations ||
		!strings.Contains(err.Error(), a+" (hooks), "+a+"/g1 (proxy), "+b+" (hooks)") || !strings.Contains(err.Error(), "give more of the id") {
		t.Errorf("Resolve(0d7c) = %v", err)
	}
	_, err = Resolve("/r", ss, "s-77")
	if !errors.As(err, &amb) || !amb.Generations || !strings.Contains(err.Error(), "has 2 stores") {
		t.Errorf("Resolve(s-77) = %v", err)
	}
	for _, id := range []string{"sessions", "zz", ""} {
		if m, err := Resolve("/r", ss, id); err == nil || errors.As(err, &amb) {
			t.Errorf("Resolve(%q) = %+v, %v; want not found", id, m, err)
		}
	}
}
