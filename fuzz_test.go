package contextfold

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzStoreFiles: whatever bytes the index, the policy or a cold node file
// hold, the store never panics: reads fail with typed errors, validate
// reports, repair plans.
func FuzzStoreFiles(f *testing.F) {
	f.Add([]byte(`{"nodes":{"1":{"step_id":1,"token_estimate":1}}}`), []byte(`{"max_rehydration_tokens_per_call": -3}`), []byte(`{"artifact_sha256":"x"}`))
	f.Add([]byte(`{"nodes":{"1":{"step_id":"1"}}}`), []byte(`[]`), []byte(`{`))
	f.Add([]byte(`{"nodes":{"2":{"step_id":2,"token_estimate":5,"file_path":"../../x","identifiers":["a",1]}}}`), []byte(`{"max_rehydration_tokens_per_turn": 1e999}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, index, policy, node []byte) {
		dir := filepath.Join(t.TempDir(), DefaultStoreDir)
		os.MkdirAll(filepath.Join(dir, ColdNodesDir), 0o755)
		os.WriteFile(filepath.Join(dir, IndexFile), index, 0o644)
		os.WriteFile(filepath.Join(dir, PolicyFile), policy, 0o644)
		os.WriteFile(filepath.Join(dir, ColdNodesDir, "step_000001.json"), node, 0o644)
		s, err := Open(dir, Options{Clock: func() time.Time { return time.Unix(0, 0) }, Scrub: ScrubOff})
		if err != nil {
			t.Fatal(err)
		}
		s.Scan("alpha beta 1")
		s.Recall("alpha")
		s.Hydrate(1)
		s.Hydrate(2)
		s.Status()
		if _, err := s.Validate(); err != nil {
			t.Fatalf("validate must report, not fail: %v", err)
		}
		s.Repair(false)
	})
}
