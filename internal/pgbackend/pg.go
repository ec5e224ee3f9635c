// Package pgbackend is the PostgreSQL implementation of the storage seam
// (package backend); package pgstore is its public face (store URLs,
// *backend.Store per session), and documents the schema and the
// locking. It imports nothing of the core, so that the core's own tests can
// run against it.
package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contextfold/contextfold/backend"
)

// OpTimeout bounds one database operation (a read, or a write transaction's
// statement); a write transaction waiting for the session lock waits at most
// LockTimeout.
var (
	OpTimeout   = 60 * time.Second
	LockTimeout = 5 * time.Minute
)

// IsURL reports whether s is a PostgreSQL store URL (postgres:// or
// postgresql://), as --store and CONTEXTFOLD_STORE take.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// secretParams are the connection parameters pgx accepts whose values are
// credentials: never printed (passfile, a path, is shown).
var secretParams = []string{"password", "sslpassword"}

// Redact returns the store URL without its credentials, for messages and
// logs: the userinfo password (postgres://USER:PASSWORD@…) and the
// password= and sslpassword= parameters of a URL's query are removed (every
// other parameter kept); in a key=value connection string (host=… password=…)
// their values become xxxxx. A URL that does not parse is reduced to its
// scheme. Every place that prints a store URL prints it through Redact.
func Redact(raw string) string {
	if !strings.Contains(raw, "://") {
		return redactDSN(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw[:strings.Index(raw, "://")+3] + "…"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if u.RawQuery != "" {
		q := u.Query() // pairs that do not parse are dropped
		for _, k := range secretParams {
			q.Del(k)
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// dsnSecret matches a credential in a key=value connection string: the key
// and its value, quoted ('…', backslash escapes) or bare.
var dsnSecret = regexp.MustCompile(`(?i)\b(password|sslpassword)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s]*)`)

// redactDSN replaces the credential values of a key=value connection string.
func redactDSN(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return "(empty store URL)"
	}
	return dsnSecret.ReplaceAllString(raw, "${1}${2}xxxxx")
}

// urlSecrets returns the credentials a parsed store URL carries (userinfo
// password, password= and sslpassword= parameter values), to scrub from
// error texts.
func urlSecrets(u *url.URL) []string {
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw)
	}
	q := u.Query()
	for _, k := range secretParams {
		for _, v := range q[k] {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// Scrub returns msg with every credential of the store URL rawURL (see
// Redact; also percent-encoded) replaced by xxxxx, for error texts that may
// quote the connection string.
func Scrub(msg, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return msg
	}
	return scrub(msg, urlSecrets(u))
}

func scrub(msg string, secrets []string) string {
	for _, pw := range secrets {
		for _, v := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
			msg = strings.ReplaceAll(msg, v, "xxxxx")
		}
	}
	return msg
}

// DB is a connection pool to one PostgreSQL database whose schema is
// migrated. It serves any number of sessions (Session) and is safe for
// concurrent use.
type DB struct {
	pool    *pgxpool.Pool
	loc     string   // the URL without credentials and session (Redact)
	secrets []string // credentials of the URL, to scrub from error texts

	mu  sync.Mutex
	ids map[string]int64 // session name → id, once the row exists

	// writers bounds the write transactions open at once to half the
	// pool: a write transaction holds one connection while the Store reads
	// through the pool (a second one), so more writers than half the pool
	// could each hold one and wait for another, forever.
	writers chan struct{}
}

// Connect opens a pool to the database of rawURL (its ?session= parameter is
// ignored), checks that it is reachable and accepts the credentials, and
// applies any pending schema migration (Migrate).
//
// Errors: *backend.Error naming the database (password
// redacted), the problem (unreachable, wrong credentials, no such database,
// a newer schema version) and the remedy.
func Connect(ctx context.Context, rawURL string) (*DB, error) {
	db, err := dial(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	if _, _, err := db.migrate(ctx); err != nil {
		db.pool.Close()
		return nil, err
	}
	return db, nil
}

// dial opens the pool and pings the server.
func dial(ctx context.Context, rawURL string) (*DB, error) {
	if !IsURL(rawURL) {
		return nil, &backend.Error{Location: Redact(rawURL), Err: errors.New("not a PostgreSQL URL"), Remedy: "write postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME"}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &backend.Error{Location: Redact(rawURL), Err: errors.New("the URL does not parse"), Remedy: "write postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME (percent-encode special characters in the password)"}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, &backend.Error{Location: Redact(rawURL), Err: fmt.Errorf("the URL's query does not parse: %s", Scrub(err.Error(), rawURL)), Remedy: "separate parameters with '&' (not ';') and percent-encode special characters"}
	}
	q.Del("session")
	u.RawQuery = q.Encode()
	db := &DB{secrets: urlSecrets(u), ids: map[string]int64{}}
	db.loc = Redact(u.String())
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, db.fail("parse the URL", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, db.fail("connect", err)
	}
	db.pool = pool
	db.writers = make(chan struct{}, max(1, int(cfg.MaxConns)/2))
	pctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, db.fail("connect", err)
	}
	return db, nil
}

// Migrate applies any pending schema migration to db's database (see the
// package-level Migrate), for a DB opened by ConnectToRead.
func (db *DB) Migrate(ctx context.Context) error {
	_, _, err := db.migrate(ctx)
	return err
}

// Close closes the pool. Stores of its sessions must not be used after.
func (db *DB) Close() { db.pool.Close() }

// Location is the database URL without password (and without session).
func (db *DB) Location() string { return db.loc }

// Pool returns the underlying pgx pool (tests, tools).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Backend returns the backend of session name in this database (the rows
// are created by its first write; a session that does not exist reads as an
// empty store). Safe for concurrent use.
func (db *DB) Backend(name string) backend.Backend { return &session{db: db, name: name} }

// DefaultSession is the session a URL without ?session= names.
const DefaultSession = "default"

// SplitURL returns the session a store URL names (DefaultSession when it has
// none) and the URL without it (the database's connection string).
func SplitURL(rawURL string) (session, rest string, err error) {
	if !IsURL(rawURL) {
		return "", "", &backend.Error{Location: Redact(rawURL), Err: errors.New("not a PostgreSQL URL"), Remedy: "write postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME"}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", &backend.Error{Location: Redact(rawURL), Err: errors.New("the URL does not parse"), Remedy: "write postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME (percent-encode special characters in the password)"}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// url.Query would drop the pair silently (a ';' or a bad %-escape),
		// and with it perhaps the session.
		return "", "", &backend.Error{Location: Redact(rawURL), Err: fmt.Errorf("the URL's query does not parse: %s", Scrub(err.Error(), rawURL)), Remedy: "separate parameters with '&' (not ';') and percent-encode special characters; " + SessionNameRule}
	}
	switch vs := q["session"]; {
	case len(vs) > 1:
		return "", "", &backend.Error{Location: Redact(rawURL), Err: fmt.Errorf("the URL names %d sessions (session= is repeated)", len(vs)), Remedy: "give ?session=NAME once"}
	case len(vs) == 0 || vs[0] == "":
		session = DefaultSession
	default:
		session = vs[0]
		if !ValidSessionName(session) {
			return "", "", &backend.Error{Location: Redact(rawURL), Err: fmt.Errorf("session name %q is not allowed", clip(session)), Remedy: SessionNameRule}
		}
	}
	q.Del("session")
	u.RawQuery = q.Encode()
	return session, u.String(), nil
}

// SessionNameRule says which session names a store URL may give.
const SessionNameRule = "a session name (?session=NAME) is 1 to 128 characters: ASCII letters, digits, '.', '_', '-' and '/', starting with a letter or digit"

var validSessionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)

// ValidSessionName reports whether name follows SessionNameRule (the
// proxy's session ids, and their "ID/gN" generations, all do).
func ValidSessionName(name string) bool { return validSessionName.MatchString(name) }

// clip shortens a name quoted in an error to 40 bytes.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ErrNewerSchema is matched (errors.Is) by the error of a database whose
// schema version is newer than this build knows.
var ErrNewerSchema = errors.New("database schema is newer than this contextfold")

// fail turns a pgx error into a *backend.Error naming the
// database, the operation, the problem and its remedy, with the password
// scrubbed from any text.
func (db *DB) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	var sf *backend.Error
	if errors.As(err, &sf) {
		return err
	}
	remedy := "check the database server and the URL (--store or CONTEXTFOLD_STORE), then run the command again"
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	switch {
	case errors.Is(err, ErrNewerSchema):
		remedy = "upgrade contextfold: this database was migrated by a newer version"
	case errors.As(err, &pe):
		switch {
		case pe.Code == "28P01" || pe.Code == "28000":
			remedy = "wrong credentials: check the user and password in the URL (or ~/.pgpass, PGPASSWORD)"
		case pe.Code == "3D000":
			remedy = "the database does not exist: create it (createdb) or fix the database name in the URL"
		case pe.Code == "42501":
			remedy = "the user lacks a privilege: grant it CREATE and USAGE on the database's schema, or use the owner"
		case pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03":
			remedy = "the server ended the connection: nothing of this operation was written (it is one transaction); run the command again once the server is up"
		case strings.HasPrefix(pe.Code, "08"):
			remedy = "the connection to the database failed: nothing of this operation was written; run the command again"
		case pe.Code == "55P03" || pe.Code == "57014":
			remedy = "timed out waiting for the session's write lock or a statement: another writer holds it; try again"
		}
	case errors.As(err, &ce):
		msg := ce.Error()
		switch {
		case strings.Contains(msg, "password authentication failed") || strings.Contains(msg, "SASL") || strings.Contains(msg, "28P01"):
			remedy = "wrong credentials: check the user and password in the URL (or ~/.pgpass, PGPASSWORD)"
		case strings.Contains(msg, "does not exist") && strings.Contains(msg, "database"):
			remedy = "the database does not exist: create it (createdb) or fix the database name in the URL"
		default:
			remedy = "the database is unreachable: check the host and port in the URL and that the server is running"
		}
	case pgconn.SafeToRetry(err) || errors.Is(err, context.DeadlineExceeded) || isConnLost(err):
		remedy = "the connection to the database was lost: nothing of this operation was written (it is one transaction); run the command again"
	}
	msg := err.Error()
	msg = scrub(msg, db.secrets)
	return &backend.Error{Location: db.loc, Err: &opError{msg: op + ": " + msg, err: err}, Remedy: remedy}
}

// opError is a database error as reported: its text names the operation and
// holds no password; Unwrap gives the driver's error.
type opError struct {
	msg string
	err error
}

func (e *opError) Error() string { return e.msg }
func (e *opError) Unwrap() error { return e.err }

// isConnLost reports a connection that closed under an operation.
func isConnLost(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") || strings.Contains(msg, "EOF")
}

// session is the backend.Backend of one session.
type session struct {
	db   *DB
	name string
}

var _ backend.Backend = (*session)(nil)

func (s *session) Location() string {
	u, err := url.Parse(s.db.loc)
	if err != nil {
		return s.db.loc
	}
	q := u.Query()
	q.Set("session", s.name)
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *session) StoreName() string { return backend.DefaultStoreName }

func (s *session) fail(op string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	sf := s.db.fail(op, err)
	if e, ok := sf.(*backend.Error); ok && e.Location == s.db.loc {
		e.Location = s.Location()
	}
	return sf
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), OpTimeout)
}

