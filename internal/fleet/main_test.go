//go:build !race

package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/pgtest"
)

// fixedEpoch stamps every cold node and eviction of the children
// (SOURCE_DATE_EPOCH), so two runs of one session store the same bytes.
const fixedEpoch = "1772445600"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	if u := os.Getenv(envColdReplica); u != "" {
		coldReplicaMain(u) // bench_test.go
		return
	}
	if mode := os.Getenv(envChild); mode != "" {
		if err := childMain(mode, os.Args[len(os.Args)-4:]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := pgtest.M(m).Run()
	stopBenchPG()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// binary builds cmd/contextfold once per test binary.
func binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if build.dir, build.err = os.MkdirTemp("", "contextfold-fleet-*"); build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "contextfold")
		out, err := exec.Command("go", "build", "-o", build.bin, "github.com/contextfold/contextfold/cmd/contextfold").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// run runs the binary and returns its stdout; a non-zero exit fails t.
func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+fixedEpoch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("contextfold %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// withSession is the store URL of one session of database dbURL.
func withSession(dbURL, session string) string {
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	return dbURL + sep + "session=" + session
}

// validateClean runs `contextfold --store URL validate --json` and fails t
// unless the store validates clean.
func validateClean(t *testing.T, bin, storeURL string) {
	t.Helper()
	out := run(t, bin, "--store", storeURL, "validate", "--json")
	var rep struct {
		OK       bool              `json:"ok"`
		Findings []json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || !rep.OK || len(rep.Findings) != 0 {
		t.Fatalf("validate %s: %v\n%s", storeURL, err, out)
	}
}

// status runs `contextfold --store URL status --json`.
func status(t *testing.T, bin, storeURL string) (total, evicted int) {
	t.Helper()
	out := run(t, bin, "--store", storeURL, "status", "--json")
	var st struct{ Total, Evicted int }
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	return st.Total, st.Evicted
}

// proxyProc is one `contextfold proxy` subprocess.
type proxyProc struct {
	cmd *exec.Cmd
	URL string
	log *bytes.Buffer
	mu  *sync.Mutex
}

// startProxy starts a proxy replica on an ephemeral loopback port, storing
// in the database of storeURL, forwarding to upstream.
func startProxy(t testing.TB, bin, storeURL, upstream string, extra ...string) *proxyProc {
	t.Helper()
	return startProxyArgs(t, bin, append([]string{"proxy", "--store", storeURL, "--listen", "127.0.0.1:0", "--upstream", upstream}, extra...))
}

// startProxyArgs starts `contextfold ARGS…` and waits for its listening line.
func startProxyArgs(t testing.TB, bin string, args []string) *proxyProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+fixedEpoch)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proxyProc{cmd: cmd, log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("proxy %s log:\n%s", p.URL, tail(p.log.String(), 4000))
			p.mu.Unlock()
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if rest, ok := strings.CutPrefix(line, "contextfold proxy listening on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				select {
				case addr <- u:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-addr:
		p.URL = u
	case <-time.After(60 * time.Second):
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("proxy did not start within 60 s:\n%s", p.log.String())
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// send posts one request of session sid to a proxy at base.
func send(client *http.Client, base, sid string, body []byte) (int, string, error) {
	req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Contextfold-Session", sid)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Contextfold-Warning"), err
}

// firstDiff describes where two bodies first differ.
func firstDiff(a, b []byte) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	lo := max(n-120, 0)
	return fmt.Sprintf("at byte %d of %d/%d:\n  got  …%s\n  want …%s", n, len(a), len(b),
		string(a[lo:min(n+120, len(a))]), string(b[lo:min(n+120, len(b))]))
}
