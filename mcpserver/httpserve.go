package mcpserver

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Timeouts of the streamable HTTP server (contextfold mcp --http). They
// bound what a client that sends slowly (or not at all) can hold: a
// connection costs a goroutine and its buffers until one of them ends it.
const (
	// DefaultHeaderReadTimeout bounds the time from a connection's (or a
	// keep-alive request's) first byte to the end of its request headers.
	DefaultHeaderReadTimeout = 10 * time.Second
	// DefaultBodyReadTimeout bounds the time a POST body takes to arrive
	// whole, as the proxy's --body-read-timeout: past it the request is
	// answered 408 with a JSON-RPC error and the connection is closed.
	DefaultBodyReadTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection that sends no new
	// request for this long.
	DefaultIdleTimeout = 120 * time.Second
	// maxHeaderBytes bounds a request's headers.
	maxHeaderBytes = 64 << 10
)

// HTTPOptions configure NewHTTPServer. A zero duration takes its default; a
// negative one disables that timeout.
type HTTPOptions struct {
	MaxFrameBytes     int           // largest POST body (≤ 0: DefaultMaxFrameBytes)
	HeaderReadTimeout time.Duration // DefaultHeaderReadTimeout
	BodyReadTimeout   time.Duration // DefaultBodyReadTimeout
	IdleTimeout       time.Duration // DefaultIdleTimeout
	StreamOptions     *mcp.StreamableHTTPOptions
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// NewHTTPServer returns the http.Server of srv's streamable HTTP transport
// at /mcp: POST bodies checked by CheckHTTP (one JSON-RPC message of at most
// MaxFrameBytes, arrived within BodyReadTimeout), headers within
// HeaderReadTimeout and 64 KiB, idle keep-alive connections closed after
// IdleTimeout. No write timeout: a GET event stream stays open as long as
// the client reads it. The caller serves it (Serve) and shuts it down.
func NewHTTPServer(srv *mcp.Server, o HTTPOptions) *http.Server {
	mux := http.NewServeMux()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, o.StreamOptions)
	mux.Handle("/mcp", checkHTTP(h, o.MaxFrameBytes, orDefault(o.BodyReadTimeout, DefaultBodyReadTimeout)))
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: orDefault(o.HeaderReadTimeout, DefaultHeaderReadTimeout),
		IdleTimeout:       orDefault(o.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    maxHeaderBytes,
	}
}