// id returns the session's row id, 0 when the row does not exist yet.
func (s *session) id(ctx context.Context) (int64, error) {
	s.db.mu.Lock()
	id, ok := s.db.ids[s.name]
	s.db.mu.Unlock()
	if ok {
		return id, nil
	}
	err := s.db.pool.QueryRow(ctx, `SELECT id FROM cf_sessions WHERE name = $1`, s.name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s.remember(id)
	return id, nil
}

func (s *session) remember(id int64) {
	s.db.mu.Lock()
	s.db.ids[s.name] = id
	s.db.mu.Unlock()
}

// ReadIndex implements backend.Backend: a delta is one statement (the
// session's revision and the entries written after since); a full read is
// one REPEATABLE READ snapshot.
func (s *session) ReadIndex(since backend.Revision) (*backend.IndexDelta, error) {
	ctx, cancel := opCtx()
	defer cancel()
	id, err := s.id(ctx)
	if err != nil {
		return nil, s.fail("read the recall index", err)
	}
	if id == 0 {
		return &backend.IndexDelta{Full: true}, nil
	}
	if since.Generation != 0 {
		rows, err := s.db.pool.Query(ctx, `SELECT s.generation, s.rev, s.header, e.step_id, e.doc
			FROM cf_sessions s LEFT JOIN cf_entries e ON e.session_id = s.id AND e.rev > $2
			WHERE s.id = $1 ORDER BY e.step_id`, id, since.Seq)
		if err != nil {
			return nil, s.fail("read the recall index", err)
		}
		d := &backend.IndexDelta{}
		for rows.Next() {
			var step *int64
			var doc []byte
			if err := rows.Scan(&d.Rev.Generation, &d.Rev.Seq, &d.Header, &step, &doc); err != nil {
				rows.Close()
				return nil, s.fail("read the recall index", err)
			}
			if step != nil {
				d.Entries = append(d.Entries, backend.StoredEntry{StepID: int(*step), Doc: doc})
			}
		}
		if err := rows.Err(); err != nil {
			return nil, s.fail("read the recall index", err)
		}
		if d.Rev.Generation == since.Generation {
			return d, nil
		}
		if d.Rev.Generation == 0 {
			return &backend.IndexDelta{Full: true}, nil
		}
		// Replaced whole since: read it whole.
	}
	tx, err := s.db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.fail("read the recall index", err)
	}
	defer tx.Rollback(ctx)
	d := &backend.IndexDelta{Full: true}
	err = tx.QueryRow(ctx, `SELECT generation, rev, header FROM cf_sessions WHERE id = $1`, id).Scan(&d.Rev.Generation, &d.Rev.Seq, &d.Header)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, nil // not committed yet: an empty store
	}
	if err != nil {
		return nil, s.fail("read the recall index", err)
	}
	rows, err := tx.Query(ctx, `SELECT step_id, doc FROM cf_entries WHERE session_id = $1 ORDER BY step_id`, id)
	if err != nil {
		return nil, s.fail("read the recall index", err)
	}
	for rows.Next() {
		var e backend.StoredEntry
		var step int64
		if err := rows.Scan(&step, &e.Doc); err != nil {
			rows.Close()
			return nil, s.fail("read the recall index", err)
		}
		e.StepID = int(step)
		d.Entries = append(d.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read the recall index", err)
	}
	return d, nil
}

