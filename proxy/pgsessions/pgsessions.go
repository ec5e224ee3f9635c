// Package pgsessions is the PostgreSQL implementation of proxy.SharedSessions:
// it lets several `contextfold proxy --store postgres://…` replicas serve the
// same sessions.
//
// Each proxy session's store is a session of the database (package pgstore):
// generation 1 of proxy session ID is the store session "ID", a later
// generation N (after the client rewrote its history) is "ID/gN" ('/' never
// occurs in a proxy session id, so the names cannot collide). Inspect one with
// `contextfold --store 'postgres://…?session=ID' status`.
//
// The harness state that the request and the store do not determine
// (harness.SessionState) lives in one row per proxy session of the table
// cf_proxy_sessions (session, generation, version, state). The row is also
// the session's lease: Lock starts a transaction whose first statement
// upserts the row, which takes its row lock until Commit or Release (or the
// end of the connection: a replica that is killed releases its leases at
// once, and its uncommitted state change is rolled back). A row lock rather
// than an advisory lock for the same reasons pgstore's store lock is one: tied
// to the transaction, no lock-key scheme, and the same statement returns the
// state's version. The table is schema version 2 of the database's
// versioned migrations (pgstore.Migrate, run by Connect and by `contextfold
// migrate`).
package pgsessions

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgbackend"
	"github.com/contextfold/contextfold/pgstore"
	"github.com/contextfold/contextfold/proxy"
)

// Table is the table holding each proxy session's generation and harness
// state.
const Table = "cf_proxy_sessions"

// OpenFunc opens the store of database session name for proxy session id
// (pgstore's DB.Session with contextfold.Options{SessionID: id}: the cold
// nodes of every generation carry the proxy session's id, as in a directory
// store).
type OpenFunc func(name, id string) (*contextfold.Store, error)

// Sessions is a proxy.SharedSessions over one database. Safe for concurrent
// use.
type Sessions struct {
	pool  *pgxpool.Pool
	open  OpenFunc
	owned bool // the pool is Connect's

	mu     sync.Mutex
	stores map[string]*contextfold.Store

	// MaxLineages bounds the rows of LineageTable (JoinLineage); 0 means
	// DefaultMaxLineages. Set it before the Sessions is used.
	MaxLineages int
}

// DefaultMaxLeases is the size of the pool Connect opens unless the URL sets
// pool_max_conns: the most sessions one replica dispatches at once (others
// wait for a connection).
const DefaultMaxLeases = 32

// Connect opens a pool of its own to the database of rawURL (a postgres://
// URL; its session parameter is ignored), then returns New over it. Close
// closes that pool.
//
// Errors: an unparsable URL or an unreachable database, the password never
// shown.
func Connect(ctx context.Context, rawURL string, open OpenFunc) (*Sessions, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, errors.New("pgsessions: the store is not a parsable postgres:// URL (write postgres://USER:PASSWORD@HOST:PORT/DB)")
	}
	q := u.Query()
	q.Del("session")
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("pgsessions: %s: %v", pgbackend.Redact(u.String()), redact(err, u))
	}
	if !q.Has("pool_max_conns") {
		// A lease holds a connection for a whole dispatch: one per session
		// being dispatched at once on this replica.
		cfg.MaxConns = DefaultMaxLeases
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgsessions: %s: %v", pgbackend.Redact(u.String()), redact(err, u))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgsessions: cannot reach %s: %v", pgbackend.Redact(u.String()), redact(err, u))
	}
	if _, _, err := pgstore.Migrate(ctx, rawURL); err != nil {
		pool.Close()
		return nil, err
	}
	s, err := New(ctx, pool, open)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// redact keeps u's credentials (pgbackend.Redact) out of an error text.
func redact(err error, u *url.URL) string {
	return pgbackend.Scrub(err.Error(), u.String())
}

// Close closes the pool Connect opened (New's caller closes its own).
func (s *Sessions) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// New returns the shared sessions of the database pool connects to, whose
// stores open opens, creating the state table when missing.
//
// Errors: the database's, naming the table and the remedy (a role that may
// create tables, or a table created by one).
func New(ctx context.Context, pool *pgxpool.Pool, open OpenFunc) (*Sessions, error) {
	if _, err := pool.Exec(ctx, `SELECT 1 FROM `+Table+` LIMIT 0`); err != nil {
		return nil, fmt.Errorf("the proxy's session table %s is not readable: %v (run `contextfold migrate --store postgres://…` to bring the database to schema version %d)", Table, err, pgstore.SchemaVersion)
	}
	return &Sessions{pool: pool, open: open, stores: map[string]*contextfold.Store{}}, nil
}

// StoreName is the database session that holds generation gen of proxy
// session id.
func StoreName(id string, gen int) string {
	if gen <= 1 {
		return id
	}
	return id + "/g" + strconv.Itoa(gen)
}

// Open returns the store of generation gen of proxy session id, opened once
// per Sessions and kept (its index stays warm).
func (s *Sessions) Open(id string, gen int) (*contextfold.Store, error) {
	name := StoreName(id, gen)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stores[name]; st != nil {
		return st, nil
	}
	st, err := s.open(name, id)
	if err != nil {
		return nil, err
	}
	s.stores[name] = st
	return st, nil
}

