// Package pgstore keeps contextfold stores in PostgreSQL: the
// second implementation of the storage seam contextfold.Backend, so that
// several proxy replicas (or hosts) share every session. Each session is one
// store; the protocol logic (hashes, verification, hydration policy,
// matching, validate, repair) is the core's, unchanged.
//
// What the database holds, per session (schema version SchemaVersion,
// internal/pgbackend/migrations.go):
//
//   - cf_nodes: each cold node's exact file bytes (the pretty JSON the
//     directory store writes), verified by the core against artifact_sha256
//     and the index on every hydrate and validate: a row changed behind our
//     back is an integrity error, and repair moves it to cf_quarantine
//     (never deletes it);
//   - cf_entries: the recall index, one canonical JSON entry document a
//     step, each stamped with the revision that wrote it;
//   - cf_sessions: the index header, and the session's revision and
//     generation;
//   - cf_files: the store files (hydration policy, settings, eviction log,
//     repair log, policy history), byte for byte;
//   - cf_quarantine: what repair (or a fold meeting an orphan) took out of
//     service;
//   - cf_snapshots, cf_snapshot_chunks (schema version 3): derived
//     snapshots shared by every replica (backend.SnapshotStore), today the
//     ranked matcher's index snapshot, in 1 MiB chunks, with the index
//     revision it covers and its SHA-256; never trusted (match/ranked
//     verifies it against the index and rebuilds on any mismatch) and
//     never written inside a fold's transaction (match/ranked/shared.go
//     says when it is written);
//   - cf_proxy_sessions (schema version 2) and cf_proxy_lineages (schema
//     version 4): the proxy's shared sessions (proxy/pgsessions), not the
//     store's.
//
// Writes are transactions. The store lock is the session row itself: a
// writer's first statement is an upsert of its cf_sessions row that bumps
// the revision, which takes the row's lock until COMMIT or ROLLBACK (or the
// connection's end). A row lock rather than an advisory lock because it is
// tied to the transaction (released by the server whatever happens to the
// client), it needs no lock-key scheme, and the same statement reserves the
// revision that the transaction's entries carry, so revisions are assigned
// in commit order. A fold is therefore visible with its index entry or not
// at all, and concurrent folds from any number of processes or hosts are
// serialised per session and never lose an entry; different sessions never
// wait for each other.
//
// A warm replica learns of other replicas' folds without re-reading the
// index: it keeps the revision it has read, and each read of the index is
// one statement returning the session's revision and only the entries
// written after it (cf_entries_rev index). A repair or import replaces the
// index whole and bumps the generation, after which readers read it whole.
//
// Tested with PostgreSQL 15. URLs: postgres://USER:PASSWORD@HOST:PORT/DB?session=NAME
// (or postgresql://; every other parameter is pgx's, e.g. sslmode,
// pool_max_conns). The password is never printed: Location and every error
// carry the URL without it.
package pgstore

import (
	"context"
	"errors"
	"sync"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/backend"
	"github.com/contextfold/contextfold/internal/pgbackend"
)

// DefaultSession is the session a URL without ?session= names.
const DefaultSession = pgbackend.DefaultSession

// SchemaVersion is the schema version this build migrates databases to.
var SchemaVersion = pgbackend.SchemaVersion

// ErrNewerSchema is matched (errors.Is) by the error of a database whose
// schema version is newer than this build knows.
var ErrNewerSchema = pgbackend.ErrNewerSchema

// IsURL reports whether s is a PostgreSQL store URL (postgres:// or
// postgresql://), as --store and CONTEXTFOLD_STORE take.
func IsURL(s string) bool { return pgbackend.IsURL(s) }

// Redact returns the URL with its password removed (every other parameter
// kept), for messages and logs.
func Redact(rawURL string) string { return pgbackend.Redact(rawURL) }

// SessionName returns the session a store URL names (DefaultSession when
// it has no ?session=).
func SessionName(rawURL string) (string, error) {
	s, _, err := pgbackend.SplitURL(rawURL)
	return s, storeErr(err)
}

// DB is a connection pool to one PostgreSQL database whose schema is
// migrated; it serves any number of sessions. Safe for concurrent use.
type DB struct{ db *pgbackend.DB }

// Connect opens a pool to the database of rawURL (its ?session= parameter
// is ignored), checks that the server is reachable and accepts the
// credentials, and applies any pending schema migration (Migrate).
//
// Errors: *contextfold.StoreFileError naming the database (password
// redacted), the problem (unreachable, wrong credentials, no such database,
// a newer schema version: errors.Is(err, ErrNewerSchema)) and the remedy.
func Connect(ctx context.Context, rawURL string) (*DB, error) {
	db, err := pgbackend.Connect(ctx, rawURL)
	if err != nil {
		return nil, storeErr(err)
	}
	return &DB{db}, nil
}

// Close closes the pool; stores of its sessions must not be used after.
func (d *DB) Close() { d.db.Close() }

// Location is the database URL without password and session.
func (d *DB) Location() string { return d.db.Location() }

