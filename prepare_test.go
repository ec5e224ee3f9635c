package contextfold

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// prepTurns are turns a fold event folds: plain logs, one with a secret to
// redact, one with its lists given (an empty list apart from nil), one
// whose raw content is its summary.
func prepTurns(base int) []Turn {
	var ts []Turn
	for i := range 12 {
		ts = append(ts, Turn{StepID: base + i, Summary: fmt.Sprintf("tool bash $ go test ./pkg%d", i),
			RawContent: strings.Repeat(fmt.Sprintf("line: compiled pkg%d/main.go ok ValueError in handler_%d\n", i, i), 40)})
	}
	ts[3].RawContent += "export GITHUB_TOKEN=ghp_" + "Q7wErT9yUiOp3AsDfGh5JkLzXcVbNm1q2W8e\n"
	ts[5].Files, ts[5].Commands, ts[5].Errors = []string{"a.go"}, []string{}, nil
	ts[7].RawContent = ""
	return ts
}

// storeFiles returns every file of a store directory by its path in it.
func storeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "lock" || strings.HasSuffix(d.Name(), ".lock") {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Turns prepared ahead (Store.Prepare) fold to the very bytes they fold to
// unprepared: cold nodes, recall index and every other file of the store,
// redactions included; a turn prepared with other content (the same step)
// folds from its own content; the fold takes what was prepared.
func TestPrepareAheadSameBytes(t *testing.T) {
	clock := func() time.Time { return time.Unix(1_700_000_000, 0).UTC() }
	open := func() (*Store, string) {
		dir := filepath.Join(t.TempDir(), ".contextfold")
		s, err := Open(dir, Options{Clock: clock, SessionID: "sess-1"})
		if err != nil {
			t.Fatal(err)
		}
		return s, dir
	}
	plain, plainDir := open()
	ahead, aheadDir := open()
	for _, base := range []int{0, 100} {
		turns := prepTurns(base)
		stale := append([]Turn{}, turns...)
		stale[2].RawContent = "what the message said before it changed"
		ahead.Prepare(stale)
		ahead.Prepare(turns[4:]) // turns 0-3 stay as prepared from stale
		if n := len(ahead.prep.m); n != len(turns) {
			t.Fatalf("%d turns prepared, want %d", n, len(turns))
		}
		if _, err := plain.FoldBatch(turns); err != nil {
			t.Fatal(err)
		}
		if _, err := ahead.FoldBatch(turns); err != nil {
			t.Fatal(err)
		}
		if n := len(ahead.prep.m); n != 0 || ahead.prep.bytes != 0 {
			t.Fatalf("the fold left %d prepared turns (%d bytes)", n, ahead.prep.bytes)
		}
	}
	a, b := storeFiles(t, plainDir), storeFiles(t, aheadDir)
	if len(a) < 24 {
		t.Fatalf("only %d files in the store", len(a))
	}
	for name, want := range a {
		if got, ok := b[name]; !ok || !bytes.Equal(got, want) {
			t.Errorf("%s differs when its turns were prepared ahead", name)
		}
	}
	if len(a) != len(b) {
		t.Errorf("%d files folded unprepared, %d prepared", len(a), len(b))
	}
	if !bytes.Contains(a["cold_nodes/step_000003.json"], []byte("REDACTED")) {
		t.Errorf("the secret of step 3 was not redacted:\n%s", a["cold_nodes/step_000003.json"])
	}
}

// Prepare runs while the store folds (the harness prepares in the
// background): run with -race.
func TestPrepareWhileFolding(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), ".contextfold"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turns := prepTurns(k * 100)
			s.Prepare(turns)
			if _, err := s.FoldBatch(turns); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	es, err := s.Entries()
	if err != nil || len(es) != 48 {
		t.Fatalf("%d steps indexed (%v), want 48", len(es), err)
	}
}

// The memo holds at most prepMemoMax bytes: past it, turns are not
// prepared (and fold as without Prepare).
func TestPrepareBounded(t *testing.T) {
	defer func(m int) { prepMemoMax = m }(prepMemoMax)
	prepMemoMax = 10 << 10
	s, err := Open(filepath.Join(t.TempDir(), ".contextfold"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Prepare(prepTurns(0))
	if s.prep.bytes > prepMemoMax || len(s.prep.m) == 0 || len(s.prep.m) == 12 {
		t.Fatalf("%d turns, %d bytes prepared under a bound of %d", len(s.prep.m), s.prep.bytes, prepMemoMax)
	}
}
