// Package proxy is a transparent LLM proxy that folds an agent's
// conversation in place: it speaks the Anthropic Messages API
// (POST /v1/messages), the OpenAI Chat Completions API
// (POST /v1/chat/completions) and the OpenAI Responses API
// (POST /v1/responses, see responses.go), streaming and not, and passes
// every other request through untouched (a POST of an unknown shape with an
// X-Contextfold-Warning, counted in Stats.UnknownShape).
//
// For each API request the proxy reads the body into the neutral model of
// package harness, runs PreTurnDispatch on the session's store, and splices
// the result into the client's bytes: folded turns replaced by their
// folded-step records, verified hydrated content appended to the message of
// the latest human prompt after its tool results. Every other byte — thinking
// blocks and their signatures, cache_control markers, images, tool pairing,
// unknown fields — goes upstream exactly as the client wrote it. When the
// response has been delivered, PostTurnResponse evicts the hydrated nodes.
//
// The response reaches the client byte for byte as the upstream sent it,
// server-sent events flushed as they arrive; the proxy only reads a copy for
// its bookkeeping. Authentication headers pass through and are never logged
// or stored.
//
// Failure is safe: a node that fails verification is refused and the request
// still goes out, with an X-Contextfold-Warning response header; upstream
// errors reach the client unchanged; a client that disconnects cancels the
// upstream call.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/internal/hostguard"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/scrub"
)

// Header names the proxy reads or writes.
const (
	// HeaderSession selects the session store; without it the session is
	// derived from the start of the conversation. It is not forwarded. A
	// value in which the secret scrubber finds a secret (a token sent as a
	// session name) is replaced by its scrub.SafeName, "sha256-<64 hex>",
	// before it names a directory, a stats entry, a log line or a
	// RequestRecord: the value itself is never written.
	HeaderSession = "X-Contextfold-Session"
	// HeaderWarning is added to a response when something was refused or
	// failed (a tampered node, a failed fold); the request still went out.
	HeaderWarning = "X-Contextfold-Warning"
	// HeaderStats carries the request's accounting on the response, as
	// "client=N forwarded=N folded=N hydrated=N" (tokens).
	HeaderStats = "X-Contextfold-Tokens"
)

// Paths of the two APIs and of the stats endpoint.
const (
	PathAnthropic = "/v1/messages"
	PathOpenAI    = "/v1/chat/completions"
	PathStats     = "/contextfold/stats"
)

// DefaultMaxBodyBytes bounds a request body (bytes).
const DefaultMaxBodyBytes = 64 << 20

// DefaultMaxMessages bounds the messages (Responses API: input items) of a
// request. Every message of a conversation the proxy has not seen can
// become a cold node in the request's fold event, at about 1-2 ms and 4-6
// KiB of memory each (8 MB of two-token messages, 200,000 of them, kept
// the proxy folding for minutes); 50,000 is past any agent session a model's
// context holds, and bounds that work to about a minute.
const DefaultMaxMessages = 50000

// Options configure a Server.
type Options struct {
	// Dir holds one store per session (Dir/<session>/g<generation>).
	// Required unless Shared is set; with Shared, the working-set log goes
	// under Dir when it is set, and nowhere otherwise.
	Dir string
	// Shared, when set, keeps every session's store and harness state in a
	// backend shared by several proxy replicas (SharedSessions; PostgreSQL:
	// package pgsessions) instead of under Dir.
	Shared SharedSessions
	// Upstream is the base URL of the provider for both APIs, e.g.
	// https://api.anthropic.com. AnthropicUpstream and OpenAIUpstream
	// override it per API; the OpenAI one also receives every other path
	// when set and Upstream is empty.
	Upstream, AnthropicUpstream, OpenAIUpstream string
	// Harness tunes folding (zero value: the harness defaults, with ranked
	// matching: Harness.Match "" means match.Ranked here).
	Harness harness.Config
	// MaxBodyBytes bounds a request body in bytes; 0 means
	// DefaultMaxBodyBytes. A larger body is answered 413.
	MaxBodyBytes int64
	// MaxMessages bounds the messages (Responses API: input items) of an
	// API request; 0 means DefaultMaxMessages, a negative value means no
	// limit. A request with more is answered 413 before any of it is
	// folded or forwarded.
	MaxMessages int
	// MaxInFlightBytes is the budget of the estimated memory of the API
	// requests in flight, in bytes; 0 means DefaultMaxInFlightBytes, a
	// negative value means no budget. A request holds its body's size from
	// the moment its body starts to arrive (one that does not fit is
	// answered 503 with Retry-After, RetryAfterSeconds, without its body
	// being read); once the body is parsed it holds its memory estimate,
	// RequestMemoryMultiple × the body + FoldMemoryMultiple × the bytes of
	// its conversation the proxy had not read before, each such message
	// FoldMessageMemory at least (the measured
	// multiples, BENCHMARKS.md "Proxy memory"), until its response is
	// finished; an estimate that does not fit is answered 503 with
	// Retry-After too, unless no other request is in flight (it is then
	// served alone). So this bounds the proxy's memory for requests. It must
	// be at least MaxBodyBytes.
	MaxInFlightBytes int64
	// NoSoftMemoryLimit turns off the soft memory limit the proxy sets
	// while a request folds a conversation it had not read before
	// (memlimit.go: the memory in use before plus the estimates of those
	// requests, see MaxInFlightBytes). The limit is never set when
	// GOMEMLIMIT is.
	NoSoftMemoryLimit bool
	// NoLineage turns the conversation's lineage off (lineage.go): a
	// session then never reads the stores of its earlier lives (its own
	// earlier generations, the sessions a /compact left behind).
	NoLineage bool
	// PassWebSockets forwards a WebSocket upgrade of a model API path (Codex's
	// Responses WebSocket transport, GET …/responses with Upgrade: websocket)
	// to the upstream as it is. The socket then carries the whole session,
	// unfolded and unscanned, past the proxy. Off (the default), such an
	// upgrade is answered 426 Upgrade Required, the answer on which Codex
	// falls back to HTTP at once, so its requests come through the proxy.
	PassWebSockets bool
	// BodyReadTimeout is how long a client may take to send a whole
	// request body; 0 means DefaultBodyReadTimeout, a negative value means
	// no limit. A slower API request is answered 408 and its connection
	// closed; a slower passed-through body is cut.
	BodyReadTimeout time.Duration
	// AllowedHosts are extra host names (without a port) that the Host
	// header of a GET /contextfold/stats may name, besides localhost,
	// 127.0.0.1 and ::1 (the DNS-rebinding guard the inspector has too).
	// AnyHost turns that check off (for an explicitly non-loopback bind).
	// The API paths accept any Host.
	AllowedHosts []string
	AnyHost      bool
	// SessionIdle drops a session's in-memory state (its harness: working
	// set, caches) once no request has used it for this long; 0 means
	// DefaultSessionIdle (30 minutes), a negative value never. MaxSessions
	// bounds the sessions in memory, dropping the least recently used
	// first; 0 means DefaultMaxSessions (256), a negative value no bound.
	// A dropped session's harness state (harness.SessionState) is saved
	// beside its store (SessionStateFilePrefix) and read back when it
	// returns, so its requests are forwarded byte for byte as if it had
	// stayed. A session a request is using is never dropped.
	SessionIdle time.Duration
	MaxSessions int
	// Logger receives one line per API request (nil: text on stderr).
	Logger *slog.Logger
	// Transport sends the upstream requests (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// Clock stamps cold nodes and evictions (nil: contextfold.SystemClock).
	Clock contextfold.Clock
	// ScrubAllowlist, when set, is the allowlist of the secret scrubber of
	// every session store (LoadScrubSettings reads it from the CLI's
	// --scrub-settings file): the proxy writes it as the scrub_allowlist of
	// each store's store_settings.json when it opens the store (replacing
	// the store's own), so folds leave what it allows unredacted and
	// `contextfold scrub-check` on the store lists those finds as allowed.
	// Session names holding a secret are judged with it too. nil: each
	// store's own settings (none: placeholders only).
	ScrubAllowlist *scrub.Allowlist
	// OnRequest, when set, is called with the record of every API request
	// once its response is finished (tests, metrics). It must be safe for
	// concurrent use.
	OnRequest func(RequestRecord)
}

