package contextfold

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/canonjson"
)

// Tests named after the conformance requirements of spec §9.

var fixedClock = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

func newTestStore(t *testing.T) *Store {
	t.Helper()
	return openTestStore(t, Options{Clock: fixedClock})
}

func demoStore(t *testing.T) *Store {
	t.Helper()
	s := newTestStore(t)
	if _, err := s.FoldBatch(DemoTurns()); err != nil {
		t.Fatal(err)
	}
	return s
}

func writePolicy(t *testing.T, s *Store, policy string) {
	t.Helper()
	if s.be != nil {
		putStoreFile(t, s, PolicyFile, []byte(policy))
		return
	}
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), PolicyFile), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hashTree hashes every file under dir (path → sha256) to prove that an
// operation changed no byte.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	if s := backendStores[dir]; s != nil {
		return hashBackend(t, s)
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// editIndexEntry rewrites one entry of recall_index.json.
func editIndexEntry(t *testing.T, s *Store, step int, edit func(map[string]any)) {
	t.Helper()
	if s.be != nil {
		editEntryInBackend(t, s, step, edit)
		return
	}
	path := filepath.Join(s.Dir(), IndexFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	edit(v.(map[string]any)["nodes"].(map[string]any)[itoa(step)].(map[string]any))
	out, err := canonjson.Pretty(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editColdNode rewrites a cold node file; resign recomputes its artifact hash.
func editColdNode(t *testing.T, s *Store, step int, resign bool, edit func(map[string]any)) string {
	t.Helper()
	data := readNodeBytes(t, s, step)
	v, err := canonjson.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	doc := v.(map[string]any)
	edit(doc)
	if resign {
		h, err := ArtifactHash(doc)
		if err != nil {
			t.Fatal(err)
		}
		doc["artifact_sha256"] = h
	}
	out, _ := canonjson.Pretty(doc)
	writeNodeBytes(t, s, step, out)
	h, _ := doc["artifact_sha256"].(string)
	return h
}

func itoa(n int) string { return fmtInt(n) }

func fmtInt(n int) string { b, _ := canonjson.Canonical(n); return string(b) }

func TestCONF01LosslessStorage(t *testing.T) {
	s := newTestStore(t)
	writePolicy(t, s, `{"max_rehydration_tokens_per_call": 1000000}`)
	payloads := []string{
		"NUL \x00 CR \r CRLF \r\n U+2028 \u2028 tab\t",
		"emoji 🔑👩‍💻 and combining e\u0301 and İ",
		strings.Repeat("long line ", 5000),
		"trailing whitespace kept   \n\n",
	}
	for i, p := range payloads {
		if _, err := s.Fold(Turn{StepID: i, Summary: "payload " + fmtInt(i), RawContent: p}); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range payloads {
		h, err := s.Hydrate(i)
		if err != nil {
			t.Fatal(err)
		}
		if h.RawContent != p || h.Content != p || h.Truncated {
			t.Errorf("step %d: payload not returned losslessly", i)
		}
	}
}

func TestCONF02PayloadRoundTrip(t *testing.T) {
	s := newTestStore(t)
	r, err := s.Fold(Turn{StepID: 1, Summary: "only a summary"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("only a summary"))
	if r.Node.RawContent != "only a summary" || r.Node.PayloadSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("an empty raw content must make the summary the payload: %+v", r.Node)
	}
	h, err := s.Hydrate(1)
	if err != nil || h.PayloadSHA256 != r.Node.PayloadSHA256 {
		t.Fatalf("hydrate: %v", err)
	}
}

func TestCONF03DeterministicIndexing(t *testing.T) {
	a, b := demoStore(t), newTestStore(t)
	turns := DemoTurns()
	sort.Slice(turns, func(i, j int) bool { return turns[i].StepID > turns[j].StepID }) // other order
	for _, tr := range turns {
		if _, err := b.Fold(tr); err != nil {
			t.Fatal(err)
		}
	}
	ha, hb := hashTree(t, a.Dir()), hashTree(t, b.Dir())
	rel := func(m map[string]string, root string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			r, _ := filepath.Rel(root, k)
			if r != lockFile {
				out[r] = v
			}
		}
		return out
	}
	if !reflect.DeepEqual(rel(ha, a.Dir()), rel(hb, b.Dir())) {
		t.Errorf("same turns gave different bytes:\n%v\n%v", rel(ha, a.Dir()), rel(hb, b.Dir()))
	}
}

func TestCONF04TemporalDisambiguation(t *testing.T) {
	hits, err := demoStore(t).Recall(DemoRecallQuery)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, fmtInt(h.StepID)+":"+h.Status)
	}
	want := []string{"137:latest_chronological", "91:superseded", "37:historical", "499:related"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recall = %v, want %v", got, want)
	}
}

func TestCONF05VerbatimRetrieval(t *testing.T) {
	s := demoStore(t)
	for _, tr := range DemoTurns() {
		h, err := s.Hydrate(tr.StepID)
		if err != nil {
			t.Fatal(err)
		}
		if h.Content != tr.RawContent || h.Summary != tr.Summary {
			t.Errorf("step %d not verbatim", tr.StepID)
		}
	}
}

func TestCONF06BoundedRehydration(t *testing.T) {
	t.Run("per call", func(t *testing.T) {
		s := newTestStore(t)
		writePolicy(t, s, `{"max_rehydration_tokens_per_call": 5}`)
		if _, err := s.Fold(Turn{StepID: 1, Summary: "s", RawContent: strings.Repeat("é", 100)}); err != nil {
			t.Fatal(err)
		}
		h, err := s.Hydrate(1)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Truncated || h.TokenEstimate != 5 || h.Content != strings.Repeat("é", 20) || h.RawContent != strings.Repeat("é", 100) {
			t.Errorf("cut wrong: %q %d %v", h.Content, h.TokenEstimate, h.Truncated)
		}
	})
	for _, tc := range []struct {
		budget  string
		want    []int
		dropped []int
	}{
		{"25", []int{342}, []int{137, 447}},
		{"30", []int{342, 137}, []int{447}},
		{"60", []int{342, 137, 447}, nil},
	} {
		t.Run("per turn "+tc.budget, func(t *testing.T) {
			s := newTestStore(t)
			writePolicy(t, s, `{"max_rehydration_tokens_per_turn": `+tc.budget+`}`)
			if _, err := s.FoldBatch(DemoTurns()); err != nil {
				t.Fatal(err)
			}
			res, err := s.Scan(DemoPrompt)
			if err != nil {
				t.Fatal(err)
			}
			var got, dropped []int
			for _, p := range res.Selected {
				got = append(got, p.StepID)
			}
			for _, p := range res.Dropped {
				dropped = append(dropped, p.StepID)
			}
			if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(dropped, tc.dropped) {
				t.Errorf("selected %v dropped %v, want %v / %v (an older node must not stand in for a dropped intent)", got, dropped, tc.want, tc.dropped)
			}
			if res.UsedTokens > res.BudgetTokens && len(res.Selected) > 1 {
				t.Errorf("used %v of %v", res.UsedTokens, res.BudgetTokens)
			}
		})
	}
}

func TestCONF07EvictionAfterResponse(t *testing.T) {
	s := demoStore(t)
	for i := 0; i < 2; i++ {
		if _, err := s.Evict(137); err != nil {
			t.Fatal(err)
		}
	}
	log, err := s.EvictionLog()
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].StepID != 137 || log[0].EvictedAt != "2026-01-01T00:00:00Z" {
		t.Errorf("eviction log = %+v, want two events for 137", log)
	}
	e, _ := s.Entry(137)
	if !e.Evicted {
		t.Error("entry not marked evicted")
	}
	if _, err := s.Hydrate(137); err != nil {
		t.Errorf("an evicted node is still stored and hydratable: %v", err)
	}
	if _, err := s.Evict(9999); !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("evict unknown: %v", err)
	}
	if rep, _ := s.Validate(); !rep.OK() {
		t.Errorf("validate after evictions: %+v", rep.Findings)
	}
}

