package ingest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// maxStreamBytes is the most of a stream a parse reads:
// MaxTranscriptBytes, lowered by tests.
var maxStreamBytes int64 = MaxTranscriptBytes

// spoolMem is how much of a stream a spool holds in memory; past it the
// stream is spooled to a temporary file.
const spoolMem = 1 << 20

// spool makes a stream (standard input, a pipe) readable at any offset, as
// the streaming parser reads a regular file, without holding it: what is
// read of the stream is kept, its first spoolMem bytes in memory, then all
// of it in a temporary file in $TMPDIR (os.TempDir), removed when the
// spool is closed (on Unix at once: an unlinked file the process holds
// open, which nothing else sees and which goes with the process). The
// stream is read only as far as ReadAt asks, in chunks of 256 KiB, and at
// most limit bytes: past them ReadAt fails with an *fsutil.TooLargeError
// of Size -1. Not safe for concurrent use.
type spool struct {
	r     io.Reader
	limit int64
	mem   []byte   // the stream's bytes while f is nil
	f     *os.File // the stream's bytes once past spoolMem
	n     int64    // bytes read from r
	eof   bool     // r is at its end
	err   error    // r's error (not io.EOF), or the limit's: returned from then on
	chunk []byte
}

func newSpool(r io.Reader, limit int64) *spool {
	return &spool{r: r, limit: limit}
}

// errSpoolFile wraps the error of creating or writing the spool file.
var errSpoolFile = errors.New("the transcript is read from a stream, which ingest spools to a temporary file past its first 1 MiB; set TMPDIR to a writable directory with room for it")

// more reads the next chunk of the stream.
func (s *spool) more() error {
	if s.err != nil {
		return s.err
	}
	if s.chunk == nil {
		s.chunk = make([]byte, 256<<10)
	}
	k, err := s.r.Read(s.chunk)
	if k > 0 {
		if s.limit >= 0 && s.n+int64(k) > s.limit {
			s.err = &fsutil.TooLargeError{Size: -1, Limit: s.limit}
			return s.err
		}
		if werr := s.keep(s.chunk[:k]); werr != nil {
			s.err = werr
			return werr
		}
		s.n += int64(k)
	}
	switch {
	case err == io.EOF:
		s.eof = true
	case err != nil:
		s.err = err
		return err
	}
	return nil
}

// keep stores b, the stream's bytes from offset s.n.
func (s *spool) keep(b []byte) error {
	if s.f == nil && s.n+int64(len(b)) <= spoolMem {
		s.mem = append(s.mem, b...)
		return nil
	}
	if s.f == nil {
		f, err := os.CreateTemp("", "contextfold-ingest-*.spool")
		if err != nil {
			return fmt.Errorf("%w: %v", errSpoolFile, err)
		}
		if runtime.GOOS != "windows" {
			os.Remove(f.Name()) // held open, seen by no one, gone with the process
		}
		s.f = f
		if _, err := f.Write(s.mem); err != nil {
			return fmt.Errorf("%w: %v", errSpoolFile, err)
		}
		s.mem = nil
	}
	if _, err := s.f.Write(b); err != nil {
		return fmt.Errorf("%w: %v", errSpoolFile, err)
	}
	return nil
}

// ReadAt reads the stream's bytes at off, reading the stream as far as
// they reach; io.EOF past its end.
func (s *spool) ReadAt(p []byte, off int64) (int, error) {
	for off+int64(len(p)) > s.n && !s.eof {
		if err := s.more(); err != nil {
			return 0, err
		}
	}
	if off >= s.n {
		return 0, io.EOF
	}
	want := p[:min(int64(len(p)), s.n-off)]
	var k int
	if s.f == nil {
		k = copy(want, s.mem[off:])
	} else {
		var err error
		if k, err = s.f.ReadAt(want, off); err != nil && err != io.EOF {
			return k, err
		}
	}
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// size reads the stream to its end and returns its length.
func (s *spool) size() (int64, error) {
	for !s.eof {
		if err := s.more(); err != nil {
			return 0, err
		}
	}
	return s.n, nil
}

// close removes the spool file, if any.
func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
		if runtime.GOOS == "windows" {
			os.Remove(s.f.Name())
		}
	}
}

// ParseReaderWith parses the transcript read from r (standard input, a
// pipe) as o says: as [ParseFileWith] parses a regular file, one record at
// a time, r read no further than the parse needs (a parse that o.Turn
// stops, a binary head, a record past the limit end the read) and at most
// MaxTranscriptBytes (past them: an *fsutil.TooLargeError, wrapped). What
// is read is spooled, its first MiB in memory, the rest to a temporary
// file in $TMPDIR removed before ParseReaderWith returns, so that the
// parse can read the input more than once (a JSON document is read twice)
// and holds about one record in memory. Before, a stream was read whole
// into memory (up to 512 MiB) and then parsed.
func ParseReaderWith(r io.Reader, o Options) (*Result, error) {
	sp := newSpool(r, maxStreamBytes)
	defer sp.close()
	s := newStreamer(io.NewSectionReader(sp, 0, maxStreamBytes+1), o)
	s.stream = sp
	res, err := s.parse()
	if err != nil && sp.err == err {
		return nil, readErr(err)
	}
	return res, err
}

// parseStream parses the stream f opened at path (a pipe such as bash's
// <(…), a FIFO, a device) as ParseReaderWith does. A FIFO or pipe that
// gives no byte is refused with fsutil.ErrEmptyPipe, as OpenInputMax does.
func parseStream(path string, f *os.File, fi fs.FileInfo, o Options) (*Result, error) {
	sp := newSpool(f, maxStreamBytes)
	defer sp.close()
	s := newStreamer(io.NewSectionReader(sp, 0, maxStreamBytes+1), o)
	s.stream = sp
	res, err := s.parse()
	if sp.n == 0 && sp.eof && fi.Mode()&fs.ModeNamedPipe != 0 {
		return nil, fmt.Errorf("ingest: read transcript: %w", &fs.PathError{Op: "read", Path: path, Err: fsutil.ErrEmptyPipe})
	}
	switch {
	case err == nil:
		return res, nil
	case sp.err == err: // the stream's: a read error, past the size limit, the spool file's
		return nil, readErr(&fs.PathError{Op: "read", Path: path, Err: err})
	}
	return nil, fmt.Errorf("%s: %w", path, err)
}
