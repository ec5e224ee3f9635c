//go:build !unix

package fsutil

import "os"

// ReadFile is os.ReadFile (see the unix version).
func ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }
