package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/mcpserver"
	"github.com/contextfold/contextfold/pgstore"
)

func init() { commands = append(commands, newHydrateCmd, newEvictCmd, newStatusCmd) }

func newHydrateCmd(g *globals) *cobra.Command {
	var raw bool
	var offset int
	var focus string
	c := &cobra.Command{
		Use:   "hydrate <step_id>",
		Short: "Page a cold node in, verified, within the per-call cap (CONF-05/06/09)",
		Long: `hydrate reads a cold node after checking that its index path stays inside
cold_nodes/ and that its artifact hash matches the file and the index. It
prints the content a prompt may carry: the raw content, cut to 4 × cap code
points when its estimate exceeds max_rehydration_tokens_per_call. hydrate
changes nothing in the store.

A node larger than the cap is printed up to the last whole line that fits
(a single line longer than the cap is cut where the cap falls), followed by
the exact commands that read on from the next line (--offset N) or show only
the lines around what you look for (--focus). --json and --raw keep the
protocol's content (4 × cap code points, CONF-05) and its next_offset.

Exit codes: 2 not found, 3 integrity or path containment, 4 orphaned node,
5 broken reference.

Given a directory of session stores (the proxy's --dir, a project's
.contextfold of the Claude Code hooks), --session ID names the session (its
id as contextfold sessions lists it, or the first characters of one id
alone); it may be left out while the directory holds one session (a note on
stderr names the store read).

--focus PROMPT (ranked focused hydration): when the node exceeds the cap,
print windows of whole lines around the lines that hold the prompt's terms,
each after a marker naming its lines and character offsets, instead of the
node's first 4 × cap code points. The whole node is verified first. The
windows come best first (the window of the rarest matched terms leads),
weaker ones are dropped. With --json, a focused result has "windows" (each
"start"/"end" in code points of the raw content, and its lines) and no
"offset"/"next_offset": to read on in the plain content from a window, pass
its start or end to --offset (without --focus). The plain output prints,
for each window, the command that reads on from its first line.`,
		Example: `  contextfold hydrate 137
  contextfold hydrate 137 --json | jq -r .payload_sha256
  contextfold hydrate -- -1
  contextfold hydrate 16 --focus "which test failed in the ledger package?"
  contextfold hydrate 16 --dir .contextfold --session 5a9d…`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseStepID("hydrate", args[0])
			if err != nil {
				return err
			}
			s, err := g.openStoreToUse(cmd)
			if err != nil {
				return err
			}
			var h *contextfold.Hydration
			if cmd.Flags().Changed("focus") {
				if offset > 0 {
					return usagef("--focus and --offset do not combine: --offset reads the plain content")
				}
				h, err = match.Hydrate(s, id, focus, match.Ranked)
			} else {
				h, err = s.Hydrate(id)
			}
			if err != nil {
				return quarantinedRemedy(err, s.Dir(), id)
			}
			// --offset reads on past the per-call cap, one window at a time,
			// from the same verified content.
			var page mcpserver.PageOf
			if offset == 0 && h.Truncated && h.Content == "" {
				// A per-call cap of 0: the reference's answer is empty
				// content marked truncated; so is ours, with a word.
				fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: warning: the hydration policy's per-call cap allows no content for step %d; the content is empty and marked truncated (raise max_rehydration_tokens_per_call in hydration_policy.json)\n", h.StepID)
				page = mcpserver.PageOf{Total: utf8.RuneCountInString(h.RawContent)}
			} else if page, err = mcpserver.Page(h, offset); err != nil {
				return usagef("%v", strings.TrimPrefix(err.Error(), "BadArgument: "))
			}
			if offset > 0 {
				h.Content = page.Content
				h.Truncated = page.Next > 0
				h.TokenEstimate = s.TokenCounter().Count(page.Content)
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				doc := map[string]any{
					"step_id": h.StepID, "content": h.Content, "raw_content": h.RawContent,
					"token_estimate": h.TokenEstimate, "truncated": h.Truncated,
					"payload_sha256": h.PayloadSHA256, "projection_sha256": h.ProjectionSHA256,
					"artifact_sha256": h.ArtifactSHA256, "summary": h.Summary,
					"offset": page.Offset, "next_offset": page.Next, "total_chars": page.Total,
				}
				if h.Windows != nil {
					// Focused: Content is not a prefix of the raw content, so
					// a next_offset counted in it would point mid-line; the
					// windows' offsets are in the raw content.
					delete(doc, "offset")
					delete(doc, "next_offset")
					wins := make([]map[string]any, len(h.Windows))
					for i, w := range h.Windows {
						wins[i] = map[string]any{"start": w.Start, "end": w.End, "first_line": w.FirstLine, "last_line": w.LastLine}
					}
					doc["windows"] = wins
				}
				return g.writeOut(out, "", doc)
			}
			if raw {
				fmt.Fprint(out, h.Content)
				return nil
			}
			// A page of a node larger than the cap ends at its last whole
			// line (one line longer than the page is cut where the cap
			// falls), and the command that reads on is printed.
			content, next := h.Content, page.Next
			if h.Truncated && page.Next > 0 && h.Windows == nil {
				content, next = cutAtLine(content, page.Offset, page.Next)
			}
			state := "whole"
			if h.Truncated && next > 0 {
				state = fmt.Sprintf("%d of %d characters, cut at a line by the per-call cap", next-page.Offset, page.Total)
			} else if h.Truncated {
				state = "truncated: the per-call cap allows no content"
			}
			if h.Windows != nil {
				state = fmt.Sprintf("focused: %d window(s) around the matched lines", len(h.Windows))
			}
			if content != h.Content {
				h.TokenEstimate = s.TokenCounter().Count(content)
			}
			fmt.Fprintf(out, "step %d · %s · %d tokens (%s) · verified artifact %s…\n--- content ---\n%s\n--- end ---\n",
				h.StepID, terminalSafe(h.Summary), h.TokenEstimate, state, h.ArtifactSHA256[:12], terminalSafe(strings.TrimSuffix(content, "\n")))
			if h.Windows != nil {
				// Focused: next counts characters of the focused text, not
				// of the raw content; each window's start is the offset
				// that reads on from its first line.
				for _, w := range h.Windows {
					fmt.Fprintf(out, "read on from lines %d-%d: contextfold%s hydrate %d --offset %d\n",
						w.FirstLine, w.LastLine, g.storeArgs(), h.StepID, w.Start)
				}
			} else if h.Truncated && next > 0 {
				fmt.Fprintf(out, "read on:   contextfold%s hydrate %d --offset %d\nor search: contextfold%s hydrate %d --focus \"WHAT YOU ARE LOOKING FOR\"\n",
					g.storeArgs(), h.StepID, next, g.storeArgs(), h.StepID)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&raw, "raw", false, "print only the content, nothing around it")
	c.Flags().StringVar(&focus, "focus", "", "place the content's window(s) around the lines matching this prompt (ranked focused hydration)")
	c.Flags().IntVar(&offset, "offset", 0, "start at this many characters (code points) into the verified content, to read past the per-call cap")
	return c
}

func newEvictCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "evict <step_id>",
		Short: "Record that a hydrated node left the prompt after the response (CONF-07)",
		Long: `evict marks a node evicted in the recall index and appends an event to
eviction_log.json (append-only; every eviction is a new event). The cold node
itself is never deleted.`,
		Example: `  contextfold evict 137
  contextfold evict 137 --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseStepID("evict", args[0])
			if err != nil {
				return err
			}
			s, err := g.openExistingStore(false)
			if err != nil {
				return err
			}
			ev, err := s.Evict(id)
			if err != nil {
				return quarantinedRemedy(err, s.Dir(), id)
			}
			if g.jsonOut {
				return g.writeOut(cmd.OutOrStdout(), "", map[string]any{"step_id": ev.StepID, "evicted_at": ev.EvictedAt})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "evicted step %d at %s\n", ev.StepID, ev.EvictedAt)
			return nil
		},
	}
}

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Count the store's nodes and archived tokens, and show the policy in force",
		Long: `status counts the store's nodes (active, evicted) and their archived tokens,
and shows the hydration policy in force (per-call cap, per-turn budget,
integrity verification) and the matching mode scan and recall use. It
changes nothing.

Given a directory of session stores (a project's .contextfold of the Claude
Code hooks, the proxy's --dir) status reads its store when it holds one
session, naming it on stderr; with several, --session ID picks one (its
id as contextfold sessions lists it, or the first characters of one id
alone: --session 5a9d). Every session at once, with its source, nodes,
tokens and fold times: contextfold sessions.

--json: total, active, evicted, total_tokens, policy, policy_hash, dir,
matching.`,
		Example: "  contextfold status\n  contextfold status --json\n  contextfold status --session 5a9d          # in a project with the hooks: the session whose id starts 5a9d\n  contextfold sessions                       # a project's sessions, with the hooks",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.openStoreToUse(cmd)
			if err != nil {
				return err
			}
			st, err := s.Status()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := st.Policy.MaxTokensPerCall(); err != nil {
				return fmt.Errorf("%s: %v (set it to a number)", filepath.Join(s.Dir(), contextfold.PolicyFile), err)
			}
			if _, err := st.Policy.MaxTokensPerTurn(); err != nil {
				return fmt.Errorf("%s: %v (set it to a number)", filepath.Join(s.Dir(), contextfold.PolicyFile), err)
			}
			mode, err := match.ServingModeOf(s)
			if err != nil {
				return err
			}
			if g.jsonOut {
				return g.writeOut(out, "", map[string]any{"total": st.Total, "active": st.Active, "evicted": st.Evicted,
					"total_tokens": st.TotalTokens, "policy": st.Policy.Doc(), "policy_hash": st.Policy.Hash(), "dir": s.Dir(), "matching": string(mode)})
			}
			per, _ := st.Policy.MaxTokensPerCall() // checked above
			turn, _ := st.Policy.MaxTokensPerTurn()
			fmt.Fprintf(out, "store %s\n  %s (%d active, %d evicted), %s archived\n  policy %s…: %v tokens per call, %v per turn, integrity verification %v\n  matching %s (scan and recall without --match; store_settings.json \"matching\")\n",
				s.Dir(), plural(st.Total, "node"), st.Active, st.Evicted, plural(st.TotalTokens, "token"), st.Policy.Hash()[:12], numberOut(per), numberOut(turn), st.Policy.IntegrityVerification(), mode)
			return nil
		},
	}
}

// terminalSafe makes text safe to print on a terminal in human output:
// control characters other than newline and tab, and bidirectional
// overrides, are shown as escapes (--raw and --json print the exact text).
func terminalSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true
	}
	return false
}

// cutAtLine shortens a page of content (code points [offset, next) of the
// raw content) to its last whole line: it returns the page up to and with
// its last newline, and the offset that reads on from there. A page without
// a newline (one line longer than the page) is returned as it is.
func cutAtLine(content string, offset, next int) (string, int) {
	i := strings.LastIndexByte(content, '\n')
	if i < 0 || i == len(content)-1 {
		return content, next
	}
	cut := content[:i+1]
	return cut, offset + utf8.RuneCountInString(cut)
}

// storeArgs is the store flag a printed command needs to name the store
// this one used ("" for the default store): --store as given (a URL's
// password redacted), else --dir.
func (g *globals) storeArgs() string {
	switch {
	case g.store != "" && pgstore.IsURL(g.store):
		return " --store '" + pgstore.Redact(g.store) + "'"
	case g.store != "":
		return " --store " + shellQuote(g.store)
	case g.dir != "":
		return " --dir " + shellQuote(g.dir)
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:@%+=,
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
