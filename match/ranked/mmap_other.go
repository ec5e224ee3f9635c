//go:build !unix

package ranked

import "os"

// mapFile reads a whole file (no mmap on this platform).
func mapFile(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	return data, func() {}, err
}
