package contextfold

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
)

// CacheSpillBytes is the size in bytes from which a section of the index
// cache being written by a full index write is kept in an unlinked
// temporary file beside the cache instead of in memory (the term
// dictionary and postings of a large node are as large as its identifiers;
// the page cache holds them, not the heap). A variable for tests.
var CacheSpillBytes = 4 << 20

// cacheSection is one section of a cache being encoded: in memory, or
// spilled to a temporary file (unlinked at once where the system allows,
// else removed by release). Not safe for concurrent use.
type cacheSection struct {
	buf  bytes.Buffer
	f    *os.File
	name string // the spill file's name while it is not unlinked
	w    *bufio.Writer
	n    int
	err  error
}

// spill sends the section's bytes to a new temporary file in dir.
func (c *cacheSection) spill(dir string) error {
	f, err := os.CreateTemp(dir, "."+IndexCacheFile+".spill*")
	if err != nil {
		return err
	}
	c.f, c.w = f, bufio.NewWriterSize(f, 64<<10)
	if os.Remove(f.Name()) != nil {
		c.name = f.Name()
	}
	if c.buf.Len() > 0 {
		_, err = c.w.Write(c.buf.Bytes())
		c.buf = bytes.Buffer{}
	}
	return err
}

func (c *cacheSection) Write(p []byte) (int, error) {
	c.n += len(p)
	if c.w == nil {
		return c.buf.Write(p)
	}
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

func (c *cacheSection) WriteString(s string) (int, error) {
	c.n += len(s)
	if c.w == nil {
		return c.buf.WriteString(s)
	}
	n, err := c.w.WriteString(s)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Len is the section's size in bytes.
func (c *cacheSection) Len() int { return c.n }

// Grow reserves room for n more bytes of an in-memory section.
func (c *cacheSection) Grow(n int) {
	if c.w == nil {
		c.buf.Grow(n)
	}
}

// finish flushes a spilled section; its first write error, if any.
func (c *cacheSection) finish() error {
	if c.w == nil {
		return nil
	}
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// bytesAt returns the section's bytes [off, off+n) (a spilled section is
// read back; call finish first).
func (c *cacheSection) bytesAt(off, n int) ([]byte, error) {
	if c.f == nil {
		return c.buf.Bytes()[off : off+n], nil
	}
	p := make([]byte, n)
	_, err := c.f.ReadAt(p, int64(off))
	return p, err
}

// part is the section as a part of the cache file.
func (c *cacheSection) part() cachePart {
	if c.f == nil {
		return cachePart{b: c.buf.Bytes()}
	}
	return cachePart{f: c.f, n: int64(c.n)}
}

// release closes and removes a spilled section's file.
func (c *cacheSection) release() {
	if c.f != nil {
		c.f.Close()
		if c.name != "" {
			os.Remove(c.name)
		}
		c.f, c.w = nil, nil
	}
}

// cachePart is a part of a cache file: bytes, or the first n bytes of a
// spilled section's file.
type cachePart struct {
	b []byte
	f *os.File
	n int64
}

func (p cachePart) size() int64 {
	if p.f != nil {
		return p.n
	}
	return int64(len(p.b))
}

// reader reads the part from its start.
func (p cachePart) reader() io.Reader {
	if p.f != nil {
		return io.NewSectionReader(p.f, 0, p.n)
	}
	return bytes.NewReader(p.b)
}

// cacheParts is a cache file as consecutive parts, and the spilled
// sections to release once it is written.
type cacheParts struct {
	parts []cachePart
	spill []*cacheSection
}

// release frees the spilled sections (safe on nil and the zero value).
func (cp *cacheParts) release() {
	if cp == nil {
		return
	}
	for _, s := range cp.spill {
		s.release()
	}
	cp.spill = nil
}

// bytes concatenates the parts.
func (cp *cacheParts) bytes() ([]byte, error) {
	var b bytes.Buffer
	for _, p := range cp.parts {
		if _, err := b.ReadFrom(p.reader()); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// head is the cache's head (the first part), to stamp.
func (cp *cacheParts) head() []byte { return cp.parts[0].b }

// chunkCRCsOf is chunkCRCs over parts, read in order.
func chunkCRCsOf(parts []cachePart, chunk int) ([]byte, error) {
	var crcs []byte
	var crc uint32
	n := 0
	buf := make([]byte, 64<<10)
	for _, p := range parts {
		r := p.reader()
		for {
			k, err := r.Read(buf[:min(len(buf), chunk-n)])
			crc = crc32.Update(crc, crcTable, buf[:k])
			if n += k; n == chunk {
				crcs = binary.LittleEndian.AppendUint32(crcs, crc)
				crc, n = 0, 0
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if n > 0 {
		crcs = binary.LittleEndian.AppendUint32(crcs, crc)
	}
	return crcs, nil
}