// Session returns the store of session name in this database: a
// *contextfold.Store on the session's backend (contextfold.OpenBackend).
// The session's rows are created by its first write; a session that does
// not exist reads as an empty store. opts is as for contextfold.Open (the
// session name is not a cold node's session_id: folds write the same bytes
// as into a directory). Open one Store per session and process and
// share it: its in-memory index stays warm and is brought up to date by
// reading only the entries other writers committed since.
func (d *DB) Session(name string, opts contextfold.Options) (*contextfold.Store, error) {
	if name == "" {
		return nil, &contextfold.StoreFileError{File: d.db.Location(), Err: errors.New("empty session name"), Remedy: "give ?session=NAME"}
	}
	return contextfold.OpenBackend(d.db.Backend(name), opts)
}

var registry = struct {
	sync.Mutex
	m map[string]*regDB
}{m: map[string]*regDB{}}

// regDB is a process-wide pool, and whether its schema was migrated (a
// pool opened to read only is migrated by the first OpenURL that writes).
type regDB struct {
	db       *DB
	migrated bool
}

// OpenURL returns the store a URL names: the database of
// postgres://USER:PASSWORD@HOST:PORT/DB and the session of ?session=NAME
// (DefaultSession when absent). This is the constructor the CLI (--store,
// CONTEXTFOLD_STORE) and the proxy (one session per proxy session) use.
// Pools are shared process-wide by connection string (the URL without
// ?session=), so OpenURL per session is cheap after the first call for a
// database, which connects and migrates its schema (Connect). Safe for
// concurrent use.
//
// Errors: see Connect; a URL that repeats session=, names a session outside
// the allowed characters (letters, digits, '.', '_', '-', '/'; at most 128)
// or whose query does not parse is refused.
func OpenURL(rawURL string, opts contextfold.Options) (*contextfold.Store, error) {
	name, key, err := pgbackend.SplitURL(rawURL)
	if err != nil {
		return nil, storeErr(err)
	}
	db, err := shared(key, true)
	if err != nil {
		return nil, err
	}
	return db.Session(name, opts)
}

// OpenURLToRead is OpenURL for read-only commands (status, validate, scan,
// recall, hydrate, export, ui): it writes nothing, so it never migrates
// (a SELECT-only role can read a migrated database), and it refuses a
// database whose schema is missing or older (remedy: contextfold migrate)
// and a session that does not exist (naming the sessions there), instead
// of reading them as an empty store. Safe for concurrent use.
//
// Errors: *contextfold.StoreFileError as described, or as for OpenURL.
func OpenURLToRead(rawURL string, opts contextfold.Options) (*contextfold.Store, error) {
	name, key, err := pgbackend.SplitURL(rawURL)
	if err != nil {
		return nil, storeErr(err)
	}
	db, err := shared(key, false)
	if err != nil {
		return nil, err
	}
	if err := db.db.CheckSession(context.Background(), name); err != nil {
		return nil, storeErr(err)
	}
	return db.Session(name, opts)
}

// SessionInfo describes one session of a database (Sessions).
type SessionInfo = pgbackend.SessionInfo

// Sessions lists the sessions of the database rawURL names (its ?session=
// is ignored), by name, with their index entry counts. It never migrates
// and writes nothing: a database without this build's schema is refused
// with the remedy (contextfold migrate). Errors name the database with its
// password redacted.
func Sessions(rawURL string) ([]SessionInfo, error) {
	_, key, err := pgbackend.SplitURL(rawURL)
	if err != nil {
		return nil, storeErr(err)
	}
	db, err := shared(key, false)
	if err != nil {
		return nil, err
	}
	out, err := db.db.Sessions(context.Background())
	return out, storeErr(err)
}

// shared returns the process-wide DB of a connection string, migrated when
// migrate is set, else with its schema checked (pgbackend.ConnectToRead).
func shared(key string, migrate bool) (*DB, error) {
	registry.Lock()
	defer registry.Unlock()
	ctx := context.Background()
	if r := registry.m[key]; r != nil {
		if migrate && !r.migrated {
			if err := r.db.db.Migrate(ctx); err != nil {
				return nil, storeErr(err)
			}
			r.migrated = true
		}
		return r.db, nil
	}
	var db *DB
	if migrate {
		d, err := Connect(ctx, key)
		if err != nil {
			return nil, err
		}
		db = d
	} else {
		d, err := pgbackend.ConnectToRead(ctx, key)
		if err != nil {
			return nil, storeErr(err)
		}
		db = &DB{d}
	}
	registry.m[key] = &regDB{db: db, migrated: migrate}
	return db, nil
}

// Migrate applies the pending schema migrations of the database of rawURL
// and returns the version found and the version now (equal when nothing was
// pending). Every first use of a database does the same; `contextfold
// migrate` calls it on its own. Migrations run in one transaction under an
// advisory lock, so concurrent callers migrate once.
//
// Errors: a newer schema version is refused (errors.Is(err,
// ErrNewerSchema)); connection errors as for Connect.
func Migrate(ctx context.Context, rawURL string) (from, to int, err error) {
	from, to, err = pgbackend.Migrate(ctx, rawURL)
	return from, to, storeErr(err)
}

// storeErr reports a backend error as the core does.
func storeErr(err error) error {
	var be *backend.Error
	if errors.As(err, &be) {
		return &contextfold.StoreFileError{File: be.Location, Err: be.Err, Remedy: be.Remedy}
	}
	return err
}
