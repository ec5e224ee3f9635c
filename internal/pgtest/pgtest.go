// Package pgtest gives tests a real PostgreSQL server: a temporary cluster
// (initdb + postgres) started once per test binary, with a fresh, empty
// database per test. No mocks: the server is the PostgreSQL that Debian's
// `postgresql` package installs (CI: .ci/run installs it), found on PATH or
// under /usr/lib/postgresql/*/bin.
//
// Use it from TestMain and in each test:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.URL(t) // postgres://postgres@127.0.0.1:PORT/cf_testsomething_1?sslmode=disable
//		...
//	}
//
// The cluster starts on the first call to URL (a package whose PostgreSQL
// tests are filtered out pays nothing) and is stopped and removed when Main
// returns. Set CONTEXTFOLD_TEST_POSTGRES_URL to a server's URL (a role that may
// CREATE DATABASE) to use an existing server instead of a temporary cluster.
//
// Without PostgreSQL binaries the tests that call URL are skipped with a
// message naming the remedy, except in CI (CI=true), where they fail.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable that points the tests at an existing
// PostgreSQL server instead of a temporary cluster: a postgres:// URL whose
// role may CREATE DATABASE (each test gets a new database on that server,
// dropped at the test's end).
const EnvURL = "CONTEXTFOLD_TEST_POSTGRES_URL"

// EnvBin names the environment variable that points to the directory holding
// initdb and postgres, when they are neither on PATH nor under
// /usr/lib/postgresql/*/bin.
const EnvBin = "CONTEXTFOLD_TEST_POSTGRES_BIN"

var (
	shared struct {
		sync.Mutex
		inMain  bool
		started bool
		server  *Cluster // nil when not available
		err     error    // why server is nil
		skip    bool     // err is "no binaries" (skip locally), not a failure
	}
	dbSeq atomic.Int64
)

// Runner is what Main and M wrap: *testing.M, or another wrapper of it.
type Runner interface{ Run() int }

// M wraps a test binary's runner so that the shared cluster is stopped and
// removed when the tests have run; use it to combine with another TestMain
// helper that takes a Runner, e.g. cachedirtest.Main(pgtest.M(m)).
func M(m Runner) Runner { return wrapped{m} }

type wrapped struct{ m Runner }

func (w wrapped) Run() int {
	shared.Lock()
	shared.inMain = true
	shared.Unlock()
	code := w.m.Run()
	if err := Shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping the test cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Main runs the tests (and benchmarks) of a package with the shared cluster,
// then stops and removes it, and exits with the tests' code. Call it from
// TestMain.
func Main(m Runner) { os.Exit(M(m).Run()) }

// Shutdown stops and removes the shared cluster if it was started (a server
// named by CONTEXTFOLD_TEST_POSTGRES_URL is left running). Main calls it; it is
// safe to call more than once.
func Shutdown() error {
	shared.Lock()
	defer shared.Unlock()
	c := shared.server
	shared.server, shared.started, shared.err = nil, false, nil
	if c == nil {
		return nil
	}
	return c.Stop()
}

// Server returns the shared server of this test binary, starting the
// temporary cluster on first use. Without PostgreSQL binaries it skips t
// (locally) or fails it (CI=true); any other start failure fails t. It fails
// t when TestMain does not call Main (the cluster would outlive the tests).
// Safe for concurrent use by parallel tests.
func Server(t testing.TB) *Cluster {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.inMain {
		t.Fatal("pgtest: TestMain must call pgtest.Main(m) (or wrap m with pgtest.M) so the test cluster is stopped at the end")
	}
	if !shared.started {
		shared.started = true
		shared.server, shared.err = startShared()
		if shared.err != nil {
			_, shared.skip = shared.err.(*NoBinariesError)
		}
	}
	if shared.err != nil {
		if shared.skip && !InCI() {
			t.Skipf("PostgreSQL tests SKIPPED: %v", shared.err)
		}
		t.Fatalf("pgtest: %v", shared.err)
	}
	return shared.server
}

func startShared() (*Cluster, error) {
	if u := os.Getenv(EnvURL); u != "" {
		return External(u)
	}
	return Start(Options{})
}

// URL returns the URL of a new, empty database on the shared server, dropped
// when t ends: postgres://USER@HOST:PORT/NAME?sslmode=disable, usable by this
// process and by subprocesses (loopback TCP). Skips or fails t as Server does.
func URL(t testing.TB) string {
	t.Helper()
	c := Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := DatabaseName(t.Name())
	u, err := c.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return u
}

// DatabaseName turns a test name into a new database name: "cf_" + the
// name's letters and digits in lower case (others become '_'), at most 40 of
// them, + "_" + a number unique in this process. PostgreSQL limits names to
// 63 bytes.
func DatabaseName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return fmt.Sprintf("cf_%s_%d", b.String(), dbSeq.Add(1))
}

// InCI reports whether the tests run in CI (CI=true, as .ci/run sets), where
// a missing PostgreSQL fails the tests instead of skipping them.
func InCI() bool { return os.Getenv("CI") == "true" }

// NoBinariesError is the error of Start when initdb or postgres cannot be
// found. Server skips the test on it locally and fails it in CI.
type NoBinariesError struct{ Looked []string }

func (e *NoBinariesError) Error() string {
	return fmt.Sprintf("no PostgreSQL server binaries (initdb, postgres) found on PATH or in %s; install Debian's postgresql package (apt-get install postgresql), set %s to their directory, or set %s to an existing server's URL",
		strings.Join(e.Looked, ", "), EnvBin, EnvURL)
}

// External returns a Cluster for an existing server at rawURL (postgres:// or
// postgresql:// URL whose role may CREATE DATABASE), after checking that it
// answers. Stop leaves that server running.
func External(rawURL string) (*Cluster, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s must be a postgres:// URL (got an unparsable value; the value is not shown because it may hold a password)", EnvURL)
	}
	c := &Cluster{base: u}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.AdminURL())
	if err != nil {
		return nil, fmt.Errorf("connecting to the server of %s at %s: %v", EnvURL, u.Redacted(), redactErr(err, u))
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&c.Version); err != nil {
		return nil, fmt.Errorf("asking the server of %s for its version: %v", EnvURL, err)
	}
	return c, nil
}

// redactErr keeps a password in u out of an error message.
func redactErr(err error, u *url.URL) string {
	s := err.Error()
	if p, ok := u.User.Password(); ok && p != "" {
		s = strings.ReplaceAll(s, p, "xxxxx")
	}
	return s
}