// RequestRecord is the accounting of one API request, as logged.
type RequestRecord struct {
	API        API    `json:"api"`
	Session    string `json:"session"`
	Generation int    `json:"generation"`
	Stream     bool   `json:"stream"`
	Status     int    `json:"status"` // upstream status; 499 when the client went away, 502 when the upstream failed
	harness.Accounting
	Messages   int   `json:"messages"`
	Boundary   int   `json:"boundary"`
	PromptStep int   `json:"prompt_step"`
	NewTurn    bool  `json:"new_turn"`
	Evicted    []int `json:"evicted"`
	// EvictedEarlier lists the nodes of earlier requests of the session
	// that this request's dispatch evicted before its scan: the client sent
	// it before the proxy had read the end of the earlier response.
	EvictedEarlier []int `json:"evicted_earlier,omitempty"`
	// OverBudget is true when the forwarded request exceeds the context
	// budget even after folding (what cannot fold is larger: a huge pinned
	// message, the latest message and its tool pair); the response carries
	// an X-Contextfold-Warning.
	OverBudget bool          `json:"over_budget,omitempty"`
	Warnings   []string      `json:"warnings,omitempty"`
	Observed   Observed      `json:"observed"`
	Overhead   time.Duration `json:"overhead_ns"` // time spent by the proxy before forwarding
	// BodyRead is the part of Overhead spent receiving the client's body
	// (linear in its bytes by nature: the upstream would receive them too).
	BodyRead   time.Duration    `json:"body_read_ns"`
	Duration   time.Duration    `json:"duration_ns"` // until the response was finished
	ClientSize int              `json:"client_bytes"`
	SentSize   int              `json:"forwarded_bytes"`
	Hydrated   []hydrationBrief `json:"hydrated,omitempty"`
	// WorkingSet describes the budgeted working set of the request (nil
	// with the fixed message window).
	WorkingSet *harness.WorkingSet `json:"working_set,omitempty"`
	// Reasoning is what the request's fold event (if any) did to the
	// reasoning the client sent back, and what the API reported.
	Reasoning ReasoningStats `json:"reasoning"`
	// ClientCachedTokens and ForwardedCachedTokens are the longest common
	// prefix, in tokens, of the client's body and of the forwarded one with
	// the session's previous body of the same side: what a provider's
	// prompt cache reuses, without and with the proxy (budget mode; 0 for
	// a session's first request). Stats.Billed prices them.
	ClientCachedTokens    int `json:"client_cached_tokens"`
	ForwardedCachedTokens int `json:"forwarded_cached_tokens"`
	// Durable is when the request's fold event was durable, from its
	// arrival: its cold nodes and recall index are synced and named while
	// the upstream works (docs/proxy.md "A fold event is one durable
	// batch"), and the response is held until then. A request dispatched
	// while another request's fold event of the session was committing
	// (concurrent requests) relies on that one and waits for it likewise.
	// Overhead when nothing was left to make durable after forwarding.
	Durable time.Duration `json:"durable_ns"`
}

type hydrationBrief struct {
	StepID         int    `json:"step_id"`
	Tokens         int    `json:"tokens"`
	Truncated      bool   `json:"truncated"`
	ArtifactSHA256 string `json:"artifact_sha256"`
	// From names the earlier store the node was read from (lineage.go),
	// "" for the session's own.
	From string `json:"from,omitempty"`
}

// Server is the proxy. It is an http.Handler, safe for concurrent use.
type Server struct {
	opts      Options
	anthropic *url.URL
	openai    *url.URL
	other     *url.URL
	rp        *httputil.ReverseProxy
	log       *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	families map[string]*family // derived session ids' branches (branch.go)
	stats    Stats
	cache    *parseCache // message elements parsed before
	lin      lineages    // the conversations' lineages (lineage.go)

	budget     budget           // request bodies in flight
	freeing    atomic.Bool      // returnMemory is running
	statsHosts *hostguard.Guard // Host names GET /contextfold/stats answers
	// scrub is the secret scrubber with Options.ScrubAllowlist: it turns a
	// client's session name holding a secret into its SafeName.
	scrub *scrub.Scrubber
	// bg counts the work running off the requests' paths (background);
	// bgIdle is signalled, under mu, when it drops to 0.
	bg     int
	bgIdle *sync.Cond
	// serving counts the requests ServeHTTP is serving (Stats.Pending).
	serving int
	// syncFolds holds the ids of the sessions one of whose fold events
	// could not be made durable after its request went upstream
	// (durabilityFailed): their harness is opened again without
	// Config.OverlapDurability, so that a store that still cannot be
	// written (a full disk) fails the next fold event before the request
	// goes out, and the request is forwarded with those messages verbatim
	// (and a warning) instead of being answered 500 again. The first fold
	// event that commits removes the id (foldsCommitted): the next ones
	// overlap again. At most maxSyncFolds ids; past it the set starts
	// afresh.
	syncFolds map[string]bool
}

// maxSyncFolds bounds Server.syncFolds.
const maxSyncFolds = 4096

// background runs work on its own goroutine, counted so that Close waits
// for it (it writes into session stores: spare node files).
func (s *Server) background(work func()) {
	s.mu.Lock()
	s.bg++
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			if s.bg--; s.bg == 0 {
				s.bgIdle.Broadcast()
			}
			s.mu.Unlock()
		}()
		work()
	}()
}

// Stats are the proxy's counters. GET /contextfold/stats serves them with
// every tool call's input withheld (publicStats); Server.Stats and
// Options.OnRequest see them whole.
type Stats struct {
	Requests        int `json:"requests"`
	PassThrough     int `json:"pass_through"`
	Rejected        int `json:"rejected"`
	ClientTokens    int `json:"client_tokens"`
	ForwardedTokens int `json:"forwarded_tokens"`
	FoldedTokens    int `json:"folded_tokens"`
	HydratedTokens  int `json:"hydrated_tokens"`
	Warnings        int `json:"warnings"`
	// Chained counts Responses requests continuing a provider-held
	// conversation (previous_response_id): forwarded unchanged, not folded.
	Chained int `json:"chained"`
	// UnknownShape counts API requests of a shape the proxy does not know
	// (a POST to another path, a Responses body without "input"):
	// forwarded byte for byte with an X-Contextfold-Warning.
	UnknownShape int `json:"unknown_shape"`
	// OverBudget counts forwarded requests over the context budget (what
	// cannot fold — pinned messages, the latest message and its tool pair —
	// is larger than the budget); each carried an X-Contextfold-Warning.
	OverBudget int `json:"over_budget"`
	Sessions   int `json:"sessions"` // sessions in memory
	// SessionsDropped counts sessions dropped from memory (Options.SessionIdle,
	// MaxSessions); each comes back from its store and saved state.
	SessionsDropped int `json:"sessions_dropped"`
	// Pending counts the requests being served (all but GET
	// /contextfold/stats) plus the work running after their responses
	// (Server.background: the session state saved, spare node files, the
	// preparation ahead). It is 0 only once every request answered so far
	// is recorded and what it saves is written: a process killed then
	// (a supervisor, the crash tests) loses nothing of those requests.
	// A request's work after its response is counted before the request
	// is, so Pending does not touch 0 between the two.
	Pending int `json:"pending"`
	// Billed is the input cost of the budgeted requests so far as the
	// providers bill it, under each price structure (harness.Pricings:
	// Anthropic's cache write premium and read discount, OpenAI's cached
	// input discount), for the client's bodies as sent and for the
	// forwarded ones, each cached against the session's previous body of
	// the same side (RequestRecord.ClientCachedTokens,
	// ForwardedCachedTokens). Units: uncached input tokens.
	Billed []harness.Billed `json:"billed"`
	Recent []RequestRecord  `json:"recent"` // the last 32 API requests, oldest first
	// Reasoning sums the requests' ReasoningStats; SessionReasoning has
	// each session's in memory (its totals since it began).
	Reasoning        ReasoningStats            `json:"reasoning"`
	SessionReasoning map[string]ReasoningStats `json:"session_reasoning,omitempty"`
}

type session struct {
	id  string
	gen int
	dir string
	h   *harness.Harness

	// The session's earlier lives (lineage.go), under earlierMu: joined
	// says joinLineage ran; lineage holds the sessions of its lineage
	// before it, oldest first; earlier the stores earlierStores opened
	// (earlierOpen: it ran).
	earlierMu   sync.Mutex
	joined      bool
	lineage     []string
	earlierOpen bool
	earlier     []harness.EarlierStore

	// ver is the version of the shared session state (Options.Shared) the
	// harness holds.
	ver atomic.Int64

	// wire is what the session's requests keep on the wire across fold
	// events (reasoning.go); it travels with the harness state.
	wire wireState

	logMu    sync.Mutex
	requests int // requests logged
	// wsLog is the session's working-set log, opened by its first line
	// and kept open (append-only) until the session leaves memory or the
	// server closes: a request's line costs one write, not an open and a
	// close.
	wsLog *os.File

	// saveMu serialises the saves of the session's state; saved is the
	// state last written to statePath (saveState); gone: the session left
	// memory (dropSession), its state saved for the last time.
	saveMu  sync.Mutex
	saved   []byte
	savedAt time.Time
	gone    bool

	prevOut  []byte // the previous forwarded body, for the stable prefix
	prevBody []byte // the previous client body, for the client's cached prefix
	// prevBlocks are prevBody's block hashes (bodyDigest; nil: none).
	prevBlocks []uint64
	// prevBodyOwned: prevBody is the client's body buffer, kept by the
	// session (else it is the previous forwarded body, which went out
	// unchanged); it goes back to the body pool when replaced.
	prevBodyOwned bool

	// Guarded by Server.mu: the requests using the session now, and when
	// it was last handed out (for SessionIdle and MaxSessions).
	active   int
	lastUsed time.Time
}

type ctxKey struct{}

// reqState travels with a request from ServeHTTP to ModifyResponse.
type reqState struct {
	rec      RequestRecord
	sess     *session
	dispatch *harness.Dispatch
	start    time.Time
	// lineageHeader and lineageValue are the client's conversation id
	// (LineageHeaders), "" without one.
	lineageHeader, lineageValue string
	// family is the derived session id of a request without HeaderSession
	// (branch.go), "" with one.
	family string
	// measured: the dispatch measured the request (fixedTokens: what is
	// not its messages: system prompt, tools, framing), for a dispatch in
	// another session of its family (sharedBranch).
	measured    bool
	fixedTokens int
	// clientTokens is the client body's count when the dispatch measured it.
	clientTokens int
	// clientRunes and outRunes are the code points of the client's and the
	// forwarded body when the heuristic counted them (else 0), for
	// cacheAccount.
	clientRunes, outRunes int
	// wsBody and wsOut are the client's and the forwarded body, for the
	// working-set log written when the request is finished; wsBlocks are
	// wsBody's block hashes (bodyDigest, nil when not digested).
	wsBody, wsOut []byte
	wsBlocks      []uint64
	// bodyKept: cacheAccount kept the client's body buffer as the
	// session's previous body, so ServeHTTP must not pool it.
	bodyKept bool
	// held are the sessions handed to the request (Server.session).
	held []*session
	// plan is what the wire rules decided (reasoning.go); dropBlock adds
	// the binding beta to the forwarded headers.
	plan      *reasoningPlan
	dropBlock bool
	// ahead prepares the session's turns ahead of their fold
	// (harness.PrepareAhead), run once the response is done.
	ahead func()
	once  sync.Once
	// durOnce, durErr: the wait for the dispatch's fold event to be
	// durable (waitDurable) and its error.
	durOnce sync.Once
	durErr  error
}

