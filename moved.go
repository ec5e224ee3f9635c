package contextfold

import (
	"fmt"
	"path/filepath"
)

// MovedStoreError reports a directory store whose recall index names
// another store directory: a store copied or renamed ("cp -r .contextfold
// other"). Every file_path records the directory that holds the store
// ("NAME/cold_nodes/step_NNNNNN.json", spec §1), so in the copy each one
// resolves outside its cold_nodes/ and no node can be hydrated (CONF-12:
// PathContainmentError, whatever the policy says). The one command that
// fixes it is in the message: repair --apply re-indexes the copy's own
// files under its name. errors.Is(err, ErrPathContainment) holds.
type MovedStoreError struct {
	Dir  string // the store directory, absolute
	From string // the directory name its index records
}

func (e *MovedStoreError) Error() string {
	return fmt.Sprintf("the store %s was copied or renamed from a directory named %q: its recall index still points into %q, so no cold node can be read (path containment, CONF-12); run: contextfold --dir %s repair --apply",
		e.Dir, e.From, e.From+"/"+ColdNodesDir+"/", e.Dir)
}

// Is makes errors.Is true for ErrPathContainment and ErrIntegrityCheck, as
// for the PathContainmentError each hydration would return.
func (e *MovedStoreError) Is(target error) bool {
	return target == ErrPathContainment || target == ErrIntegrityCheck
}

// CheckMoved returns a *MovedStoreError when the store's recall index
// names another store directory (the store was copied or renamed), nil
// otherwise (also for an empty index or a database store). It looks at the
// index's first entry only: an index is written by one store, so its
// file_paths share their directory. Read-only; safe for concurrent use.
func (s *Store) CheckMoved() error {
	if s.be != nil {
		return nil
	}
	s.mu.Lock()
	ix, err := s.loadIndex()
	var e *Entry
	if err == nil && ix.len() > 0 {
		e = ix.entry(ix.rec(0))
	}
	s.mu.Unlock()
	if err != nil || e == nil {
		return err
	}
	_, cerr := s.checkContainment(e)
	pe, ok := cerr.(*PathContainmentError)
	if !ok {
		return nil
	}
	old := pe.renamedFrom()
	if old == "" {
		return nil // not a rename: validate reports the entry
	}
	abs, aerr := filepath.Abs(s.dir)
	if aerr != nil {
		abs = s.dir
	}
	return &MovedStoreError{Dir: abs, From: old}
}
