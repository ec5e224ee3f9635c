package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/pgstore"
)

// The CLI on a PostgreSQL store (--store postgres://… and
// CONTEXTFOLD_STORE), against a real server (pgtest: skipped without
// PostgreSQL binaries, failed under CI=true).

// pgURL is a new database of the PostgreSQL test server (pgtest).
func pgURL(t *testing.T) string {
	t.Helper()
	return pgtest.URL(t)
}

func pgSessionURL(t *testing.T) string {
	return withSession(pgURL(t), fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()))
}

// withSession returns the database URL base with ?session=name set.
func withSession(base, name string) string {
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("session", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Every protocol command works on a PostgreSQL session, and no output
// carries the URL's password.
func TestCommandsOnPostgres(t *testing.T) {
	store := pgSessionURL(t)
	u, _ := url.Parse(store)
	pw, hasPW := u.User.Password()
	log := filepath.Join(t.TempDir(), "step137.log")
	os.WriteFile(log, []byte("PostgreSQL port reverted to 5433 in config/db.yaml\nrestart: ok\n"), 0o644)
	var all strings.Builder
	step := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := cli(t, "", append([]string{"--store", store}, args...)...)
		all.WriteString(out + errOut)
		if code != wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, wantCode, out, errOut)
		}
		return out
	}
	step(0, "migrate")
	step(0, "fold", "137", "PostgreSQL port reverted to 5433", "--file", log)
	log2 := filepath.Join(t.TempDir(), "step138.log")
	os.WriteFile(log2, []byte("redis cache warm-up done in 2.1s\n"), 0o644)
	step(0, "fold", "138", "Redis cache warmed", "--file", log2)
	if out := step(0, "steps"); !strings.Contains(out, "137") {
		t.Errorf("steps: %s", out)
	}
	step(0, "scrub-check")
	if out := step(0, "scan", "What port is PostgreSQL on?"); !strings.Contains(out, "step 137") {
		t.Errorf("scan: %s", out)
	}
	if out := step(0, "scan", "--match", "ranked", "What port is PostgreSQL on?"); !strings.Contains(out, "step 137") {
		t.Errorf("ranked scan: %s", out)
	}
	if out := step(0, "recall", "redis cache"); !strings.Contains(out, "step 138") {
		t.Errorf("recall: %s", out)
	}
	if out := step(0, "hydrate", "137"); !strings.Contains(out, "5433") {
		t.Errorf("hydrate: %s", out)
	}
	step(0, "evict", "137")
	if out := step(0, "status", "--json"); !strings.Contains(out, `"evicted": 1`) || !strings.Contains(out, `"total": 2`) {
		t.Errorf("status: %s", out)
	}
	step(0, "validate")
	step(0, "repair")
	step(2, "hydrate", "99")
	dir := filepath.Join(t.TempDir(), ".contextfold")
	step(0, "export", "--to", dir)
	if out, errOut, code := cli(t, "", "--dir", dir, "validate"); code != 0 {
		t.Errorf("exported store: exit %d %s%s", code, out, errOut)
	}
	// CONTEXTFOLD_STORE selects the same session.
	t.Setenv("CONTEXTFOLD_STORE", store)
	out, errOut, code := cli(t, "", "status", "--json")
	all.WriteString(out + errOut)
	if code != 0 || !strings.Contains(out, `"total": 2`) {
		t.Errorf("CONTEXTFOLD_STORE: exit %d %s%s", code, out, errOut)
	}
	// import into a fresh session, from the export.
	other := pgSessionURL(t)
	out, errOut, code = cli(t, "", "import", dir, "--store", other)
	all.WriteString(out + errOut)
	if code != 0 || !strings.Contains(out, "imported 2 cold nodes") {
		t.Errorf("import: exit %d %s%s", code, out, errOut)
	}
	// ingest a real agent session into a third session, twice (idempotent).
	third := pgSessionURL(t)
	for range 2 {
		out, errOut, code = cli(t, "", "--store", third, "ingest", "../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
		all.WriteString(out + errOut)
		if code != 0 {
			t.Fatalf("ingest: exit %d %s%s", code, out, errOut)
		}
	}
	if out, errOut, code := cli(t, "", "--store", third, "validate", "--json"); code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Errorf("validate after ingest: exit %d %s%s", code, out, errOut)
	}
	all.WriteString(serveUI(t, third))
	if hasPW && pw != "" && strings.Contains(all.String(), pw) {
		t.Errorf("an output holds the password")
	}
}

