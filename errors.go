package contextfold

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The protocol's failure modes (spec §5–§6, CONF-10, CONF-12). Each typed
// error below matches one of these sentinels with errors.Is, and carries the
// step id and the file involved for errors.As.
var (
	// ErrNodeNotFound: the step id is not in the recall index (exit code 2).
	ErrNodeNotFound = errors.New("node not found")
	// ErrIntegrityCheck: a cold node failed verification (exit code 3).
	ErrIntegrityCheck = errors.New("integrity check failed")
	// ErrPathContainment: an index file_path resolves outside the store's
	// cold_nodes/ directory. It is a kind of ErrIntegrityCheck (exit code 3).
	ErrPathContainment = errors.New("path containment violated")
	// ErrOrphanedNode: a cold node file exists that the index does not list
	// (exit code 4).
	ErrOrphanedNode = errors.New("orphaned node")
	// ErrBrokenReference: the index lists a cold node whose file is missing
	// (exit code 5).
	ErrBrokenReference = errors.New("broken reference")
	// ErrBadStore: a store file (index, policy, log) cannot be read or parsed,
	// or an argument is invalid (exit code 1).
	ErrBadStore = errors.New("bad store or input")
)

// NodeNotFoundError reports a step id that the recall index does not hold.
type NodeNotFoundError struct{ StepID int }

func (e *NodeNotFoundError) Error() string {
	return fmt.Sprintf("node not found: step %d is not in the recall index", e.StepID)
}

// Is makes errors.Is(err, ErrNodeNotFound) true.
func (e *NodeNotFoundError) Is(target error) bool { return target == ErrNodeNotFound }

// IntegrityCheckError reports a cold node that cannot be trusted: unreadable,
// unparsable, missing its hash, or whose recomputed artifact hash differs from
// the stored one or from the index (CONF-09).
type IntegrityCheckError struct {
	StepID int
	File   string // path of the cold node file
	// Check names the failed check: "read", "parse", "artifact", "index"
	// (stored artifact hash ≠ index) or "payload".
	Check  string
	Reason string
}

func (e *IntegrityCheckError) Error() string {
	return fmt.Sprintf("integrity check failed for step %d (%s): %s", e.StepID, e.File, e.Reason)
}

// Is makes errors.Is(err, ErrIntegrityCheck) true.
func (e *IntegrityCheckError) Is(target error) bool { return target == ErrIntegrityCheck }

// PathContainmentError reports an index file_path that does not resolve
// (symlinks followed) to the step's canonical file inside cold_nodes/
// (CONF-12). It matches both ErrPathContainment and ErrIntegrityCheck.
type PathContainmentError struct {
	StepID   int
	FilePath string // the file_path as the index records it
	Resolved string // where it resolves to
	Want     string // the canonical path
}

func (e *PathContainmentError) Error() string {
	msg := fmt.Sprintf("path containment violated for step %d: file_path %q resolves to %s, not %s",
		e.StepID, e.FilePath, e.Resolved, e.Want)
	if old := e.renamedFrom(); old != "" {
		msg += fmt.Sprintf(" (file_path names the store directory %q: the store was renamed or copied from it; rename it back, or run contextfold repair --apply to re-index its files under the new name)", old)
	}
	return msg
}

// renamedFrom is the store directory name a file_path records when it is
// the canonical "NAME/cold_nodes/step_NNNNNN.json" of this very step under
// another NAME (spec §5: file_path names the store's directory), else "".
func (e *PathContainmentError) renamedFrom() string {
	rel := strings.Split(e.FilePath, "/")
	want := strings.Split(filepath.ToSlash(e.Want), "/")
	if len(rel) != 3 || len(want) < 3 || rel[1] != ColdNodesDir || rel[2] != want[len(want)-1] || want[len(want)-2] != ColdNodesDir {
		return ""
	}
	if rel[0] == "" || rel[0] == "." || rel[0] == ".." || rel[0] == want[len(want)-3] {
		return ""
	}
	return rel[0]
}

// Is makes errors.Is true for ErrPathContainment and ErrIntegrityCheck.
func (e *PathContainmentError) Is(target error) bool {
	return target == ErrPathContainment || target == ErrIntegrityCheck
}

// LeftoverFileError reports a temporary file left by an interrupted atomic
// write (in the store root or cold_nodes/): a file no index lists, so
// errors.Is(err, ErrOrphanedNode) holds. 'contextfold repair --apply' moves
// it to quarantine/.
type LeftoverFileError struct {
	File string
}

func (e *LeftoverFileError) Error() string {
	return e.File + ": temporary file left by an interrupted write (run 'contextfold repair --apply' to move it to quarantine/)"
}

// Is makes errors.Is true for ErrOrphanedNode.
func (e *LeftoverFileError) Is(target error) bool { return target == ErrOrphanedNode }

// OrphanedNodeError reports a cold node file that the index does not list.
type OrphanedNodeError struct {
	StepID int
	File   string
}

func (e *OrphanedNodeError) Error() string {
	return fmt.Sprintf("orphaned node: %s exists but step %d is not in the recall index (run 'contextfold repair')", e.File, e.StepID)
}

// Is makes errors.Is(err, ErrOrphanedNode) true.
func (e *OrphanedNodeError) Is(target error) bool { return target == ErrOrphanedNode }

// BrokenReferenceError reports an index entry whose cold node file is missing.
type BrokenReferenceError struct {
	StepID int
	File   string
}

func (e *BrokenReferenceError) Error() string {
	return fmt.Sprintf("broken reference: step %d points at %s, which does not exist (run 'contextfold repair')", e.StepID, e.File)
}

// Is makes errors.Is(err, ErrBrokenReference) true.
func (e *BrokenReferenceError) Is(target error) bool { return target == ErrBrokenReference }

// StoreFileError reports a store file (recall index, hydration policy,
// eviction log) that cannot be read or parsed. It names the file and says
// what to do.
type StoreFileError struct {
	File   string
	Err    error
	Remedy string
}

func (e *StoreFileError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.File, e.Err)
	if e.Remedy != "" {
		msg += " (" + e.Remedy + ")"
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *StoreFileError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBadStore) true.
func (e *StoreFileError) Is(target error) bool { return target == ErrBadStore }

// ErrorName returns the protocol name of a core error, the one every adapter
// (MCP server, hooks, proxy) shows first in its messages: NodeNotFoundError,
// IntegrityCheckError, PathContainmentError, OrphanedNodeError,
// BrokenReferenceError or StoreFileError (spec §6), or "" for any other
// error. Wrapped errors are recognised (errors.Is).
func ErrorName(err error) string {
	switch {
	case errors.Is(err, ErrPathContainment):
		return "PathContainmentError"
	case errors.Is(err, ErrIntegrityCheck):
		return "IntegrityCheckError"
	case errors.Is(err, ErrNodeNotFound):
		return "NodeNotFoundError"
	case errors.Is(err, ErrOrphanedNode):
		return "OrphanedNodeError"
	case errors.Is(err, ErrBrokenReference):
		return "BrokenReferenceError"
	case errors.Is(err, ErrBadStore):
		return "StoreFileError"
	}
	return ""
}
