package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contextfold/contextfold/backend"
)

// migrations are the schema's versions: migrations[i] takes a database from
// version i to i+1. Append only; never edit a released one.
var migrations = []string{
	// 1: the first schema (see the package documentation).
	`CREATE TABLE cf_sessions (
		id         bigserial PRIMARY KEY,
		name       text NOT NULL UNIQUE,
		generation bigint NOT NULL DEFAULT 1,
		rev        bigint NOT NULL DEFAULT 0,
		header     bytea,
		created_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE cf_entries (
		session_id bigint NOT NULL REFERENCES cf_sessions (id),
		step_id    bigint NOT NULL,
		rev        bigint NOT NULL,
		doc        bytea NOT NULL,
		PRIMARY KEY (session_id, step_id)
	);
	CREATE INDEX cf_entries_rev ON cf_entries (session_id, rev);
	CREATE TABLE cf_nodes (
		session_id bigint NOT NULL REFERENCES cf_sessions (id),
		step_id    bigint NOT NULL,
		data       bytea NOT NULL,
		PRIMARY KEY (session_id, step_id)
	);
	CREATE TABLE cf_files (
		session_id bigint NOT NULL REFERENCES cf_sessions (id),
		name       text NOT NULL,
		data       bytea NOT NULL,
		PRIMARY KEY (session_id, name)
	);
	CREATE TABLE cf_quarantine (
		id         bigserial PRIMARY KEY,
		session_id bigint NOT NULL REFERENCES cf_sessions (id),
		step_id    bigint,
		name       text NOT NULL,
		data       bytea NOT NULL,
		reason     text NOT NULL,
		at         timestamptz NOT NULL DEFAULT now()
	);`,
	// 2: the proxy's shared sessions (proxy/pgsessions): each proxy
	// session's generation and harness state, the row also its lease. IF
	// NOT EXISTS: builds before this migration created it on first use.
	`CREATE TABLE IF NOT EXISTS cf_proxy_sessions (
		session    text PRIMARY KEY,
		generation integer NOT NULL DEFAULT 1,
		version    bigint NOT NULL DEFAULT 0,
		state      bytea,
		updated_at timestamptz NOT NULL DEFAULT now()
	);`,
	// 3: shared derived snapshots (backend.SnapshotStore; the
	// ranked matcher's index snapshot): one per session and kind, its
	// bytes in chunks of SnapshotChunk bytes (stored uncompressed,
	// STORAGE EXTERNAL: the bytes are dense binary, compressing them only
	// costs CPU), tied to the index revision it was derived from.
	`CREATE TABLE cf_snapshots (
		session_id bigint NOT NULL REFERENCES cf_sessions (id),
		kind       text NOT NULL,
		generation bigint NOT NULL,
		rev        bigint NOT NULL,
		size       bigint NOT NULL,
		sha256     text NOT NULL,
		chunks     integer NOT NULL,
		written_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (session_id, kind)
	);
	CREATE TABLE cf_snapshot_chunks (
		session_id bigint NOT NULL,
		kind       text NOT NULL,
		seq        integer NOT NULL,
		data       bytea NOT NULL,
		PRIMARY KEY (session_id, kind, seq),
		FOREIGN KEY (session_id, kind) REFERENCES cf_snapshots (session_id, kind)
	);
	ALTER TABLE cf_snapshot_chunks ALTER COLUMN data SET STORAGE EXTERNAL;`,
	// 4: the conversations' lineages of the proxy's shared sessions
	// (proxy.SharedLineages, proxy/pgsessions): per lineage key (a digest
	// of the API, the client's conversation id and the tools' names; the
	// id itself is never stored), the proxy session ids that joined it,
	// oldest first.
	`CREATE TABLE cf_proxy_lineages (
		key        text PRIMARY KEY,
		sessions   text[] NOT NULL,
		updated_at timestamptz NOT NULL DEFAULT now()
	);`,
}

// SchemaVersion is the schema version this build migrates databases to.
var SchemaVersion = len(migrations)

// migrationLock is the advisory lock key under which migrations run, so
// that processes starting together migrate once.
const migrationLock = 0x6366_7067 // "cfpg"

// Migrate applies the pending schema migrations of the database of rawURL
// and returns the version found and the version now (equal when nothing
// was pending); `contextfold migrate` calls it, and every first use of a
// database (Connect) does too. Migrations run in one transaction under an
// advisory lock: concurrent callers migrate once.
//
// Errors: a database of a newer schema version is refused (ErrNewerSchema);
// connection errors as for Connect.
func Migrate(ctx context.Context, rawURL string) (from, to int, err error) {
	db, err := dial(ctx, rawURL)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	return db.migrate(ctx)
}