// waitDurable waits until the request's fold event is durable
// (harness.Dispatch.WaitDurable), once, records when (RequestRecord.Durable)
// and returns the commit's error.
func (st *reqState) waitDurable() error {
	st.durOnce.Do(func() {
		if st.dispatch == nil || st.dispatch.Durable == nil {
			return
		}
		st.durErr = st.dispatch.WaitDurable()
		// Another request's fold event may have been durable before
		// this one went upstream.
		st.rec.Durable = max(st.rec.Durable, st.dispatch.Durable.DurableAt().Sub(st.start))
	})
	return st.durErr
}

// durabilityError is a fold event's failed durable part, returned by
// modifyResponse so that the upstream's response is replaced by an error
// (errorHandler).
type durabilityError struct{ err error }

func (e *durabilityError) Error() string { return e.err.Error() }
func (e *durabilityError) Unwrap() error { return e.err }

// New returns a proxy server.
//
// Errors: a missing Dir or upstream, or an upstream that is not an
// absolute http(s) URL.
func New(opts Options) (*Server, error) {
	if opts.Dir == "" && opts.Shared == nil {
		return nil, errors.New("proxy: Options.Dir (or Options.Shared) is required")
	}
	if opts.Dir != "" {
		// Every session's store is made under Dir: a Dir that is a file, a
		// FIFO or a device (or cannot be made) is refused here, not found
		// by every request's fold, which would leave each request
		// unfolded with a warning in the log only.
		if err := contextfold.CheckStoreDir(opts.Dir); err != nil {
			// A symbolic link loop named as the CLI names it, not
			// "mkdir: file exists".
			return nil, fmt.Errorf("proxy: the session stores' directory: %w", err)
		}
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("proxy: the session stores' directory %s: %v (give a directory path that can be created and written, --dir)", opts.Dir, err)
		}
		for _, f := range []string{contextfold.IndexFile, contextfold.ColdNodesDir} {
			// A store as Dir: the sessions' stores would be made inside
			// it, where nothing reads them (contextfold sessions, recall
			// --dir and the MCP server read it as the one store it is).
			if _, err := os.Lstat(filepath.Join(opts.Dir, f)); err == nil {
				return nil, fmt.Errorf("proxy: %s is a store (it holds %s), not a directory for session stores: the proxy keeps one store per session below its --dir, and stores inside a store are listed by nothing; give a directory of its own, e.g. --dir %s-proxy", opts.Dir, f, filepath.Clean(opts.Dir))
			}
		}
		if fi, err := os.Stat(opts.Dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("proxy: the session stores' directory %s is not a directory (give a directory path, --dir)", opts.Dir)
		}
		// A directory that exists but cannot be written (a read-only
		// mount, another user's directory) is refused too: a file is
		// made in it and removed.
		f, err := os.CreateTemp(opts.Dir, ".contextfold-write-check-*")
		if err != nil {
			return nil, fmt.Errorf("proxy: the session stores' directory %s cannot be written: %v (give a directory path that can be created and written, --dir)", opts.Dir, err)
		}
		f.Close()
		os.Remove(f.Name())
		if err := writeDirMarker(opts.Dir); err != nil {
			return nil, fmt.Errorf("proxy: the session stores' directory %s cannot be written: %v (give a directory path that can be created and written, --dir)", opts.Dir, err)
		}
	}
	s := &Server{opts: opts, sessions: map[string]*session{}, families: map[string]*family{}, log: opts.Logger, cache: newParseCache(), lin: lineages{dir: opts.Dir}}
	s.bgIdle = sync.NewCond(&s.mu)
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.opts.MaxMessages == 0 {
		s.opts.MaxMessages = DefaultMaxMessages
	}
	if s.opts.MaxInFlightBytes == 0 {
		s.opts.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if s.opts.MaxInFlightBytes > 0 && s.opts.MaxInFlightBytes < s.opts.MaxBodyBytes {
		return nil, fmt.Errorf("proxy: MaxInFlightBytes (%d) is smaller than MaxBodyBytes (%d): a body of the largest size could never be served; raise --max-inflight-bytes or lower --max-body-bytes", s.opts.MaxInFlightBytes, s.opts.MaxBodyBytes)
	}
	s.budget.max = s.opts.MaxInFlightBytes
	if s.opts.SessionIdle == 0 {
		s.opts.SessionIdle = DefaultSessionIdle
	}
	if s.opts.MaxSessions == 0 {
		s.opts.MaxSessions = DefaultMaxSessions
	}
	if s.opts.BodyReadTimeout == 0 {
		s.opts.BodyReadTimeout = DefaultBodyReadTimeout
	}
	s.statsHosts = hostguard.New(opts.AllowedHosts)
	var err error
	if s.scrub, err = scrub.New(); err != nil {
		return nil, fmt.Errorf("proxy: the secret scrubber: %v", err)
	}
	if s.scrub, err = s.scrub.WithAllowlist(opts.ScrubAllowlist); err != nil {
		return nil, fmt.Errorf("proxy: Options.ScrubAllowlist: %v", err)
	}
	parse := func(name, raw, fallback string) (*url.URL, error) {
		if raw == "" {
			raw = fallback
		}
		if raw == "" {
			return nil, nil
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("proxy: %s upstream %q is not an absolute http(s) URL", name, raw)
		}
		// The client's path (/v1/messages, /v1/chat/completions,
		// /v1/responses) is appended to the upstream's: a base URL
		// ending in /v1, as SDKs spell it, would send every request to
		// …/v1/v1/… and get the provider's 404.
		if p := strings.TrimRight(u.Path, "/"); strings.HasSuffix(p, "/v1") {
			base := *u
			base.Path, base.RawPath = strings.TrimSuffix(p, "/v1"), ""
			return nil, fmt.Errorf("proxy: %s upstream %q ends in /v1, but the proxy appends the client's whole path (/v1/messages, /v1/chat/completions, /v1/responses), so requests would go to %s/v1/…; give the base URL without /v1: %q", name, raw, strings.TrimRight(raw, "/"), base.String())
		}
		return u, nil
	}
	// The default upstream first: an error in it names the URL the user
	// gave (--upstream), not an API it stands in for.
	if s.other, err = parse("default", opts.Upstream, ""); err != nil {
		return nil, err
	}
	if s.anthropic, err = parse("anthropic", opts.AnthropicUpstream, opts.Upstream); err != nil {
		return nil, err
	}
	if s.openai, err = parse("openai", opts.OpenAIUpstream, opts.Upstream); err != nil {
		return nil, err
	}
	if s.other == nil {
		s.other = s.openai
		if s.other == nil {
			s.other = s.anthropic
		}
	}
	if s.other == nil {
		return nil, errors.New("proxy: an upstream URL is required")
	}
	s.rp = &httputil.ReverseProxy{
		Rewrite:        s.rewrite,
		ModifyResponse: s.modifyResponse,
		ErrorHandler:   s.errorHandler,
		FlushInterval:  -1, // flush every write: server-sent events pass at once
		Transport:      opts.Transport,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

func apiOf(r *http.Request) (API, bool) {
	if r.Method != http.MethodPost {
		return "", false
	}
	switch {
	case strings.HasSuffix(r.URL.Path, PathAnthropic):
		return APIAnthropic, true
	case strings.HasSuffix(r.URL.Path, PathOpenAI):
		return APIOpenAI, true
	case strings.HasSuffix(r.URL.Path, PathResponses):
		return APIResponses, true
	}
	return "", false
}

// modelSocket reports whether r asks to upgrade a model API path to a
// WebSocket (Codex's Responses WebSocket transport: GET …/v1/responses with
// Upgrade: websocket).
func modelSocket(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, p := range []string{PathAnthropic, PathOpenAI, PathResponses} {
		if strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), p) {
			return true
		}
	}
	return false
}