func TestCONF08ReadOnlyOperationsChangeNothing(t *testing.T) {
	s := demoStore(t)
	if _, err := s.Evict(37); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, s.Dir())
	fresh := reopen(t, s) // a second process's view
	for _, st := range []*Store{s, fresh} {
		if _, err := st.Status(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Scan(DemoPrompt); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recall(DemoRecallQuery); err != nil {
			t.Fatal(err)
		}
		for _, tr := range DemoTurns() {
			if _, err := st.Hydrate(tr.StepID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.EvictionLog(); err != nil {
			t.Fatal(err)
		}
	}
	if after := hashTree(t, s.Dir()); !reflect.DeepEqual(before, after) {
		t.Error("a read-only operation changed the store")
	}
}

func TestCONF09TamperDetection(t *testing.T) {
	t.Run("edited content", func(t *testing.T) {
		s := demoStore(t)
		editColdNode(t, s, 137, false, func(d map[string]any) { d["raw_content"] = "PostgreSQL Port 9999 restored" })
		if _, err := s.Hydrate(137); !errors.Is(err, ErrIntegrityCheck) {
			t.Fatalf("tampered node hydrated: %v", err)
		}
		rep, _ := s.Validate()
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindIntegrity || rep.Passed != 7 {
			t.Errorf("validate: %+v", rep)
		}
	})
	t.Run("re-signed artifact, index not updated", func(t *testing.T) {
		s := demoStore(t)
		editColdNode(t, s, 137, true, func(d map[string]any) { d["raw_content"] = "x" })
		if _, err := s.Hydrate(137); !errors.Is(err, ErrIntegrityCheck) {
			t.Fatalf("hydrated: %v", err)
		}
	})
	t.Run("re-signed artifact and index", func(t *testing.T) {
		s := demoStore(t)
		h := editColdNode(t, s, 137, true, func(d map[string]any) { d["raw_content"] = "PostgreSQL Port 9999" })
		editIndexEntry(t, s, 137, func(e map[string]any) { e["artifact_sha256"] = h })
		_, err := s.Hydrate(137)
		var ie *IntegrityCheckError
		if !errors.As(err, &ie) || ie.Check != "payload" {
			t.Fatalf("re-signed tamper not refused: %v", err)
		}
		rep, _ := s.Validate()
		kinds := map[string]bool{}
		for _, f := range rep.Findings {
			kinds[f.Kind] = true
		}
		if !kinds[KindPayload] {
			t.Errorf("validate kinds %v, want payload", kinds)
		}
	})
	t.Run("torn file", func(t *testing.T) {
		s := demoStore(t)
		data := readNodeBytes(t, s, 447)
		writeNodeBytes(t, s, 447, data[:len(data)/2])
		_, err := s.Hydrate(447)
		var ie *IntegrityCheckError
		if !errors.As(err, &ie) || ie.Check != "parse" {
			t.Fatalf("torn file: %v", err)
		}
	})
	t.Run("hash-less file", func(t *testing.T) {
		s := demoStore(t)
		editColdNode(t, s, 91, false, func(d map[string]any) { delete(d, "artifact_sha256") })
		if _, err := s.Hydrate(91); !errors.Is(err, ErrIntegrityCheck) {
			t.Fatalf("hash-less node hydrated: %v", err)
		}
	})
	t.Run("verification off", func(t *testing.T) {
		s := demoStore(t)
		writePolicy(t, s, `{"integrity_verification": false}`)
		editColdNode(t, s, 137, false, func(d map[string]any) { d["raw_content"] = "changed" })
		if h, err := s.Hydrate(137); err != nil || h.Content != "changed" {
			t.Errorf("with integrity_verification false the reference serves the file: %v", err)
		}
	})
}

func TestCONF10ExplicitFailureModes(t *testing.T) {
	s := demoStore(t)
	_, err := s.Hydrate(1)
	var nf *NodeNotFoundError
	if !errors.As(err, &nf) || nf.StepID != 1 || !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("unknown step: %v", err)
	}
	if s.be != nil {
		sqlSession(t, s, `UPDATE cf_entries SET doc = '{not json'::bytea WHERE session_id = $1 AND step_id = 137`)
	} else {
		os.WriteFile(filepath.Join(s.Dir(), IndexFile), []byte("{not json"), 0o644)
	}
	_, err = s.Scan("port")
	var sf *StoreFileError
	if !errors.As(err, &sf) || !strings.Contains(sf.Error(), IndexFile) || !errors.Is(err, ErrBadStore) {
		t.Errorf("corrupt index: %v", err)
	}
	s2 := newTestStore(t)
	writePolicy(t, s2, `[1, 2]`)
	if _, err := s2.Fold(Turn{StepID: 1, Summary: "x"}); !errors.As(err, &sf) || !strings.Contains(err.Error(), PolicyFile) {
		t.Errorf("bad policy: %v", err)
	}
	if _, err := s2.nodeBytes(1, s2.NodePath(1)); err == nil {
		t.Error("a failed fold wrote a cold node")
	}
}

func TestCONF11DeterministicReplayNFCAndNFD(t *testing.T) {
	nfc, nfd := "Café São Paulo İstanbul", "Cafe\u0301 Sa\u0303o Paulo I\u0307stanbul"
	a, b := newTestStore(t), newTestStore(t)
	ra, err := a.Fold(Turn{StepID: 7, Summary: "s", RawContent: nfc})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Fold(Turn{StepID: 7, Summary: "s", RawContent: nfd})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Node.ProjectionSHA256 != rb.Node.ProjectionSHA256 {
		t.Error("NFC and NFD input must give the same projection")
	}
	if ra.Node.PayloadSHA256 == rb.Node.PayloadSHA256 {
		t.Error("the payload hash identifies the bytes as given, not normalised")
	}
	p1, _ := Project(Turn{StepID: 7, Summary: "s", RawContent: nfc}, DefaultPolicy().Hash())
	p2, _ := Project(Turn{StepID: 7, Summary: "s", RawContent: nfc}, DefaultPolicy().Hash())
	if p1.SHA256 != p2.SHA256 || p1.SHA256 != ra.Node.ProjectionSHA256 {
		t.Error("projection is not a pure function")
	}
}

func TestCONF12InconsistentStateAndPathContainment(t *testing.T) {
	t.Run("orphan", func(t *testing.T) {
		s := demoStore(t)
		addNodeBytes(t, s, 138, readNodeBytes(t, s, 137))
		if _, err := s.Hydrate(138); !errors.Is(err, ErrOrphanedNode) {
			t.Errorf("hydrate orphan: %v", err)
		}
		rep, _ := s.Validate()
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindOrphan || *rep.Findings[0].StepID != 138 {
			t.Errorf("validate: %+v", rep.Findings)
		}
	})
	t.Run("broken reference", func(t *testing.T) {
		s := demoStore(t)
		removeNodeBytes(t, s, 342)
		if _, err := s.Hydrate(342); !errors.Is(err, ErrBrokenReference) {
			t.Errorf("hydrate: %v", err)
		}
		rep, _ := s.Validate()
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindBrokenReference || rep.Passed != 7 {
			t.Errorf("validate: %+v", rep)
		}
	})
	outside := func(t *testing.T, s *Store) string {
		if s.be != nil {
			return "/tmp/secret.json" // a backend has no files: any other file_path is outside
		}
		p := filepath.Join(filepath.Dir(s.Dir()), "secret.json")
		data, _ := os.ReadFile(s.NodePath(137))
		os.WriteFile(p, data, 0o644)
		return p
	}
	cases := map[string]func(t *testing.T, s *Store) string{
		"traversal": func(t *testing.T, s *Store) string { return ".contextfold/cold_nodes/../../secret.json" },
		"sibling prefix": func(t *testing.T, s *Store) string {
			if s.be != nil {
				return ".contextfold/cold_nodes_evil/step_000137.json"
			}
			os.MkdirAll(filepath.Join(s.Dir(), "cold_nodes_evil"), 0o755)
			data, _ := os.ReadFile(s.NodePath(137))
			os.WriteFile(filepath.Join(s.Dir(), "cold_nodes_evil", "step_000137.json"), data, 0o644)
			return ".contextfold/cold_nodes_evil/step_000137.json"
		},
		"absolute path": func(t *testing.T, s *Store) string { return outside(t, s) },
		"other step":    func(t *testing.T, s *Store) string { return ".contextfold/cold_nodes/step_000091.json" },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			s := demoStore(t)
			outside(t, s)
			fp := mk(t, s)
			editIndexEntry(t, s, 137, func(e map[string]any) { e["file_path"] = fp })
			writePolicy(t, s, `{"integrity_verification": false}`) // containment holds regardless
			_, err := s.Hydrate(137)
			var pc *PathContainmentError
			if !errors.As(err, &pc) || !errors.Is(err, ErrIntegrityCheck) {
				t.Fatalf("file_path %q: %v", fp, err)
			}
			rep, _ := s.Validate()
			if len(rep.Findings) == 0 || rep.Findings[0].Kind != KindPathContainment {
				t.Errorf("validate: %+v", rep.Findings)
			}
		})
	}
	t.Run("symlink escape", func(t *testing.T) {
		dirOnly(t, "symlinks")
		s := demoStore(t)
		target := outside(t, s)
		os.Remove(s.NodePath(137))
		if err := os.Symlink(target, s.NodePath(137)); err != nil {
			t.Skip("symlinks unsupported:", err)
		}
		if _, err := s.Hydrate(137); !errors.Is(err, ErrPathContainment) {
			t.Fatalf("symlink escape: %v", err)
		}
	})
	t.Run("store under a symlinked directory is fine", func(t *testing.T) {
		dirOnly(t, "symlinks")
		s := demoStore(t)
		link := filepath.Join(t.TempDir(), DefaultStoreDir)
		if err := os.Symlink(s.Dir(), link); err != nil {
			t.Skip(err)
		}
		s2, _ := Open(link, Options{})
		if _, err := s2.Hydrate(137); err != nil {
			t.Errorf("a store reached through a symlink must work: %v", err)
		}
	})
}

