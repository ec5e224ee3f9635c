package contextfold

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConflictsFindOtherTurnsAtIndexedSteps: a turn indexed as offered is
// no conflict (scrubbed secrets included); another turn at an indexed step
// is one, naming the stored and the offered session.
func TestConflictsFindOtherTurnsAtIndexedSteps(t *testing.T) {
	s := newTestStore(t)
	secret := "export AWS_ACCESS_KEY_ID=AKIAZ4QXLEWJTNMA7B3C # deploy key"
	turns := []Turn{
		{StepID: 0, Summary: "user: deploy", RawContent: secret, SessionID: "sess-a"},
		{StepID: 1, Summary: "assistant: ran deploy", RawContent: "deploy ok", SessionID: "sess-a"},
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.ReadColdNode(0); n == nil || !n.Sanitized {
		t.Fatal("the secret was not scrubbed; the test needs a scrubbed turn")
	}
	if c, err := s.Conflicts(append(turns, Turn{StepID: 2, Summary: "new"})); err != nil || len(c) != 0 {
		t.Fatalf("re-fold of the same turns: %v %+v", err, c)
	}
	other := []Turn{{StepID: 1, Summary: "user: what is CI doing", SessionID: "sess-b"}, {StepID: 0, Summary: "user: deploy", RawContent: secret, SessionID: "sess-b"}}
	c, err := s.Conflicts(other)
	if err != nil || len(c) != 1 || c[0].StepID != 1 || c[0].StoredSession != "sess-a" || c[0].OfferedSession != "sess-b" {
		t.Fatalf("conflicts: %v %+v", err, c)
	}
}

// TestDirectorySymlinksAreNotContained: a cold_nodes/ that is a symlink to
// a directory outside the store holds nothing the store trusts (hydrate
// and validate report path containment, fold and repair refuse); a
// quarantine/ that is a symlink is never written through.
func TestDirectorySymlinksAreNotContained(t *testing.T) {
	s := demoStore(t)
	outside := filepath.Join(t.TempDir(), "outside")
	cold := filepath.Join(s.Dir(), ColdNodesDir)
	if err := os.Rename(cold, outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, cold); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, s.Dir())
	if _, err := s.Hydrate(137); !errors.Is(err, ErrPathContainment) {
		t.Errorf("hydrate through a symlinked cold_nodes/: %v", err)
	}
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range rep.Findings {
		kinds[f.Kind]++
	}
	if rep.Passed != 0 || kinds[KindPathContainment] != 9 || len(rep.Findings) != 9 {
		t.Errorf("validate: passed %d, findings %v", rep.Passed, kinds)
	}
	before := treeOf(t, outside)
	if _, err := s.Fold(Turn{StepID: 5, Summary: "new"}); err == nil || !strings.Contains(err.Error(), "not a directory of the store") {
		t.Errorf("fold through a symlinked cold_nodes/: %v", err)
	}
	for _, apply := range []bool{false, true} {
		if _, err := s.Repair(apply); err == nil {
			t.Errorf("repair(%v) through a symlinked cold_nodes/ succeeded", apply)
		}
	}
	if treeOf(t, outside) != before {
		t.Error("the directory outside the store changed")
	}

	// quarantine/ a symlink: repair of a tampered node writes nothing outside.
	s = demoStore(t)
	qout := filepath.Join(t.TempDir(), "qout")
	os.Mkdir(qout, 0o755)
	if err := os.Symlink(qout, filepath.Join(s.Dir(), QuarantineDir)); err != nil {
		t.Fatal(err)
	}
	node := s.NodePath(137)
	data, _ := os.ReadFile(node)
	os.WriteFile(node, []byte(strings.Replace(string(data), "5433", "6543", 1)), 0o644)
	if _, err := s.Repair(true); err == nil || !strings.Contains(err.Error(), "quarantine") {
		t.Errorf("repair with a symlinked quarantine/: %v", err)
	}
	if ents, _ := os.ReadDir(qout); len(ents) != 0 {
		t.Errorf("repair wrote outside the store: %v", ents)
	}
	if _, err := os.Stat(node); err != nil {
		t.Error("the tampered node left cold_nodes/")
	}
}

func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %v %v %x\n", p, fi.Mode(), fi.ModTime().UnixNano(), sha256.Sum256(data))
		return nil
	})
	return b.String()
}