// Lock takes the lease of proxy session id (see the package doc), waiting
// while another replica holds it, until ctx ends.
func (s *Sessions) Lock(ctx context.Context, id string) (proxy.SessionLease, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	l := &lease{tx: tx, id: id}
	err = tx.QueryRow(ctx, `INSERT INTO `+Table+` AS p (session) VALUES ($1)
		ON CONFLICT (session) DO UPDATE SET session = p.session
		RETURNING generation, version`, id).Scan(&l.gen, &l.ver)
	if err != nil {
		tx.Rollback(context.Background())
		return nil, err
	}
	return l, nil
}

// Sessions keeps the conversations' lineages too.
var _ proxy.SharedLineages = (*Sessions)(nil)

// LineageTable holds the conversations' lineages of the shared sessions
// (proxy.SharedLineages): one row per lineage key, the proxy session ids
// that joined it, oldest first. Schema version 4.
const LineageTable = "cf_proxy_lineages"

// DefaultMaxLineages bounds the rows of LineageTable, as
// proxy.MaxLineageFiles bounds a directory proxy's lineage files: a row is
// a few hundred bytes, about three a conversation (its own lineage and its
// side requests').
const DefaultMaxLineages = proxy.MaxLineageFiles

// JoinLineage puts proxy session id into lineage key (once) and returns
// the sessions that joined it before id, oldest first (proxy.SharedLineages).
// One statement: replicas joining one lineage at once are serialised by
// the row, and each session is listed once. Each join sets the row's
// updated_at, so a lineage is as recent as its last session opened on any
// replica.
//
// The table is bounded (MaxLineages): a lineage that id starts (its only
// session) and that takes the rows past the bound prunes them to seven
// eighths of it, the least recently updated first (pruneLineages). A
// pruned lineage is forgotten: its sessions' stores stay, but a later
// session of that conversation no longer reads them.
func (s *Sessions) JoinLineage(ctx context.Context, key, id string) ([]string, error) {
	var ids []string
	err := s.pool.QueryRow(ctx, `INSERT INTO `+LineageTable+` AS l (key, sessions) VALUES ($1, ARRAY[$2::text])
		ON CONFLICT (key) DO UPDATE SET
			sessions = CASE WHEN $2::text = ANY (l.sessions) THEN l.sessions ELSE array_append(l.sessions, $2::text) END,
			updated_at = now()
		RETURNING sessions`, key, id).Scan(&ids)
	if err != nil {
		return nil, err
	}
	if len(ids) == 1 && ids[0] == id {
		// A new lineage (or one of this session alone, joined again).
		if err := s.pruneLineages(ctx, key); err != nil {
			// No session joined it before id: nothing is lost but the bound.
			return nil, fmt.Errorf("pgsessions: the lineage is saved, but bounding %s failed: %w", LineageTable, err)
		}
	}
	for i, x := range ids {
		if x == id {
			return ids[:i], nil
		}
	}
	return ids, nil
}

// pruneLineages deletes the least recently updated rows of LineageTable
// but keep's down to seven eighths of MaxLineages when there are more than
// MaxLineages (ties by key, so every replica deletes the same rows). Two
// replicas pruning at once delete the same rows or fewer: the table stays
// bounded.
func (s *Sessions) pruneLineages(ctx context.Context, keep string) error {
	bound := s.MaxLineages
	if bound <= 0 {
		bound = DefaultMaxLineages
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+LineageTable).Scan(&n); err != nil {
		return err
	}
	if n <= bound {
		return nil
	}
	target := bound - bound/8
	_, err := s.pool.Exec(ctx, `DELETE FROM `+LineageTable+` WHERE key IN (
		SELECT key FROM `+LineageTable+` WHERE key <> $1
		ORDER BY updated_at DESC, key OFFSET $2)`, keep, max(target-1, 0))
	return err
}

// Generation returns the current store generation of proxy session id (0:
// the database has no such session) (proxy.SharedLineages).
func (s *Sessions) Generation(ctx context.Context, id string) (int, error) {
	var gen int
	err := s.pool.QueryRow(ctx, `SELECT generation FROM `+Table+` WHERE session = $1`, id).Scan(&gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return gen, err
}

type lease struct {
	tx   pgx.Tx
	id   string
	gen  int
	ver  int64
	done bool
}

func (l *lease) Generation() int { return max(l.gen, 1) }
func (l *lease) Version() int64  { return l.ver }

func (l *lease) State() ([]byte, error) {
	if l.done {
		return nil, errors.New("pgsessions: lease already ended")
	}
	var state []byte
	err := l.tx.QueryRow(context.Background(), `SELECT state FROM `+Table+` WHERE session = $1`, l.id).Scan(&state)
	return state, err
}

func (l *lease) Commit(gen int, state []byte) error {
	if l.done {
		return errors.New("pgsessions: lease already ended")
	}
	l.done = true
	ctx := context.Background()
	if _, err := l.tx.Exec(ctx, `UPDATE `+Table+` SET generation = $2, version = version + 1, state = $3, updated_at = now() WHERE session = $1`,
		l.id, gen, state); err != nil {
		l.tx.Rollback(ctx)
		return err
	}
	return l.tx.Commit(ctx)
}

func (l *lease) Release() {
	if l.done {
		return
	}
	l.done = true
	l.tx.Rollback(context.Background())
}
