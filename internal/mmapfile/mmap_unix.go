//go:build unix

// Package mmapfile maps a whole file read-only (os.ReadFile where mmap is not
// available), for the derived snapshots the core and match/ranked read
// lazily: pages cost memory only once touched. Safe for concurrent use; the
// returned unmap function must be called once, after the last read.
package mmapfile

import (
	"syscall"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// Map maps a whole file read-only: pages cost memory only once touched.
// A path that is not a regular file is refused without blocking (an error
// wrapping fsutil.ErrNotRegular).
// The returned function unmaps it; nothing read from the mapping may be used
// afterwards.
func Map(path string) ([]byte, func(), error) {
	f, fi, err := fsutil.OpenRegular(path) // a FIFO, device or directory: an error, at once
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() == 0 {
		return nil, func() {}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { syscall.Munmap(data) }, nil
}
