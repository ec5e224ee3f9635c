package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Limits on request intake (issue 12: one large request must not take the
// proxy's memory, and a slow client must not hold a connection forever).
const (
	// DefaultMaxInFlightBytes is the default budget of request bodies held
	// at once across every API request in flight (bytes): 256 MiB, four
	// bodies of the largest size DefaultMaxBodyBytes.
	DefaultMaxInFlightBytes = 256 << 20
	// DefaultBodyReadTimeout is how long a client may take to send a whole
	// request body by default.
	DefaultBodyReadTimeout = 60 * time.Second
	// RetryAfterSeconds is the Retry-After of a 503 answered because the
	// in-flight budget is spent (seconds).
	RetryAfterSeconds = 2
)

// releaseAfterBytes: once a request with a body at least this large is
// finished, the memory it freed is handed back to the operating system at
// once (bytes). The Go runtime otherwise returns it over minutes, and a
// proxy that served one 60 MB request stayed at gigabytes of RSS.
const releaseAfterBytes = 8 << 20

// budgetChunk is how much of the budget a body of unknown length (chunked
// transfer encoding) reserves at a time as it arrives (bytes).
const budgetChunk = 1 << 20

// budget is a byte budget shared by the requests in flight. It is safe for
// concurrent use.
type budget struct {
	mu        sync.Mutex
	used, max int64 // max < 0: unlimited
}

// acquire reserves n bytes and reports whether they fit.
func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max >= 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// returnMemory runs debug.FreeOSMemory in the background, one at a time.
func (s *Server) returnMemory() {
	if !s.freeing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.freeing.Store(false)
		debug.FreeOSMemory()
	}()
}

// InFlightBytes returns the request-body bytes currently reserved against
// Options.MaxInFlightBytes. Safe for concurrent use.
func (s *Server) InFlightBytes() int64 {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return s.budget.used
}

// errOverBudget is returned by readBody when the in-flight budget is spent.
var errOverBudget = errors.New("over the in-flight budget")

// reservingReader reserves budget for a body of unknown length as it
// arrives, budgetChunk bytes at a time.
type reservingReader struct {
	r        io.Reader
	b        *budget
	reserved int64 // bytes reserved so far
	read     int64
}

func (rr *reservingReader) Read(p []byte) (int, error) {
	if rr.read+int64(len(p)) > rr.reserved {
		if !rr.b.acquire(budgetChunk) {
			return 0, errOverBudget
		}
		rr.reserved += budgetChunk
	}
	p = p[:min(int64(len(p)), rr.reserved-rr.read)]
	n, err := rr.r.Read(p)
	rr.read += int64(n)
	return n, err
}