// notExist is the error of a missing node or file.
func notExist(what string) error { return fmt.Errorf("%s: %w", what, fs.ErrNotExist) }

func (s *session) ReadNode(step int) ([]byte, error) {
	ctx, cancel := opCtx()
	defer cancel()
	id, err := s.id(ctx)
	if err != nil {
		return nil, s.fail("read a cold node", err)
	}
	var data []byte
	err = s.db.pool.QueryRow(ctx, `SELECT data FROM cf_nodes WHERE session_id = $1 AND step_id = $2`, id, int64(step)).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notExist(fmt.Sprintf("cold node %d", step))
	}
	if err != nil {
		return nil, s.fail("read a cold node", err)
	}
	return data, nil
}

// HasNodes returns those of steps that have cold node bytes, with one
// query (backend.NodeChecker).
func (s *session) HasNodes(steps []int) ([]int, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	ctx, cancel := opCtx()
	defer cancel()
	id, err := s.id(ctx)
	if err != nil {
		return nil, s.fail("list the cold nodes", err)
	}
	want := make([]int64, len(steps))
	for i, st := range steps {
		want[i] = int64(st)
	}
	rows, err := s.db.pool.Query(ctx, `SELECT step_id FROM cf_nodes WHERE session_id = $1 AND step_id = ANY($2::bigint[]) ORDER BY step_id`, id, want)
	if err != nil {
		return nil, s.fail("list the cold nodes", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int, error) {
		var st int64
		err := r.Scan(&st)
		return int(st), err
	})
	if err != nil {
		return nil, s.fail("list the cold nodes", err)
	}
	return out, nil
}

