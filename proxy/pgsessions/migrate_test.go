package pgsessions

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/pgstore"
)

// The proxy's session table is a versioned migration: New over a database
// that was never migrated says to run migrate (and creates nothing), and
// Connect migrates it to pgstore.SchemaVersion first.
func TestSessionTableIsAMigration(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	noStore := func(string, string) (*contextfold.Store, error) { return nil, nil }
	if _, err := New(ctx, pool, noStore); err == nil || !strings.Contains(err.Error(), "contextfold migrate") {
		t.Fatalf("New on an unmigrated database: %v; want an error naming contextfold migrate", err)
	}
	s, err := Connect(ctx, url, noStore)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := pool.QueryRow(ctx, `SELECT version FROM cf_schema`).Scan(&v); err != nil || v != pgstore.SchemaVersion {
		t.Fatalf("schema version after Connect = %d, %v; want %d", v, err, pgstore.SchemaVersion)
	}
	if _, err := New(ctx, pool, noStore); err != nil {
		t.Fatalf("New after the migration: %v", err)
	}
}