// ServeHTTP handles one client request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == PathStats && r.Method == http.MethodGet {
		s.serveStats(w, r)
		return
	}
	s.mu.Lock()
	s.serving++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.serving--
		s.mu.Unlock()
	}()
	if !s.opts.PassWebSockets && modelSocket(r) {
		s.reject(w, APIResponses, http.StatusUpgradeRequired, "a WebSocket to a model API would carry the session past the proxy unfolded; send the requests over HTTP (POST), or start the proxy with --pass-websockets")
		return
	}
	api, ok := apiOf(r)
	if !ok {
		s.mu.Lock()
		s.stats.PassThrough++
		s.mu.Unlock()
		s.passThrough(w, unknownShape(s, r))
		return
	}
	if (api == APIAnthropic && s.anthropic == nil) || (api != APIAnthropic && s.openai == nil) {
		s.reject(w, api, http.StatusNotFound, "no upstream is configured for the "+string(api)+" API")
		return
	}
	st := &reqState{start: time.Now(), rec: RequestRecord{API: api, PromptStep: -1}}
	var parsed *request
	var memBefore int64 // the memory in use before a large body (memlimit.go)
	if !s.opts.NoSoftMemoryLimit && (r.ContentLength >= governMinFresh || r.ContentLength < 0) {
		memBefore = memInUse()
	}
	body, digest, release, hold, ok := s.readBody(w, r, api)
	defer release()
	if !ok {
		return
	}
	st.rec.BodyRead = time.Since(st.start)
	out := body
	if ce := r.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		st.rec.Warnings = append(st.rec.Warnings, "compressed request body ("+ce+") forwarded without folding")
	} else {
		req, err := parseDigested(api, body, digest.blocks, s.cache)
		if err != nil {
			if s.rejectInvalidUTF8(w, r, api, body, nil) {
				return // the UTF-8 error first, as for any body
			}
			var br *errBadRequest
			if errors.As(err, &br) {
				s.reject(w, api, http.StatusBadRequest, br.msg)
				return
			}
			s.reject(w, api, http.StatusBadRequest, err.Error())
			return
		}
		if s.rejectInvalidUTF8(w, r, api, body, req.knownBytes()) {
			return
		}
		if lim := s.opts.MaxMessages; lim > 0 && len(req.msgs) > lim {
			s.reject(w, api, http.StatusRequestEntityTooLarge, fmt.Sprintf(
				"the request has %d messages, more than the %d allowed (--max-messages); start a new session, compact the conversation, or raise --max-messages", len(req.msgs), lim))
			return
		}
		if !s.reserveMemory(w, api, body, req, hold.more) {
			return
		}
		if !s.opts.NoSoftMemoryLimit && freshBytes(len(body), req) >= governMinFresh {
			defer governor.enter(memBefore, memoryEstimate(len(body), req))() // memlimit.go
		}
		parsed = req
		if req.passReason != "" {
			s.countUnfolded(st, req)
		}
		sid := r.Header.Get(HeaderSession)
		if sid != "" && !validSession.MatchString(sid) {
			s.reject(w, api, http.StatusBadRequest, HeaderSession+" must be 1 to 64 characters of A-Z a-z 0-9 . _ - and start with a letter or digit")
			return
		}
		if sid == "" {
			sid = req.sessionID()
			st.family = sid
			s.mu.Lock()
			sid = s.routeDerived(sid, req.msgs) // branch.go
			s.mu.Unlock()
		} else {
			sid = s.scrub.SafeName(sid) // a token as a session name never reaches disk, stats or logs
		}
		if req.passReason == "" {
			st.lineageHeader, st.lineageValue = lineageID(r.Header)
			out = s.dispatch(r.Context(), st, req, sid)
		}
	}
	st.rec.ClientSize, st.rec.SentSize = len(body), len(out)
	heuristic := st.sess == nil || st.sess.h.HeuristicCounter()
	count := func(b []byte) int { return st.sess.h.CountTokens(bytesString(b)) } // the session store's token_counter
	if heuristic {
		count = heuristicTokens // contextfold.TokenEstimate without a copy
	}
	if st.clientTokens > 0 {
		st.rec.ClientTokens = st.clientTokens
	} else {
		st.rec.ClientTokens = count(body)
	}
	switch {
	case len(out) == len(body) && st.clientTokens > 0 && (st.dispatch == nil || bytes.Equal(out, body)):
		st.rec.ForwardedTokens, st.outRunes = st.rec.ClientTokens, st.clientRunes
	case heuristic:
		st.outRunes = runeCount(out)
		st.rec.ForwardedTokens = max(1, st.outRunes/4)
	default:
		st.rec.ForwardedTokens = count(out)
	}
	if ws := st.rec.WorkingSet; ws != nil && ws.Budget > 0 && st.rec.ForwardedTokens > ws.Budget {
		st.rec.OverBudget = true
		msg := fmt.Sprintf("over the context budget: %d tokens forwarded, budget %d (what cannot fold: system prompt and tools %d, pinned messages %d, hot tail %d, hydration %d tokens); raise --context-budget or shorten the pinned messages",
			st.rec.ForwardedTokens, ws.Budget, ws.FixedTokens, ws.PinnedTokens, ws.TailTokens, ws.HydrationTokens)
		if st.dispatch != nil && st.dispatch.FoldFailed {
			// Not the budget's fault: the fold event could not write
			// the session store (the warning before names the error).
			msg = fmt.Sprintf("over the context budget: %d tokens forwarded, budget %d, because the fold event failed (the store could not be written: see the fold warning; free disk space or fix the permissions of the proxy's --dir)",
				st.rec.ForwardedTokens, ws.Budget)
		} else if ws.FloorTokens > ws.Budget {
			// No fold event can meet the budget: say so, and why this
			// request was (or was not) one.
			msg += fmt.Sprintf("; no fold event can reach the budget (the least a fold event leaves is about %d tokens): fold events are made only when they pay for themselves (see --payback-requests); raise --context-budget above %d", ws.FloorTokens, ws.FloorTokens)
		}
		st.rec.Warnings = append(st.rec.Warnings, msg)
	}
	st.rec.Overhead = time.Since(st.start)
	st.rec.Durable = st.rec.Overhead // unless a fold event's commit still runs (waitDurable)
	if st.dispatch != nil {
		// The fold event's durable part, held while the request was
		// rewritten, overlaps the upstream call from here.
		st.dispatch.StartDurable()
		if st.dispatch.IndexLater() {
			// The ranked index's analyses of the fold event's nodes,
			// which nothing on this path read, while the upstream works
			// too (the next scan would make them otherwise).
			s.background(st.dispatch.RefreshIndex)
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	r.Header.Del("Content-Length")
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, st))
	s.rp.ServeHTTP(w, r)
	// Answered after the fold event was durable (modifyResponse,
	// errorHandler); in any case the handler returns after it, so that a
	// server shut down has nothing left committing.
	_ = st.waitDurable()
	// The response is finished (finish ran) and the forwarded body sent;
	// the client's body is no longer read unless it went out as is.
	pooled := false
	if len(body) > 0 && (len(out) == 0 || &out[0] != &body[0]) {
		st.wsBody = nil
		if st.bodyKept {
			pooled = true // the session's now; the one it replaced went to the pool
		} else {
			pooled = putBody(body)
		}
	}
	if parsed != nil {
		// What the request leaves to the garbage collector: its body
		// unless pooled, the forwarded body, and the parse and fold of the
		// conversation it did not take from the prefix cache.
		freed := memoryEstimate(len(body), parsed) - int64(len(body))*RequestMemoryMultiple + int64(len(out))
		if !pooled {
			freed += int64(len(body))
		}
		hold.freed = freed
	}
}

var validSession = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// dispatch runs the harness and returns the body to forward. On any failure
// it returns the client's body and a warning: the request still goes out.
func (s *Server) dispatch(ctx context.Context, st *reqState, req *request, sid string) []byte {
	st.rec.Stream = req.stream
	st.rec.Messages = len(req.msgs)
	var sess *session
	var d *harness.Dispatch
	var err error
	if s.opts.Shared != nil {
		sess, d, err = s.sharedDispatch(ctx, st, req, sid)
	} else {
		sess, err = s.session(st, sid, 0)
		if err != nil {
			st.rec.Warnings = append(st.rec.Warnings, "session store unavailable, nothing folded: "+err.Error())
			return req.body
		}
		s.joinLineage(sess, st, req)
		total, fixed := req.measure(sess.h.CountTokens, sess.h.HeuristicCounter(), sess.h.CounterName())
		st.clientTokens, st.clientRunes = total, req.runes
		s.cache.remember(req, sess.h.CounterName())
		d, err = dispatchFor(sess, req, fixed+stickyTokens(sess, req, sess.h.CountTokens))
		if errors.Is(err, harness.ErrHistoryDiverged) {
			if st.family != "" {
				// Another conversation with the same start, or this one
				// rewritten: a branch its history agrees with, or a new one.
				st.rec.Warnings = append(st.rec.Warnings, "history diverged, another branch of the derived session: "+err.Error())
				sess, d, err = s.divergedBranch(st, req, fixed, sess.id)
			} else {
				// The client rewrote its history: continue in a new store.
				st.rec.Warnings = append(st.rec.Warnings, "history diverged, new session store: "+err.Error())
				if sess, err = s.session(st, sid, sess.gen+1); err == nil {
					s.joinLineage(sess, st, req)
					d, err = dispatchFor(sess, req, fixed+stickyTokens(sess, req, sess.h.CountTokens))
				}
			}
		}
		if err == nil {
			st.plan = planWire(sess, req, d)
		}
	}
	if err == nil && st.family != "" {
		s.mu.Lock()
		s.noteBranch(st.family, sess.id, req.msgs)
		s.mu.Unlock()
	}
	st.rec.Session = sid
	if sess != nil {
		st.rec.Session, st.rec.Generation = sess.id, sess.gen
	}
	if err != nil {
		st.rec.Warnings = append(st.rec.Warnings, "dispatch failed, forwarded unchanged: "+err.Error())
		return req.body
	}
	st.sess, st.dispatch = sess, d
	if s.opts.Shared == nil {
		if d.Committed {
			s.foldsCommitted(sess)
		}
		st.ahead = sess.h.PrepareAhead(req.msgs)
	}
	st.rec.Accounting = d.Accounting
	st.rec.Boundary, st.rec.PromptStep, st.rec.NewTurn = d.Boundary, d.PromptIndex, d.NewTurn
	st.rec.WorkingSet = d.WorkingSet
	for _, ev := range d.Evicted {
		st.rec.EvictedEarlier = append(st.rec.EvictedEarlier, ev.StepID)
	}
	st.rec.Warnings = append(st.rec.Warnings, d.Warnings...)
	for _, n := range d.Hydrated {
		st.rec.Hydrated = append(st.rec.Hydrated, hydrationBrief{n.StepID, n.Tokens, n.Truncated, n.ArtifactSHA256, n.Source})
	}
	if st.plan != nil {
		st.rec.Reasoning = st.plan.stats
		st.dropBlock = st.plan.dropBlock
	}
	out, err := req.rewriteWire(d, st.plan)
	if err != nil {
		st.rec.Warnings = append(st.rec.Warnings, "rewrite failed, forwarded unchanged: "+err.Error())
		st.dispatch = d // still evict what was hydrated
		return req.body
	}
	if d.WorkingSet != nil {
		st.wsBody, st.wsOut, st.wsBlocks = req.body, out, req.blocks // logged once the response is done
	}
	return out
}

