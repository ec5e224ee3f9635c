package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// CheckHTTP wraps a streamable HTTP MCP handler with the checks of
// StdioTransportWith: a POST body must be one JSON-RPC 2.0 message of at
// most maxFrame bytes (≤ 0: DefaultMaxFrameBytes) whose id the SDK can echo
// exactly. A body that fails is answered here, before the SDK decodes it:
// 413 past the limit, else 400, with a JSON-RPC error body (-32700 or
// -32600; the message's own id when valid, else null). Other methods pass
// as they are. The returned handler is safe for concurrent use.
func CheckHTTP(next http.Handler, maxFrame int) http.Handler {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxFrame)))
		if err != nil {
			var mbe *http.MaxBytesError
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
