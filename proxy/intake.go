package proxy

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
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

// Limits on request intake (one large request must not take the
// proxy's memory, and a slow client must not hold a connection forever).
const (
	// DefaultMaxInFlightBytes is the default budget of the estimated memory
	// of every API request in flight (bytes): 1 GiB. A request's estimate is
	// RequestMemoryMultiple × its body plus FoldMemoryMultiple × the bytes
	// of its conversation the proxy had not seen (see Options); while a
	// request folds such bytes, the estimates are also the process's soft
	// memory limit above the memory in use before (memlimit.go).
	DefaultMaxInFlightBytes = 1 << 30
	// RequestMemoryMultiple is the proxy's memory for a request whose
	// conversation it read before (an agent's next turn), per body byte:
	// the body, its parse and the forwarded body (BenchmarkProxyLargeRequest,
	// heap-x-next; BENCHMARKS.md "Proxy memory").
	RequestMemoryMultiple = 3
	// FoldMemoryMultiple is the memory, per byte of conversation not seen
	// before, of folding it: the decoded messages, the cold nodes and index
	// entries being written, the ranked index, the records. With the soft
	// memory limit (memlimit.go) the heap of a first request stays within
	// its estimate, (RequestMemoryMultiple + FoldMemoryMultiple) × its body
	// above the memory in use before: BenchmarkProxyLargeRequest measured
	// heap-x 4.4 at 10,000 messages and 4.5–4.6 at 40,000 (4.4 × the body
	// live at the peak); it was 14 (heap-x 8.6–13.9) before the limit.
	FoldMemoryMultiple = 2
	// FoldMessageMemory is the least memory, per message not seen
	// before, that folding it holds whatever the message's size (bytes):
	// its parse, its cold node and index entry, its record and the
	// session's per-message state. A conversation of many tiny messages
	// (20,000 of a few tokens: 2.2 MB, 10,000 cold nodes) peaks at some
	// 55 MB, 25 × its body, so that an estimate in body bytes alone made the
	// soft memory limit (memlimit.go) hold the collector at a tenth of its
	// usual headroom: 44 % of the CPU went to collection and the request
	// took 18 s instead of 6 (BenchmarkProxyLargeRequest with
	// PROXY_BENCH_SHAPE=tiny). Since a fold event holds the cold nodes it
	// has no spare file for in memory until its durable part writes them
	// (up to 16 MiB), 12,000 tiny messages peaked at 38–40 MB, 3.3 KiB a
	// message (TestTinyMessagesWithinEstimate): 3 KiB left the watchdog
	// raising the limit in 2 runs of 3 on a loaded machine. Since the fold
	// event's durable part is held until the forwarded body is ready
	// (Store.FoldBatchEachHeld) and the rewritten index is held in its
	// batch, they peak at 47–52 MB, 4.0–4.4 KiB a message: 4 KiB left the
	// watchdog raising the limit by 5–6 MB in 2 runs of 3. A message of
	// FoldMessageMemory / FoldMemoryMultiple bytes or more is estimated by
	// its bytes alone.
	FoldMessageMemory = 5 << 10
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

// acquireAlone reserves n more bytes for a request already holding own
// bytes: when they do not fit, they are granted anyway, capped at the
// budget, if no other request holds any (a request whose estimate exceeds
// the whole budget is served alone rather than never). It returns the bytes
// reserved and whether the request may go on.
func (b *budget) acquireAlone(n, own int64) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max < 0 || b.used+n <= b.max {
		b.used += n
		return n, true
	}
	if b.used == own {
		n = max(b.max-b.used, 0)
		b.used += n
		return n, true
	}
	return 0, false
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

// InFlightBytes returns the bytes currently reserved against
// Options.MaxInFlightBytes (bodies as they arrive, then each request's
// memory estimate). Safe for concurrent use.
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

// memoryEstimate is a request's memory as the in-flight budget counts it
// (bytes): RequestMemoryMultiple × the body, plus FoldMemoryMultiple × the
// bytes of its conversation not taken from the prefix cache, each such
// message counted as FoldMessageMemory at least.
func memoryEstimate(body int, req *request) int64 {
	return int64(body)*RequestMemoryMultiple + int64(freshBytes(body, req))*FoldMemoryMultiple + smallMessages(req)
}

// smallMessages is what the messages of req not taken from the prefix
// cache add to FoldMemoryMultiple × their bytes so that each counts as
// FoldMessageMemory at least (bytes; 0 for no parse).
func smallMessages(req *request) int64 {
	if req == nil {
		return 0
	}
	var n int64
	for _, e := range req.elems[min(max(req.known, 0), len(req.elems)):] {
		n += int64(max(FoldMessageMemory-FoldMemoryMultiple*(e.end-e.start), 0))
	}
	return n
}

// freshBytes is the bytes of a request's body not taken from the prefix
// cache (the whole body of a first request).
func freshBytes(body int, req *request) int {
	fresh := body
	if req != nil && req.known > 0 && req.known <= len(req.elems) {
		fresh -= req.elems[req.known-1].end - req.arrStart
	}
	return max(fresh, 0)
}

// reserveMemory raises the request's reservation from its body to its
// memory estimate once the body is parsed; it answers 503 with Retry-After
// and returns false when the estimate does not fit beside the other
// requests in flight.
func (s *Server) reserveMemory(w http.ResponseWriter, api API, body []byte, req *request, more func(int64)) bool {
	extra := memoryEstimate(len(body), req) - int64(len(body))
	if extra <= 0 {
		return true
	}
	got, ok := s.budget.acquireAlone(extra, int64(len(body)))
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		s.reject(w, api, http.StatusServiceUnavailable, fmt.Sprintf(
			"too much memory in flight for this request (estimated %d bytes, budget %d bytes, --max-inflight-bytes); retry after %d s",
			extra+int64(len(body)), s.budget.max, RetryAfterSeconds))
		return false
	}
	more(got)
	return true
}