// TestLeftoverTemporaryFiles: temporaries of interrupted atomic writes, in
// the store root and in cold_nodes/, are reported by validate and moved to
// quarantine/ by repair.
func TestLeftoverTemporaryFiles(t *testing.T) {
	s := demoStore(t)
	root := filepath.Join(s.Dir(), "."+IndexFile+"8245512")
	cold := filepath.Join(s.Dir(), ColdNodesDir, ".step_000137.json77123")
	os.WriteFile(root, []byte(`{"nodes": {`), 0o644)
	os.WriteFile(cold, []byte(`{"step_id": 13`), 0o644)
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	for _, f := range rep.Findings {
		if f.Kind == KindTempFile {
			temps = append(temps, f.File)
		}
	}
	sort.Strings(temps)
	if len(rep.Findings) != 2 || !reflect.DeepEqual(temps, []string{root, cold}) && !reflect.DeepEqual(temps, []string{cold, root}) {
		t.Fatalf("validate: %+v", rep.Findings)
	}
	// A fresh Store, as a 'contextfold repair --apply' process opens: its
	// first lock does not remove what repair plans to quarantine (the dry
	// run said so; repair deletes nothing).
	if plan, err := mustOpen(t, s.Dir()).Repair(false); err != nil || len(plan.Actions) != 2 {
		t.Fatalf("repair plan: %v %+v", err, plan)
	}
	res, err := mustOpen(t, s.Dir()).Repair(true)
	if err != nil || len(res.Actions) != 2 {
		t.Fatalf("repair: %v %+v", err, res)
	}
	for _, p := range []string{root, cold} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s still there", p)
		}
	}
	if rep, _ := s.Validate(); !rep.OK() {
		t.Errorf("after repair: %+v", rep.Findings)
	}
	q, _ := os.ReadDir(filepath.Join(s.Dir(), QuarantineDir))
	if len(q) != 2 {
		t.Errorf("quarantine: %v", q)
	}
}

