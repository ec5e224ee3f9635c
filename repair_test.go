package contextfold

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// breakStore produces every broken state Validate knows.
func breakStore(t *testing.T, s *Store) {
	t.Helper()
	nodes := filepath.Join(s.Dir(), ColdNodesDir)
	// orphan that verifies: index entry of 499 removed
	editIndex(t, s, func(n map[string]any) { delete(n, "499") })
	// orphan that does not verify: a copy of 137 under another step's name
	data, _ := os.ReadFile(s.NodePath(137))
	os.WriteFile(filepath.Join(nodes, "step_000138.json"), data, 0o644)
	// broken reference
	os.Remove(s.NodePath(342))
	// tampered
	editColdNode(t, s, 447, false, func(d map[string]any) { d["raw_content"] = "botched" })
	// path containment
	editIndexEntry(t, s, 91, func(e map[string]any) { e["file_path"] = "../../etc/passwd" })
}

func editIndex(t *testing.T, s *Store, edit func(nodes map[string]any)) {
	t.Helper()
	editIndexEntry(t, s, 37, func(map[string]any) {}) // normalise
	path := filepath.Join(s.Dir(), IndexFile)
	data, _ := os.ReadFile(path)
	v, _ := decodeForTest(data)
	edit(v["nodes"].(map[string]any))
	writeForTest(t, path, v)
}

func TestRepairFixesEveryBrokenState(t *testing.T) {
	s := demoStore(t)
	if _, err := s.Evict(499); err != nil {
		t.Fatal(err)
	}
	breakStore(t, s)
	before := hashTree(t, s.Dir())
	plan, err := s.Repair(false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range plan.Actions {
		got[fmtInt(*a.StepID)] += a.Action + " "
	}
	// 91's entry pointed outside cold_nodes/: the entry goes, and the real
	// file, which verifies, is indexed again.
	want := map[string]string{"499": "reindex ", "138": "quarantine ", "342": "drop_reference ", "447": "quarantine ", "91": "drop_reference reindex "}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("step %s: action %q, want %q (plan %+v)", k, got[k], v, got)
		}
	}
	if after := hashTree(t, s.Dir()); len(after) != len(before) {
		t.Fatal("a dry run changed the store")
	}
	for p, h := range hashTree(t, s.Dir()) {
		if before[p] != h {
			t.Fatalf("a dry run changed %s", p)
		}
	}
	res, err := s.Repair(true)
	if err != nil || !res.Applied {
		t.Fatal(err)
	}
	rep, err := s.Validate()
	if err != nil || !rep.OK() {
		t.Fatalf("validate after repair: %v %+v", err, rep.Findings)
	}
	e, err := s.Entry(499)
	if err != nil || !e.Evicted {
		t.Errorf("re-indexed 499 must keep its eviction from the log: %v %+v", err, e)
	}
	if _, err := s.Hydrate(499); err != nil {
		t.Errorf("re-indexed node: %v", err)
	}
	q, _ := os.ReadDir(filepath.Join(s.Dir(), QuarantineDir))
	var names []string
	for _, d := range q {
		names = append(names, d.Name())
	}
	joined := strings.Join(names, " ")
	for _, want := range []string{"step_000447.json", "step_000138.json", "step_000447.index-entry.json", "step_000342.index-entry.json", "step_000091.index-entry.json"} {
		if !strings.Contains(joined, want) {
			t.Errorf("quarantine lacks %s: %s", want, joined)
		}
	}
	logData, _ := os.ReadFile(filepath.Join(s.Dir(), RepairLogFile))
	if strings.Count(string(logData), `"action"`) != 6 {
		t.Errorf("repair log: %s", logData)
	}
	again, err := s.Repair(true)
	if err != nil || len(again.Actions) != 0 {
		t.Errorf("second repair: %v %+v", err, again.Actions)
	}
}

func TestRepairRebuildsAnUnreadableIndex(t *testing.T) {
	s := demoStore(t)
	os.WriteFile(filepath.Join(s.Dir(), IndexFile), []byte(`{"nodes": {"37": `), 0o644)
	if _, err := s.Scan("port"); !errors.Is(err, ErrBadStore) {
		t.Fatalf("corrupt index: %v", err)
	}
	res, err := s.Repair(true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Actions[0].Action != ActionRebuildIndex || len(res.Actions) != 9 {
		t.Errorf("plan: %+v", res.Actions)
	}
	if es, err := s.Entries(); err != nil || len(es) != 8 {
		t.Fatalf("rebuilt index: %v %d", err, len(es))
	}
	if rep, _ := s.Validate(); !rep.OK() {
		t.Errorf("validate: %+v", rep.Findings)
	}
	res2, _ := s.Scan(DemoPrompt)
	if len(res2.Selected) != 3 {
		t.Errorf("scan after rebuild: %+v", res2.Selected)
	}
}

// A fold onto an unindexed file never loses it: an orphan holding the same
// turn is adopted, any other is quarantined first.
func TestFoldOverAnOrphan(t *testing.T) {
	s := demoStore(t)
	editIndex(t, s, func(n map[string]any) { delete(n, "499"); delete(n, "447") })
	tr := DemoTurns()
	// 499: the same turn again → adopted, file unchanged, nothing quarantined.
	before, _ := os.ReadFile(s.NodePath(499))
	if _, err := s.Fold(tr[7]); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(s.NodePath(499))
	if string(before) != string(after) {
		t.Error("adopting an orphan rewrote it")
	}
	// 447: another turn → the orphan goes to quarantine, the new one is stored.
	old, _ := os.ReadFile(s.NodePath(447))
	if _, err := s.Fold(Turn{StepID: 447, Summary: "something else"}); err != nil {
		t.Fatal(err)
	}
	q, _ := os.ReadDir(filepath.Join(s.Dir(), QuarantineDir))
	if len(q) != 1 {
		t.Fatalf("quarantine: %v", q)
	}
	kept, _ := os.ReadFile(filepath.Join(s.Dir(), QuarantineDir, q[0].Name()))
	if string(kept) != string(old) {
		t.Error("the quarantined file is not the orphan")
	}
	if rep, _ := s.Validate(); !rep.OK() || rep.Passed != 8 {
		t.Errorf("validate: %+v", rep)
	}
	logData, _ := os.ReadFile(filepath.Join(s.Dir(), RepairLogFile))
	if !strings.Contains(string(logData), "quarantine") {
		t.Error("the quarantine is not logged")
	}
}

func TestEvictOnAMissingStoreCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nostore")
	s, _ := Open(dir, Options{})
	if _, err := s.Evict(1); !errors.Is(err, ErrNodeNotFound) {
		t.Fatalf("evict: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("evict created the store directory")
	}
}

// Temporary files of interrupted atomic writes are moved to quarantine/.
func TestRepairQuarantinesTemporaryFiles(t *testing.T) {
	s := demoStore(t)
	tmp := filepath.Join(s.Dir(), ColdNodesDir, ".step_000137.json3908123")
	os.WriteFile(tmp, []byte(`{"torn`), 0o644)
	plan, err := s.Repair(false)
	if err != nil || len(plan.Actions) != 1 || plan.Actions[0].Action != ActionQuarantine || plan.Actions[0].StepID != nil {
		t.Fatalf("plan: %v %+v", err, plan)
	}
	if _, err := s.Repair(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Error("the temporary file is still in cold_nodes/")
	}
	if again, _ := s.Repair(true); len(again.Actions) != 0 {
		t.Errorf("second repair: %+v", again.Actions)
	}
	if rep, _ := s.Validate(); !rep.OK() {
		t.Errorf("validate: %+v", rep.Findings)
	}
}
