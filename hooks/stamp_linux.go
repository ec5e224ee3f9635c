package hooks

import (
	"io/fs"
	"syscall"
)

// stampOf is the stamp of the file fi describes.
func stampOf(fi fs.FileInfo) fileStamp {
	s := fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.Dev, s.Ino = uint64(st.Dev), uint64(st.Ino)
		s.Ctime = int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
	}
	return s
}
