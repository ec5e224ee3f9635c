//go:build unix

package contextfold_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/testgen"
)

var spareGen = testgen.New(20261202)

func openSpareStore(t *testing.T, dir string) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// spareFiles returns the spare files in dir's cold_nodes/.
func spareFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, fsutil.SparePrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cleanReport(t *testing.T, s *contextfold.Store, when string) {
	t.Helper()
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("%s: validate findings %+v", when, rep.Findings)
	}
	res, err := s.Repair(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Actions) != 0 {
		t.Fatalf("%s: repair plans %+v", when, res.Actions)
	}
}

// TestSpareFilesInStore: a store makes spare files only once cold_nodes/
// exists, as many as asked (at most MaxSpares); empty spares fail neither
// validate nor repair; a fold writes its nodes into them (the nodes are
// the spares' files); another Store's first write removes the spares it
// does not own while a Store keeps its own; RemoveSpares removes them; and
// a spare holding bytes (a fold killed before its commit) is reported as a
// temporary file and quarantined by repair.
func TestSpareFilesInStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openSpareStore(t, dir)
	if s.NeedsSpares(10) {
		t.Fatal("spares wanted before cold_nodes/ exists")
	}
	if err := s.FillSpares(10, nil); err != nil || len(spareFiles(t, dir)) != 0 {
		t.Fatalf("FillSpares before the first fold: %v, %d files", err, len(spareFiles(t, dir)))
	}
	if _, err := s.FoldBatch(spareGen.SmallTurns(0, 4)); err != nil {
		t.Fatal(err)
	}
	// The last fold wrote 4 nodes: 4 spares at least.
	if !s.NeedsSpares(0) {
		t.Fatal("no spares wanted after a fold of 4 nodes")
	}
	if err := s.FillSpares(0, nil); err != nil || len(spareFiles(t, dir)) != 4 {
		t.Fatalf("FillSpares(0) after a fold of 4: %v, %d spares", err, len(spareFiles(t, dir)))
	}
	if err := s.FillSpares(contextfold.MaxSpares+10, nil); err != nil || len(spareFiles(t, dir)) != contextfold.MaxSpares {
		t.Fatalf("FillSpares past MaxSpares: %v, %d spares", err, len(spareFiles(t, dir)))
	}
	if s.NeedsSpares(5) {
		t.Fatal("spares wanted by a full pool")
	}
	cleanReport(t, s, "with empty spares")
	ino := map[uint64]bool{}
	for _, p := range spareFiles(t, dir) {
		ino[inodeOf(t, p)] = true
	}
	if _, err := s.FoldBatch(spareGen.SmallTurns(4, 3)); err != nil {
		t.Fatal(err)
	}
	if n := len(spareFiles(t, dir)); n != contextfold.MaxSpares-3 {
		t.Fatalf("%d spares after a fold of 3, want %d", n, contextfold.MaxSpares-3)
	}
	for step := 4; step < 7; step++ {
		if !ino[inodeOf(t, s.NodePath(step))] {
			t.Errorf("step %d's node was not written into a spare", step)
		}
	}
	cleanReport(t, s, "after a fold into spares")

	// Another Store's first write removes the spares it does not own; its
	// own stay.
	s2 := openSpareStore(t, dir)
	if err := s2.FillSpares(2, nil); err != nil {
		t.Fatal(err)
	}
	own := spareFiles(t, dir)
	if len(own) != contextfold.MaxSpares-3+2 {
		t.Fatalf("%d spares, want %d", len(own), contextfold.MaxSpares-3+2)
	}
	if _, err := s2.FoldBatch(spareGen.SmallTurns(7, 1)); err != nil {
		t.Fatal(err)
	}
	if n := len(spareFiles(t, dir)); n != 1 {
		t.Fatalf("%d spares after another Store's first write, want its own 2 less the 1 it took", n)
	}
	// The first Store's spares are gone: its next fold creates its files.
	if _, err := s.FoldBatch(spareGen.SmallTurns(8, 2)); err != nil {
		t.Fatal(err)
	}
	cleanReport(t, s, "after the spares were removed under a Store")
	if err := s2.RemoveSpares(); err != nil {
		t.Fatal(err)
	}
	if n := len(spareFiles(t, dir)); n != 0 {
		t.Fatalf("%d spares after RemoveSpares", n)
	}

	// A spare holding a node's bytes is an interrupted fold's temporary
	// file: reported, quarantined by repair.
	if err := s.FillSpares(1, nil); err != nil {
		t.Fatal(err)
	}
	sp := spareFiles(t, dir)
	if len(sp) == 0 {
		t.Fatal("no spare made")
	}
	if err := os.WriteFile(sp[0], []byte(`{"step_id": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != contextfold.KindTempFile || rep.Findings[0].File != sp[0] {
		t.Fatalf("a written spare: findings %+v, want one temp_file", rep.Findings)
	}
	res, err := s.Repair(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Actions) != 1 || res.Actions[0].Action != contextfold.ActionQuarantine {
		t.Fatalf("repair of a written spare: %+v", res.Actions)
	}
	if rep, err := s.Validate(); err != nil || !rep.OK() {
		t.Fatalf("after repair: %+v, %v", rep, err)
	}
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestSpareFillDuringFolds: spares made while the store folds (as the
// proxy's work after a response may meet the next request's fold) never
// disturb a fold: every node hydrates with the bytes folded, the store
// validates clean, and RemoveSpares leaves no spare. Run with -race.
func TestSpareFillDuringFolds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openSpareStore(t, dir)
	if _, err := s.FoldBatch(spareGen.SmallTurns(0, 2)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	filled := make(chan error, 1)
	go func() {
		var err error
		for {
			select {
			case <-done:
				filled <- err
				return
			default:
			}
			if e := s.FillSpares(8, nil); e != nil && err == nil {
				err = e
			}
		}
	}()
	const batches, per = 20, 5
	for b := range batches {
		if _, err := s.FoldBatch(spareGen.SmallTurns(2+b*per, per)); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-filled; err != nil {
		t.Fatal(err)
	}
	cleanReport(t, s, "after folds with spares made meanwhile")
	for step := range 2 + batches*per {
		h, err := s.Hydrate(step)
		if err != nil || h.RawContent != spareGen.SmallTurn(step).RawContent {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if err := s.RemoveSpares(); err != nil {
		t.Fatal(err)
	}
	if n := len(spareFiles(t, dir)); n != 0 {
		t.Fatalf("%d spares after RemoveSpares", n)
	}
}

// rootSpares returns the spare files in the store root dir.
func rootSpares(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, fsutil.SparePrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRootSpareInStore: once cold_nodes/ exists, FillSpares keeps one spare
// in the store root too, which the next index rewrite writes
// recall_index.json into (the index is the spare's file: no file created
// on the fold's path); an empty root spare fails neither validate nor
// repair; another Store's first write removes it; RemoveSpares removes it;
// and one holding bytes (an index rewrite killed before its rename) is
// reported as a temporary file and quarantined by repair.
func TestRootSpareInStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s := openSpareStore(t, dir)
	if _, err := s.FoldBatch(spareGen.SmallTurns(0, 4)); err != nil {
		t.Fatal(err)
	}
	if len(rootSpares(t, dir)) != 0 {
		t.Fatal("a root spare before FillSpares")
	}
	if err := s.FillSpares(4, nil); err != nil {
		t.Fatal(err)
	}
	sp := rootSpares(t, dir)
	if len(sp) != 1 {
		t.Fatalf("%d root spares after FillSpares, want 1", len(sp))
	}
	if s.NeedsSpares(4) {
		t.Fatal("spares wanted by full pools")
	}
	cleanReport(t, s, "with an empty root spare")
	ino := inodeOf(t, sp[0])
	if _, err := s.FoldBatch(spareGen.SmallTurns(4, 3)); err != nil {
		t.Fatal(err)
	}
	if got := inodeOf(t, filepath.Join(dir, contextfold.IndexFile)); got != ino {
		t.Errorf("recall_index.json is inode %d, not the root spare's %d", got, ino)
	}
	if n := len(rootSpares(t, dir)); n != 0 {
		t.Fatalf("%d root spares after the fold took it", n)
	}
	if !s.NeedsSpares(0) {
		t.Fatal("no spares wanted once the root spare was taken")
	}
	cleanReport(t, s, "after an index rewrite into the root spare")

	// Another Store's first write removes the root spare it does not own.
	if err := s.FillSpares(0, nil); err != nil || len(rootSpares(t, dir)) != 1 {
		t.Fatalf("FillSpares: %v, %d root spares", err, len(rootSpares(t, dir)))
	}
	s2 := openSpareStore(t, dir)
	if _, err := s2.FoldBatch(spareGen.SmallTurns(7, 1)); err != nil {
		t.Fatal(err)
	}
	if n := len(rootSpares(t, dir)); n != 0 {
		t.Fatalf("%d root spares after another Store's first write", n)
	}
	if err := s2.FillSpares(1, nil); err != nil || len(rootSpares(t, dir)) != 1 {
		t.Fatalf("FillSpares: %v, %d root spares", err, len(rootSpares(t, dir)))
	}
	if err := s2.RemoveSpares(); err != nil || len(rootSpares(t, dir)) != 0 {
		t.Fatalf("RemoveSpares: %v, %d root spares left", err, len(rootSpares(t, dir)))
	}

	// A root spare holding bytes is an interrupted rewrite's temporary file.
	if err := s2.FillSpares(1, nil); err != nil {
		t.Fatal(err)
	}
	sp = rootSpares(t, dir)
	if len(sp) != 1 {
		t.Fatalf("%d root spares, want 1", len(sp))
	}
	if err := os.WriteFile(sp[0], []byte(`{"entries": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := s2.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != contextfold.KindTempFile || rep.Findings[0].File != sp[0] {
		t.Fatalf("a written root spare: findings %+v, want one temp_file", rep.Findings)
	}
	res, err := s2.Repair(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Actions) != 1 || res.Actions[0].Action != contextfold.ActionQuarantine {
		t.Fatalf("repair of a written root spare: %+v", res.Actions)
	}
	if rep, err := s2.Validate(); err != nil || !rep.OK() {
		t.Fatalf("after repair: %+v, %v", rep, err)
	}
}
