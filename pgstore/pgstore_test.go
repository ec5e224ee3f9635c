package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgbackend"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/pgstore"
)

// Every test here runs against a real PostgreSQL server (no mocks): the
// database of CONTEXTFOLD_TEST_POSTGRES_URL. Without one they skip, except
// under CI=true, where they fail.

func TestMain(m *testing.M) {
	if os.Getenv(envRankedChild) != "" {
		rankedChild() // a second replica's process (ranked_snapshot_test.go)
		return
	}
	pgtest.Main(m)
}

// testURL is a new, empty database of the test server, one per test
// (pgtest: a temporary cluster, or CONTEXTFOLD_TEST_POSTGRES_URL).
func testURL(t testing.TB) string {
	t.Helper()
	if u, ok := urls.Load(t); ok {
		return u.(string)
	}
	u := pgtest.URL(t)
	urls.Store(t, u)
	return u
}

var urls sync.Map // testing.TB → its database's URL

var run = time.Now().UnixNano()

// sessionURL is the test database's URL naming a new session.
func sessionURL(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("session", fmt.Sprintf("%s-%d", t.Name(), run))
	u.RawQuery = q.Encode()
	return u.String()
}

var fixed = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

func openSession(t *testing.T) (*contextfold.Store, string) {
	t.Helper()
	u := sessionURL(t, testURL(t))
	s, err := pgstore.OpenURL(u, contextfold.Options{Clock: fixed, Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	return s, u
}

func pool(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func sessionID(t *testing.T, c *pgx.Conn, s *contextfold.Store) int64 {
	t.Helper()
	name, err := pgstore.SessionName(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := c.QueryRow(context.Background(), `SELECT id FROM cf_sessions WHERE name = $1`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// treeHash hashes a directory store's files (path → sha256), without the
// empty .lock file, which holds no store content.
func treeHash(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".lock" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFoldScanHydrateEvictOnPostgres(t *testing.T) {
	s, _ := openSession(t)
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	res, err := s.Scan(contextfold.DemoPrompt)
	if err != nil || len(res.Selected) == 0 {
		t.Fatalf("scan: %v %+v", err, res)
	}
	h, err := s.Hydrate(res.Selected[0].StepID)
	if err != nil || h.RawContent == "" {
		t.Fatalf("hydrate: %v", err)
	}
	if _, err := s.Evict(res.Selected[0].StepID); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status()
	if err != nil || st.Total != len(contextfold.DemoTurns()) || st.Evicted != 1 {
		t.Fatalf("status: %v %+v", err, st)
	}
	rep, err := s.Validate()
	if err != nil || !rep.OK() {
		t.Fatalf("validate: %v %+v", err, rep)
	}
	if strings.Contains(s.Dir(), "devpw") || !strings.HasPrefix(s.Dir(), "postgres") {
		t.Errorf("Dir() = %q", s.Dir())
	}
}

// countingBackend counts the entries a backend's index reads return: it is
// the real backend, observed.
type countingBackend struct {
	contextfold.Backend
	mu      sync.Mutex
	entries int
	full    int
}

func (c *countingBackend) ReadIndex(since contextfold.Revision) (*contextfold.IndexDelta, error) {
	d, err := c.Backend.ReadIndex(since)
	if err == nil {
		c.mu.Lock()
		c.entries += len(d.Entries)
		if d.Full {
			c.full++
		}
		c.mu.Unlock()
	}
	return d, err
}

// A warm replica learns of another replica's folds by reading only the
// entries written since the revision it holds, not the whole index.
func TestWarmReplicaReadsOnlyNewEntries(t *testing.T) {
	base := testURL(t)
	db, err := pgbackend.Connect(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("%s-%d", t.Name(), run)
	a, _ := contextfold.OpenBackend(db.Backend(name), contextfold.Options{Clock: fixed})
	cb := &countingBackend{Backend: db.Backend(name)}
	b, _ := contextfold.OpenBackend(cb, contextfold.Options{Clock: fixed})
	turns := contextfold.DemoTurns()
	if _, err := a.FoldBatch(turns[:len(turns)-1]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Scan(contextfold.DemoPrompt); err != nil { // warm-up: the whole index
		t.Fatal(err)
	}
	if cb.full != 1 || cb.entries != len(turns)-1 {
		t.Fatalf("warm-up read %d entries in %d full reads", cb.entries, cb.full)
	}
	last := turns[len(turns)-1]
	if _, err := a.Fold(last); err != nil {
		t.Fatal(err)
	}
	cb.entries = 0
	if _, err := b.Entry(last.StepID); err != nil {
		t.Fatalf("replica b does not see a's fold: %v", err)
	}
	if cb.full != 1 || cb.entries != 1 {
		t.Errorf("after one fold elsewhere the replica read %d entries (%d full reads), want 1 entry and no full read", cb.entries, cb.full)
	}
	cb.entries = 0
	if _, err := b.Scan(contextfold.DemoPrompt); err != nil {
		t.Fatal(err)
	}
	if cb.entries != 0 {
		t.Errorf("an unchanged index read %d entries", cb.entries)
	}
	// An eviction elsewhere reaches the replica the same way.
	if _, err := a.Evict(last.StepID); err != nil {
		t.Fatal(err)
	}
	if e, err := b.Entry(last.StepID); err != nil || !e.Evicted {
		t.Errorf("replica b does not see a's eviction: %v %+v", err, e)
	}
}

// Concurrent folds through separate stores (as separate processes would
// hold them) into one session never lose an entry.
func TestConcurrentFoldsOneSession(t *testing.T) {
	base := testURL(t)
	name := fmt.Sprintf("%s-%d", t.Name(), run)
	const writers, folds = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := pgbackend.Connect(context.Background(), base)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			s, _ := contextfold.OpenBackend(db.Backend(name), contextfold.Options{Clock: fixed})
			for i := range folds {
				step := w*folds + i
				if _, err := s.Fold(contextfold.Turn{StepID: step, Summary: fmt.Sprintf("writer %d fold %d", w, i), RawContent: fmt.Sprintf("payload %d of writer %d", i, w)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("session", name)
	u.RawQuery = q.Encode()
	s, err := pgstore.OpenURL(u.String(), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.Entries()
	if err != nil || len(entries) != writers*folds {
		t.Fatalf("%d entries (%v), want %d", len(entries), err, writers*folds)
	}
	rep, err := s.Validate()
	if err != nil || !rep.OK() || rep.Passed != writers*folds {
		t.Fatalf("validate: %v %+v", err, rep)
	}
}

// A row changed behind the store's back is an integrity error; repair
// moves it to the quarantine table, never deletes it.
func TestTamperedRowIsQuarantined(t *testing.T) {
	s, _ := openSession(t)
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	c := pool(t)
	id := sessionID(t, c, s)
	ctx := context.Background()
	if _, err := c.Exec(ctx, `UPDATE cf_nodes SET data = convert_to(replace(convert_from(data, 'UTF8'), '5433', '9999'), 'UTF8') WHERE session_id = $1 AND step_id = 137`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hydrate(137); !errors.Is(err, contextfold.ErrIntegrityCheck) {
		t.Fatalf("tampered row hydrated: %v", err)
	}
	rep, err := s.Validate()
	if err != nil || len(rep.Findings) != 1 || rep.Findings[0].Kind != contextfold.KindIntegrity {
		t.Fatalf("validate: %v %+v", err, rep)
	}
	var tampered []byte
	c.QueryRow(ctx, `SELECT data FROM cf_nodes WHERE session_id = $1 AND step_id = 137`, id).Scan(&tampered)
	res, err := s.Repair(true)
	if err != nil || len(res.Actions) != 1 || res.Actions[0].Action != contextfold.ActionQuarantine {
		t.Fatalf("repair: %v %+v", err, res)
	}
	var kept []byte
	if err := c.QueryRow(ctx, `SELECT data FROM cf_quarantine WHERE session_id = $1 AND step_id = 137`, id).Scan(&kept); err != nil || string(kept) != string(tampered) {
		t.Fatalf("quarantine does not hold the tampered row: %v", err)
	}
	var entryKept int
	c.QueryRow(ctx, `SELECT count(*) FROM cf_quarantine WHERE session_id = $1 AND name LIKE '%index-entry.json'`, id).Scan(&entryKept)
	if entryKept != 1 {
		t.Errorf("the entry's copy is not in quarantine (%d)", entryKept)
	}
	if rep, err := s.Validate(); err != nil || !rep.OK() {
		t.Errorf("validate after repair: %v %+v", err, rep)
	}
	if again, err := s.Repair(false); err != nil || len(again.Actions) != 0 {
		t.Errorf("a second repair plans %+v (%v)", again, err)
	}
}

// export of a directory store imported into PostgreSQL gives back its exact
// bytes (the round trip).
func TestImportExportRoundTrip(t *testing.T) {
	src := filepath.Join(t.TempDir(), "run", ".contextfold")
	ds, err := contextfold.Open(src, contextfold.Options{Clock: fixed, Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, contextfold.PolicyFile), []byte(`{"max_rehydration_tokens_per_call": 2000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.Evict(137); err != nil {
		t.Fatal(err)
	}
	want := treeHash(t, src)
	s, _ := openSession(t)
	n, err := s.ImportDir(src)
	if err != nil || n != len(contextfold.DemoTurns()) {
		t.Fatalf("import: %d %v", n, err)
	}
	if rep, err := s.Validate(); err != nil || !rep.OK() {
		t.Fatalf("validate after import: %v %+v", err, rep)
	}
	if h, err := s.Hydrate(91); err != nil || h.RawContent == "" {
		t.Fatalf("hydrate after import: %v", err)
	}
	// Into a directory of the same name: the same bytes.
	out := filepath.Join(t.TempDir(), "copy", ".contextfold")
	if err := s.ExportDir(out); err != nil {
		t.Fatal(err)
	}
	if got := treeHash(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("round trip changed bytes:\n got %v\nwant %v", got, want)
	}
	// Into a directory of another name: file paths name it, and it
	// validates clean.
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := s.ExportDir(other); err != nil {
		t.Fatal(err)
	}
	es, _ := contextfold.Open(other, contextfold.Options{})
	if rep, err := es.Validate(); err != nil || !rep.OK() {
		t.Errorf("export under another name: %v %+v", err, rep)
	}
	// A session that holds nodes refuses an import.
	if _, err := s.ImportDir(src); err == nil || !strings.Contains(err.Error(), "new session") {
		t.Errorf("import into a non-empty session: %v", err)
	}
}

// Unreachable database, wrong credentials: a clear error naming the problem
// and the remedy, and never the password.
func TestBadConnections(t *testing.T) {
	base := testURL(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = pgstore.OpenURL(fmt.Sprintf("postgres://cf:s3cretpw@127.0.0.1:%d/db?session=x", port), contextfold.Options{})
	if err == nil || !strings.Contains(err.Error(), "unreachable") || strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("unreachable: %v", err)
	}
	var sf *contextfold.StoreFileError
	if !errors.As(err, &sf) {
		t.Errorf("not a StoreFileError: %T", err)
	}
	// A role that must give its password (pgtest's cluster asks every
	// role but the superuser for one).
	role := fmt.Sprintf("cf_role_%d", time.Now().UnixNano())
	if _, err := pool(t).Exec(context.Background(), "CREATE ROLE "+role+" LOGIN PASSWORD 'right-pw'"); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	u.User = url.UserPassword(role, "definitely-wrong-pw")
	_, err = pgstore.Connect(context.Background(), u.String())
	switch {
	case err == nil:
		t.Log("the test server accepts any password (trust authentication): wrong credentials not checked")
	case !strings.Contains(err.Error(), "wrong credentials") || strings.Contains(err.Error(), "definitely-wrong-pw"):
		t.Errorf("wrong credentials: %v", err)
	}
	if _, err := pgstore.OpenURL("postgres://%zz", contextfold.Options{}); err == nil {
		t.Error("an unparsable URL opened")
	}
}

// Migrations are applied on first use, and a database of a newer schema
// version is refused with a clear error.
func TestMigrationsAndNewerSchema(t *testing.T) {
	u := testURL(t) // a new, empty database
	from, to, err := pgstore.Migrate(context.Background(), u)
	if err != nil || from != 0 || to != pgstore.SchemaVersion {
		t.Fatalf("migrate: %d → %d, %v", from, to, err)
	}
	if from, to, err := pgstore.Migrate(context.Background(), u); err != nil || from != to {
		t.Fatalf("second migrate: %d → %d, %v", from, to, err)
	}
	c, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), `UPDATE cf_schema SET version = $1`, pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Connect(context.Background(), u)
	if !errors.Is(err, pgstore.ErrNewerSchema) || !strings.Contains(err.Error(), "upgrade contextfold") {
		t.Errorf("newer schema: %v", err)
	}
}

// A connection dropped in the middle of a fold (the server ends the
// backend that holds the fold's transaction): a clear error, and nothing
// of the fold is visible.
func TestConnectionDroppedMidFold(t *testing.T) {
	s, su := openSession(t)
	if _, err := s.Fold(contextfold.Turn{StepID: 1, Summary: "first", RawContent: "kept"}); err != nil {
		t.Fatal(err)
	}
	c := pool(t)
	id := sessionID(t, c, s)
	ctx := context.Background()
	// The test holds an uncommitted row for step 2: the fold's insert of
	// its cold node waits for it, with the fold's transaction open.
	blocker, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `INSERT INTO cf_nodes (session_id, step_id, data) VALUES ($1, 2, 'x')`, id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Fold(contextfold.Turn{StepID: 2, Summary: "second", RawContent: "never half-written"})
		done <- err
	}()
	c2 := pool(t)
	var pid int
	// A minute: the fold reaches its insert in milliseconds, but a count
	// of 500 polls (5 s) could pass on a loaded 2-core machine.
	for deadline := time.Now().Add(time.Minute); ; {
		err := c2.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO cf_nodes%'`).Scan(&pid)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fold never waited on its cold node insert")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c2.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "nothing of this operation was written") {
		t.Fatalf("fold over a dropped connection: %v", err)
	}
	blocker.Rollback(ctx)
	fresh, err := pgstore.OpenURL(su, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Entry(2); !errors.Is(err, contextfold.ErrNodeNotFound) {
		t.Errorf("step 2 half-written: %v", err)
	}
	if rep, err := fresh.Validate(); err != nil || !rep.OK() || rep.Passed != 1 {
		t.Errorf("validate: %v %+v", err, rep)
	}
	// The store works again: the pool replaces the dead connection.
	if _, err := s.Fold(contextfold.Turn{StepID: 2, Summary: "second", RawContent: "now"}); err != nil {
		t.Errorf("fold after the drop: %v", err)
	}
}

// The same operations give the same bytes on both backends: a session
// exported is the directory store those operations make.
func TestSameBytesAsTheDirectoryStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	ds, err := contextfold.Open(dir, contextfold.Options{Clock: fixed})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := openSession(t)
	policy := []byte(`{"max_rehydration_tokens_per_turn": 5000}`)
	c := pool(t)
	for _, s := range []*contextfold.Store{ds, ps} {
		if _, err := s.FoldBatch(contextfold.DemoTurns()[:4]); err != nil {
			t.Fatal(err)
		}
		// The policy, as a person would set it, after the first folds.
		if s == ps {
			if _, err := c.Exec(context.Background(), `INSERT INTO cf_files (session_id, name, data) VALUES ($1, $2, $3)`, sessionID(t, c, ps), contextfold.PolicyFile, policy); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(filepath.Join(dir, contextfold.PolicyFile), policy, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tr := range contextfold.DemoTurns()[4:] {
			if _, err := s.Fold(tr); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Evict(137); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Evict(137); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Repair(true); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), ".contextfold")
	if err := ps.ExportDir(out); err != nil {
		t.Fatal(err)
	}
	if got, want := treeHash(t, out), treeHash(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the PostgreSQL session is not the directory store:\n got %v\nwant %v", got, want)
	}
	pj, err := ps.IndexJSON()
	if err != nil {
		t.Fatal(err)
	}
	dj, err := ds.IndexJSON()
	if err != nil || string(pj) != string(dj) {
		t.Errorf("IndexJSON differs between the backends (%v)", err)
	}
	empty, _ := openSessionNamed(t, "empty")
	if _, err := empty.IndexJSON(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IndexJSON of an empty session: %v", err)
	}
}

func openSessionNamed(t *testing.T, suffix string) (*contextfold.Store, string) {
	t.Helper()
	pu, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	q.Set("session", fmt.Sprintf("%s-%s-%d", t.Name(), suffix, run))
	pu.RawQuery = q.Encode()
	u := pu.String()
	s, err := pgstore.OpenURL(u, contextfold.Options{Clock: fixed})
	if err != nil {
		t.Fatal(err)
	}
	return s, u
}

// Redact removes every credential form pgx accepts: the userinfo password,
// the password= and sslpassword= parameters of a URL, and their values in a
// key=value connection string; it keeps everything else (passfile, a path,
// included).
func TestRedactEveryCredentialForm(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://cf:S3cretPw@h:5432/db?session=chat", "postgres://cf@h:5432/db?session=chat"},
		{"postgres://cf@h/db?password=S3cretPw&session=chat", "postgres://cf@h/db?session=chat"},
		{"postgresql://cf@h/db?session=chat&password=S3cretPw&sslpassword=K3yPw&passfile=/p", "postgresql://cf@h/db?passfile=%2Fp&session=chat"},
		{"postgres://cf:a@h/db?password=S3cretPw&password=Other", "postgres://cf@h/db"},
		{"postgres://cf@h/db?password=S3cretPw;x&session=y", "postgres://cf@h/db?session=y"},
		{"postgres://cf:S3cretPw%zz@h/db", "postgres://…"},
		{"host=h user=cf password=S3cretPw dbname=db", "host=h user=cf password=xxxxx dbname=db"},
		{"host=h password = 'S3cret Pw\\'x' sslpassword=K3yPw passfile=/p", "host=h password = xxxxx sslpassword=xxxxx passfile=/p"},
	} {
		got := pgstore.Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"S3cret", "K3yPw", "Other"} {
			if strings.Contains(got, secret) {
				t.Errorf("Redact(%q) = %q holds %s", tc.in, got, secret)
			}
		}
	}
}

// TestBatchMeetsOrphansOnPostgres: a fold event's batch checks its new steps
// for stored nodes in one query (backend.NodeChecker) and still meets the
// orphans among them: a stored node without an index entry that holds the
// very turn folded is adopted as it is, one that holds another turn is
// moved to quarantine before the new node is written; the other steps of
// the batch are folded as usual, in one transaction.
func TestBatchMeetsOrphansOnPostgres(t *testing.T) {
	s, _ := openSession(t)
	turns := gen.SmallTurns(0, 6)
	if _, err := s.FoldBatch(turns[:3]); err != nil {
		t.Fatal(err)
	}
	c := pool(t)
	id := sessionID(t, c, s)
	ctx := context.Background()
	// Steps 1 and 2 lose their index entries (a fold that stopped between
	// its node and its entry, or a hand-made row); step 2's row holds
	// something else than the turn folded next.
	if _, err := c.Exec(ctx, `DELETE FROM cf_entries WHERE session_id = $1 AND step_id IN (1, 2)`, id); err != nil {
		t.Fatal(err)
	}
	otherBytes := []byte(`{"step_id": 2, "summary": "another turn"}`)
	if _, err := c.Exec(ctx, `UPDATE cf_nodes SET data = $2 WHERE session_id = $1 AND step_id = 2`, id, otherBytes); err != nil {
		t.Fatal(err)
	}
	var adoptedBefore []byte
	c.QueryRow(ctx, `SELECT data FROM cf_nodes WHERE session_id = $1 AND step_id = 1`, id).Scan(&adoptedBefore)

	fresh, err := pgstore.OpenURL(s.Dir(), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := fresh.FoldBatch(turns)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if want := i == 0; r.AlreadyIndexed != want {
			t.Errorf("step %d: AlreadyIndexed %v, want %v", i, r.AlreadyIndexed, want)
		}
	}
	var adoptedAfter []byte
	c.QueryRow(ctx, `SELECT data FROM cf_nodes WHERE session_id = $1 AND step_id = 1`, id).Scan(&adoptedAfter)
	if string(adoptedAfter) != string(adoptedBefore) {
		t.Error("the orphan holding the folded turn was rewritten instead of adopted")
	}
	var kept []byte
	if err := c.QueryRow(ctx, `SELECT data FROM cf_quarantine WHERE session_id = $1 AND step_id = 2`, id).Scan(&kept); err != nil || string(kept) != string(otherBytes) {
		t.Errorf("the orphan holding another turn is not in quarantine: %v", err)
	}
	rep, err := fresh.Validate()
	if err != nil || !rep.OK() || rep.Passed != len(turns) {
		t.Fatalf("validate: %v passed %d findings %+v", err, rep.Passed, rep.Findings)
	}
	for _, tr := range turns {
		h, err := fresh.Hydrate(tr.StepID)
		if err != nil || h.RawContent != tr.RawContent {
			t.Errorf("step %d: %v", tr.StepID, err)
		}
	}
}
