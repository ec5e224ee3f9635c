package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// CheckHTTP wraps a streamable HTTP MCP handler with the checks of
// StdioTransportWith: a POST body must be one JSON-RPC 2.0 message of at
// most maxFrame bytes (≤ 0: DefaultMaxFrameBytes) whose id the SDK can echo
// exactly. A body that fails is answered here, before the SDK decodes it:
// 413 past the limit (at once, the body unread and the connection closed,
// when its Content-Length claims more), else 400, with a JSON-RPC error body (-32700 or
// -32600; the message's own id when valid, else null). Other methods pass
// as they are. The returned handler is safe for concurrent use. It sets no
// read deadline: NewHTTPServer's handler also bounds the time a body takes.
func CheckHTTP(next http.Handler, maxFrame int) http.Handler {
	return checkHTTP(next, maxFrame, 0)
}

// checkHTTP is CheckHTTP whose POST bodies must arrive within bodyTimeout
// (0: no limit), else 408 with a JSON-RPC error and the connection closed
// (a slow client holds nothing longer). The deadline is lifted once the
// body is in, so that a streamed response is not cut.
func checkHTTP(next http.Handler, maxFrame int, bodyTimeout time.Duration) http.Handler {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > int64(maxFrame) {
			// Refused on its claim, before a byte of the body is read
			// (a 2 GiB Content-Length waited for the body timeout).
			w.Header().Set("Connection", "close")
			writeRPCError(w, http.StatusRequestEntityTooLarge, json.RawMessage("null"), -32600, fmt.Sprintf(
				"Invalid Request: a message of %d bytes (its Content-Length) is over the frame limit of %d bytes (raise it with contextfold mcp --max-frame-bytes, or send less per call)", r.ContentLength, maxFrame))
			return
		}
		rc := http.NewResponseController(w)
		deadline := bodyTimeout > 0 && rc.SetReadDeadline(time.Now().Add(bodyTimeout)) == nil
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxFrame)))
		if deadline && err == nil {
			_ = rc.SetReadDeadline(time.Time{})
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.Is(err, os.ErrDeadlineExceeded) {
				w.Header().Set("Connection", "close")
				writeRPCError(w, http.StatusRequestTimeout, json.RawMessage("null"), -32600, fmt.Sprintf(
					"Invalid Request: the request body did not arrive within %s (contextfold mcp --body-read-timeout)", bodyTimeout))
				return
			}
			if errors.As(err, &mbe) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, json.RawMessage("null"), -32600, fmt.Sprintf(
					"Invalid Request: a message of more than %d bytes is over the frame limit (raise it with contextfold mcp --max-frame-bytes, or send less per call)", maxFrame))
				return
			}
			writeRPCError(w, http.StatusBadRequest, json.RawMessage("null"), -32700, "Parse error: cannot read the body: "+err.Error())
			return
		}
		if _, id, code, msg := checkLine(body); code != 0 {
			writeRPCError(w, http.StatusBadRequest, id, code, msg)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
