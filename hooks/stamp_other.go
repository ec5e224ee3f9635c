//go:build !linux

package hooks

import "io/fs"

// stampOf is the stamp of the file fi describes (no inode or change time
// here: the size and modification time).
func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}
