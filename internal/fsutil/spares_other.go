//go:build !unix

package fsutil

import (
	"os"
)

// openSpare opens the spare file path for writing, truncated, when it is a
// regular file.
func openSpare(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular("open", path, fi.Mode().Type())
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
}
