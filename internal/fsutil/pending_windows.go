//go:build windows

package fsutil

import (
	"os"
	"path/filepath"
)

// newPendingFile creates the temporary file an atomic write of path goes
// through, named as on other systems ("." + base name + random digits, in
// dir). renameio has no Windows support; os.Rename replaces the target
// there with MoveFileEx(MOVEFILE_REPLACE_EXISTING).
func newPendingFile(dir, path string) (pendingFile, error) {
	f, err := os.CreateTemp(dir, "."+filepath.Base(path))
	if err != nil {
		return nil, err
	}
	return &windowsPending{File: f, path: path}, nil
}

// windowsPending is a pendingFile on Windows.
type windowsPending struct {
	*os.File
	path string
	done bool // renamed over path, or removed
}

// CloseAtomicallyReplace fsyncs and closes the file, then renames it over
// the target.
func (p *windowsPending) CloseAtomicallyReplace() error {
	if err := p.Sync(); err != nil {
		return err
	}
	if err := p.File.Close(); err != nil {
		return err
	}
	if err := os.Rename(p.Name(), p.path); err != nil {
		return err
	}
	p.done = true
	return nil
}

// Cleanup removes the temporary file unless it has replaced the target.
func (p *windowsPending) Cleanup() error {
	if p.done {
		return nil
	}
	p.done = true
	_ = p.File.Close()
	if err := os.Remove(p.Name()); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
