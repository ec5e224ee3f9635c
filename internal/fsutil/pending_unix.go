//go:build !windows

package fsutil

import "github.com/google/renameio/v2"

// newPendingFile creates the temporary file an atomic write of path goes
// through: "." + path's base name + random digits, in dir (the names repair
// and validate recognise as leftovers of an interrupted write). renameio's
// CloseAtomicallyReplace fsyncs, closes and renames it over path.
func newPendingFile(dir, path string) (pendingFile, error) {
	return renameio.TempFile(dir, path)
}