// intakeHold is what an API request holds of the in-flight budget.
type intakeHold struct {
	reserved int64 // bytes
	// freed, when not negative, is the memory the finished request leaves
	// to the garbage collector (bytes), which decides in place of reserved
	// whether to hand memory back to the operating system at once
	// (releaseAfterBytes): a request that repeats a conversation the proxy
	// read before, from a pooled buffer, frees little whatever its size.
	freed int64
}

// more adds n bytes to the reservation release gives back.
func (h *intakeHold) more(n int64) { h.reserved += n }

// readBody reads an API request's body within the limits: at most
// MaxBodyBytes (else 413), within BodyReadTimeout (else 408), within the
// in-flight budget (else 503 with Retry-After). A body with a
// Content-Length is read into one buffer of exactly that size, from the
// body pool (putBody gives it back). While the body arrives its blocks are
// hashed (bodyDigest; nil when the body is compressed): after its last
// byte, no pass over the whole body is left. The caller checks the body's
// UTF-8 (rejectInvalidUTF8). On failure it has answered the client and
// returns ok false. The caller must call release when the request is
// finished, in every case; hold.more adds bytes to what release gives back.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, api API) (body []byte, dg *bodyDigest, release func(), hold *intakeHold, ok bool) {
	hold = &intakeHold{freed: -1}
	bodyIn := false // the whole body was read
	release = func() {
		s.budget.release(hold.reserved)
		freed := hold.reserved
		if hold.freed >= 0 {
			freed = hold.freed
		}
		if freed >= releaseAfterBytes {
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
		return nil, nil, release, hold, false
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
	ce := r.Header.Get("Content-Encoding")
	decode := decodableCoding(ce) // read decoded, forwarded uncompressed (encoding.go)
	if ce == "" || ce == "identity" || decode {
		dg = newBodyDigest(s.cache.seed)
	}
	var err error
	if r.ContentLength >= 0 && !decode {
		if !s.budget.acquire(r.ContentLength) {
			over()
			return nil, nil, release, hold, false
		}
		hold.reserved = r.ContentLength
		body = getBody(int(r.ContentLength))
		if err = readDigesting(r.Body, body, dg); err == nil {
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
		src := r.Body
		if decode {
			// Both the compressed and the decoded bytes are bounded by
			// --max-body-bytes: a small body that decodes to a huge one
			// is refused as one too large.
			zr, derr := newBodyDecoder(ce, http.MaxBytesReader(w, r.Body, limit), limit)
			if derr != nil {
				var mbe *http.MaxBytesError
				if errors.As(derr, &mbe) {
					s.reject(w, api, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes (--max-body-bytes)", mbe.Limit))
				} else {
					s.reject(w, api, http.StatusBadRequest, derr.Error()+"; send the body uncompressed or in gzip, deflate or zstd")
				}
				return nil, nil, release, hold, false
			}
			defer zr.Close()
			src = io.NopCloser(decodingReader{r: zr, label: normalCoding(ce)})
		}
		rr := &reservingReader{r: http.MaxBytesReader(w, src, limit), b: &s.budget}
		body, err = readAllDigesting(rr, dg)
		hold.reserved = rr.reserved
		if err == nil {
			// Hold only what the body takes.
			s.budget.release(hold.reserved - int64(len(body)))
			hold.reserved = int64(len(body))
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
		case errors.As(err, new(*decodeError)):
			s.reject(w, api, http.StatusBadRequest, err.Error()+"; send the body uncompressed or in gzip, deflate or zstd")
		default:
			s.reject(w, api, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		}
		return nil, nil, release, hold, false
	}
	bodyIn = true
	if decode {
		// From here on the body is identity-coded: it is folded, and
		// forwarded without Content-Encoding.
		r.Header.Del("Content-Encoding")
	}
	return body, dg, release, hold, true
}

// rejectInvalidUTF8 answers 400 and returns true when an uncompressed body
// is not valid UTF-8. When known is set (bytes of the body that a prefix
// state holds, validated with the request it was read from), only the
// rest of the body is checked: a long conversation costs its new bytes.
func (s *Server) rejectInvalidUTF8(w http.ResponseWriter, r *http.Request, api API, body []byte, known *span) bool {
	if ce := r.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return false
	}
	valid := false
	if known != nil && 0 <= known.start && known.start <= known.end && known.end <= len(body) {
		valid = utf8.Valid(body[:known.start]) && utf8.Valid(body[known.end:])
	} else {
		valid = utf8.Valid(body)
	}
	if valid {
		return false
	}
	s.reject(w, api, http.StatusBadRequest, fmt.Sprintf("request body is not valid UTF-8 (first invalid byte at offset %d); JSON text must be UTF-8 (RFC 8259 §8.1)", invalidUTF8At(body)))
	return true
}

// bodyBlock is the size of the blocks a request body is hashed in while it
// arrives (bytes). A prefix state keeps the block hashes of the body it was
// read from (prefix.go): a body repeating its first blocks repeats every
// message ending in them, at the same offset, and none of it is hashed
// again once the body is in.
const bodyBlock = 64 << 10

// bodyDigest is the hash of each whole bodyBlock of a request body from
// byte 0, made while the body arrives, so that what is left after its last
// byte is proportional to the bytes the proxy has not seen before, not to
// the conversation. Not safe for concurrent use. A nil
// *bodyDigest digests nothing.
type bodyDigest struct {
	seed maphash.Seed
	// blocks[k] is the maphash under seed of body[k*bodyBlock:(k+1)*bodyBlock].
	blocks []uint64
}

func newBodyDigest(seed maphash.Seed) *bodyDigest { return &bodyDigest{seed: seed} }

// add digests the body read so far (b, of which an earlier call saw a
// prefix): the blocks it completes.
func (d *bodyDigest) add(b []byte) {
	if d == nil {
		return
	}
	for k := len(d.blocks); (k+1)*bodyBlock <= len(b); k++ {
		d.blocks = append(d.blocks, maphash.Bytes(d.seed, b[k*bodyBlock:(k+1)*bodyBlock]))
	}
}

// readDigesting fills body from r as io.ReadFull does, digesting each
// read as it arrives (d may be nil).
func readDigesting(r io.Reader, body []byte, d *bodyDigest) error {
	n := 0
	for n < len(body) {
		k, err := r.Read(body[n:])
		n += k
		d.add(body[:n])
		switch {
		case err == nil:
		case n == len(body) && err == io.EOF:
			return nil
		case err == io.EOF && n > 0:
			return io.ErrUnexpectedEOF
		default:
			return err
		}
	}
	return nil
}

// readAllDigesting reads r to its end as io.ReadAll does, digesting each
// read as it arrives (d may be nil).
func readAllDigesting(r io.Reader, d *bodyDigest) ([]byte, error) {
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		d.add(b)
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
}

// The body pool: buffers for request bodies of a known length between
// bodyPoolMin and releaseAfterBytes, by power-of-two capacity. An agent
// resends a body about as large as its last one at every turn: reusing its
// buffer spares allocating and zeroing it (at 2,000 messages, a
// fifth of the proxy's time before forwarding) and the garbage collections
// that the allocation brings about. Larger bodies are not pooled: their
// memory goes back to the operating system (releaseAfterBytes).
const bodyPoolMin = 64 << 10

var bodyPools [32]sync.Pool // by bits.Len of the capacity - 1

func bodyClass(n int) int { return bits.Len(uint(n - 1)) }

// getBody returns a buffer of length n, from the pool when one fits.
func getBody(n int) []byte {
	if n < bodyPoolMin || n > releaseAfterBytes {
		return make([]byte, n)
	}
	k := bodyClass(n)
	if b, ok := bodyPools[k].Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<k)
}

// putBody gives a buffer from getBody back to the pool, and says whether
// it went there. Nothing may use it afterwards.
func putBody(b []byte) bool {
	c := cap(b)
	if c < bodyPoolMin || c > releaseAfterBytes || c&(c-1) != 0 {
		return false
	}
	b = b[:0]
	bodyPools[bodyClass(c)].Put(&b)
	return true
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
	deadline time.Time
	once     sync.Once
	timedOut atomic.Bool // the deadline passed before the end of the body
	ended    atomic.Bool // the body was read to its end
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Keep the deadline: the server must not wait for the rest
			// of the body before it answers.
			d.timedOut.Store(true)
		} else {
			if err == io.EOF {
				d.ended.Store(true)
			}
			d.once.Do(func() { _ = d.rc.SetReadDeadline(time.Time{}) })
		}
	}
	return n, err
}

