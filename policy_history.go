package contextfold

import (
	"errors"
	"io/fs"
	"sort"

	"github.com/contextfold/contextfold/internal/canonjson"
)

// PolicyHistoryFile records every folding policy hash a non-default policy
// had when turns were folded: {"folding_policy_hashes": [...]}. It is our
// extension (the reference does not write it) and lets validate recompute
// projection_sha256 after a legitimate policy change. The default policy is
// always known and never recorded, so a store that never had a policy file
// has no history file.
const PolicyHistoryFile = "policy_history.json"

// knownPolicyHashes returns the folding policy hashes a node of this store
// may have been folded under: the history, the default, and current (if
// non-nil).
func (s *Store) knownPolicyHashes(current *Policy) map[string]bool {
	known := map[string]bool{DefaultPolicy().Hash(): true}
	if current != nil {
		known[current.Hash()] = true
	}
	for _, h := range s.readPolicyHistory() {
		known[h] = true
	}
	return known
}

func (s *Store) readPolicyHistory() []string {
	data, err := s.readStoreFile(PolicyHistoryFile)
	if err != nil {
		return nil
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil
	}
	doc, _ := v.(map[string]any)
	list, _ := stringsField(doc, "folding_policy_hashes")
	return list
}

// recordPolicy adds a non-default policy's hash to the history. Callers hold
// the store lock.
func (s *Store) recordPolicy(p *Policy) error {
	if p.Hash() == DefaultPolicy().Hash() {
		return nil
	}
	hist := s.readPolicyHistory()
	for _, h := range hist {
		if h == p.Hash() {
			return nil
		}
	}
	hist = append(hist, p.Hash())
	sort.Strings(hist)
	data, err := canonjson.Pretty(map[string]any{"folding_policy_hashes": hist})
	if err != nil {
		return err
	}
	path := s.storePath(PolicyHistoryFile)
	if err := s.writeStoreFile(PolicyHistoryFile, data); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.storeErr(path, err, "free disk space or fix the permissions of the store directory")
	}
	return nil
}