// logWorkingSet appends the request's working set to the session's log
// (harness.WorkingSetLogName, beside the store generations).
func (s *Server) logWorkingSet(sess *session, st *reqState, d *harness.Dispatch, body, out []byte) error {
	sess.logMu.Lock()
	defer sess.logMu.Unlock()
	sess.requests++
	// The request's own counts (ServeHTTP counted both bodies already,
	// cacheAccount their cached prefixes).
	rec := harness.WorkingSetRecord{Request: sess.requests, Generation: sess.gen, Messages: st.rec.Messages,
		ClientTokens: st.rec.ClientTokens, ForwardedTokens: st.rec.ForwardedTokens, HydratedSteps: []int{}, WorkingSet: *d.WorkingSet,
		StablePrefixTokens: st.rec.ForwardedCachedTokens, ClientStablePrefixTokens: st.rec.ClientCachedTokens}
	for _, h := range d.Hydrated {
		rec.HydratedSteps = append(rec.HydratedSteps, h.StepID)
	}
	rec.RemovedRanges = harness.RangesOf(d.WorkingSet.Removed)
	if st.rec.Reasoning != (ReasoningStats{}) {
		r := st.rec.Reasoning // only when there is something to say
		rec.Reasoning = &r
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if sess.wsLog == nil {
		sdir := filepath.Join(s.opts.Dir, sess.id)
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(sdir, harness.WorkingSetLogName), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		sess.wsLog = f
	}
	if _, err := sess.wsLog.Write(append(line, '\n')); err != nil {
		sess.closeLog() // the next line opens the log again
		return err
	}
	return nil
}

// closeLog closes the session's working-set log if open (the next line
// opens it again). Callers hold sess.logMu.
func (sess *session) closeLog() error {
	if sess.wsLog == nil {
		return nil
	}
	err := sess.wsLog.Close()
	sess.wsLog = nil
	return err
}

// cacheAccount sets the request's cached prefixes (ClientCachedTokens,
// ForwardedCachedTokens) against the session's previous bodies and keeps
// this request's as the next one's previous.
//
// Its cost does not grow with the conversation (it runs before the
// client's response is complete): the client body's shared prefix is
// found from the block hashes the intake computed while the body arrived
// (bytes compared only from the first differing block on, as the prefix
// cache does), its tokens are the body's count minus the count of what
// follows the prefix (prefixTokens), and the client's body buffer becomes
// the session's previous body instead of being copied (bodyKept; the one it
// replaces goes back to the pool).
func (s *Server) cacheAccount(sess *session, st *reqState) {
	sess.logMu.Lock()
	defer sess.logMu.Unlock()
	body, out := st.wsBody, st.wsOut
	heuristic := sess.h.HeuristicCounter()
	if n := sharedPrefixLen(out, sess.prevOut, nil, nil); n > 0 {
		st.rec.ForwardedCachedTokens = prefixTokens(out, n, st.rec.ForwardedTokens, st.outRunes, heuristic, sess.h.CountTokens)
	}
	if n := sharedPrefixLen(body, sess.prevBody, st.wsBlocks, sess.prevBlocks); n > 0 {
		st.rec.ClientCachedTokens = prefixTokens(body, n, st.rec.ClientTokens, st.clientRunes, heuristic, sess.h.CountTokens)
	}
	sess.prevOut = out
	sess.prevBlocks = append(sess.prevBlocks[:0], st.wsBlocks...)
	old, oldOwned := sess.prevBody, sess.prevBodyOwned
	if len(body) > 0 && len(out) > 0 && &body[0] == &out[0] {
		sess.prevBody, sess.prevBodyOwned = out, false // went out as is: not pooled
	} else {
		sess.prevBody, sess.prevBodyOwned = body, true
		st.bodyKept = true
	}
	if oldOwned && len(old) > 0 && (len(body) == 0 || &old[0] != &body[0]) {
		putBody(old)
	}
}

// prefixTokens returns the tokens of b[:n] given the count of all of b:
// total tokens and, when the heuristic counted them, runes code points
// (0: unknown).
//
// Under the heuristic (max(1, ⌊code points / 4⌋)) the result equals a full
// count of b[:n] exactly: the code points of b[:n] are runes minus those of
// b[m:], plus those of b[m:n], where m is n moved back to the start of its
// UTF-8 sequence (b is valid UTF-8: the intake rejects anything else). Only
// b[m:] is read. Under a byte-pair encoding it is total minus the count of
// b[n:]: the encoding of the two sides of the cut may differ from that of
// the whole by the few tokens the cut splits (byte pairs do not add up), so
// the figure is within a few tokens of a full count.
func prefixTokens(b []byte, n, total, runes int, heuristic bool, count func(string) int) int {
	switch {
	case n >= len(b):
		return total
	case heuristic && runes > 0:
		m := n
		for m > 0 && n-m < utf8.UTFMax-1 && !utf8.RuneStart(b[m]) {
			m--
		}
		return max(1, (runes-runeCount(b[m:])+runeCount(b[m:n]))/4)
	case heuristic:
		return heuristicTokens(b[:n])
	}
	return max(total-count(bytesString(b[n:])), 0)
}

// sharedPrefixLen returns the length of the longest common prefix of a and b.
// With both bodies' block hashes (bodyDigest, under one seed) the blocks
// whose hashes agree count as equal without reading them; the bytes are
// compared from the first block that differs, 4 KiB at a time.
func sharedPrefixLen(a, b []byte, ablocks, bblocks []uint64) int {
	n := min(len(a), len(b))
	i := 0
	for k := 0; k < len(ablocks) && k < len(bblocks) && ablocks[k] == bblocks[k] && (k+1)*bodyBlock <= n; k++ {
		i = (k + 1) * bodyBlock
	}
	for i+4096 <= n && bytes.Equal(a[i:i+4096], b[i:i+4096]) {
		i += 4096
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// session returns the session's harness; gen > 0 asks for at least that
// generation (a new store after a divergence). The session counts as in
// use by st (never evicted from memory) until finish releases it.
func (s *Server) session(st *reqState, id string, gen int) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil || sess.gen < gen {
		if sess != nil && s.opts.Shared == nil {
			// A new generation: the old one's state is never read again.
			sess.saveMu.Lock()
			sess.gone = true
			_ = os.Remove(s.statePath(sess.id, sess.gen))
			sess.saveMu.Unlock()
		}
		var err error
		if sess, err = s.openSession(id, gen); err != nil {
			return nil, err
		}
		s.sessions[id] = sess
	}
	sess.lastUsed = time.Now()
	if st != nil {
		sess.active++
		st.held = append(st.held, sess)
	}
	s.expireSessions(sess)
	s.stats.Sessions = len(s.sessions)
	return sess, nil
}

// openSession opens the session's store and harness, with the state it
// had when it was last dropped from memory (expireSessions). s.mu is held.
func (s *Server) openSession(id string, gen int) (*session, error) {
	var store *contextfold.Store
	var dir string
	var err error
	if s.opts.Shared != nil {
		gen = max(gen, 1)
		if store, err = s.opts.Shared.Open(id, gen); err != nil {
			return nil, err
		}
		dir = store.Dir()
	} else {
		if gen == 0 {
			gen = latestGeneration(filepath.Join(s.opts.Dir, id))
		}
		dir = filepath.Join(s.opts.Dir, id, "g"+strconv.Itoa(gen))
		if store, err = contextfold.Open(dir, contextfold.Options{Clock: s.opts.Clock, SessionID: id, EvictionLogBatch: EvictionLogBatch}); err != nil {
			return nil, err
		}
	}
	if a := s.opts.ScrubAllowlist; a != nil {
		if err := store.SetScrubAllowlist(a); err != nil {
			return nil, fmt.Errorf("the scrub allowlist (--scrub-settings) not written to the session store: %w", err)
		}
	}
	cfg := s.opts.Harness
	cfg.SessionID = id
	// The fold event's syncs and renames run while the upstream works;
	// the response waits for them (waitDurable). A backend store's
	// transaction commits before the request goes out.
	// A session whose fold event failed to become durable commits its
	// fold events before the request goes out from then on (syncFolds).
	cfg.OverlapDurability = s.opts.Shared == nil && !s.syncFolds[id]
	if cfg.Match == "" {
		cfg.Match = match.Ranked
	}
	if cfg.Now == nil && s.opts.Clock != nil {
		cfg.Now = s.opts.Clock // the idle time of the provider's cache (Config.CacheTTL)
	}
	sess := &session{id: id, gen: gen, dir: dir}
	if !s.opts.NoLineage {
		cfg.Earlier = func() []harness.EarlierStore { return s.earlierStores(sess) }
	}
	sess.h = harness.New(store, cfg)
	if s.opts.Shared == nil {
		// The state the session had when it left memory: the same working
		// set, turn hydration and pending evictions, so the next request is
		// forwarded as it would have been.
		path := s.statePath(id, gen)
		// A save a crash interrupted left its temporary file (saveState;
		// no save of this session runs now: s.mu is held and every earlier
		// session object of it is gone).
		if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), stateTempPattern)); len(tmps) > 0 {
			for _, f := range tmps {
				_ = os.Remove(f)
			}
		}
		// Read without blocking and bounded: a FIFO or an outsized file in
		// its place is reported and the session starts a new working set.
		// The file stays: it is rewritten after each request (saveState).
		if data, err := fsutil.ReadFileMax(path, contextfold.MaxFileBytes); err == nil {
			if err := sess.importState(data); err != nil {
				s.log.Warn("contextfold proxy: saved session state not used; the session starts a new working set", "session", id, "err", err)
				_ = os.Remove(path)
			} else {
				sess.saved, sess.savedAt = data, time.Now()
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("contextfold proxy: saved session state not read; the session starts a new working set", "session", id, "err", err)
		}
	}
	return sess, nil
}

