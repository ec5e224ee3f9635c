//go:build !unix

package mmapfile

import "os"

// Map reads a whole file (no mmap on this platform).
func Map(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	return data, func() {}, err
}