func (s *session) NodeSteps() ([]int, error) {
	ctx, cancel := opCtx()
	defer cancel()
	id, err := s.id(ctx)
	if err != nil {
		return nil, s.fail("list the cold nodes", err)
	}
	rows, err := s.db.pool.Query(ctx, `SELECT step_id FROM cf_nodes WHERE session_id = $1 ORDER BY step_id`, id)
	if err != nil {
		return nil, s.fail("list the cold nodes", err)
	}
	steps, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, s.fail("list the cold nodes", err)
	}
	out := make([]int, len(steps))
	for i, v := range steps {
		out[i] = int(v)
	}
	return out, nil
}

func (s *session) ReadFile(name string) ([]byte, error) {
	ctx, cancel := opCtx()
	defer cancel()
	id, err := s.id(ctx)
	if err != nil {
		return nil, s.fail("read "+name, err)
	}
	var data []byte
	err = s.db.pool.QueryRow(ctx, `SELECT data FROM cf_files WHERE session_id = $1 AND name = $2`, id, name).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notExist(name)
	}
	if err != nil {
		return nil, s.fail("read "+name, err)
	}
	return data, nil
}

// Begin implements backend.Backend: the upsert of the session row takes
// its lock (waiting for any other writer of the session) and reserves the
// transaction's revision.
func (s *session) Begin() (backend.Tx, error) {
	wctx, wcancel := context.WithTimeout(context.Background(), LockTimeout)
	select {
	case s.db.writers <- struct{}{}:
		wcancel()
	case <-wctx.Done():
		wcancel()
		return nil, s.fail("begin a write transaction", errors.New("too many write transactions of this process waiting (raise pool_max_conns in the URL)"))
	}
	var once sync.Once
	release := func() { once.Do(func() { <-s.db.writers }) }
	ctx, cancel := opCtx()
	tx, err := s.db.pool.Begin(ctx)
	cancel()
	if err != nil {
		release()
		return nil, s.fail("begin a write transaction", err)
	}
	t := &writeTx{s: s, tx: tx, release: release}
	lctx, lcancel := context.WithTimeout(context.Background(), LockTimeout)
	defer lcancel()
	err = tx.QueryRow(lctx, `INSERT INTO cf_sessions AS s (name, rev) VALUES ($1, 1)
		ON CONFLICT (name) DO UPDATE SET rev = s.rev + 1
		RETURNING id, generation, rev`, s.name).Scan(&t.id, &t.rev.Generation, &t.rev.Seq)
	if err != nil {
		t.Rollback()
		return nil, s.fail("take the session's write lock", err)
	}
	return t, nil
}

// writeTx is a session's write transaction. Each statement is bounded by
// OpTimeout (the transaction itself is not: a long ingest is one
// transaction).
type writeTx struct {
	s       *session
	tx      pgx.Tx
	id      int64
	rev     backend.Revision
	release func() // gives back the DB.writers slot (once)

	nodes     pgx.Batch // queued node inserts (WriteNode)
	nodeSteps []int
	nodeBytes int
}

func (t *writeTx) Rev() backend.Revision { return t.rev }

func (t *writeTx) exec(sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.flushNodes(); err != nil {
		return pgconn.CommandTag{}, err
	}
	ctx, cancel := opCtx()
	defer cancel()
	return t.tx.Exec(ctx, sql, args...)
}

// queryRow runs a one-row query in the transaction; Scan reads it.
func (t *writeTx) queryRow(sql string, args ...any) rowScanner {
	return rowScanner{t: t, sql: sql, args: args}
}

type rowScanner struct {
	t    *writeTx
	sql  string
	args []any
}

func (r rowScanner) Scan(dest ...any) error {
	if err := r.t.flushNodes(); err != nil {
		return err
	}
	ctx, cancel := opCtx()
	defer cancel()
	return r.t.tx.QueryRow(ctx, r.sql, r.args...).Scan(dest...)
}