// saveState writes x's state (exportState) to statePath when it differs
// from what was last written: after each request, on a background goroutine,
// so that a proxy killed between two requests (SIGKILL, a crash, the
// machine's power) starts again with the session's working set, turn
// hydration, pending evictions and wire state, and its next request is
// forwarded as it would have been, without a fold event.
//
// It writes a temporary file and renames it over the last one, so the file
// is always a whole state, never a torn one; it does not fsync. Why: the
// state is derived, not data. The client resends the whole conversation
// with every request and the store (its cold nodes and recall index) is
// durable on its own, so a state lost to a power failure (an empty or older
// file after the rename) costs at most one fold event and one scan, and a
// file that does not parse is reported and replaced by a new working set.
// An fsync per request would put a disk flush (milliseconds) on every
// request of every session for that. Safe for concurrent use: the saves of
// one session are serialised, each exports the state as it is then.
func (s *Server) saveState(x *session, changed bool) {
	x.saveMu.Lock()
	defer x.saveMu.Unlock()
	if x.gone {
		return // dropSession saved it, and it may be back in memory as another object
	}
	if !changed && x.saved != nil && time.Since(x.savedAt) < StateSaveEvery {
		return
	}
	data, err := x.exportState()
	if err == nil && bytes.Equal(data, x.saved) {
		return
	}
	path := s.statePath(x.id, x.gen)
	if err == nil {
		err = writeRename(path, data)
	}
	if err != nil {
		s.log.Warn("contextfold proxy: session state not saved; a restart after a crash starts the session with a new working set (one fold event)", "session", x.id, "err", err)
		return
	}
	x.saved, x.savedAt = data, time.Now()
}

// StateSaveEvery bounds how stale a session's saved state may be when no
// request changed what it is kept for (saveState): the working set, the
// human turn's hydration, the wire state. Between those changes only the
// conversation's length, a dispatch counter and the time of the session's
// last request move; that time decides whether the provider's cache is
// idle (harness Config.CacheTTL, 5 minutes by default), and is at most this
// old after a crash.
const StateSaveEvery = 30 * time.Second

// stateChanged reports whether dispatch d changed what a session's saved
// state is kept for: a fold event (or one held back), a new human turn (its
// scan and hydration), evictions of an earlier response's nodes (the
// pending evictions), or, with the fixed window, any folded message (the
// boundary). The later requests of a hydrated turn change nothing kept:
// their nodes are evicted again when each response ends.
func stateChanged(d *harness.Dispatch) bool {
	if w := d.WorkingSet; w != nil {
		if w.FoldEvent {
			return true
		}
	} else if len(d.Folded) > 0 {
		return true
	}
	return d.FoldHeld || d.NewTurn || len(d.Evicted) > 0
}

// stateTempPattern names saveState's temporary files (os.CreateTemp).
const stateTempPattern = ".state-*.tmp"

// writeRename writes data to a temporary file beside path and renames it to
// path (no fsync: see saveState).
func writeRename(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, stateTempPattern)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// statePath is where a session's harness state is kept: beside its store
// generations, not in the store. It is rewritten after each request that
// changed it (saveState) and when the session leaves memory.
func (s *Server) statePath(id string, gen int) string {
	return filepath.Join(s.opts.Dir, id, SessionStateFilePrefix+strconv.Itoa(gen)+".json")
}

// SessionStateFilePrefix names the file (Dir/<session>/session-state-g<N>.json)
// holding the harness state (harness.SessionState) of a session dropped from
// memory, read back and removed when the session returns.
const SessionStateFilePrefix = "session-state-g"

// Defaults of Options.SessionIdle and Options.MaxSessions.
const (
	DefaultSessionIdle = 30 * time.Minute
	DefaultMaxSessions = 256
)

// expireSessions drops from memory the sessions idle for longer than
// SessionIdle, then the least recently used ones past MaxSessions; never
// keep, nor a session a request is using. A dropped session's harness state
// is saved to statePath first (its store is on disk already); with a shared
// session store the state lives there. s.mu is held.
func (s *Server) expireSessions(keep *session) {
	idle, most := s.opts.SessionIdle, s.opts.MaxSessions
	if idle < 0 && most < 0 {
		return
	}
	now := time.Now()
	var cands []*session
	for _, x := range s.sessions {
		if x != keep && x.active == 0 {
			cands = append(cands, x)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].lastUsed.Before(cands[j].lastUsed) })
	for _, x := range cands {
		if !(idle >= 0 && now.Sub(x.lastUsed) > idle) && !(most >= 0 && len(s.sessions) > most) {
			break
		}
		s.dropSession(x)
	}
}

// dropSession removes x from memory, saving its state. s.mu is held.
func (s *Server) dropSession(x *session) {
	if err := x.h.Store().Sync(); err != nil {
		// Its eviction events would wait in memory: keep it.
		s.log.Warn("contextfold proxy: eviction log not written; the session stays in memory", "session", x.id, "err", err)
		return
	}
	if s.opts.Shared == nil {
		// No save of this session object may follow (a later one would
		// overwrite the state of the session back in memory).
		x.saveMu.Lock()
		defer x.saveMu.Unlock()
		data, err := x.exportState()
		if err == nil {
			path := s.statePath(x.id, x.gen)
			if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
				err = fsutil.WriteFileAtomic(path, data, 0o600)
			}
		}
		if err != nil {
			// Without its state the session would come back with a new
			// working set: keep it in memory instead.
			s.log.Warn("contextfold proxy: session state not saved; the session stays in memory", "session", x.id, "err", err)
			return
		}
	}
	x.gone = true
	delete(s.sessions, x.id)
	s.stats.SessionsDropped++
	x.logMu.Lock()
	_ = x.closeLog() // every line was written when it was logged
	x.logMu.Unlock()
	// Its spare node files (harness.PrepareAhead): a session back in
	// memory makes new ones.
	if err := x.h.Store().RemoveSpares(); err != nil {
		s.log.Warn("contextfold proxy: spare node files not removed; the next writer of the store removes them", "session", x.id, "err", err)
	}
}

// EvictionLogBatch is the eviction-log batch of the session stores the
// proxy opens (contextfold.Options.EvictionLogBatch): every model call of a
// human turn evicts the turn's hydrated nodes again, and writing the whole
// log with its fsyncs after each response cost more than the rest of the
// request. The events are written every EvictionLogBatch evictions, at the
// first eviction of a step, when a session leaves memory and by Close.
const EvictionLogBatch = 32

// Close writes what the sessions in memory keep for their stores (the
// eviction events of a batch, EvictionLogBatch), removes their spare
// node files (contextfold.Store.FillSpares) and closes their working-set
// logs, once the work the proxy runs after its responses
// (harness.PrepareAhead) has ended. Each session no request is using
// leaves memory as after SessionIdle: its harness state is saved beside
// its store (SessionStateFilePrefix), so that a proxy started again on the
// same directory forwards its next requests as this one would have,
// without a fold event. Call it once the server no longer serves (after
// http.Server.Shutdown); a session served after it comes back from its
// saved state (its log opened again), and is kept for the next Close. Safe
// for concurrent use.
//
// Errors: the stores', joined.
func (s *Server) Close() error {
	s.mu.Lock()
	for s.bg > 0 {
		s.bgIdle.Wait()
	}
	for _, x := range s.sessions {
		if x.active == 0 {
			s.dropSession(x) // saves its state; a session it cannot save stays
		}
	}
	sessions := make([]*session, 0, len(s.sessions))
	for _, x := range s.sessions {
		sessions = append(sessions, x)
	}
	s.mu.Unlock()
	var errs []error
	for _, x := range sessions {
		if err := x.h.Store().Sync(); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", x.id, err))
		}
		if err := x.h.Store().RemoveSpares(); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", x.id, err))
		}
		x.logMu.Lock()
		if err := x.closeLog(); err != nil {
			errs = append(errs, fmt.Errorf("session %s: working-set log: %w", x.id, err))
		}
		x.logMu.Unlock()
	}
	return errors.Join(errs...)
}

// releaseSessions ends st's use of the sessions it was handed.
func (s *Server) releaseSessions(st *reqState) {
	s.mu.Lock()
	for _, x := range st.held {
		x.active--
	}
	st.held = nil
	s.mu.Unlock()
}

// latestGeneration returns the highest g<N> under dir, at least 1.
func latestGeneration(dir string) int {
	ents, _ := os.ReadDir(dir)
	best := 1
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "g")); err == nil && strings.HasPrefix(e.Name(), "g") && n > best {
			best = n
		}
	}
	return best
}

