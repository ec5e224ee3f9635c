// Package mdfence reads Markdown fenced code blocks out of agent messages.
//
// Agents that act through a shell (mini-swe-agent, SWE-agent, and chat
// models asked to run commands) put the command in a fenced block:
//
//	```bash
//	pytest tests/test_models.py
//	```
//
// Both ingest (which reads whole transcripts) and the harness (which
// describes the proxy's folded steps) need that command; this package is the
// one reading of it.
package mdfence

import "strings"

// shellLanguages are the info strings of a fenced block that holds a shell
// command: bash, sh, shell, console, and a bare fence (no info string).
var shellLanguages = map[string]bool{"bash": true, "sh": true, "shell": true, "console": true, "": true}

// FirstShellBlock returns the body of the first fenced block of text whose
// info string is a shell language (bash, sh, shell, console, or none),
// trimmed of surrounding white space, and true. Blocks in other languages and
// empty blocks are skipped; an unterminated block ends the search. It
// returns "", false when text holds no such block. It allocates nothing but
// the returned substring's header and is safe for concurrent use.
func FirstShellBlock(text string) (string, bool) {
	rest := text
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			return "", false
		}
		rest = rest[i+3:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return "", false
		}
		lang := strings.TrimSpace(rest[:nl])
		body := rest[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			return "", false
		}
		if shellLanguages[lang] {
			if cmd := strings.TrimSpace(body[:end]); cmd != "" {
				return cmd, true
			}
		}
		rest = body[end+3:]
	}
}
