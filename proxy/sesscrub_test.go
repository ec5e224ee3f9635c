package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/scrub"
)

// sessionToken is a GitHub token's shape (ghp_ and 36 characters), as a
// client might send it by mistake as its session name.
const sessionToken = "ghp_R8mZq2Lx7VtK4pW9nHc3Jd6Fs1Yb5GuE0aTo"

// TestSessionNameHoldingSecret: a client's X-Contextfold-Session that the
// scrubber would redact never reaches disk (directory and file names, file
// contents), /contextfold/stats, the log or the RequestRecord in clear: the
// session is named by the SHA-256 of the value, the same for every request,
// while an ordinary name keeps its directory (stores of current users are
// not orphaned).
func TestSessionNameHoldingSecret(t *testing.T) {
	if len(sessionToken) != 40 {
		t.Fatalf("the token has %d characters, want ghp_ + 36", len(sessionToken))
	}
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) {
		o.Harness = harness.Config{ContextBudget: 4000}
		o.MaxSessions = 1 // the token's session leaves memory: its state is saved beside its store
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logBuf}, nil))
	})
	n := 0
	for _, sid := range []string{sessionToken, "alpha-1", sessionToken} {
		n++
		resp, b := post(t, tp.http.URL+PathOpenAI, conversationN(30+4*n), map[string]string{HeaderSession: sid})
		if resp.StatusCode != 200 {
			t.Fatalf("%d: status %d: %s", n, resp.StatusCode, b)
		}
		if got := up.last(t).Header.Get(HeaderSession); got != "" {
			t.Fatalf("the session header was forwarded: %q", got)
		}
	}
	sum := sha256.Sum256([]byte(sessionToken))
	want := scrub.SafeNamePrefix + hex.EncodeToString(sum[:])
	r1, r2, r3 := tp.record(t, 1), tp.record(t, 2), tp.record(t, 3)
	if r1.Session != want || r3.Session != want {
		t.Fatalf("records name the sessions %q and %q, want %q", r1.Session, r3.Session, want)
	}
	if r2.Session != "alpha-1" {
		t.Fatalf("an ordinary session name became %q", r2.Session)
	}
	if r1.FoldedTokens == 0 && r3.FoldedTokens == 0 {
		t.Fatal("nothing was folded: the test does not reach the store")
	}
	if _, err := os.Stat(filepath.Join(tp.dir, want, "g1", "recall_index.json")); err != nil {
		t.Fatalf("the token's session store is not under its safe name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tp.dir, "alpha-1", "g1")); err != nil {
		t.Fatalf("the ordinary session's store moved: %v", err)
	}
	if st := tp.srv.Stats(); st.SessionsDropped == 0 {
		t.Fatal("no session left memory: its saved state is not covered")
	}
	files := 0
	filepath.WalkDir(tp.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p, "ghp_") {
			t.Errorf("a path names the token: %s", p)
		}
		if !d.IsDir() {
			files++
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(sessionToken)) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
	if files < 4 {
		t.Fatalf("only %d files under the proxy's directory", files)
	}
	resp, err := http.Get(tp.http.URL + PathStats)
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(stats, []byte(want)) {
		t.Fatalf("stats: %d %s", resp.StatusCode, stats)
	}
	if bytes.Contains(stats, []byte("ghp_")) {
		t.Fatalf("stats show the token: %s", stats)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logBuf.String(), want) {
		t.Fatalf("the log does not name the session by its safe name:\n%s", logBuf.String())
	}
	if strings.Contains(logBuf.String(), "ghp_") {
		t.Fatalf("the log shows the token:\n%s", logBuf.String())
	}
}