func (s *Server) rewrite(pr *httputil.ProxyRequest) {
	target := s.other
	if api, ok := apiOf(pr.In); ok {
		if api == APIAnthropic {
			target = s.anthropic
		} else {
			target = s.openai
		}
		// Ask for an uncompressed response so that the bookkeeping can read
		// it; the client still gets the upstream's bytes.
		pr.Out.Header.Del("Accept-Encoding")
	}
	pr.SetURL(target)
	pr.Out.Header.Del(HeaderSession)
	if st, _ := pr.In.Context().Value(ctxKey{}).(*reqState); st != nil && st.dropBlock {
		pr.Out.Header.Set(HeaderAnthropicBeta, withBeta(strings.Join(pr.In.Header.Values(HeaderAnthropicBeta), ",")))
	}
}

func (s *Server) modifyResponse(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(ctxKey{}).(*reqState)
	if st == nil {
		if w, ok := resp.Request.Context().Value(passWarnKey{}).(string); ok {
			resp.Header.Add(HeaderWarning, headerSafe(w))
		}
		return nil
	}
	// The response's first byte waits for the fold event it relied on to
	// be durable; if it cannot be, the client gets an error instead.
	if err := st.waitDurable(); err != nil {
		return &durabilityError{err}
	}
	st.rec.Status = resp.StatusCode
	for _, w := range st.rec.Warnings {
		resp.Header.Add(HeaderWarning, headerSafe(w))
	}
	a := st.rec.Accounting
	resp.Header.Set(HeaderStats, fmt.Sprintf("client=%d forwarded=%d folded=%d hydrated=%d",
		st.rec.ClientTokens, st.rec.ForwardedTokens, a.FoldedTokens, a.HydratedTokens))
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &observedBody{rc: resp.Body, obs: newObserver(st.rec.API, sse), done: func(o Observed, err error) {
		o.ErrorMessage = s.safeErrorMessage(o.ErrorMessage, resp.Request.Header)
		st.rec.Observed = o
		if o.EventsSkipped > 0 {
			st.rec.Warnings = append(st.rec.Warnings, fmt.Sprintf("%d server-sent event(s) longer than %d bytes passed to the client unread (a tool call or stop reason they held is missing from this record)", o.EventsSkipped, maxSSEEvent))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			st.rec.Warnings = append(st.rec.Warnings, "response interrupted: "+err.Error())
		}
		s.finish(st)
	}}
	return nil
}

// credentialHeaders are the request headers that carry the client's API
// credential to the upstream.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// safeErrorMessage returns an upstream's error message fit for the request
// record, the log and GET /contextfold/stats: the credential values of the
// request's headers (without their scheme, 8 bytes or longer) are replaced
// by "[REDACTED:credential]" wherever the message repeats them (a gateway
// that echoes the key it refused), and what the secret scrubber finds is
// redacted too. The client still gets the upstream's body unchanged.
func (s *Server) safeErrorMessage(msg string, h http.Header) string {
	if msg == "" {
		return msg
	}
	for _, name := range credentialHeaders {
		for _, v := range h.Values(name) {
			v = strings.TrimSpace(v)
			if _, rest, ok := strings.Cut(v, " "); ok && (name == "Authorization" || name == "Proxy-Authorization") {
				v = strings.TrimSpace(rest) // the scheme ("Bearer") stays
			}
			if len(v) >= 8 {
				msg = strings.ReplaceAll(msg, v, "[REDACTED:credential]")
			}
		}
	}
	msg = s.scrub.Scrub(msg).Text
	if len(msg) > 400 {
		msg = strings.ToValidUTF8(msg[:400], "")
	}
	return msg
}

// headerSafe makes a warning fit on one header line.
func headerSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 400 {
		s = s[:400]
	}
	return strings.ToValidUTF8(s, "?")
}

func (s *Server) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	st, _ := r.Context().Value(ctxKey{}).(*reqState)
	var derr error
	if st != nil {
		derr = st.waitDurable()
	}
	if derr != nil {
		s.durabilityFailed(w, r, st, derr)
		return
	}
	if bodyTimedOut(r) {
		w.Header().Set("Connection", "close")
		s.reject(w, "", http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s (--body-read-timeout)", s.opts.BodyReadTimeout))
		return
	}
	if r.Context().Err() != nil {
		// The client went away; the upstream call was cancelled with it.
		if st != nil {
			st.rec.Status = 499
			st.rec.Warnings = append(st.rec.Warnings, "client disconnected, upstream call cancelled")
			s.finish(st)
		}
		return
	}
	api, _ := apiOf(r)
	if st != nil {
		st.rec.Status = http.StatusBadGateway
		// The request log says why, as it does for a rejected request:
		// the client may show only "502".
		st.rec.Warnings = append(st.rec.Warnings, "upstream unreachable: "+err.Error())
		s.finish(st)
	}
	s.writeError(w, api, http.StatusBadGateway, "upstream unreachable: "+err.Error()+s.upstreamHint(api))
}

// durabilityFailed answers a request whose fold event could not be made
// durable (a sync or rename of the session store failed after the request
// went upstream): a 500 with the API's JSON error naming the store's
// problem and the remedy, instead of the upstream's response, which
// relied on the fold event. The session leaves memory without its state
// being saved: its store holds what it held before the fold event (at
// most orphan nodes, adopted by the next fold), so the client's retry
// finds the session as the store has it and folds again, this time before
// the request goes upstream (Server.syncFolds): a store that still cannot
// be written leaves the turns verbatim and the retry is answered.
func (s *Server) durabilityFailed(w http.ResponseWriter, r *http.Request, st *reqState, err error) {
	api, _ := apiOf(r)
	st.ahead = nil // nothing more for the session's store
	st.wsOut = nil // nor its working-set log: the request folded nothing
	if st.sess != nil {
		s.discardSession(st.sess)
	}
	st.rec.Status = http.StatusInternalServerError
	// The store holds what it held before the fold event: the record and
	// the proxy's counters fold nothing (what was forwarded stays counted).
	st.rec.FoldedTokens, st.rec.StepsFolded, st.rec.StepsCollapsed = 0, 0, 0
	msg := "contextfold proxy: the session store could not make this request's fold event durable, so the response is withheld: " +
		err.Error() + ". Send the request again: the proxy folds the turns again before it forwards the request, and if the store still cannot be written it forwards those turns as they are, with a warning; check the disk of the proxy's --dir (free space, permissions) and run 'contextfold validate' on the session store"
	st.rec.Warnings = append(st.rec.Warnings, "fold event not durable, response withheld: "+err.Error())
	if r.Context().Err() == nil {
		s.writeError(w, api, http.StatusInternalServerError, msg)
	} else {
		st.rec.Status = 499
	}
	s.finish(st)
}

// foldsCommitted notes that a fold event of x committed before its
// request went out: the store can be written again (the disk was freed, the
// permissions fixed), so if x commits its fold events before forwarding
// since one failed after (syncFolds), its next fold events overlap the
// upstream call again. Before, it stayed so until the proxy restarted:
// each fold event's syncs and renames on the request's path.
func (s *Server) foldsCommitted(x *session) {
	s.mu.Lock()
	was := s.syncFolds[x.id]
	delete(s.syncFolds, x.id)
	s.mu.Unlock()
	if was {
		x.h.SetOverlapDurability(true)
	}
}

// discardSession removes x from memory without saving its state (a fold
// event of x failed to become durable: its harness state would name nodes
// the store does not index), so that the session's next request opens its
// store afresh.
func (s *Server) discardSession(x *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[x.id] != x {
		return
	}
	// Its saved state goes too, and no later save writes it: the state in
	// memory names the failed fold event's nodes, and a save of an earlier
	// request may have exported it already. The retry starts a new working
	// set over the store as it is (one fold event, which it makes anyway).
	if s.opts.Shared == nil {
		x.saveMu.Lock()
		x.gone = true
		_ = os.Remove(s.statePath(x.id, x.gen))
		x.saveMu.Unlock()
	}
	delete(s.sessions, x.id)
	s.stats.Sessions = len(s.sessions)
	if s.syncFolds == nil || len(s.syncFolds) >= maxSyncFolds {
		s.syncFolds = map[string]bool{}
	}
	s.syncFolds[x.id] = true
	x.logMu.Lock()
	_ = x.closeLog()
	x.logMu.Unlock()
	s.log.Warn("contextfold proxy: a fold event was not made durable; the session's in-memory state is dropped and its next request folds again, before it goes upstream (a store still not writable leaves those messages verbatim, with a warning)", "session", x.id)
}

// upstreamHint names, for an error reaching the upstream, the base URL the
// proxy was given for api and the flags that set it.
func (s *Server) upstreamHint(api API) string {
	u, flag := s.other, "--upstream"
	switch api {
	case APIAnthropic:
		u, flag = s.anthropic, "--anthropic-upstream or --upstream"
	case APIOpenAI, APIResponses:
		u, flag = s.openai, "--openai-upstream or --upstream"
	}
	if u == nil {
		return ""
	}
	return fmt.Sprintf(" (the proxy's upstream for this API is %s: check that it is up and reachable from the proxy's host, or give the right base URL with %s)", u.Redacted(), flag)
}