func TestCONF13PassiveInterceptionMultiIntent(t *testing.T) {
	s := demoStore(t)
	res, err := s.Scan(DemoPrompt)
	if err != nil {
		t.Fatal(err)
	}
	type pick struct {
		ID    int
		Terms string
	}
	var got []pick
	for _, p := range res.Selected {
		got = append(got, pick{p.StepID, strings.Join(p.MatchedTerms, ",")})
	}
	want := []pick{{342, "billing,migration,table"}, {137, "port,postgresql"}, {447, "applied"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("showcase scan = %v, want %v", got, want)
	}
	t.Run("ties go to the larger step id", func(t *testing.T) {
		s := newTestStore(t)
		s.Fold(Turn{StepID: 10, Summary: "alpha beta"})
		s.Fold(Turn{StepID: 20, Summary: "alpha beta"})
		res, _ := s.Scan("alpha beta")
		if len(res.Selected) != 1 || res.Selected[0].StepID != 20 {
			t.Errorf("tie: %+v", res.Selected)
		}
	})
	t.Run("turkish and NFD prompts", func(t *testing.T) {
		s := newTestStore(t)
		s.Fold(Turn{StepID: 5, Summary: "İSTANBUL sunucusu DİYARBAKIR"})
		for _, prompt := range []string{"istanbul", "I\u0307stanbul", "diyarbakir nerede"} {
			res, _ := s.Scan(prompt)
			if len(res.Selected) != 1 || res.Selected[0].StepID != 5 {
				t.Errorf("%q: %+v", prompt, res.Selected)
			}
		}
	})
}

func decodeForTest(data []byte) (map[string]any, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

func writeForTest(t *testing.T, path string, v any) {
	t.Helper()
	out, err := canonjson.Pretty(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
