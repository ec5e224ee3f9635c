//go:build !linux

package fsutil

import "os"

// dirOps renames a FileBatch's files and syncs their directories: on Linux
// through one descriptor per directory (dirops_linux.go), here through
// os.Rename and SyncDir.
type dirOps struct{}

func (*dirOps) rename(tmp, path string) error { return os.Rename(tmp, path) }

func (*dirOps) sync(dir string) error { return SyncDir(dir) }

func (*dirOps) close() {}