// finish evicts the hydrated nodes, logs the request and updates the stats.
func (s *Server) finish(st *reqState) {
	st.once.Do(func() {
		st.rec.Reasoning.DroppedByAPI = st.rec.Observed.ReasoningDropped
		if st.rec.Status == http.StatusBadRequest && namesReasoning(st.rec.Observed.ErrorMessage) {
			st.rec.Reasoning.Rejected = 1
		}
		if st.sess != nil {
			w := &st.sess.wire
			w.mu.Lock()
			w.stats.DroppedByAPI += st.rec.Reasoning.DroppedByAPI
			w.stats.Rejected += st.rec.Reasoning.Rejected
			w.mu.Unlock()
		}
		if st.sess != nil && st.dispatch != nil && len(st.dispatch.Hydrated) > 0 {
			var err error
			if s.opts.Shared != nil {
				st.rec.Evicted, err = s.sharedPostTurn(st.sess, st.dispatch)
			} else {
				var evs []contextfold.Eviction
				evs, err = st.sess.h.PostTurnResponse(st.dispatch)
				for _, ev := range evs {
					st.rec.Evicted = append(st.rec.Evicted, ev.StepID)
				}
			}
			if err != nil {
				st.rec.Warnings = append(st.rec.Warnings, "evict failed: "+err.Error())
			}
			if store := st.sess.h.Store(); s.opts.Shared == nil && s.opts.Dir != "" {
				// The eviction log's batch written off the response's
				// path once half full, so that the eviction that fills it
				// (above, before the response's last bytes reach the
				// client) seldom writes it there.
				// A failed write keeps the events for the next one; it is
				// said, as the request's record is already made.
				sid := st.sess.id
				s.background(func() {
					if _, err := store.WriteKeptEvictions(EvictionLogBatch / 2); err != nil {
						s.log.Warn("contextfold proxy: eviction log batch not written; its events are kept for the next write", "session", sid, "err", err)
					}
				})
			}
		}
		if st.wsOut != nil && st.sess != nil {
			s.cacheAccount(st.sess, st)
		}
		if st.wsOut != nil && st.sess != nil && s.opts.Dir != "" {
			// Off the request's path: the working-set log.
			if err := s.logWorkingSet(st.sess, st, st.dispatch, st.wsBody, st.wsOut); err != nil {
				st.rec.Warnings = append(st.rec.Warnings, "working-set log not written: "+err.Error())
			}
		}
		s.releaseSessions(st)
		if sess, ahead := st.sess, st.ahead; sess != nil && st.dispatch != nil && s.opts.Shared == nil && s.opts.Dir != "" {
			// Off the request's path: the session's state saved (a crash
			// then costs no fold event), then the preparation ahead.
			changed := stateChanged(st.dispatch)
			s.background(func() {
				s.saveState(sess, changed)
				if ahead != nil {
					ahead()
				}
			})
		} else if st.ahead != nil {
			s.background(st.ahead) // off the request's path: the agent is busy with the response
		}
		st.rec.Duration = time.Since(st.start)
		rec := st.rec
		s.mu.Lock()
		s.stats.Requests++
		s.stats.ClientTokens += rec.ClientTokens
		s.stats.ForwardedTokens += rec.ForwardedTokens
		s.stats.FoldedTokens += rec.FoldedTokens
		s.stats.HydratedTokens += rec.HydratedTokens
		if st.wsOut != nil && st.sess != nil {
			if s.stats.Billed == nil {
				for _, p := range harness.Pricings() {
					s.stats.Billed = append(s.stats.Billed, harness.Billed{Pricing: p})
				}
			}
			for i := range s.stats.Billed {
				s.stats.Billed[i].Add(rec.ClientTokens, rec.ClientCachedTokens, rec.ForwardedTokens, rec.ForwardedCachedTokens)
			}
		}
		if len(rec.Warnings) > 0 {
			s.stats.Warnings++
		}
		if rec.OverBudget {
			s.stats.OverBudget++
		}
		s.stats.Reasoning.Add(rec.Reasoning)
		s.stats.Recent = append(s.stats.Recent, rec)
		if len(s.stats.Recent) > 32 {
			s.stats.Recent = s.stats.Recent[len(s.stats.Recent)-32:]
		}
		s.mu.Unlock()
		attrs := []any{"api", rec.API, "session", rec.Session, "gen", rec.Generation, "status", rec.Status,
			"stream", rec.Stream, "messages", rec.Messages, "client_tokens", rec.ClientTokens,
			"forwarded_tokens", rec.ForwardedTokens, "folded_tokens", rec.FoldedTokens,
			"steps_folded", rec.StepsFolded, "steps_collapsed", rec.StepsCollapsed, "hydrated_tokens", rec.HydratedTokens,
			"hydrated", ints(rec.StepsHydrated), "dropped", ints(rec.StepsDropped), "refused", ints(rec.StepsRefused), "in_prompt", ints(rec.StepsInPrompt),
			"evicted", ints(rec.Evicted), "evicted_earlier", ints(rec.EvictedEarlier), "overhead", rec.Overhead, "duration", rec.Duration}
		for _, tc := range rec.Observed.ToolCalls {
			attrs = append(attrs, "tool_call", tc.Name)
		}
		if r := rec.Reasoning; r != (ReasoningStats{}) {
			attrs = append(attrs, "fold_event", r.FoldEvents > 0, "reasoning_invalidated", r.Invalidated,
				"reasoning_invalidated_tokens", r.InvalidatedTokens, "reasoning_removed", r.Removed,
				"reasoning_removed_tokens", r.RemovedTokens, "reasoning_kept_drop_block", r.KeptDropBlock,
				"drop_block", r.DropBlock > 0, "reasoning_dropped_by_api", r.DroppedByAPI, "thinking_rejected", r.Rejected > 0,
				"fold_held", r.Held > 0)
		}
		if len(rec.Warnings) > 0 {
			attrs = append(attrs, "warnings", strings.Join(rec.Warnings, "; "))
		}
		// A failed request (a 5xx, the proxy's or the upstream's) is a
		// warning in the log, so that a level filter finds it.
		level := slog.LevelInfo
		if rec.Status >= 500 {
			level = slog.LevelWarn
		}
		s.log.Log(context.Background(), level, "contextfold proxy request", attrs...)
		if s.opts.OnRequest != nil {
			s.opts.OnRequest(rec)
		}
	})
}

func ints(v []int) string {
	if len(v) == 0 {
		return "[]"
	}
	c := append([]int{}, v...)
	sort.Ints(c)
	parts := make([]string, len(c))
	for i, n := range c {
		parts[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Pending = s.serving + s.bg
	st.Recent = append([]RequestRecord{}, s.stats.Recent...)
	for id, x := range s.sessions {
		if r := x.wire.snapshot(); r != (ReasoningStats{}) {
			if st.SessionReasoning == nil {
				st.SessionReasoning = map[string]ReasoningStats{}
			}
			st.SessionReasoning[id] = r
		}
	}
	st.Billed = append([]harness.Billed(nil), s.stats.Billed...)
	return st
}

func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !s.opts.AnyHost && !s.statsHosts.Allowed(r.Host) {
		http.Error(w, "contextfold proxy: Host "+strconv.Quote(r.Host)+" is not allowed for "+PathStats+
			": it answers only to loopback names (DNS-rebinding guard); open it as http://127.0.0.1:PORT"+PathStats, http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(publicStats(s.Stats()))
}

func (s *Server) reject(w http.ResponseWriter, api API, code int, msg string) {
	s.mu.Lock()
	s.stats.Rejected++
	s.mu.Unlock()
	// Its line in the request log: stats.rejected alone does not say why.
	s.log.Warn("contextfold proxy rejected a request", "api", api, "status", code, "reason", msg)
	s.writeError(w, api, code, msg)
}

// writeError answers in the error shape of the API.
func (s *Server) writeError(w http.ResponseWriter, api API, code int, msg string) {
	msg = "contextfold proxy: " + msg
	// A problem with the request is the client's; anything else (an
	// unreachable upstream) is the API's.
	errType := "invalid_request_error"
	if code >= 500 {
		errType = "api_error"
	}
	var v any
	if api == APIAnthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": errType, "message": msg}}
	} else {
		v = map[string]any{"error": map[string]any{"message": msg, "type": errType, "code": nil}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// observedBody passes the upstream body through and feeds a copy to the
// observer; at the end (EOF, error or Close) it calls done once.
type observedBody struct {
	rc   io.ReadCloser
	obs  *observer
	once sync.Once
	done func(Observed, error)
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.obs.Write(p[:n])
	}
	if err != nil {
		b.end(err)
	}
	return n, err
}

// end reports the observation once, with err: the read error or close
// that ended the body, nil once the stream's last event had arrived (a
// client that hangs up after it, as Codex exec does on
// response.completed, lost nothing).
func (b *observedBody) end(err error) {
	b.once.Do(func() {
		if b.obs.ended {
			err = nil
		}
		b.done(b.obs.result(), err)
	})
}

func (b *observedBody) Close() error {
	err := b.rc.Close()
	b.end(errors.New("closed before the end"))
	return err
}

// DirMarkerFile is the file a proxy writes into its Options.Dir when it
// starts (once; an existing one is left as it is), before any session has a
// store there: it marks the directory as a proxy's directory of session
// stores, so that "contextfold mcp --dir" on it, started before or after the
// proxy and before the first session folds, serves the sessions as they
// appear rather than the directory as one empty store. Its name cannot be a
// session's (a session name starts with a letter or a digit); it holds two
// lines of text saying what the directory is.
const DirMarkerFile = ".contextfold-proxy"

// dirMarkerText is DirMarkerFile's content (the same bytes every time).
const dirMarkerText = "This directory holds the session stores of a contextfold proxy: <session>/g<N>, one store per history the client sent.\n" +
	"List them with: contextfold sessions --dir <this directory>; serve them to an agent with: contextfold mcp --dir <this directory>\n"

// writeDirMarker writes DirMarkerFile into dir unless it is there already.
func writeDirMarker(dir string) error {
	path := filepath.Join(dir, DirMarkerFile)
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another proxy on the same directory wrote it first
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(dirMarkerText); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