// A database that cannot be reached: a clear error naming the problem and
// the remedy, a non-zero exit, no password.
func TestUnreachableDatabase(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	store := fmt.Sprintf("postgres://cf:hunter2secret@127.0.0.1:%d/cf?session=s", port)
	for _, args := range [][]string{{"status"}, {"fold", "1", "x"}, {"validate"}, {"migrate"}} {
		out, errOut, code := cli(t, "", append([]string{"--store", store}, args...)...)
		if code == 0 || !strings.Contains(errOut, "unreachable") || strings.Contains(out+errOut, "hunter2secret") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// lockedBuffer is a bytes.Buffer written by one goroutine and read by
// another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveUI runs `contextfold --store URL ui --listen 127.0.0.1:0` on a
// database session, reads its pages, stops it with SIGINT (as Ctrl-C) and
// returns what it printed. The row-level proof that browsing changes
// nothing is inspect's TestDatabaseStoreBrowsingChangesNoRow.
func serveUI(t *testing.T, store string) string {
	t.Helper()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--store", store, "ui", "--listen", "127.0.0.1:0"}, strings.NewReader(""), &out, &errOut)
	}()
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; {
		select {
		case code := <-done:
			t.Fatalf("ui on a database store exited %d: %s%s", code, out.String(), errOut.String())
		default:
		}
		if i := strings.Index(out.String(), "http://"); i >= 0 {
			base = strings.Fields(out.String()[i:])[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("ui printed no URL: %s%s", out.String(), errOut.String())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var pages strings.Builder
	for _, p := range []string{"", "api/status", "api/steps", "validate", "scan?prompt=" + url.QueryEscape("What port is PostgreSQL on?")} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /%s: %d %s", p, resp.StatusCode, body)
		}
		pages.Write(body)
	}
	if !strings.Contains(pages.String(), `"total"`) || !strings.Contains(out.String(), "session=") {
		t.Errorf("ui pages do not show the session: %s\n%.1500s", out.String(), pages.String())
	}
	// Serve is running, so its SIGINT handler is installed.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("ui exit %d after SIGINT: %s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ui did not stop on SIGINT")
	}
	return out.String() + errOut.String() + pages.String()
}

// pwRoleURL is a new database owned by a new role that must give its
// password, and the store URL of session in it with the password in the
// query (?password=, a form pgx accepts) instead of the userinfo.
func pwRoleURL(t *testing.T, pw, session string) string {
	t.Helper()
	base, err := url.Parse(pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	role := fmt.Sprintf("cf_qpw_%d", time.Now().UnixNano())
	ctx := t.Context()
	c := pgtest.Server(t)
	if err := c.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+pw+"'"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "ALTER DATABASE "+strings.TrimPrefix(base.Path, "/")+" OWNER TO "+role); err != nil {
		t.Fatal(err)
	}
	base.User = url.User(role)
	q := base.Query()
	q.Set("password", pw)
	q.Set("session", session)
	base.RawQuery = q.Encode()
	return base.String()
}

// A password given as the URL's password= parameter is never printed:
// status (text and JSON), validate, connection errors (wrong password too),
// the ui's pages and start-up line.
func TestQueryPasswordNeverPrinted(t *testing.T) {
	const pw = "Qp4ssW0rdZz9"
	store := pwRoleURL(t, pw, "chat")
	var all strings.Builder
	for _, args := range [][]string{{"migrate"}, {"fold", "1", "the port is 5433"}, {"status"}, {"status", "--json"}, {"validate", "--json"}, {"scan", "port"}} {
		out, errOut, code := cli(t, "", append([]string{"--store", store}, args...)...)
		all.WriteString(out + errOut)
		if code != 0 {
			t.Errorf("%v: exit %d %s%s", args, code, out, errOut)
		}
	}
	if out, _, _ := cli(t, "", "--store", store, "status"); !strings.Contains(out, "session=chat") {
		t.Errorf("status does not show the session: %s", out)
	}
	wrong := strings.Replace(store, pw, "WrongPw9x", 1)
	out, errOut, code := cli(t, "", "--store", wrong, "status")
	if code == 0 || !strings.Contains(errOut, "wrong credentials") || strings.Contains(out+errOut, "WrongPw9x") {
		t.Errorf("wrong password: exit %d %s%s", code, out, errOut)
	}
	all.WriteString(serveUI(t, store))
	if strings.Contains(all.String(), pw) {
		t.Errorf("an output holds the password:\n%s", all.String())
	}
}

// A session the URL does not name exactly once, in the documented
// character set, is refused (exit 1, nothing written): a ';' (which
// url.Query would drop with the session, silently selecting "default"), a
// repeated session=, a NUL or invalid UTF-8 byte, a name too long.
func TestBadSessionNamesRefused(t *testing.T) {
	base := pgURL(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	if _, errOut, code := cli(t, "", "--store", base+sep+"session=default", "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	for _, q := range []string{"session=team;a", "session=a&session=b", "session=a%00b", "session=%ff", "session=" + strings.Repeat("x", 300), "session=-x", "session=a%20b"} {
		for _, args := range [][]string{{"fold", "77", "goes to the wrong session"}, {"status"}} {
			out, errOut, code := cli(t, "", append([]string{"--store", base + sep + q}, args...)...)
			if code != 1 || !strings.Contains(errOut, "session") || strings.Contains(errOut, "invalid byte sequence") {
				t.Errorf("%s %v: exit %d, want 1 with a message about the session\n%s%s", q, args, code, out, errOut)
			}
		}
	}
	c, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	var n int
	if err := c.QueryRow(t.Context(), "SELECT count(*) FROM cf_nodes").Scan(&n); err != nil || n != 0 {
		t.Errorf("a refused fold wrote %d cold nodes (%v)", n, err)
	}
	if out, _, _ := cli(t, "", "--help"); !strings.Contains(out, "1-128 ASCII letters") {
		t.Errorf("--store help does not document session names:\n%s", out)
	}
}

// Read-only commands never migrate and never invent a session: on a
// database without the contextfold schema (or an older one) they refuse,
// naming `contextfold migrate`, and create no table; on a missing session
// they refuse, naming it and the sessions there. A role that may only
// SELECT still reads a migrated database.
func TestReadOnlyCommandsDoNotMigrate(t *testing.T) {
	base := pgURL(t)
	withSess := func(name string) string { return withSession(base, name) }
	c, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	tables := func() int {
		var n int
		if err := c.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'cf%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	readOnly := [][]string{{"status"}, {"validate"}, {"scan", "port"}, {"recall", "port"}, {"hydrate", "1"}, {"export", "--to", filepath.Join(t.TempDir(), "x")}, {"ui", "--listen", "127.0.0.1:0"}, {"steps"}, {"scrub-check"}}
	for _, args := range readOnly {
		out, errOut, code := cli(t, "", append([]string{"--store", withSess("x")}, args...)...)
		if code != 1 || !strings.Contains(errOut, "contextfold migrate") {
			t.Errorf("%v on an empty database: exit %d, want 1 naming contextfold migrate\n%s%s", args, code, out, errOut)
		}
	}
	if n := tables(); n != 0 {
		t.Fatalf("read-only commands created %d tables", n)
	}
	if _, errOut, code := cli(t, "", "--store", withSess("chat"), "fold", "1", "the port is 5433"); code != 0 {
		t.Fatalf("fold: %d %s", code, errOut)
	}
	// A missing session: refused, named, with the sessions there.
	for _, args := range readOnly {
		out, errOut, code := cli(t, "", append([]string{"--store", withSess("chta")}, args...)...)
		if code != 1 || !strings.Contains(errOut, `no session "chta"`) || !strings.Contains(errOut, "chat") {
			t.Errorf("%v on a missing session: exit %d, want 1 naming it\n%s%s", args, code, out, errOut)
		}
	}
	// A role that may only SELECT reads the migrated database.
	role := fmt.Sprintf("cf_ro_%d", time.Now().UnixNano())
	for _, sql := range []string{"CREATE ROLE " + role + " LOGIN PASSWORD 'ro-pw-1'", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role} {
		if _, err := c.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	ro, _ := url.Parse(withSess("chat"))
	ro.User = url.UserPassword(role, "ro-pw-1")
	for _, args := range [][]string{{"status"}, {"validate"}, {"scan", "What port?"}, {"hydrate", "1"}} {
		if out, errOut, code := cli(t, "", append([]string{"--store", ro.String()}, args...)...); code != 0 {
			t.Errorf("SELECT-only role, %v: exit %d %s%s", args, code, out, errOut)
		}
	}
	// An older schema version: refused, not migrated.
	if _, err := c.Exec(t.Context(), "UPDATE cf_schema SET version = version - 1"); err != nil {
		t.Fatal(err)
	}
	// (another connection string: cli runs in this process, whose pool of
	// the first one is known migrated, as in a long-lived process)
	out, errOut, code := cli(t, "", "--store", withSess("chat")+"&application_name=older", "status")
	if code != 1 || !strings.Contains(errOut, "contextfold migrate") || !strings.Contains(errOut, "schema version") {
		t.Errorf("older schema: exit %d %s%s", code, out, errOut)
	}
	var v int
	if err := c.QueryRow(t.Context(), "SELECT version FROM cf_schema").Scan(&v); err != nil || v == pgstore.SchemaVersion {
		t.Errorf("a read-only command migrated the schema (version %d, %v)", v, err)
	}
}

// A shared ranked snapshot changed behind our back: validate reports it as
// a warning (text and JSON; not a finding: exit 0, "ok": true). (The one
// stderr line of the rebuild is pgstore's TestSharedRankedSnapshot: cli
// runs in this process, whose ranked index stays cached.)
func TestTamperedSharedSnapshotReported(t *testing.T) {
	store := pgSessionURL(t)
	for i, s := range []string{"PostgreSQL port reverted to 5433", "Redis cache warmed in 2.1s", "the ledger test failed on rounding"} {
		if _, errOut, code := cli(t, "", "--store", store, "fold", fmt.Sprint(i+1), s); code != 0 {
			t.Fatalf("fold: %d %s", code, errOut)
		}
	}
	t.Setenv("CONTEXTFOLD_CACHE_DIR", t.TempDir())
	if _, errOut, code := cli(t, "", "--store", store, "scan", "--match", "ranked", "What port is PostgreSQL on?"); code != 0 || strings.Contains(errOut, "shared ranked snapshot") {
		t.Fatalf("first ranked scan: %d %s", code, errOut)
	}
	out, _, code := cli(t, "", "--store", store, "validate", "--json")
	if code != 0 || !strings.Contains(out, `"warnings": []`) {
		t.Fatalf("validate before tampering: %d %s", code, out)
	}
	c, err := pgx.Connect(t.Context(), pgURLOf(store))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	tag, err := c.Exec(t.Context(), `UPDATE cf_snapshot_chunks SET data = set_byte(data, 100, (get_byte(data, 100) + 1) % 256) WHERE seq = 0`)
	if err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("tamper: %v %v", tag, err)
	}
	out, errOut, code := cli(t, "", "--store", store, "validate", "--json")
	if code != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"kind": "shared_snapshot"`) || !strings.Contains(out, "SHA-256") {
		t.Errorf("validate --json after tampering: %d %s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "", "--store", store, "validate")
	if code != 0 || !strings.Contains(out, "warning") || !strings.Contains(out, "shared ranked snapshot fails verification") {
		t.Errorf("validate after tampering: %d %s%s", code, out, errOut)
	}
}

// pgURLOf is a store URL without its session parameter.
func pgURLOf(store string) string {
	u, _ := url.Parse(store)
	q := u.Query()
	q.Del("session")
	u.RawQuery = q.Encode()
	return u.String()
}

// --store and --dir together are a usage error (which one is used is not
// obvious), with nothing written.
func TestStoreAndDirTogetherRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	out, errOut, code := cli(t, "", "--store", filepath.Join(t.TempDir(), "other"), "--dir", dir, "fold", "1", "x")
	if code != 1 || !strings.Contains(errOut, "--store and --dir") {
		t.Errorf("exit %d %s%s", code, out, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a store was written")
	}
}

// fold on a database store names the node's row, not a cold_nodes/ file.
func TestFoldOnPostgresNamesTheRow(t *testing.T) {
	store := pgSessionURL(t)
	out, errOut, code := cli(t, "", "--store", store, "fold", "77", "the port is 5433")
	if code != 0 || strings.Contains(out, "cold_nodes/") || !strings.Contains(out, "cf_nodes row of step 77 in postgres://") {
		t.Errorf("exit %d %s%s", code, out, errOut)
	}
}

// contextfold sessions lists a database's sessions with their index entry
// counts, as text and --json, without migrating an empty database and
// without printing the password.
func TestSessionsCommand(t *testing.T) {
	db := pgURL(t)
	u, _ := url.Parse(db)
	pw, _ := u.User.Password()
	// An unmigrated database: refused, nothing created.
	_, errs, code := cli(t, "", "--store", db, "sessions")
	if code == 0 || !strings.Contains(errs, "migrate") {
		t.Fatalf("unmigrated: exit %d, %q; want a refusal naming migrate", code, errs)
	}
	for i, name := range []string{"run-b", "run-a"} {
		for step := 1; step <= i+2; step++ {
			if _, errs, code := cli(t, "", "--store", withSession(db, name), "fold", fmt.Sprint(step), "turn", fmt.Sprint(step)); code != 0 {
				t.Fatalf("fold: %d %s", code, errs)
			}
		}
	}
	out, errs, code := cli(t, "", "--store", db, "sessions")
	if code != 0 {
		t.Fatalf("sessions: %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "SESSION STEPS INDEXED" ||
		strings.Join(strings.Fields(lines[1]), " ") != "run-a 3" || strings.Join(strings.Fields(lines[2]), " ") != "run-b 2" {
		t.Errorf("sessions:\n%s", out)
	}
	out, _, code = cli(t, "", "--store", db, "sessions", "--json")
	var got struct {
		Store    string `json:"store"`
		Sessions []struct {
			Name    string `json:"name"`
			Entries int    `json:"entries"`
		} `json:"sessions"`
	}
	mustJSON(t, out, &got)
	if code != 0 || len(got.Sessions) != 2 || got.Sessions[0].Name != "run-a" || got.Sessions[0].Entries != 3 || got.Sessions[1].Entries != 2 {
		t.Errorf("sessions --json: %d %s", code, out)
	}
	if pw != "" && strings.Contains(out+errs, pw) {
		t.Error("the password was printed")
	}
	// A directory store is a usage error naming status.
	if _, errs, code := cli(t, "", "--dir", t.TempDir(), "sessions"); code != 1 || !strings.Contains(errs, "status") {
		t.Errorf("directory store: %d %q", code, errs)
	}
}

// TestIngestOfAnotherSessionOnPostgres: on a database store the refusal of
// another session names a store of its own as the same database's
// ?session= (it named a --dir path made of the URL), and that remedy works;
// a fold at an indexed step names the node's row, not a cold_nodes/ file.
func TestIngestOfAnotherSessionOnPostgres(t *testing.T) {
	u := withSession(pgURL(t), "run1")
	if _, errs, code := cli(t, "", "--store", u, "ingest", transcripts[0].path); code != 0 {
		t.Fatalf("first ingest: %s", errs)
	}
	_, errs, code := cli(t, "", "--store", u, "ingest", transcripts[1].path)
	i := strings.Index(errs, "contextfold --store '")
	if code != 1 || i < 0 || strings.Contains(errs, "--dir postgres") {
		t.Fatalf("second session: exit %d %s", code, errs)
	}
	remedy := errs[i+len("contextfold --store '"):]
	remedy = remedy[:strings.IndexByte(remedy, '\'')]
	if !strings.Contains(remedy, "session=i_got_id_demo") {
		t.Errorf("remedy %s: the session is not named after the file", remedy)
	}
	if _, errs, code := cli(t, "", "--store", remedy, "ingest", transcripts[1].path); code != 0 {
		t.Errorf("remedy: %d %s", code, errs)
	}
	out, errs, _ := cli(t, "", "--store", u, "fold", "0", "another turn", "--session", "zz")
	if !strings.Contains(out, "cf_nodes row of step 0") || strings.Contains(out, "cold_nodes/") || !strings.Contains(errs, "session=zz") {
		t.Errorf("fold at an indexed step: %q %q", out, errs)
	}
}

// TestImportSession: import DIR with DIR a project's .contextfold (two
// sessions of the hooks' layout, their ids sharing a start) loads the
// session --session names by its whole id into an empty PostgreSQL
// session, and --json names the session loaded. Without --session the
// directory is refused naming --session and the latest session; a start of
// an id (import fills a database session no command empties again) and an
// ambiguous one are refused naming the whole ids, and leave the database
// session empty. Before, import took no --session, and .contextfold was
// refused as "holds no recall_index.json and no cold_nodes/".
func TestImportSession(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".contextfold")
	const a, b = "0d7c2a41-aaaa-4bbb-8ccc-000000000001", "0d7c9e55-bbbb-4ccc-8ddd-000000000002"
	for i, id := range []string{a, b} {
		s, err := contextfold.Open(filepath.Join(root, "sessions", id), contextfold.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FoldBatch(contextfold.DemoTurns()[:3+i]); err != nil { // a: 3 nodes, b: 4
			t.Fatal(err)
		}
	}
	db := pgSessionURL(t)
	for args, want := range map[string]string{
		"":                "holding 2 sessions (2 from the hooks), not one store: import loads one store; pick its session with --session ID",
		"--session 0d7c9": "takes the session's whole id as contextfold sessions lists it, not the start of one or a proxy session's name alone; here: --session " + b,
		"--session 0d7c":  `session "0d7c" under ` + root + " is ambiguous",
		"--session nope":  `no session "nope"`,
	} {
		_, errs, code := cli(t, "", append([]string{"import", root, "--store", db}, strings.Fields(args)...)...)
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("import %s: %d %q, want %q", args, code, errs, want)
		}
	}
	out, errs, code := cli(t, "", "import", root, "--session", b, "--store", db, "--json")
	var doc struct {
		Session struct{ ID, Source, Dir string } `json:"session"`
		From    string                           `json:"from"`
		Nodes   int                              `json:"nodes"`
	}
	mustJSON(t, out, &doc)
	bStore := filepath.Join(root, "sessions", b)
	if code != 0 || doc.Nodes != 4 || doc.Session.ID != b || doc.Session.Source != "hooks" || doc.Session.Dir != bStore || doc.From != bStore {
		t.Fatalf("import --session %s: %d %q %q", b, code, out, errs)
	}
	if out, _, _ := cli(t, "", "status", "--store", db, "--json"); !strings.Contains(out, `"total": 4`) {
		t.Errorf("the database session after import: %s", out)
	}
}
