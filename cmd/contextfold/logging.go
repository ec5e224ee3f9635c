package main

import (
	"encoding/json"
	"io"
	"log/slog"
)

// logHandler is the handler of a long-running command's log on w (the
// proxy's request lines, the MCP server's): one JSON object per line with
// --json, else logfmt text lines.
func (g *globals) logHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if g.jsonOut {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// announce writes a server's start line on w: text as given, or with --json
// one JSON object {"msg": msg, fields…} on one line, like the log lines
// that follow it.
func (g *globals) announce(w io.Writer, text, msg string, fields map[string]any) {
	if !g.jsonOut {
		io.WriteString(w, text+"\n")
		return
	}
	m := map[string]any{"msg": msg}
	for k, v := range fields {
		m[k] = v
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(m)
}
