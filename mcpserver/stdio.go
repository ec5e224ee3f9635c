package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrameBytes is the default limit on one JSON-RPC line read by
// the stdio transport (bytes): 16 MiB, the SDK's own line limit. A longer
// line is skipped up to its newline, without being buffered, and answered
// with an Invalid Request error; the session goes on.
const DefaultMaxFrameBytes = 16 << 20

// maxExactID is the largest magnitude of a numeric request id that the SDK,
// which decodes ids through float64, echoes exactly (2^53).
const maxExactID = 1 << 53

// StdioOptions configure StdioTransportWith. The zero value is valid.
type StdioOptions struct {
	// Drain is how long end of input waits for the answers to the requests
	// already read (≤ 0: 30 seconds).
	Drain time.Duration
	// MaxFrameBytes bounds one line of input, newline excluded, in bytes
	// (≤ 0: DefaultMaxFrameBytes). The transport buffers at most this much
	// (plus one read of 64 KiB) for a line.
	MaxFrameBytes int
}

// StdioTransport returns a newline-delimited JSON-RPC transport over r and w
// that answers every request read before r reaches end of file: at EOF it
// waits (up to drain) until each request seen has had its response written,
// and only then ends the session. The plain SDK transport ends the session
// at EOF at once, so `contextfold mcp < requests.jsonl` would lose answers.
// drain ≤ 0 means 30 seconds. It is StdioTransportWith with the default
// frame limit.
func StdioTransport(r io.Reader, w io.Writer, drain time.Duration) mcp.Transport {
	return StdioTransportWith(r, w, StdioOptions{Drain: drain})
}

// StdioTransportWith is StdioTransport with options. Every line is checked
// before the SDK sees it (JSON-RPC 2.0 §4–5, MCP 2025-06-18 "Transports"),
// and a line that fails is answered here and dropped, so that no line can
// end the session:
//
//   - not JSON: -32700 Parse error, id null;
//   - longer than MaxFrameBytes: -32600 Invalid Request, id null, naming
//     the limit;
//   - JSON but not one request, notification or response object (an array
//     or batch, null, a number, a string; "jsonrpc" other than "2.0"; a
//     method that is not a string; params that are not structured): -32600
//     Invalid Request;
//   - an id that is not a string or an integer from -2^53 to 2^53 (1.5,
//     1e3, an object, null on a request, 9007199254740993): -32600, because
//     the SDK could not echo it exactly.
//
// The error's id is the request's own id when that id is valid, else null.
func StdioTransportWith(r io.Reader, w io.Writer, o StdioOptions) mcp.Transport {
	if o.Drain <= 0 {
		o.Drain = 30 * time.Second
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	c := &counter{}
	c.cond = sync.NewCond(&c.mu)
	cw := &countingWriter{w: w, c: c}
	return &mcp.IOTransport{
		Reader: &drainingReader{r: r, c: c, drain: o.Drain, w: cw, max: o.MaxFrameBytes, buf: make([]byte, 64<<10)},
		Writer: cw,
		// Lines are bounded here, with an answer; the SDK's own limit would
		// end the session.
		MaxLineLength: -1,
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

// responseCounter splits the written byte stream into lines and counts the
// JSON-RPC responses among them (an "id" and no "method").
type responseCounter struct {
	buf []byte
}

func (l *responseCounter) feed(p []byte) int {
	n := 0
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			break
		}
		line := p[:i]
		if len(l.buf) > 0 {
			line = append(l.buf, line...)
			l.buf = l.buf[:0]
		}
		n += countResponses(line)
		p = p[i+1:]
	}
	return n
}

func countResponses(line []byte) int {
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
		if len(probe.ID) > 0 && string(probe.ID) != "null" && probe.Method == nil {
			n++
		}
	}
	return n
}

type drainingReader struct {
	r       io.Reader
	c       *counter
	w       *countingWriter // for the errors answered here
	drain   time.Duration
	max     int // bytes of one line, newline excluded
	buf     []byte
	eof     bool
	in      []byte   // bytes read, not yet split into lines
	skip    bool     // inside a line longer than max: drop up to its newline
	skipped int      // bytes of that line so far
	out     [][]byte // whole, checked lines waiting for the SDK
}

// Read hands the SDK whole lines that passed checkLine only.
func (d *drainingReader) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.eof {
			// Answer what was read before ending the session.
			d.c.wait(d.drain)
			return 0, io.EOF
		}
		n, err := d.r.Read(d.buf)
		d.split(d.buf[:n])
		if err == io.EOF {
			d.eof = true
			if d.skip {
				d.w.tooLong(d.skipped, d.max)
				d.skip = false
			} else if len(bytes.TrimSpace(d.in)) > 0 {
				d.line(d.in) // a last line without its newline
			}
			d.in = nil
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, d.out[0])
	if n == len(d.out[0]) {
		d.out[0] = nil
		d.out = d.out[1:]
	} else {
		d.out[0] = d.out[0][n:]
	}
	return n, nil
}

// split adds newly read bytes and takes out every whole line, never holding
// more than max bytes of one line.
func (d *drainingReader) split(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if d.skip {
			if i < 0 {
				d.skipped += len(b)
				return
			}
			d.skipped += i
			d.w.tooLong(d.skipped, d.max)
			d.skip, d.skipped = false, 0
			b = b[i+1:]
			continue
		}
		if i < 0 {
			if len(d.in)+len(b) > d.max {
				d.skip, d.skipped = true, len(d.in)+len(b)
				d.in = nil
				return
			}
			d.in = append(d.in, b...)
			return
		}
		if len(d.in)+i > d.max {
			d.w.tooLong(len(d.in)+i, d.max)
			d.in = nil
		} else {
			var line []byte
			if len(d.in) == 0 {
				line = append([]byte(nil), b[:i+1]...)
			} else {
				line = append(d.in, b[:i+1]...)
			}
			d.in = nil
			d.line(line)
		}
		b = b[i+1:]
	}
}

