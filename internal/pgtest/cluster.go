package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options tunes Start. The zero value is what the shared cluster uses.
type Options struct {
	// BinDir is the directory holding initdb and postgres; empty finds them
	// (EnvBin, PATH, then the newest /usr/lib/postgresql/*/bin).
	BinDir string
	// MaxConnections is the server's max_connections; 0 means 300 (the
	// fleet, concurrency and benchmark tests open many connections).
	MaxConnections int
	// Settings are extra "name=value" server settings, applied last.
	Settings []string
}

// Cluster is a PostgreSQL server the tests use: either a temporary cluster
// that Start made (a data directory in a temporary directory, stopped and
// removed by Stop) or an existing server (External). Its methods are safe for
// concurrent use.
type Cluster struct {
	// Version is the server's version (SHOW server_version), e.g. "15.14
	// (Debian 15.14-0+deb12u1)".
	Version string
	// Dir is the temporary directory holding the data directory ("data"),
	// the Unix socket and the server log ("postgres.log"); empty for an
	// external server.
	Dir string
	// Port is the loopback TCP port the temporary cluster listens on (an
	// ephemeral port chosen at start); 0 for an external server.
	Port int
	// RunAs names the OS user the server runs as ("" = this process's user;
	// a non-root user when this process is root, because initdb and
	// postgres refuse to run as root).
	RunAs string

	base *url.URL // the maintenance database's URL
	proc *exec.Cmd
	done chan struct{} // closed when proc has exited
}

// Superuser is the name of the temporary cluster's superuser. It connects
// without a password (trust) over loopback and the socket; every other role
// must give its password (scram-sha-256), so tests can check wrong
// credentials.
const Superuser = "postgres"

// Start initialises and starts a new temporary cluster: initdb into a new
// temporary directory, then postgres listening on 127.0.0.1 at an ephemeral
// port and on a Unix socket in that directory. When this process is root the
// server runs as the `postgres` user (Debian's package creates it), else as
// `nobody`. The settings are for tests only: fsync, full_page_writes and
// synchronous_commit are off (fast, and a crash of the machine may lose the
// data, which a temporary cluster does not mind). Returns *NoBinariesError
// when initdb or postgres cannot be found. The caller must call Stop.
func Start(opt Options) (*Cluster, error) {
	bin := opt.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	user, cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	parent := ""
	if cred != nil {
		parent = "/tmp" // a directory every user may enter (TMPDIR may not be)
	}
	dir, err := os.MkdirTemp(parent, "contextfold-pg-*")
	if err != nil {
		return nil, fmt.Errorf("making the cluster's temporary directory: %v", err)
	}
	c := &Cluster{Dir: dir, RunAs: user}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	if err := chownTree(dir, cred); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", Superuser,
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions", "--no-sync")
	initdb.Dir = dir
	initdb.Env = serverEnv(dir)
	setCredential(initdb, cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb (as %s) failed: %v\n%s", describeUser(user), err, tail(out))
	}
	hba := "local all " + Superuser + " trust\n" +
		"host all " + Superuser + " 127.0.0.1/32 trust\n" +
		"local all all scram-sha-256\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return nil, fmt.Errorf("writing pg_hba.conf: %v", err)
	}
	if err := chownTree(filepath.Join(data, "pg_hba.conf"), cred); err != nil {
		return nil, err
	}
	maxConn := opt.MaxConnections
	if maxConn == 0 {
		maxConn = 300
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		settings := []string{
			"listen_addresses=127.0.0.1",
			"port=" + strconv.Itoa(port),
			"unix_socket_directories=" + dir,
			"max_connections=" + strconv.Itoa(maxConn),
			// Tests only: no durability across a machine crash.
			"fsync=off", "full_page_writes=off", "synchronous_commit=off",
			"shared_buffers=64MB", "max_wal_size=1GB", "checkpoint_timeout=30min",
			"log_min_messages=warning", "logging_collector=off",
		}
		settings = append(settings, opt.Settings...)
		args := []string{"-D", data}
		for _, s := range settings {
			args = append(args, "-c", s)
		}
		logf, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
		cmd.Dir = dir
		cmd.Env = serverEnv(dir)
		cmd.Stdout, cmd.Stderr = logf, logf
		setCredential(cmd, cred)
		setParentDeath(cmd)
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("starting postgres: %v", err)
		}
		logf.Close()
		c.proc, c.done, c.Port = cmd, make(chan struct{}), port
		go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(cmd, c.done)
		c.base = &url.URL{Scheme: "postgres", User: url.User(Superuser), Host: "127.0.0.1:" + strconv.Itoa(port),
			Path: "/postgres", RawQuery: "sslmode=disable"}
		if lastErr = c.waitReady(30 * time.Second); lastErr == nil {
			ok = true
			return c, nil
		}
		c.stopServer()
		// A port taken between freePort and the server's bind: try another.
		if !strings.Contains(lastErr.Error(), "already in use") {
			break
		}
	}
	return nil, lastErr
}

