package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
)

// hostileStep holds a payload that would run script, restyle the page or
// spoof the terminal if it were rendered as anything but text.
const hostileStep = 600

const hostileSummary = `<b onmouseover="window.__pwned='summary'">Hostile</b> <script>window.__pwned='summary'</script> payload`

var hostilePayload = strings.Join([]string{
	`<script>window.__pwned = 'script'; document.title = 'PWNED';</script>`,
	`<img src=x onerror="window.__pwned='img'">`,
	`<svg onload="window.__pwned='svg'"></svg><iframe src="javascript:window.__pwned='iframe'"></iframe>`,
	`</pre><style>body{display:none}</style><a href="javascript:alert(1)">click</a>`,
	"\x1b[31mRED ANSI\x1b[0m \x1b]0;title\x07 carriage\rreturn nul\x00 bidi \u202Eevil\u202C del\x7f",
	"{{.Secret}} ${jndi:ldap://x} %s %n &amp; &lt;b&gt;",
	strings.Repeat("A-huge-line of-many words_that wraps ", 400),
	strings.Repeat("unbroken", 80),
}, "\n")

// bigStep holds a payload larger than one page and than the per-call cap.
const bigStep = 601

var bigPayload = func() string {
	var b strings.Builder
	b.WriteString("$ make test\n")
	for i := 0; b.Len() < 3*payloadPageBytes; i++ {
		b.WriteString("ok  \tgithub.com/example/pkg")
		b.WriteString(strings.Repeat("/sub", i%7))
		b.WriteString("\t0.01s\n")
	}
	b.WriteString(strings.Repeat("huge last line ", 1500))
	return b.String()
}()

// testClock ticks one minute per call from a fixed start, so that stores
// built by tests are the same on every run.
func testClock() contextfold.Clock {
	var mu sync.Mutex
	t := time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Minute)
		return t
	}
}

var (
	sharedOnce sync.Once
	sharedDir  string
	sharedErr  error
	sharedSrv  *httptest.Server
	sharedRoot string
)

// TestMain removes the shared demo store after the tests.
func TestMain(m *testing.M) {
	code := pgtest.M(m).Run() // database_test.go: a real PostgreSQL server
	if sharedSrv != nil {
		sharedSrv.Close()
	}
	if sharedRoot != "" {
		os.RemoveAll(sharedRoot)
	}
	if longSessionRoot != "" {
		os.RemoveAll(longSessionRoot)
	}
	os.Exit(code)
}

// sharedServer serves one demo store, built once for all the tests that
// only read it (the CONF-08 test proves that they do).
func sharedServer(t testing.TB) (*httptest.Server, string) {
	t.Helper()
	sharedOnce.Do(func() {
		sharedRoot, sharedErr = os.MkdirTemp("", "inspect-test-")
		if sharedErr != nil {
			return
		}
		sharedDir = filepath.Join(sharedRoot, ".contextfold")
		sharedErr = buildDemoStore(sharedDir)
		if sharedErr != nil {
			return
		}
		s, err := contextfold.Open(sharedDir, contextfold.Options{})
		if err != nil {
			sharedErr = err
			return
		}
		in, err := New(s, Options{})
		if err != nil {
			sharedErr = err
			return
		}
		sharedSrv = httptest.NewServer(in)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedSrv, sharedDir
}

// demoCopy returns a private copy of the shared demo store, to damage.
func demoCopy(t testing.TB) string {
	t.Helper()
	_, src := sharedServer(t)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	copyTree(t, src, dir)
	return dir
}

// demoStore builds the spec's demo session in a new store, runs the
// showcase scan and evicts what it hydrated (as 'contextfold demo' does),
// then folds the hostile and the big step. It returns the store directory.
func buildDemoStore(dir string) error {
	s, err := contextfold.Open(dir, contextfold.Options{Clock: testClock()})
	if err != nil {
		return err
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		return err
	}
	res, err := s.Scan(contextfold.DemoPrompt)
	if err != nil {
		return err
	}
	for _, p := range res.Selected {
		if _, err := s.Hydrate(p.StepID); err != nil {
			return err
		}
		if _, err := s.Evict(p.StepID); err != nil {
			return err
		}
	}
	_, err = s.FoldBatch([]contextfold.Turn{
		{StepID: hostileStep, Summary: hostileSummary, RawContent: hostilePayload},
		{StepID: bigStep, Summary: "Full test run of every package (long log)", RawContent: bigPayload},
	})
	return err
}

// damage breaks a copy of a demo store in the three ways validate reports:
// step 137 tampered, step 91's file removed, an orphan file for step 777.
func damage(t testing.TB, dir string) {
	t.Helper()
	cold := filepath.Join(dir, contextfold.ColdNodesDir)
	p137 := filepath.Join(cold, "step_000137.json")
	data, err := os.ReadFile(p137)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.ReplaceAll(string(data), "Port 5433 restored", "Port 6666 restored")
	if tampered == string(data) {
		t.Fatal("damage: no payload text to tamper with")
	}
	if err := os.WriteFile(p137, []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cold, "step_000091.json")); err != nil {
		t.Fatal(err)
	}
	orphan, err := os.ReadFile(filepath.Join(cold, "step_000037.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cold, "step_000777.json"), orphan, 0o644); err != nil {
		t.Fatal(err)
	}
}

// serve starts the inspector of the store in dir on a real loopback server.
func serve(t testing.TB, dir string, opts Options) *httptest.Server {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches a path and returns the response and its body.
func get(t testing.TB, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	return do(t, srv, http.MethodGet, path, nil)
}

func do(t testing.TB, srv *httptest.Server, method, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// hashTree hashes every entry under dir: path, type, mode, size and
// content, so that any change to the store shows.
func hashTree(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		line := rel + " " + fi.Mode().String()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:]) + " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// copyTree copies a store directory.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