// version reads the schema version (0: no schema yet).
func version(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM cf_schema`).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return 0, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

func (db *DB) migrate(ctx context.Context) (from, to int, err error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	v, err := version(ctx, db.pool)
	if err != nil {
		return 0, 0, db.fail("read the schema version", err)
	}
	if v > SchemaVersion {
		return v, v, db.newer(v)
	}
	if v == SchemaVersion {
		return v, v, nil
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return v, v, db.fail("migrate the schema", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return v, v, db.fail("migrate the schema", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS cf_schema (version integer NOT NULL)`); err != nil {
		return v, v, db.fail("migrate the schema", err)
	}
	if v, err = version(ctx, tx); err != nil { // again, under the lock
		return v, v, db.fail("read the schema version", err)
	}
	from = v
	if v > SchemaVersion {
		return v, v, db.newer(v)
	}
	for ; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return from, from, db.fail(fmt.Sprintf("migrate the schema to version %d", v+1), err)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM cf_schema`); err != nil {
		return from, from, db.fail("migrate the schema", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO cf_schema (version) VALUES ($1)`, v); err != nil {
		return from, from, db.fail("migrate the schema", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return from, from, db.fail("migrate the schema", err)
	}
	return from, v, nil
}

func (db *DB) newer(v int) error {
	return db.fail("check the schema version", fmt.Errorf("%w: the database is at schema version %d, this contextfold knows versions up to %d", ErrNewerSchema, v, SchemaVersion))
}

// ConnectToRead opens a pool to the database of rawURL for read-only use: it
// never migrates (never writes a row, so a SELECT-only role works) and
// refuses a database whose schema is not exactly SchemaVersion.
//
// Errors: *backend.Error: no contextfold schema, or an older one (remedy:
// `contextfold migrate`), a newer one (ErrNewerSchema), or as for Connect.
func ConnectToRead(ctx context.Context, rawURL string) (*DB, error) {
	db, err := dial(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	if err := db.CheckSchema(ctx); err != nil {
		db.pool.Close()
		return nil, err
	}
	return db, nil
}

// CheckSchema reports (nil) whether the database's schema version is this
// build's SchemaVersion; it writes nothing. Errors: see ConnectToRead.
func (db *DB) CheckSchema(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	v, err := version(ctx, db.pool)
	switch {
	case err != nil:
		return db.fail("read the schema version", err)
	case v > SchemaVersion:
		return db.newer(v)
	case v == 0:
		return &backend.Error{Location: db.loc, Err: errors.New("the database holds no contextfold schema (read-only commands do not create it)"),
			Remedy: "run `contextfold migrate --store URL` (or fold or ingest into a session, which migrate first), or fix the database name in the URL"}
	case v < SchemaVersion:
		return &backend.Error{Location: db.loc, Err: fmt.Errorf("the database is at schema version %d, this contextfold reads version %d (read-only commands do not migrate)", v, SchemaVersion),
			Remedy: "run `contextfold migrate --store URL` (as a role that may alter the schema)"}
	}
	return nil
}

// CheckSession reports (nil) whether session name has a row in the
// database (a session is created by its first write); it writes nothing.
//
// Errors: *backend.Error naming the session and the sessions the database
// holds (at most 20), with the remedy.
func (db *DB) CheckSession(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	var found bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cf_sessions WHERE name = $1)`, name).Scan(&found); err != nil {
		return db.fail("look up the session", err)
	}
	if found {
		return nil
	}
	rows, err := db.pool.Query(ctx, `SELECT name FROM cf_sessions ORDER BY name LIMIT 21`)
	if err != nil {
		return db.fail("list the sessions", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return db.fail("list the sessions", err)
	}
	have := "the database holds no session yet"
	if len(names) > 20 {
		have = "sessions in the database include: " + strings.Join(names[:20], ", ") + ", …"
	} else if len(names) > 0 {
		have = "sessions in the database: " + strings.Join(names, ", ")
	}
	return &backend.Error{Location: db.loc, Err: fmt.Errorf("no session %q in the database (read-only commands do not create one)", name),
		Remedy: "check ?session= in --store or $CONTEXTFOLD_STORE (" + have + "; contextfold sessions lists them all); a session is created by its first fold or ingest"}
}

// SessionInfo is one session of a database: its name (the ?session= of a
// store URL), the number of recall index entries it holds (steps indexed),
// and its index generation and revision (backend.Revision).
type SessionInfo struct {
	Name       string
	Entries    int64
	Generation int64
	Rev        int64
}

// Sessions lists every session of the database, by name; it writes
// nothing (a SELECT-only role may call it). Errors: *backend.Error naming
// the database (password redacted) and the remedy.
func (db *DB) Sessions(ctx context.Context) ([]SessionInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT s.name, (SELECT count(*) FROM cf_entries e WHERE e.session_id = s.id), s.generation, s.rev
		FROM cf_sessions s ORDER BY s.name`)
	if err != nil {
		return nil, db.fail("list the sessions", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SessionInfo, error) {
		var si SessionInfo
		err := r.Scan(&si.Name, &si.Entries, &si.Generation, &si.Rev)
		return si, err
	})
	if err != nil {
		return nil, db.fail("list the sessions", err)
	}
	return out, nil
}