// waitReady waits until the server accepts connections, the server exits, or
// the timeout passes.
func (c *Cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited at start:\n%s", c.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.AdminURL())
		if err == nil {
			err = conn.QueryRow(ctx, "SHOW server_version").Scan(&c.Version)
			conn.Close(ctx)
			cancel()
			if err == nil {
				return nil
			}
		} else {
			cancel()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within %v (last error: %v):\n%s", timeout, err, c.logTail())
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// Stop stops a temporary cluster (fast shutdown, then SIGKILL after 10 s)
// and removes its directory; for an external server it does nothing. Safe to
// call more than once.
func (c *Cluster) Stop() error {
	if c.Dir == "" {
		return nil
	}
	err := c.stopServer()
	if rmErr := os.RemoveAll(c.Dir); rmErr != nil && err == nil {
		err = rmErr
	}
	c.Dir = ""
	return err
}

func (c *Cluster) stopServer() error {
	if c.proc == nil {
		return nil
	}
	defer func() { c.proc = nil }()
	select {
	case <-c.done:
		return nil
	default:
	}
	// SIGINT is PostgreSQL's fast shutdown: disconnect clients, stop.
	c.proc.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	c.proc.Process.Kill()
	<-c.done
	return errors.New("postgres did not stop within 10 s of SIGINT; killed it")
}

// AdminURL is the URL of the server's maintenance database ("postgres" for a
// temporary cluster; the database of CONTEXTFOLD_TEST_POSTGRES_URL otherwise).
func (c *Cluster) AdminURL() string { return c.base.String() }

// URLFor is the URL of database name on this server, same role and options
// as AdminURL.
func (c *Cluster) URLFor(name string) string {
	u := *c.base
	u.Path = "/" + name
	return u.String()
}

// CreateDatabase creates database name (a plain identifier: letters, digits,
// '_') on the server and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("creating test database %s: %v", name, err)
	}
	return c.URLFor(name), nil
}

// DropDatabase drops database name, disconnecting its remaining clients
// (PostgreSQL 13 or newer); a missing database is not an error.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	if err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping test database %s: %v", name, err)
	}
	return nil
}

// Exec runs one SQL statement on the maintenance database, as the
// superuser (temporary cluster) or the role of CONTEXTFOLD_TEST_POSTGRES_URL.
func (c *Cluster) Exec(ctx context.Context, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, c.AdminURL())
	if err != nil {
		return fmt.Errorf("connecting to the test server: %v", redactErr(err, c.base))
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// Running reports whether a temporary cluster's server process is still
// running (always true for an external server).
func (c *Cluster) Running() bool {
	if c.done == nil {
		return c.Dir == ""
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "postgres.log"))
	return tail(b)
}

// FindBinDir returns the directory holding initdb and postgres: $EnvBin, the
// directory of initdb on PATH, or the newest /usr/lib/postgresql/*/bin
// (where Debian's package puts them). Returns *NoBinariesError when none has
// both.
func FindBinDir() (string, error) {
	var looked []string
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv(EnvBin); d != "" {
		if has(d) {
			return d, nil
		}
		looked = append(looked, d+" ("+EnvBin+")")
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
		// A symlink on PATH (e.g. /usr/local/bin/initdb) to the real
		// directory, whose postgres is not on PATH.
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	looked = append(looked, "PATH")
	dirs, _ := filepath.Glob(libGlob)
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	looked = append(looked, libGlob)
	return "", &NoBinariesError{Looked: looked}
}

// libGlob is where Debian's postgresql package puts the server binaries
// (one directory per major version); a variable so the package's own test
// can show the "no binaries" path on a machine that has them.
var libGlob = "/usr/lib/postgresql/*/bin"

// pgMajor is NN of /usr/lib/postgresql/NN/bin, 0 when not a number.
func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// freePort asks the kernel for an unused loopback port. Another process may
// take it before postgres binds it; Start then retries with another.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverEnv is the environment of initdb and postgres: this process's,
// with HOME in the cluster's directory (the server's user may not read
// root's home) and no PG* variables that would redirect it.
func serverEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+dir, "LC_ALL=C")
}

func describeUser(u string) string {
	if u == "" {
		return "the current user"
	}
	return "user " + u
}

// tail is the last 2,000 bytes of a log, for error messages.
func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}