// TestValidateDuringAFoldReportsNoFalseOrphans: a node a live writer wrote
// but has not indexed yet (it holds the store lock) is not an orphan:
// validate waits for the writer's commit and checks again.
func TestValidateDuringAFoldReportsNoFalseOrphans(t *testing.T) {
	s := demoStore(t)
	writer := mustOpen(t, s.Dir())
	started := make(chan struct{})
	var once sync.Once
	done := make(chan *Report)
	turns := make([]Turn, 10)
	for i := range turns {
		turns[i] = Turn{StepID: 1000 + i, Summary: fmt.Sprintf("turn %d", i)}
	}
	go func() {
		<-started
		rep, err := mustOpen(t, s.Dir()).Validate()
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	_, err := writer.FoldBatchProgress(turns, func(n, total int) {
		if n == 5 { // nodes 1000..1004 are on disk, not yet indexed
			once.Do(func() { close(started) })
			time.Sleep(300 * time.Millisecond) // validate lists cold_nodes/ meanwhile
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if !rep.OK() {
		t.Errorf("validate during a fold: %+v", rep.Findings)
	}
}

// TestValidateDuringALongBatchReportsNoFalseOrphans: a writer that holds
// the store lock for longer than ValidateLockWait (a long ingest commits
// its index in the middle of the batch, under the lock) makes no false
// orphans either: the nodes validate found unindexed are indexed by the
// batch's next commit, which validate reads without the lock. A real
// orphan is still reported. The order is made, not slept for: validate
// lists cold_nodes/ while nodes 1000..1002 are unindexed, the batch
// commits them, and the writer holds the lock until validate has returned
// (past ValidateLockWait). Before, sleeps made it; a writer slowed by more
// than ValidateLockWait (1.5 s) on a loaded machine committed after
// validate gave up, and three false orphans were reported.
func TestValidateDuringALongBatchReportsNoFalseOrphans(t *testing.T) {
	defer func(w time.Duration, e int) { ValidateLockWait, FoldCommitEvery = w, e }(ValidateLockWait, FoldCommitEvery)
	ValidateLockWait, FoldCommitEvery = 500*time.Millisecond, 5
	s := demoStore(t)
	writer := mustOpen(t, s.Dir())
	orphan := filepath.Join(s.Dir(), ColdNodesDir, stepFileName(777777))
	if err := os.WriteFile(orphan, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	turns := make([]Turn, 40)
	for i := range turns {
		turns[i] = Turn{StepID: 1000 + i, Summary: fmt.Sprintf("turn %d", i)}
	}
	// Each wait is bounded by a minute so that a broken order fails the
	// test instead of hanging it; none is reached when the order holds.
	wait := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Errorf("%s: not within a minute", what)
		}
	}
	started, listed, committed, validated := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var listedOnce sync.Once
	validateListedHook = func() {
		listedOnce.Do(func() {
			close(listed)
			wait(committed, "the batch's commit after validate listed cold_nodes/")
		})
	}
	defer func() { validateListedHook = nil }()
	done := make(chan *Report, 1)
	go func() {
		<-started
		rep, err := mustOpen(t, s.Dir()).Validate()
		if err != nil {
			t.Error(err)
		}
		close(validated)
		done <- rep
	}()
	_, err := writer.FoldBatchProgress(turns, func(n, total int) {
		switch n {
		case 3: // nodes 1000..1002 are on disk, not yet indexed
			close(started)
			wait(listed, "validate listing cold_nodes/")
		case 6: // the batch committed 1000..1004 (FoldCommitEvery) before this turn
			close(committed)
			wait(validated, "validate during the batch") // the lock stays held past ValidateLockWait
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindOrphan || rep.Findings[0].File != orphan {
		t.Errorf("validate during a long batch: want the one real orphan, got %+v", rep.Findings)
	}
}

// TestSessionIDIsScrubbed: a secret in the session id (of the turn or the
// store's Options) is redacted before the cold node is written.
func TestSessionIDIsScrubbed(t *testing.T) {
	t.Setenv(EnvScrub, "")
	for _, opts := range []Options{{SessionID: "ci AKIAZ4QXLEWJTNMA7B3C"}, {}} {
		s, err := Open(filepath.Join(t.TempDir(), DefaultStoreDir), Options{Clock: fixedClock, SessionID: opts.SessionID, Scrub: ScrubOn})
		if err != nil {
			t.Fatal(err)
		}
		turn := Turn{StepID: 1, Summary: "deploy"}
		if opts.SessionID == "" {
			turn.SessionID = "ci AKIAZ4QXLEWJTNMA7B3C"
		}
		res, err := s.Fold(turn)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(s.NodePath(1))
		if strings.Contains(string(data), "AKIAZ4QXLEWJTNMA7B3C") || !strings.HasPrefix(res.Node.SessionID, "ci [REDACTED:") || !res.Node.Sanitized {
			t.Errorf("session id stored as %q (sanitized %v)", res.Node.SessionID, res.Node.Sanitized)
		}
	}
}

// TestSingleFoldsJournalEarly: one-process-per-turn folds (a new Store for
// every fold, as hooks and the CLI do) stop rewriting the whole index once
// it reaches JournalThreshold (scaled down here to 64 KiB so that a few
// hundred small folds pass it): they rewrite it only a few dozen times, and
// Compact leaves the index alone describing the store.
func TestSingleFoldsJournalEarly(t *testing.T) {
	defer func(v int64) { JournalThreshold = v }(JournalThreshold)
	JournalThreshold = 64 << 10
	dir := filepath.Join(t.TempDir(), DefaultStoreDir)
	rewrites, last := 0, uint64(0)
	const n = 400
	for i := 0; i < n; i++ {
		s := mustOpen(t, dir)
		if _, err := s.Fold(Turn{StepID: i, Summary: fmt.Sprintf("turn %d ran pytest on service_%d", i, i),
			RawContent: fmt.Sprintf("$ pytest tests/test_service_%d.py\n%d passed, 1 failed: AssertionError in handler_%d", i, i, i)}); err != nil {
			t.Fatal(err)
		}
		st, err := stampOf(filepath.Join(dir, IndexFile))
		if err != nil {
			t.Fatal(err)
		}
		if st.ino != last {
			rewrites++
			last = st.ino
		}
	}
	st, _ := stampOf(filepath.Join(dir, IndexFile))
	if st.size < JournalThreshold {
		t.Fatalf("the index (%d bytes) must pass the journal threshold for this test", st.size)
	}
	if rewrites > n/4 {
		t.Errorf("%d single folds rewrote the index %d times", n, rewrites)
	}
	s := mustOpen(t, dir)
	before, _ := s.Entries()
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, JournalFile)); err == nil {
		t.Error("a journal after Compact")
	}
	ix, err := parseIndex(mustReadFile(t, filepath.Join(dir, IndexFile)))
	if err != nil || ix.len() != n || len(before) != n {
		t.Errorf("after compact the index file holds %d of %d nodes (%v)", ix.len(), n, err)
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIndexIdentifiersCapped: outside the reference profile one node's index
// entry lists at most MaxIndexIdentifiers identifiers (the summary's first,
// then the shortest), while its cold node keeps them all and validates; the
// reference profile (scrubbing off) lists every one.
func TestIndexIdentifiersCapped(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxIndexIdentifiers+5000; i++ {
		fmt.Fprintf(&b, "tok%x ", i*7919)
	}
	b.WriteString("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzlongest\n")
	turn := Turn{StepID: 3, Summary: "huge log zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzlongest", RawContent: b.String()}
	for _, mode := range []ScrubMode{ScrubOn, ScrubOff} {
		s, err := Open(filepath.Join(t.TempDir(), DefaultStoreDir), Options{Clock: fixedClock, Scrub: mode})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Fold(turn)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := s.Entry(3)
		all := len(res.Node.Identifiers)
		if all < MaxIndexIdentifiers+5000 {
			t.Fatalf("the cold node lists %d identifiers", all)
		}
		want := all
		if mode == ScrubOn {
			want = MaxIndexIdentifiers
		}
		if len(e.Identifiers) != want || !sort.StringsAreSorted(e.Identifiers) {
			t.Errorf("mode %d: the entry lists %d identifiers (sorted %v), want %d", mode, len(e.Identifiers), sort.StringsAreSorted(e.Identifiers), want)
		}
		if !slicesContains(e.Identifiers, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzlongest") || !slicesContains(e.Identifiers, "huge") {
			t.Errorf("mode %d: the summary's identifiers are not all kept", mode)
		}
		if rep, _ := s.Validate(); !rep.OK() {
			t.Errorf("mode %d: validate: %+v", mode, rep.Findings)
		}
		if r, _ := s.Scan("what did the huge log with zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzlongest say"); len(r.Selected) != 1 {
			t.Errorf("mode %d: the node is not found by its summary's terms: %+v", mode, r)
		}
	}
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestWriterRemovesTemporaryFilesOfACrash: after a crashed writer (a proxy
// killed mid-write), the next writer's first exclusive lock removes the
// temporaries of interrupted writes (root and cold_nodes/), so the store
// validates clean without a manual repair; read-only commands leave them
// for validate to report, and nothing else in the store changes.
func TestWriterRemovesTemporaryFilesOfACrash(t *testing.T) {
	s := demoStore(t)
	dir := s.Dir()
	root := filepath.Join(dir, "."+IndexFile+"8245512")
	evlog := filepath.Join(dir, "."+EvictionLogFile+"1234")
	cold := filepath.Join(dir, ColdNodesDir, ".step_000137.json77123")
	for _, p := range []string{root, evlog, cold} {
		if err := os.WriteFile(p, []byte(`{"partial": `), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink of a temporary's name is not a file this store wrote.
	link := filepath.Join(dir, ColdNodesDir, ".step_000001.json5555")
	if err := os.Symlink(filepath.Join(dir, IndexFile), link); err != nil {
		t.Fatal(err)
	}
	reader := mustOpen(t, dir)
	if rep, err := reader.Validate(); err != nil || rep.OK() {
		t.Fatalf("validate before a writer: %v %+v (the temporaries are findings)", err, rep)
	}
	for _, p := range []string{root, evlog, cold} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("validate removed %s: it is read-only", p)
		}
	}
	before := treeOf(t, filepath.Join(dir, ColdNodesDir))
	w := mustOpen(t, dir)
	if _, err := w.Fold(Turn{StepID: 9001, Summary: "after the crash", RawContent: "the next turn"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, evlog, cold} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there after the writer's first lock", p)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the symlink was removed: %v", err)
	}
	os.Remove(link)
	after := treeOf(t, filepath.Join(dir, ColdNodesDir))
	for _, line := range strings.Split(strings.TrimSpace(before), "\n") {
		if strings.Contains(line, ".step_000") || strings.HasSuffix(strings.Fields(line)[0], ColdNodesDir) {
			continue // the temporaries, and the directory's own mtime
		}
		if !strings.Contains(after, line) {
			t.Errorf("a node changed: %s", line)
		}
	}
	if rep, err := w.Validate(); err != nil || !rep.OK() {
		t.Fatalf("validate after the writer: %v %+v", err, rep.Findings)
	}
}
