package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// SparePrefix begins the name of every spare file: SpareFiles names its
// files SparePrefix + random digits (os.CreateTemp's), which SpareNameRE
// matches. The leading "." hides them from every reader of step_*.json.
const SparePrefix = ".spare-"

// SpareNameRE matches the names of spare files (SparePrefix + digits).
var SpareNameRE = regexp.MustCompile(`^\.spare-\d+$`)

// MaxSpareFiles bounds the spare files one SpareFiles holds on disk.
const MaxSpareFiles = 128

// SpareFiles is a pool of empty files made ahead in one directory, for a
// FileBatch to write into instead of creating its temporary files on the
// path of a write: creating a file allocates an inode, which on ext4 can
// take a millisecond or more where many files were deleted in the last
// seconds (the allocator skips recently deleted inodes), while opening an
// existing empty file allocates nothing. Fill makes the files (off the
// latency-sensitive path: after a response); FileBatch.Add takes one per
// file when its Spares is set.
//
// A spare is an empty regular file named SparePrefix + digits: never a
// target's name, so no reader takes it for one, and a crash leaves at most
// empty spares and, for a batch not committed, spares holding written
// bytes under a spare's name, as FileBatch's own temporary files. The pool
// holds names, not descriptors: it keeps no file open. A spare removed by
// another process (a sweep of leftover temporaries) is skipped when taken.
// At most MaxSpareFiles spares exist per pool. Safe for concurrent use.
type SpareFiles struct {
	dir   string
	mu    sync.Mutex
	names []string // spares on disk, not taken
	gen   uint64   // Removes so far: a Fill begun before one removes what it made
}

// NewSpareFiles returns an empty pool of spare files in dir (which must
// exist when Fill is called). It creates nothing.
func NewSpareFiles(dir string) *SpareFiles { return &SpareFiles{dir: dir} }

// Dir returns the pool's directory.
func (p *SpareFiles) Dir() string { return p.dir }

// Len returns the number of spares the pool holds.
func (p *SpareFiles) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.names)
}

// Has reports whether name (a base name) is one of the pool's spares.
func (p *SpareFiles) Has(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.names {
		if n == name {
			return true
		}
	}
	return false
}

// Fill creates spares until the pool holds n (at most MaxSpareFiles), one
// at a time; before each it calls stop (when not nil) and returns early
// when stop reports true, so that a caller can yield the CPU to a request
// that has arrived. It returns the number of spares created and the first
// error (the directory missing or not writable); spares already created
// stay in the pool. The spares' directory is not synced: a spare is never
// relied upon after a crash.
func (p *SpareFiles) Fill(n int, stop func() bool) (int, error) {
	n = min(n, MaxSpareFiles)
	made := 0
	for {
		p.mu.Lock()
		have, gen := len(p.names), p.gen
		p.mu.Unlock()
		if have >= n || stop != nil && stop() {
			return made, nil
		}
		f, err := os.CreateTemp(p.dir, SparePrefix)
		if err != nil {
			return made, err
		}
		name := filepath.Base(f.Name())
		cerr := f.Close()
		p.mu.Lock()
		keep := cerr == nil && p.gen == gen && len(p.names) < MaxSpareFiles
		if keep {
			p.names = append(p.names, name)
		}
		p.mu.Unlock()
		if !keep {
			os.Remove(f.Name())
			if cerr != nil {
				return made, cerr
			}
			continue // removed or full meanwhile: look again
		}
		made++
	}
}

// take opens a spare of dir for writing, truncated, and removes it from the
// pool; ok is false when the pool holds none for dir. A spare that is gone
// (removed by another process) or is no longer an empty regular file is
// skipped (and left alone).
func (p *SpareFiles) take(dir string) (f *os.File, ok bool) {
	if p == nil || dir != p.dir {
		return nil, false
	}
	for {
		p.mu.Lock()
		if len(p.names) == 0 {
			p.mu.Unlock()
			return nil, false
		}
		name := p.names[len(p.names)-1]
		p.names = p.names[:len(p.names)-1]
		p.mu.Unlock()
		f, err := openSpare(filepath.Join(dir, name))
		if err == nil {
			return f, true
		}
	}
}

// Remove removes every spare of the pool from disk (a Fill under way
// removes the ones it makes after Remove) and returns the first error other
// than a spare already gone. The pool stays usable: a later Fill makes new
// spares.
func (p *SpareFiles) Remove() error {
	p.mu.Lock()
	names := p.names
	p.names = nil
	p.gen++
	p.mu.Unlock()
	var errs []error
	for _, n := range names {
		if err := os.Remove(filepath.Join(p.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