// deadlineBodyKey is the context key of a passed-through request's
// deadlineBody: the reverse proxy hands its error handler the outgoing
// request, whose Body is a wrapper, but whose context is the client's.
type deadlineBodyKey struct{}

// bodyTimedOut reports whether a passed-through request failed because its
// body did not arrive within BodyReadTimeout: its read hit the deadline, or
// the deadline passed before its end (the failed read cancels the request's
// context, which can end the upstream call before the read returns).
func bodyTimedOut(r *http.Request) bool {
	d, ok := r.Context().Value(deadlineBodyKey{}).(*deadlineBody)
	return ok && (d.timedOut.Load() || !d.ended.Load() && !time.Now().Before(d.deadline))
}

// passThrough forwards a request the proxy does not read, with the body
// read deadline lifted once its body is in. A request without a body gets
// no deadline: the server already reads its connection in the background.
func (s *Server) passThrough(w http.ResponseWriter, r *http.Request) {
	if s.opts.BodyReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(s.opts.BodyReadTimeout)
		if rc.SetReadDeadline(deadline) == nil {
			d := &deadlineBody{ReadCloser: r.Body, rc: rc, deadline: deadline}
			r = r.WithContext(context.WithValue(r.Context(), deadlineBodyKey{}, d))
			r.Body = d
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