func (t *writeTx) fail(op string, err error) error { return t.s.fail(op, err) }

// WriteNode queues the node's insert: queued inserts are sent together
// (pipelined) before the transaction's next other statement, or once
// nodeBatchRows of them or nodeBatchBytes are queued, so that an import or a
// long ingest does not pay a round trip per node. An insert's error is
// reported by the call that sends it.
func (t *writeTx) WriteNode(step int, data []byte) error {
	t.nodes.Queue(`INSERT INTO cf_nodes (session_id, step_id, data) VALUES ($1, $2, $3)`, t.id, int64(step), data)
	t.nodeSteps = append(t.nodeSteps, step)
	t.nodeBytes += len(data)
	if len(t.nodeSteps) >= nodeBatchRows || t.nodeBytes >= nodeBatchBytes {
		return t.flushNodes()
	}
	return nil
}

// Bounds of the queued node inserts of a write transaction.
const (
	nodeBatchRows  = 256
	nodeBatchBytes = 8 << 20
)

// flushNodes sends the queued node inserts.
func (t *writeTx) flushNodes() error {
	if len(t.nodeSteps) == 0 {
		return nil
	}
	steps := t.nodeSteps
	b := t.nodes
	t.nodes, t.nodeSteps, t.nodeBytes = pgx.Batch{}, nil, 0
	ctx, cancel := opCtx()
	defer cancel()
	res := t.tx.SendBatch(ctx, &b)
	var first error
	for _, step := range steps {
		_, err := res.Exec()
		if err == nil || first != nil {
			continue
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			first = &backend.Error{Location: t.s.Location(), Err: fmt.Errorf("step %d already has a cold node", step),
				Remedy: "run 'contextfold repair --apply' to quarantine the unindexed node, then fold again"}
		} else {
			first = t.fail(fmt.Sprintf("write the cold node of step %d", step), err)
		}
	}
	if err := res.Close(); err != nil && first == nil {
		first = t.fail("write the cold nodes", err)
	}
	return first
}

func (t *writeTx) WriteFile(name string, data []byte) error {
	_, err := t.exec(`INSERT INTO cf_files (session_id, name, data) VALUES ($1, $2, $3)
		ON CONFLICT (session_id, name) DO UPDATE SET data = excluded.data`, t.id, name, data)
	if err != nil {
		return t.fail("write "+name, err)
	}
	return nil
}

// insertEntries inserts or replaces entries ($3 steps, $4 documents) with
// the transaction's revision $2.
const insertEntries = `INSERT INTO cf_entries (session_id, step_id, rev, doc)
	SELECT $1, s, $2, d FROM unnest($3::bigint[], $4::bytea[]) AS u(s, d)
	ON CONFLICT (session_id, step_id) DO UPDATE SET doc = excluded.doc, rev = excluded.rev`

// entryChunk bounds the rows of one insert statement.
const entryChunk = 2000