// readBody reads an API request's body within the limits: at most
// MaxBodyBytes (else 413), within BodyReadTimeout (else 408), within the
// in-flight budget (else 503 with Retry-After), and valid UTF-8 unless the
// body is compressed (else 400). A body with a Content-Length is read into
// one buffer of exactly that size. On failure it has answered the client
// and returns ok false. The caller must call release when the request is
// finished, in every case.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, api API) (body []byte, release func(), ok bool) {
	var reserved int64
	bodyIn := false // the whole body was read
	release = func() {
		s.budget.release(reserved)
		if reserved >= releaseAfterBytes {
			s.returnMemory()
		}
	}
	over := func() {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		w.Header().Set("Connection", "close") // the body was not read
		s.reject(w, api, http.StatusServiceUnavailable, fmt.Sprintf(
			"too many request bytes in flight (budget %d bytes, --max-inflight-bytes); retry after %d s", s.budget.max, RetryAfterSeconds))
	}
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		s.reject(w, api, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes (--max-body-bytes)", limit))
		return nil, release, false
	}
	if s.opts.BodyReadTimeout > 0 {
		// The deadline covers the whole body; it is lifted once the body
		// is in, so that a long streamed response is not cut. A
		// ResponseWriter without deadlines (a test recorder) reads on
		// without one.
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout)) == nil {
			defer func() {
				if bodyIn {
					_ = rc.SetReadDeadline(time.Time{})
				}
			}()
		}
	}
	var err error
	if r.ContentLength >= 0 {
		if !s.budget.acquire(r.ContentLength) {
			over()
			return nil, release, false
		}
		reserved = r.ContentLength
		body = make([]byte, r.ContentLength)
		if _, err = io.ReadFull(r.Body, body); err == nil {
			// Read on to the end of the body: the server then watches the
			// connection, so a client that goes away cancels the upstream
			// call.
			var probe [1]byte
			if n, e := r.Body.Read(probe[:]); n > 0 {
				err = errors.New("the body is longer than its Content-Length")
			} else if e != nil && e != io.EOF {
				err = e
			}
		}
	} else {
		rr := &reservingReader{r: http.MaxBytesReader(w, r.Body, limit), b: &s.budget}
		body, err = io.ReadAll(rr)
		reserved = rr.reserved
		if err == nil {
			// Hold only what the body takes.
			s.budget.release(reserved - int64(len(body)))
			reserved = int64(len(body))
		}
	}
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, errOverBudget):
			over()
		case errors.As(err, &mbe):
			s.reject(w, api, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes (--max-body-bytes)", mbe.Limit))
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			s.reject(w, api, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s (--body-read-timeout)", s.opts.BodyReadTimeout))
		default:
			s.reject(w, api, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		}
		return nil, release, false
	}
	bodyIn = true
	if ce := r.Header.Get("Content-Encoding"); (ce == "" || ce == "identity") && !utf8.Valid(body) {
		s.reject(w, api, http.StatusBadRequest, fmt.Sprintf("request body is not valid UTF-8 (first invalid byte at offset %d); JSON text must be UTF-8 (RFC 8259 §8.1)", invalidUTF8At(body)))
		return nil, release, false
	}
	return body, release, true
}

// invalidUTF8At returns the offset of the first byte of b that is not part
// of a valid UTF-8 sequence, or -1.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// deadlineBody lifts the body read deadline of a passed-through request
// once its body has been read to the end.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	once     sync.Once
	timedOut atomic.Bool // the deadline passed before the end of the body
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Keep the deadline: the server must not wait for the rest
			// of the body before it answers.
			d.timedOut.Store(true)
		} else {
			d.once.Do(func() { _ = d.rc.SetReadDeadline(time.Time{}) })
		}
	}
	return n, err
}

// bodyTimedOut reports whether a passed-through request failed because its
// body did not arrive within BodyReadTimeout.
func bodyTimedOut(r *http.Request) bool {
	d, ok := r.Body.(*deadlineBody)
	return ok && d.timedOut.Load()
}

// passThrough forwards a request the proxy does not read, with the body
// read deadline lifted once its body is in. A request without a body gets
// no deadline: the server already reads its connection in the background.
func (s *Server) passThrough(w http.ResponseWriter, r *http.Request) {
	if s.opts.BodyReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
	}
	s.rp.ServeHTTP(w, r)
}

// bytesString views b as a string without copying it (a body can be 64
// MiB). b must not change while the string is in use: the proxy never
// writes to a body after reading it.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// publicStats withholds what must not leave the process through the stats
// endpoint: the input of every tool call (it can hold file contents and
// secrets) is replaced by its size.
func publicStats(st Stats) Stats {
	recent := make([]RequestRecord, len(st.Recent))
	for i, rec := range st.Recent {
		if len(rec.Observed.ToolCalls) > 0 {
			calls := make([]ToolCall, len(rec.Observed.ToolCalls))
			for j, tc := range rec.Observed.ToolCalls {
				tc.Input = fmt.Sprintf("(%d bytes, withheld)", len(tc.Input))
				calls[j] = tc
			}
			rec.Observed.ToolCalls = calls
		}
		recent[i] = rec
	}
	st.Recent = recent
	return st
}
