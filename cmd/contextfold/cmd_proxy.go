package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/inspect"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
	"github.com/contextfold/contextfold/pgstore"
	"github.com/contextfold/contextfold/proxy"
	"github.com/contextfold/contextfold/proxy/pgsessions"
	"github.com/contextfold/contextfold/scrub"
)

func init() { commands = append(commands, newProxyCmd) }

// sharedSnapshotWait bounds how long a proxy shutting down waits for its
// background writes of shared ranked snapshots (ranked.WaitShared).
const sharedSnapshotWait = 30 * time.Second

func newProxyCmd(g *globals) *cobra.Command {
	var (
		listen, upstream, anthropicUp, openaiUp string
		allowRemote                             bool
		cfg                                     harness.Config
		maxBody, maxInFlight                    int64
		maxMessages                             int
		bodyTimeout                             time.Duration
		softLimit                               bool
		lineage                                 bool
		passWebSockets                          bool
		allowedHosts                            []string
		matchName, scrubSettings                string
	)
	c := &cobra.Command{
		Use:   "proxy",
		Short: "Run a transparent LLM proxy that folds old turns and hydrates them on demand",
		Long: `proxy listens for the Anthropic Messages API (POST /v1/messages), the
OpenAI Chat Completions API (POST /v1/chat/completions) and the OpenAI
Responses API (POST /v1/responses), streaming or not, and forwards them to
the upstream. Before forwarding it folds old verbose turns
into the session's store (replacing each by its folded-step record) and
hydrates, verified, the cold nodes the latest human prompt mentions. Every
other path passes through untouched. One log line per request on stderr
(with --json, one JSON object per line). GET /contextfold/stats returns counters
(tool-call inputs withheld; it answers only to a loopback Host header or one
given with --allowed-host, against DNS rebinding), with the input cost as
billed under Anthropic's and OpenAI's prompt-cache prices, the client's and
the forwarded ("billed").

Only a human prompt is scanned: a scaffold's observation sent as a user
message (mini-swe-agent <returncode>, SWE-agent Observation:, OpenHands
EXECUTION RESULT, Aider's "I ran this command:") or a tool result never gets
hydration. A fold event folds deep enough to pay for its cache rewrite
within --payback-requests requests (docs/proxy.md).

Reasoning: between two fold events every forwarded request only extends the
one before (an earlier human turn's hydration stays in its message; the node
is evicted in the store). A fold event changes the conversation from its
first changed message, which invalidates the thinking blocks (Anthropic) and
reasoning items (OpenAI Responses) after it: the proxy leaves those out of
that and every later request, except the thinking a tool-use continuation
must send back, which it keeps while asking the API to drop what fails the
check (thinking.block_binding drop_block and the anthropic-beta header
thinking-binding-controls-2026-08-01, on every later request of the session).
Left-out reasoning is stored with its turn when the turn folds. Counts are in
the request log, /contextfold/stats and the working-set log (docs/proxy.md).

Limits: a body larger than --max-body-bytes, or with more messages than
--max-messages, is answered 413; one that takes longer than
--body-read-timeout to arrive, 408; when the bodies of the requests in flight
would pass --max-inflight-bytes, 503 with Retry-After.

Secrets are scrubbed out of every folded turn before it reaches a session
store; placeholder credentials (http://user:pass@host, vendors' example keys)
are left as they are. --scrub-settings FILE adds an allowlist for what else
is known safe (test-fixture credentials), in the form of store_settings.json:
  {"scrub_allowlist": {"secrets": ["fixture-pw-1"], "regexes": ["^test-"]}}
It is read once at start (a bad file: exit 1, naming the file and the
problem) and written into each session store the proxy opens, replacing the
store's own scrub_allowlist; "contextfold --dir <store> scrub-check" then
lists what it let through.

Sessions: the X-Contextfold-Session header, else derived from the start of
the conversation. A header value holding a secret (a token) is never
written, shown or logged: the session is named sha256-<hex of its SHA-256>
instead. Stores live under --dir (default: the user cache directory,
contextfold/proxy), one per session; with --store postgres://… (or
CONTEXTFOLD_STORE) every session is a session of that database, and any
number of replicas on one database serve the same sessions (docs/proxy.md).

Point a client at it:
  ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude
  OPENAI_BASE_URL=http://127.0.0.1:8787/v1 aider
  Codex, Qwen Code and others: see docs/agents.md`,
		Example: `  contextfold proxy --upstream https://api.anthropic.com
  contextfold proxy --listen 127.0.0.1:8787 --anthropic-upstream https://api.anthropic.com --openai-upstream https://api.openai.com
  contextfold proxy --store 'postgres://cf@db.internal:5432/contextfold' --upstream https://api.anthropic.com
  contextfold proxy --context-budget 60000 --fold-target 40 --pin-messages 2
  contextfold proxy --context-budget -1 --hot-window 20 --fold-block 32 --min-fold-tokens 512`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if upstream == "" && anthropicUp == "" && openaiUp == "" {
				return usagef("give --upstream URL (or --anthropic-upstream / --openai-upstream)")
			}
			if maxMessages == 0 || maxMessages < -1 {
				return usagef("--max-messages %d: give the most messages a request may have, 1 or more (default %d), or -1 for no limit", maxMessages, proxy.DefaultMaxMessages)
			}
			if err := checkProxyFlags(&cfg, maxBody, maxInFlight); err != nil {
				return err
			}
			dir := g.dir
			if g.store != "" && !pgstore.IsURL(g.store) {
				dir = g.store // --store DIR: the directory of per-session stores
			}
			storeURL := g.storeURL()
			if u, err := url.Parse(storeURL); storeURL != "" && err == nil && u.Query().Has("session") {
				// The proxy's sessions come from the requests (one store
				// per client session); a ?session= would be ignored.
				return usagef("--store %s names a session, but the proxy keeps one session per client conversation in the database: remove ?session=… from the URL", pgstore.Redact(storeURL))
			}
			if dir == "" && storeURL == "" {
				base, err := os.UserCacheDir()
				if err != nil {
					return usagef("no --dir given and no user cache directory: %v; give --dir DIR for the session stores (or --store postgres://…)", err)
				}
				dir = filepath.Join(base, "contextfold", "proxy")
			}
			var allow *scrub.Allowlist
			if scrubSettings != "" {
				a, err := proxy.LoadScrubSettings(scrubSettings)
				if err != nil {
					return usagef("--scrub-settings: %v", err)
				}
				allow = a
			}
			mode, err := match.ParseMode(matchName)
			if err != nil {
				return usagef("--match: %v", err)
			}
			cfg.Match = mode
			// The proxy carries API keys and whole conversations: loopback
			// only, unless asked explicitly.
			loopback, err := inspect.CheckListenAddr(listen, true)
			if err != nil {
				return usagef("%v", err)
			}
			if !loopback && !allowRemote {
				return usagef("listen address %q is not a loopback address; the proxy carries API keys and whole conversations, so it binds to loopback only unless you pass --allow-remote", listen)
			}
			if bodyTimeout < 0 {
				return usagef("--body-read-timeout %s is negative; give a duration such as 60s, or 0 for no limit", bodyTimeout)
			}
			if bodyTimeout == 0 {
				bodyTimeout = -1 // proxy.Options: negative means no limit
			}
			logger := slog.New(g.logHandler(cmd.ErrOrStderr(), nil))
			// A shared ranked snapshot refused (and rebuilt) is a warning in the proxy log.
			ranked.SetRejectLog(func(line string) { logger.Warn(line) })
			opts := proxy.Options{Dir: dir, Upstream: upstream, AnthropicUpstream: anthropicUp,
				OpenAIUpstream: openaiUp, Harness: cfg, MaxBodyBytes: maxBody, MaxMessages: maxMessages, Logger: logger,
				MaxInFlightBytes: maxInFlight, BodyReadTimeout: bodyTimeout, NoSoftMemoryLimit: !softLimit, NoLineage: !lineage, PassWebSockets: passWebSockets,
				AllowedHosts: allowedHosts, AnyHost: !loopback, ScrubAllowlist: allow}
			where := dir
			if storeURL != "" {
				// Every session in the database: replicas share them.
				ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
				db, err := pgstore.Connect(ctx, storeURL)
				if err == nil {
					opts.Shared, err = pgsessions.Connect(ctx, storeURL, func(name, id string) (*contextfold.Store, error) {
						return db.Session(name, contextfold.Options{SessionID: id})
					})
				}
				cancel()
				if err != nil {
					return err
				}
				where = db.Location()
			}
			srv, err := proxy.New(opts)
			if err != nil {
				return usagef("%v", err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usagef("cannot listen on %s: %v (another proxy may already listen there: stop it, or choose another port with --listen 127.0.0.1:PORT and point the agent at it)", listen, err)
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			shutDown := make(chan struct{})
			go func() {
				defer close(shutDown)
				<-ctx.Done()
				// A second signal ends the process at once (the signals'
				// default action): a request folding a huge conversation
				// may take a while, and the store is crash-safe.
				stop()
				logger.Info("contextfold proxy: shutting down; waiting up to 10 s for the requests in flight (signal again to exit now: the stores are crash-safe)")
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}()
			ups := upstreamsLine(upstream, anthropicUp, openaiUp)
			window := fmt.Sprintf("context budget %d tokens", cfg.ContextBudget)
			if cfg.ContextBudget == harness.NoBudget {
				window = "no context budget: a fixed window of messages"
			}
			g.announce(cmd.ErrOrStderr(), fmt.Sprintf("contextfold proxy listening on http://%s (stores in %s; %s; %s)", ln.Addr(), where, ups, window),
				"contextfold proxy listening", map[string]any{"url": "http://" + ln.Addr().String(), "stores": where,
					"upstream": upstream, "anthropic_upstream": anthropicUp, "openai_upstream": openaiUp, "context_budget": cfg.ContextBudget})
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				_ = srv.Close()
				return err
			}
			// Serve returns at once on Shutdown: wait for the requests in
			// flight, then write what the sessions keep (eviction events).
			<-shutDown
			err = srv.Close()
			// A shared ranked snapshot being written in the background
			// (PostgreSQL store) saves the next replica a rebuild: give it
			// a bounded time to finish.
			waited := make(chan struct{})
			go func() { ranked.WaitShared(); close(waited) }()
			select {
			case <-waited:
			case <-time.After(sharedSnapshotWait):
				logger.Warn("contextfold proxy: a shared ranked snapshot was still being written at shutdown; the next replica rebuilds or refreshes it", "waited", sharedSnapshotWait)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8787", "address to listen on (loopback unless --allow-remote)")
	f.BoolVar(&allowRemote, "allow-remote", false, "UNSAFE: listen on a non-loopback address (API keys and conversations cross that network)")
	f.StringVar(&upstream, "upstream", "", "upstream base URL for both APIs and every other path, without /v1 (the client's /v1/… path is appended): https://api.openai.com")
	f.StringVar(&anthropicUp, "anthropic-upstream", "", "upstream base URL for /v1/messages (overrides --upstream)")
	f.StringVar(&openaiUp, "openai-upstream", "", "upstream base URL for /v1/chat/completions and /v1/responses (overrides --upstream)")
	f.IntVar(&cfg.ContextBudget, "context-budget", harness.DefaultContextBudget, "most tokens a forwarded request may take; past it old turns are folded (default suits 200k-window models; -1: the fixed --fold-block window instead)")
	f.IntVar(&cfg.FoldTarget, "fold-target", harness.DefaultFoldTarget, "percent of the budget a fold event folds down to (large, rare folds keep prompt caches hitting)")
	f.IntVar(&cfg.PaybackRequests, "payback-requests", harness.DefaultPaybackRequests, "a fold event folds deep enough to pay for itself, at Anthropic's cache prices, within this many requests after it; when what cannot fold is over --context-budget, a fold event is made only if it pays back within them at the depth it can reach (-1: fold to --fold-target only, and fold every request over the budget; docs/proxy.md)")
	f.DurationVar(&cfg.CacheTTL, "cache-ttl", harness.DefaultCacheTTL, "how long a provider keeps an idle prompt cache: a request after that long a pause folds once past the middle of --fold-target and the budget, rewriting nothing cached (-1s: never)")
	f.IntVar(&cfg.PinMessages, "pin-messages", 0, "leading messages never folded (0: through the first user message, the task)")
	f.StringVar(&matchName, "match", string(match.Ranked), "scan matching mode: exact (the reference's) or ranked (weighted terms, focused hydration)")
	f.IntVar(&cfg.HotWindow, "hot-window", harness.DefaultHotWindow, "recent messages never folded (0: none)")
	f.IntVar(&cfg.FoldBlock, "fold-block", 0, "with --context-budget -1: messages by which the fold boundary moves (default 8)")
	f.IntVar(&cfg.MinFoldTokens, "min-fold-tokens", harness.DefaultMinFoldTokens, "smallest message folded in place, in tokens (0: any size)")
	f.Int64Var(&maxBody, "max-body-bytes", proxy.DefaultMaxBodyBytes, "largest request body accepted, in bytes (larger: 413)")
	f.IntVar(&maxMessages, "max-messages", proxy.DefaultMaxMessages, "most messages (Responses API: input items) a request may have (more: 413; every message of a conversation not seen before may become a cold node of the request's fold event; -1: no limit)")
	f.Int64Var(&maxInFlight, "max-inflight-bytes", proxy.DefaultMaxInFlightBytes, "budget of the estimated memory of the requests in flight, in bytes: 3 × each body + 2 × the bytes of its conversation not read before; past it 503 with Retry-After; while a request folds a conversation not read before, the estimates (above the memory in use before) are also the process's soft memory limit unless GOMEMLIMIT is set or --soft-memory-limit=false (a request alone is always served; at least --max-body-bytes; -1: no budget)")
	f.BoolVar(&passWebSockets, "pass-websockets", false, "forward a WebSocket upgrade of a model API path (Codex's Responses WebSocket transport) to the upstream: the socket then carries the session unfolded. Off: answered 426, on which Codex uses HTTP through the proxy")
	f.BoolVar(&lineage, "lineage", true, "when a client rewrites its conversation (Claude Code's /compact, an edited or rewound history) and the new conversation's own store selects nothing for a question, scan the stores it left behind, read-only: the earlier generations of the session and the sessions with the same client conversation id (X-Claude-Code-Session-Id, Codex's session-id) and tools")
	f.BoolVar(&softLimit, "soft-memory-limit", true, "while a request folds a conversation not read before, set the Go runtime's soft memory limit to the memory in use before plus the --max-inflight-bytes estimates of such requests, so that garbage is collected within the estimate (never when GOMEMLIMIT is set)")
	f.DurationVar(&bodyTimeout, "body-read-timeout", proxy.DefaultBodyReadTimeout, "longest time a client may take to send a request body (slower: 408; 0: no limit)")
	f.StringVar(&scrubSettings, "scrub-settings", "", `JSON file {"scrub_allowlist": {...}} (a store_settings.json's allowlist: regexes, regexTarget, stopwords, secrets), read once at start and written into every session store it opens, so folds leave what it allows unredacted and scrub-check on a session store lists it as allowed`)
	f.StringSliceVar(&allowedHosts, "allowed-host", nil, "extra Host name /contextfold/stats answers to besides localhost, 127.0.0.1 and ::1 (repeatable)")
	// The proxy's --dir is a directory of per-session stores with its own
	// default (not $CONTEXTFOLD_DIR or ./.contextfold): this local flag, on
	// the same variable, shadows the global one so that --help says so.
	f.StringVar(&g.dir, "dir", "", "directory holding one store per session (default: the per-user cache directory's contextfold/proxy, e.g. ~/.cache/contextfold/proxy)")
	return c
}

// checkProxyFlags refuses the working-set flags' nonsense values before the
// proxy starts (a budget of 0 tokens, a fold target of 150 %, a negative
// window), naming the flag, its value and what it takes. An explicit 0
// that the harness would read as "the default" is mapped to what the flag
// says: --hot-window 0 keeps no message hot, --min-fold-tokens 0 folds
// messages of any size.
func checkProxyFlags(cfg *harness.Config, maxBody, maxInFlight int64) error {
	switch {
	case cfg.ContextBudget == 0 || cfg.ContextBudget < -1:
		return usagef("--context-budget %d: give the most tokens a forwarded request may take (e.g. %d; at least 1), or -1 for the fixed --fold-block window", cfg.ContextBudget, harness.DefaultContextBudget)
	case cfg.FoldTarget < 1 || cfg.FoldTarget > 95:
		return usagef("--fold-target %d: give the percent of --context-budget a fold event folds down to, 1 to 95 (default %d)", cfg.FoldTarget, harness.DefaultFoldTarget)
	case cfg.HotWindow < 0:
		return usagef("--hot-window %d: give the number of recent messages never folded, 0 or more (default %d)", cfg.HotWindow, harness.DefaultHotWindow)
	case cfg.PinMessages < 0:
		return usagef("--pin-messages %d: give the number of leading messages never folded, 0 or more (0: through the first user message)", cfg.PinMessages)
	case cfg.FoldBlock < 0:
		return usagef("--fold-block %d: give the number of messages by which the fold boundary moves, 1 or more (0: the default, %d)", cfg.FoldBlock, harness.DefaultFoldBlock)
	case cfg.MinFoldTokens < 0:
		return usagef("--min-fold-tokens %d: give the smallest message folded in place, in tokens, 0 or more (default %d)", cfg.MinFoldTokens, harness.DefaultMinFoldTokens)
	case maxBody < 1:
		return usagef("--max-body-bytes %d: give the largest request body accepted, in bytes, 1 or more (default %d)", maxBody, proxy.DefaultMaxBodyBytes)
	case maxInFlight == 0 || maxInFlight < -1:
		return usagef("--max-inflight-bytes %d: give a budget in bytes (default %d), or -1 for no budget", maxInFlight, proxy.DefaultMaxInFlightBytes)
	}
	if cfg.HotWindow == 0 {
		cfg.HotWindow = -1 // the harness reads 0 as its default
	}
	if cfg.MinFoldTokens == 0 {
		cfg.MinFoldTokens = -1
	}
	return nil
}

// upstreamsLine names where the proxy forwards each API, for its start
// line: "upstream U", or the per-API upstreams with the default beside them.
func upstreamsLine(upstream, anthropicUp, openaiUp string) string {
	var parts []string
	if anthropicUp != "" {
		parts = append(parts, "Anthropic Messages to "+anthropicUp)
	}
	if openaiUp != "" {
		parts = append(parts, "OpenAI APIs to "+openaiUp)
	}
	if upstream != "" {
		if len(parts) == 0 {
			return "upstream " + upstream
		}
		parts = append(parts, "the rest to "+upstream)
	}
	return strings.Join(parts, ", ")
}