func (t *writeTx) putEntries(entries []backend.StoredEntry) error {
	for len(entries) > 0 {
		n := min(len(entries), entryChunk)
		steps := make([]int64, n)
		docs := make([][]byte, n)
		for i, e := range entries[:n] {
			steps[i], docs[i] = int64(e.StepID), e.Doc
		}
		_, err := t.exec(insertEntries, t.id, t.rev.Seq, steps, docs)
		if err != nil {
			return t.fail("write the recall index", err)
		}
		entries = entries[n:]
	}
	return nil
}

func (t *writeTx) PutEntries(header []byte, entries []backend.StoredEntry) error {
	if header != nil && len(entries) <= entryChunk {
		// One round trip: the header and the entries in one batch.
		steps := make([]int64, len(entries))
		docs := make([][]byte, len(entries))
		for i, e := range entries {
			steps[i], docs[i] = int64(e.StepID), e.Doc
		}
		if err := t.flushNodes(); err != nil {
			return err
		}
		var b pgx.Batch
		b.Queue(`UPDATE cf_sessions SET header = $2 WHERE id = $1 AND header IS DISTINCT FROM $2`, t.id, header)
		b.Queue(insertEntries, t.id, t.rev.Seq, steps, docs)
		ctx, cancel := opCtx()
		defer cancel()
		if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
			return t.fail("write the recall index", err)
		}
		return nil
	}
	if header != nil {
		if _, err := t.exec(`UPDATE cf_sessions SET header = $2 WHERE id = $1 AND header IS DISTINCT FROM $2`, t.id, header); err != nil {
			return t.fail("write the recall index", err)
		}
	}
	return t.putEntries(entries)
}

func (t *writeTx) ReplaceIndex(header []byte, entries []backend.StoredEntry) error {
	if _, err := t.exec(`DELETE FROM cf_entries WHERE session_id = $1`, t.id); err != nil {
		return t.fail("replace the recall index", err)
	}
	if err := t.queryRow(`UPDATE cf_sessions SET header = $2, generation = generation + 1 WHERE id = $1 RETURNING generation`,
		t.id, header).Scan(&t.rev.Generation); err != nil {
		return t.fail("replace the recall index", err)
	}
	return t.putEntries(entries)
}

func (t *writeTx) QuarantineNode(step int, name, reason string) error {
	tag, err := t.exec(`WITH m AS (DELETE FROM cf_nodes WHERE session_id = $1 AND step_id = $2 RETURNING data)
		INSERT INTO cf_quarantine (session_id, step_id, name, data, reason) SELECT $1, $2, $3, data, $4 FROM m`,
		t.id, int64(step), name, reason)
	if err != nil {
		return t.fail(fmt.Sprintf("quarantine the cold node of step %d", step), err)
	}
	_ = tag // a node already gone has nothing to keep
	return nil
}

func (t *writeTx) Quarantine(name string, data []byte, reason string) error {
	if _, err := t.exec(`INSERT INTO cf_quarantine (session_id, name, data, reason) VALUES ($1, $2, $3, $4)`,
		t.id, name, data, reason); err != nil {
		return t.fail("write the quarantine", err)
	}
	return nil
}

func (t *writeTx) Commit() error {
	if err := t.flushNodes(); err != nil {
		t.Rollback()
		return err
	}
	defer t.release()
	ctx, cancel := opCtx()
	defer cancel()
	if err := t.tx.Commit(ctx); err != nil {
		return t.fail("commit", err)
	}
	t.s.remember(t.id) // the session row exists now
	return nil
}

func (t *writeTx) Rollback() error {
	defer t.release()
	ctx, cancel := opCtx()
	defer cancel()
	err := t.tx.Rollback(ctx)
	if err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return t.fail("roll back", err)
	}
	return nil
}

// SessionOf returns the database and session name of a backend made by
// DB.Backend (tests and tools that inspect or alter rows directly).
func SessionOf(b backend.Backend) (db *DB, name string, ok bool) {
	s, ok := b.(*session)
	if !ok {
		return nil, "", false
	}
	return s.db, s.name, true
}
