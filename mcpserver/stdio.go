package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport returns a newline-delimited JSON-RPC transport over r and w
// that answers every request read before r reaches end of file: at EOF it
// waits (up to drain) until each request seen has had its response written,
// and only then ends the session. The plain SDK transport ends the session
// at EOF at once, so `contextfold mcp < requests.jsonl` would lose answers.
// drain ≤ 0 means 30 seconds.
func StdioTransport(r io.Reader, w io.Writer, drain time.Duration) mcp.Transport {
	if drain <= 0 {
		drain = 30 * time.Second
	}
	c := &counter{}
	c.cond = sync.NewCond(&c.mu)
	cw := &countingWriter{w: w, c: c}
	return &mcp.IOTransport{
		Reader: &drainingReader{r: r, c: c, drain: drain, w: cw},
		Writer: cw,
	}
}

// counter counts requests read and responses written.
type counter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending int
}

func (c *counter) add(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.pending += n
	c.mu.Unlock()
	c.cond.Broadcast()
}

// wait blocks until no request is pending or d has passed.
func (c *counter) wait(d time.Duration) {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, c.cond.Broadcast)
	defer t.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.pending > 0 && time.Now().Before(deadline) {
		c.cond.Wait()
	}
}

// lineCounter splits a byte stream into lines and counts the JSON-RPC
// messages among them that are requests (want "method" and "id") or
// responses (want no "method" but an "id").
type lineCounter struct {
	buf      []byte
	requests bool
}

func (l *lineCounter) feed(p []byte) int {
	l.buf = append(l.buf, p...)
	n := 0
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		n += l.count(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	return n
}

func (l *lineCounter) count(line []byte) int {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return 0
	}
	var msgs []json.RawMessage
	if line[0] == '[' {
		if json.Unmarshal(line, &msgs) != nil {
			return 0
		}
	} else {
		msgs = []json.RawMessage{line}
	}
	n := 0
	for _, m := range msgs {
		var probe struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(m, &probe) != nil {
			continue
		}
		hasID := len(probe.ID) > 0 && string(probe.ID) != "null"
		if l.requests && hasID && probe.Method != nil {
			n++
		}
		if !l.requests && hasID && probe.Method == nil {
			n++
		}
	}
	return n
}

type drainingReader struct {
	r     io.Reader
	c     *counter
	w     *countingWriter // for parse errors answered here
	lines lineCounter
	drain time.Duration
	eof   bool
	in    []byte // bytes read, not yet split into lines
	out   []byte // whole, valid lines waiting for the SDK
}

// Read hands the SDK whole lines of valid JSON only. A line that is not JSON
// is answered here with a JSON-RPC parse error (-32700, id null) and dropped,
// so one bad line cannot end the session and lose the answers to the others.
func (d *drainingReader) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.eof {
			// Answer what was read before ending the session. A last
			// line without its newline is not waited for.
			d.c.wait(d.drain)
			return 0, io.EOF
		}
		buf := make([]byte, 64<<10)
		n, err := d.r.Read(buf)
		d.in = append(d.in, buf[:n]...)
		if err == io.EOF {
			d.eof = true
			if len(bytes.TrimSpace(d.in)) > 0 {
				d.in = append(d.in, '\n') // a last line without its newline
			}
		} else if err != nil {
			return 0, err
		}
		for {
			i := bytes.IndexByte(d.in, '\n')
			if i < 0 {
				break
			}
			line := d.in[:i+1]
			d.in = d.in[i+1:]
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if !json.Valid(line) {
				d.w.parseError()
				continue
			}
			d.out = append(d.out, line...)
		}
	}
	n := copy(p, d.out)
	d.lines.requests = true
	d.c.add(d.lines.feed(p[:n]))
	d.out = d.out[n:]
	return n, nil
}

func (d *drainingReader) Close() error {
	if c, ok := d.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type countingWriter struct {
	mu    sync.Mutex
	w     io.Writer
	c     *counter
	lines lineCounter
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	cw.mu.Lock()
	n, err := cw.w.Write(p)
	done := cw.lines.feed(p[:n])
	cw.mu.Unlock()
	cw.c.add(-done)
	return n, err
}

func (cw *countingWriter) Close() error { return nil }

// parseError answers a line that is not JSON (JSON-RPC 2.0 §5.1).
func (cw *countingWriter) parseError() {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	io.WriteString(cw.w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`+"\n")
}
