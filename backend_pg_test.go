package contextfold

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/pgbackend"
	"github.com/contextfold/contextfold/internal/pgtest"
)

// The conformance vectors and the CONF tests run against both backends: the
// directory store (the tests as they are) and PostgreSQL, where the same
// test functions run again with testPG set, so that their helpers
// (vectorStore, newTestStore, writePolicy, editColdNode, editIndexEntry,
// hashTree) make and alter sessions of a real database instead of
// directories (TestConformancePostgres, TestCONFPostgres). Tests that are
// about directories themselves (symlinks, permissions) say so and skip
// there (dirOnly).

// testPG is the database of the PostgreSQL pass, nil during the directory
// pass. Only the *Postgres tests set it, around their subtests (the
// package's tests do not run in parallel).
var testPG *pgbackend.DB

// backendStores finds the backend store of a Dir() (hashTree).
var backendStores = map[string]*Store{}

var (
	pgSession atomic.Int64
	// pgRun makes session names unique across runs on one database.
	pgRun = time.Now().UnixNano()
)

// testPostgres returns a new database of the PostgreSQL test server
// (pgtest: a temporary cluster, or CONTEXTFOLD_TEST_POSTGRES_URL), skipping
// the test locally when there is none and failing it under CI=true.
func testPostgres(t *testing.T) *pgbackend.DB {
	t.Helper()
	db, err := pgbackend.Connect(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatalf("PostgreSQL test database: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// onPostgres runs the test functions as subtests with the PostgreSQL
// backend selected.
func onPostgres(t *testing.T, tests map[string]func(*testing.T)) {
	db := testPostgres(t)
	testPG = db
	defer func() { testPG = nil }()
	names := make([]string, 0, len(tests))
	for n := range tests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, tests[n])
	}
	// Again with the in-memory snapshot rebuilt at every read that brings
	// an entry (BackendSnapshotMin 1), so that both index forms are checked.
	defer func(v int) { BackendSnapshotMin = v }(BackendSnapshotMin)
	BackendSnapshotMin = 1
	for _, n := range names {
		t.Run(n+"/snapshot", tests[n])
	}
}

// dirOnly skips a test during the PostgreSQL pass: it is about directories.
func dirOnly(t *testing.T, why string) {
	t.Helper()
	if testPG != nil {
		t.Skip("directory store only: " + why)
	}
}

// openTestStore returns a fresh store: a directory named .contextfold, or a
// new session of the test database.
func openTestStore(t *testing.T, opts Options) *Store {
	t.Helper()
	if testPG == nil {
		s, err := Open(filepath.Join(t.TempDir(), DefaultStoreDir), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	name := fmt.Sprintf("%s#%d.%d", t.Name(), pgRun, pgSession.Add(1))
	s, err := OpenBackend(testPG.Backend(name), opts)
	if err != nil {
		t.Fatal(err)
	}
	backendStores[s.Dir()] = s
	return s
}

// putStoreFile writes a store file as a person would (the policy, the
// settings), outside the store's own writes.
func putStoreFile(t *testing.T, s *Store, name string, data []byte) {
	t.Helper()
	if s.be == nil {
		if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir(), name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	tx, err := s.be.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteFile(name, data); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// sqlSession runs a statement on the rows of s's session ($1 is its id),
// behind the store's back, and drops its in-memory index (a new process's
// view).
func sqlSession(t *testing.T, s *Store, sql string, args ...any) {
	t.Helper()
	db, name, ok := pgbackend.SessionOf(s.be)
	if !ok {
		t.Fatal("not a PostgreSQL store")
	}
	ctx := context.Background()
	var id int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM cf_sessions WHERE name = $1`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	tag, err := db.Pool().Exec(ctx, sql, append([]any{id}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() == 0 {
		t.Fatalf("%s: no row changed", sql)
	}
	s.mu.Lock()
	s.ix = nil
	s.mu.Unlock()
}

// readNodeBytes returns a cold node's stored bytes.
func readNodeBytes(t *testing.T, s *Store, step int) []byte {
	t.Helper()
	data, err := s.nodeBytes(step, s.NodePath(step))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeNodeBytes replaces a cold node's stored bytes behind the store's back.
func writeNodeBytes(t *testing.T, s *Store, step int, data []byte) {
	t.Helper()
	if s.be == nil {
		if err := os.WriteFile(s.NodePath(step), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	sqlSession(t, s, `UPDATE cf_nodes SET data = $3 WHERE session_id = $1 AND step_id = $2`, int64(step), data)
}

// addNodeBytes stores a cold node's bytes for a step without indexing it
// (an orphan).
func addNodeBytes(t *testing.T, s *Store, step int, data []byte) {
	t.Helper()
	if s.be == nil {
		if err := os.WriteFile(s.NodePath(step), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	sqlSession(t, s, `INSERT INTO cf_nodes (session_id, step_id, data) VALUES ($1, $2, $3)`, int64(step), data)
}

// removeNodeBytes deletes a cold node's bytes behind the store's back (a
// broken reference).
func removeNodeBytes(t *testing.T, s *Store, step int) {
	t.Helper()
	if s.be == nil {
		if err := os.Remove(s.NodePath(step)); err != nil {
			t.Fatal(err)
		}
		return
	}
	sqlSession(t, s, `DELETE FROM cf_nodes WHERE session_id = $1 AND step_id = $2`, int64(step))
}

// reopen returns a second view of s's store, as another process opens it.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	if s.be == nil {
		fresh, err := Open(s.Dir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return fresh
	}
	_, name, _ := pgbackend.SessionOf(s.be)
	fresh, err := OpenBackend(testPG.Backend(name), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fresh
}

// indexFileBytes returns recall_index.json as the store would have it on
// disk (a backend store: as export writes it).
func indexFileBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	if s.be == nil {
		data, err := os.ReadFile(filepath.Join(s.Dir(), IndexFile))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	dir := filepath.Join(t.TempDir(), DefaultStoreDir)
	if err := s.ExportDir(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hashBackend hashes every row of a session (files, nodes, entries, header,
// quarantine), to prove that an operation changed no byte of it.
func hashBackend(t *testing.T, s *Store) map[string]string {
	t.Helper()
	db, name, ok := pgbackend.SessionOf(s.be)
	if !ok {
		t.Fatal("not a PostgreSQL store")
	}
	out := map[string]string{}
	ctx := context.Background()
	for _, q := range []string{
		`SELECT 'session', coalesce(header, ''::bytea) FROM cf_sessions s WHERE s.name = $1`,
		`SELECT 'node/' || step_id, data FROM cf_nodes n JOIN cf_sessions s ON s.id = n.session_id WHERE s.name = $1`,
		`SELECT 'entry/' || step_id, doc FROM cf_entries e JOIN cf_sessions s ON s.id = e.session_id WHERE s.name = $1`,
		`SELECT 'file/' || f.name, data FROM cf_files f JOIN cf_sessions s ON s.id = f.session_id WHERE s.name = $1`,
		`SELECT 'quarantine/' || q.id, data FROM cf_quarantine q JOIN cf_sessions s ON s.id = q.session_id WHERE s.name = $1`,
	} {
		rows, err := db.Pool().Query(ctx, q, name)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			var v []byte
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(v)
			out[k] = hex.EncodeToString(sum[:])
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// editEntryInBackend rewrites one index entry's document behind the store's
// back.
func editEntryInBackend(t *testing.T, s *Store, step int, edit func(map[string]any)) {
	t.Helper()
	db, name, _ := pgbackend.SessionOf(s.be)
	var doc []byte
	err := db.Pool().QueryRow(context.Background(), `SELECT e.doc FROM cf_entries e JOIN cf_sessions s ON s.id = e.session_id WHERE s.name = $1 AND e.step_id = $2`, name, int64(step)).Scan(&doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonjson.Decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	edit(v.(map[string]any))
	out, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	sqlSession(t, s, `UPDATE cf_entries SET doc = $3 WHERE session_id = $1 AND step_id = $2`, int64(step), out)
}

func TestConformancePostgres(t *testing.T) {
	onPostgres(t, map[string]func(*testing.T){
		"DefaultPolicy": TestConformanceDefaultPolicy,
		"Fold":          TestConformanceFold,
		"Recall":        TestConformanceRecall,
		"Scan":          TestConformanceScan,
		"Hydrate":       TestConformanceHydrate,
	})
}

func TestCONFPostgres(t *testing.T) {
	onPostgres(t, map[string]func(*testing.T){
		"CONF01": TestCONF01LosslessStorage,
		"CONF02": TestCONF02PayloadRoundTrip,
		"CONF03": TestCONF03DeterministicIndexing,
		"CONF04": TestCONF04TemporalDisambiguation,
		"CONF05": TestCONF05VerbatimRetrieval,
		"CONF06": TestCONF06BoundedRehydration,
		"CONF07": TestCONF07EvictionAfterResponse,
		"CONF08": TestCONF08ReadOnlyOperationsChangeNothing,
		"CONF09": TestCONF09TamperDetection,
		"CONF10": TestCONF10ExplicitFailureModes,
		"CONF11": TestCONF11DeterministicReplayNFCAndNFD,
		"CONF12": TestCONF12InconsistentStateAndPathContainment,
		"CONF13": TestCONF13PassiveInterceptionMultiIntent,
	})
}

// A backend store's index is re-based on an in-memory snapshot once enough
// entries were read, and answers as before.
func TestBackendSnapshotInMemory(t *testing.T) {
	testPG = testPostgres(t)
	defer func() { testPG = nil }()
	defer func(v int) { BackendSnapshotMin = v }(BackendSnapshotMin)
	BackendSnapshotMin = 4
	s := demoStore(t)
	before, err := s.Scan(DemoPrompt)
	if err != nil {
		t.Fatal(err)
	}
	fresh := reopen(t, s)
	after, err := fresh.Scan(DemoPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ix.base == nil || fresh.ix.nb != len(DemoTurns()) {
		t.Fatalf("no in-memory snapshot (nb %d)", fresh.ix.nb)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("scan differs on the snapshot:\n%v\n%v", before, after)
	}
	// A fold elsewhere reaches the snapshot-based replica as a heap record;
	// an eviction of a snapshot record too.
	if _, err := s.Fold(Turn{StepID: 900, Summary: "late turn", RawContent: "zanzibar_port 9999"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Evict(137); err != nil {
		t.Fatal(err)
	}
	res, err := fresh.Scan("zanzibar_port")
	if err != nil || len(res.Selected) != 1 || res.Selected[0].StepID != 900 {
		t.Fatalf("scan after a fold elsewhere: %v %+v", err, res)
	}
	if e, err := fresh.Entry(137); err != nil || !e.Evicted {
		t.Errorf("eviction elsewhere not seen: %v %+v", err, e)
	}
	if !bytes.Equal(indexFileBytes(t, s), indexFileBytes(t, fresh)) {
		t.Error("the two replicas encode different indexes")
	}
}
