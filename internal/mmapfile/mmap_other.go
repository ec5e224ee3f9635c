//go:build !unix

package mmapfile

import "github.com/contextfold/contextfold/internal/fsutil"

// Map reads a whole regular file (no mmap on this platform).
func Map(path string) ([]byte, func(), error) {
	data, err := fsutil.ReadFile(path)
	return data, func() {}, err
}
