package backend

import "errors"

// ErrReadOnly is the error of a write through a ReadOnly backend.
var ErrReadOnly = errors.New("this store is opened read-only")

// ReadOnly returns a Backend that reads through b and refuses every write:
// Begin fails with ErrReadOnly (as *Error), and, when b keeps shared
// snapshots (SnapshotStore), they are read but never written. The
// inspector (`contextfold ui`) serves database stores through it, so that
// browsing cannot change a row (CONF-08) even by a path that would write.
// Safe for concurrent use if b is.
func ReadOnly(b Backend) Backend {
	ro := readOnly{b}
	if ss, ok := b.(SnapshotStore); ok {
		return readOnlySnapshots{ro, ss}
	}
	return ro
}

type readOnly struct{ Backend }

func (r readOnly) Begin() (Tx, error) {
	return nil, &Error{Location: r.Location(), Err: ErrReadOnly, Remedy: "run the command that writes without the inspector"}
}

type readOnlySnapshots struct {
	readOnly
	ss SnapshotStore
}

func (r readOnlySnapshots) SnapshotInfo(kind string) (SnapshotInfo, error) {
	return r.ss.SnapshotInfo(kind)
}

func (r readOnlySnapshots) ReadSnapshot(kind string) (SnapshotInfo, []byte, error) {
	return r.ss.ReadSnapshot(kind)
}

func (r readOnlySnapshots) WriteSnapshot(string, Revision, []byte, int64) (bool, error) {
	return false, &Error{Location: r.Location(), Err: ErrReadOnly}
}
