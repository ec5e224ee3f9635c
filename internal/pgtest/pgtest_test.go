//go:build unix

package pgtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	if os.Getenv("PGTEST_CHILD_NOBIN") == "1" {
		libGlob = filepath.Join(os.TempDir(), "no-such-postgresql-*", "bin")
	}
	Main(m)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Each test gets its own empty database; what one test writes, another does
// not see; the server is not run as root.
func TestURLGivesFreshIsolatedDatabases(t *testing.T) {
	ctx := context.Background()
	a, b := URL(t), URL(t)
	if a == b {
		t.Fatalf("two calls gave the same database %s", a)
	}
	ca, cb := connect(t, a), connect(t, b)
	if _, err := ca.Exec(ctx, "CREATE TABLE marker (v int); INSERT INTO marker VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := ca.QueryRow(ctx, "SELECT v FROM marker").Scan(&n); err != nil || n != 42 {
		t.Fatalf("read back %d, %v; want 42", n, err)
	}
	var tables int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("the second database has %d tables; want a fresh, empty one", tables)
	}
	var fsync string
	if err := ca.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	c := Server(t)
	if c.Dir != "" && fsync != "off" {
		t.Errorf("temporary cluster has fsync=%s; want off (test settings)", fsync)
	}
	if os.Geteuid() == 0 && c.Dir != "" {
		if c.RunAs == "" {
			t.Fatal("running as root, but the server was not given a non-root user")
		}
		var super string
		if err := ca.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&super); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(super)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys(); st != nil && ownerUID(st) == 0 {
			t.Fatalf("data directory %s is owned by root; the server must run as %s", super, c.RunAs)
		}
	}
	t.Logf("PostgreSQL %s, dir %q, port %d, run as %q", c.Version, c.Dir, c.Port, c.RunAs)
}

// The database of a test is dropped when the test ends.
func TestDatabaseDroppedAtCleanup(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		u := URL(t)
		name = u[strings.LastIndex(u, "/")+1 : strings.Index(u, "?")]
		connect(t, u) // a client still connected at cleanup must not block the drop
	})
	c := Server(t)
	conn := connect(t, c.AdminURL())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}

// Roles other than the superuser must give their password: a wrong one is
// refused, so the store's tests can check wrong credentials.
func TestPasswordRolesAreChecked(t *testing.T) {
	c := Server(t)
	if c.Dir == "" {
		t.Skip("external server: its authentication is its own")
	}
	u := URL(t)
	ctx := context.Background()
	role := strings.ReplaceAll(DatabaseName("role"), "cf_", "r_")
	if err := c.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD 'right-secret'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	withUser := func(pw string) string {
		return strings.Replace(u, "postgres://postgres@", "postgres://"+role+":"+pw+"@", 1)
	}
	if conn, err := pgx.Connect(ctx, withUser("wrong-secret")); err == nil {
		conn.Close(ctx)
		t.Fatal("a wrong password was accepted")
	} else if !strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("wrong password: got %v; want a password authentication failure", err)
	}
	connect(t, withUser("right-secret"))
}

// A cluster of its own (not the shared one): Stop ends the server and removes
// its directory; a second Stop is harmless.
func TestStartStop(t *testing.T) {
	if _, err := FindBinDir(); err != nil {
		var nb *NoBinariesError
		if errors.As(err, &nb) && !InCI() {
			t.Skipf("PostgreSQL tests SKIPPED: %v", err)
		}
		t.Fatal(err)
	}
	c, err := Start(Options{MaxConnections: 20})
	if err != nil {
		t.Fatal(err)
	}
	dir, port := c.Dir, c.Port
	if port == 0 || port == 5432 {
		t.Errorf("port %d; want an ephemeral one", port)
	}
	if _, err := os.Stat(filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))); err != nil {
		t.Errorf("no Unix socket in the cluster directory: %v", err)
	}
	connect(t, c.AdminURL()).Close(context.Background())
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if c.Running() {
		t.Fatal("server still running after Stop")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s left behind (%v)", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, c.AdminURL()); err == nil {
		conn.Close(ctx)
		t.Fatal("still accepting connections after Stop")
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// CONTEXTFOLD_TEST_POSTGRES_URL: an existing server is used as is, and Stop
// leaves it running. Checked in a subprocess so this binary's shared cluster
// plays the existing server.
func TestExternalServerFromEnv(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		u := URL(t)
		if !strings.Contains(u, os.Getenv("PGTEST_EXPECT_HOST")) {
			t.Fatalf("got %s; want a database on the server of %s", u, EnvURL)
		}
		if Server(t).Dir != "" {
			t.Fatal("started a temporary cluster although " + EnvURL + " is set")
		}
		connect(t, u)
		return
	}
	c := Server(t)
	host := c.base.Host
	cmd := exec.Command(os.Args[0], "-test.run=^TestExternalServerFromEnv$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", EnvURL+"="+c.AdminURL(), "PGTEST_EXPECT_HOST="+host)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestExternalServerFromEnv") {
		t.Fatalf("child run with %s: %v\n%s", EnvURL, err, out)
	}
	if !c.Running() {
		t.Fatal("the external server was stopped by the child")
	}
}

// Without binaries: skip locally with a message naming the remedy, fail in CI.
func TestNoBinariesSkipsLocallyFailsInCI(t *testing.T) {
	if os.Getenv("PGTEST_CHILD_NOBIN") == "1" {
		URL(t)
		t.Fatal("URL returned without PostgreSQL binaries")
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoBinariesSkipsLocallyFailsInCI$", "-test.count=1", "-test.v")
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, EnvURL+"=") && !strings.HasPrefix(kv, EnvBin+"=") {
				env = append(env, kv)
			}
		}
		empty := t.TempDir()
		env = append(env, "PGTEST_CHILD_NOBIN=1", "PATH="+empty, EnvBin+"="+empty, "CI="+ci)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		s := string(out)
		if ci == "true" {
			if err == nil || !strings.Contains(s, "no PostgreSQL server binaries") {
				t.Fatalf("CI=true: want a failure naming the missing binaries; got %v\n%s", err, s)
			}
		} else if err != nil || !strings.Contains(s, "SKIP") || !strings.Contains(s, "apt-get install postgresql") {
			t.Fatalf("locally: want a skip naming the remedy; got %v\n%s", err, s)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	n := DatabaseName("TestFleet/Round-Robin with SIGKILL and a very long name indeed")
	if !strings.HasPrefix(n, "cf_testfleet_round_robin_with_sigkill_and_") || len(n) > 63 {
		t.Fatalf("got %q", n)
	}
	if DatabaseName("x") == DatabaseName("x") {
		t.Fatal("two names for the same test are equal")
	}
}

func ownerUID(st any) uint32 {
	if s, ok := st.(*syscall.Stat_t); ok {
		return s.Uid
	}
	return 1
}