// line checks one line and queues it for the SDK or answers it.
func (d *drainingReader) line(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	request, id, code, msg := checkLine(line)
	if code != 0 {
		d.w.errorReply(id, code, msg)
		return
	}
	if request {
		d.c.add(1)
	}
	d.out = append(d.out, line)
}

// wireMessage is the envelope of a JSON-RPC 2.0 message, raw.
type wireMessage struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

var integerLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// checkLine checks that a line is one JSON-RPC 2.0 request, notification or
// response the SDK can answer exactly. request reports a request that
// expects a response. On failure code is the JSON-RPC error code and id the
// id to answer with (the message's own when valid, else null).
func checkLine(line []byte) (request bool, id json.RawMessage, code int, msg string) {
	null := json.RawMessage("null")
	if len(bytes.TrimSpace(line)) == 0 {
		return false, null, -32700, "Parse error: the line is not JSON"
	}
	if !json.Valid(line) {
		return false, null, -32700, "Parse error: the line is not JSON" + notJSONReason(line)
	}
	trimmed := bytes.TrimSpace(line)
	switch trimmed[0] {
	case '{':
	case '[':
		return false, null, -32600, "Invalid Request: batches (JSON arrays) are not supported (MCP 2025-06-18 removed JSON-RPC batching); send one request object per line"
	default:
		return false, null, -32600, "Invalid Request: the line is JSON but not a JSON-RPC request object: want {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"...\"}"
	}
	var m wireMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return false, null, -32600, "Invalid Request: " + err.Error()
	}
	// The id first, so that the other errors can name it.
	hasID := len(m.ID) > 0
	validID := false
	if hasID {
		switch raw := string(m.ID); {
		case raw == "null":
		case raw[0] == '"':
			validID = true
		case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
			if !integerLiteral.MatchString(raw) {
				return false, null, -32600, fmt.Sprintf("Invalid Request: id %s is not an integer; use a string or an integer id (JSON-RPC 2.0 §4: ids SHOULD NOT have fractional parts)", clip(raw))
			}
			v, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || v > maxExactID || v < -maxExactID {
				return false, null, -32600, fmt.Sprintf("Invalid Request: id %s is outside -2^53..2^53, where it cannot be echoed exactly; use a smaller integer or a string id", clip(raw))
			}
			validID = true
		default:
			return false, null, -32600, fmt.Sprintf("Invalid Request: id %s must be a string or an integer", clip(raw))
		}
	}
	answer := null
	if validID {
		answer = m.ID
	}
	var version string
	if json.Unmarshal(m.JSONRPC, &version) != nil || version != "2.0" {
		if len(m.JSONRPC) == 0 {
			return false, answer, -32600, `Invalid Request: no "jsonrpc" member; JSON-RPC 2.0 messages carry "jsonrpc":"2.0"`
		}
		return false, answer, -32600, fmt.Sprintf(`Invalid Request: "jsonrpc" is %s; only "2.0" is spoken`, clip(string(m.JSONRPC)))
	}
	if len(m.Method) == 0 {
		// A response to a request of the server (sampling, roots).
		if !validID || (len(m.Result) == 0 && len(m.Error) == 0) {
			return false, answer, -32600, `Invalid Request: no "method"; a request needs "method" (and "id" for an answer), a response needs "id" and "result" or "error"`
		}
		return false, nil, 0, ""
	}
	if m.Method[0] != '"' {
		return false, answer, -32600, fmt.Sprintf(`Invalid Request: "method" is %s, not a string`, clip(string(m.Method)))
	}
	if len(m.Params) > 0 && m.Params[0] != '{' && m.Params[0] != '[' && string(m.Params) != "null" {
		return false, answer, -32600, `Invalid Request: "params" must be an object or an array`
	}
	if hasID && !validID {
		return false, null, -32600, `Invalid Request: id null; give a string or an integer id, or leave "id" out for a notification`
	}
	return hasID, nil, 0, ""
}

// clip shortens a raw value quoted in an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
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
	lines responseCounter
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

// errorReply answers a line that was refused before the SDK saw it
// (JSON-RPC 2.0 §5.1). It is not counted: the SDK never saw the request.
func (cw *countingWriter) errorReply(id json.RawMessage, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.w.Write(append(b, '\n'))
}

// tooLong answers a line longer than the frame limit.
func (cw *countingWriter) tooLong(n, max int) {
	cw.errorReply(json.RawMessage("null"), -32600, fmt.Sprintf(
		"Invalid Request: a line of more than %d bytes (%d read) is over the frame limit of %d bytes; it was skipped (raise it with contextfold mcp --max-frame-bytes, or send less per call)", max, n, max))
}

// notJSONReason says why line is not JSON when the reason helps: valid
// JSON nested deeper than the decoder reads (a 2M-deep array) is not a
// syntax error of the client's.
func notJSONReason(line []byte) string {
	var raw json.RawMessage
	err := json.Unmarshal(line, &raw)
	var se *json.SyntaxError
	if err == nil || !errors.As(err, &se) || !strings.Contains(se.Error(), "exceeded max depth") {
		return ""
	}
	return fmt.Sprintf(": it is nested deeper than the %d levels a message may have (at byte offset %d)", maxJSONDepth, se.Offset)
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000
