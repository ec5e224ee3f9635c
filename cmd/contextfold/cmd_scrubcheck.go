package main

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
)

func init() { commands = append(commands, newScrubCheckCmd) }

func newScrubCheckCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "scrub-check",
		Short: "Audit a store (e.g. one written by the reference) for secrets, changing nothing",
		Long: `scrub-check runs gitleaks' default rules (and our extra rules) over every
string a cold node holds (session id, summary, raw and normalized content,
files, commands, errors, identifiers; the index entry's when the node cannot
be read) and reports the nodes that contain secrets: the step, the rule ids and the count, never the secret
itself. A secret found in one field is also looked for in the others, ASCII
case-insensitively (identifiers are lower-cased). Redaction markers
([REDACTED:rule]) are never read as credentials. Placeholder credentials
(user:pass@, vendor documentation keys) and
what the store's allowlist (store_settings.json "scrub_allowlist") lets
through are not secrets; they are listed apart, with the reason. A node
that cannot be read (a torn file, a FIFO, past the size limit) is listed
as unreadable: only its index entry was audited. It changes nothing and
exits 1 when it found a secret or could not read a node.`,
		Example: "  contextfold scrub-check\n  contextfold scrub-check --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.openStoreToRead(cmd)
			if err != nil {
				return err
			}
			sc, err := s.AuditScrubber()
			if err != nil {
				return err
			}
			entries, err := s.Entries()
			if err != nil {
				return err
			}
			type hit struct {
				StepID   int      `json:"step_id"`
				Rules    []string `json:"rules"`
				Findings int      `json:"findings"`
				Fields   []string `json:"fields"` // which of session_id, summary, raw_content, normalized_content, files, commands, errors, identifiers
			}
			type pass struct {
				StepID int    `json:"step_id"`
				Rule   string `json:"rule"`
				Reason string `json:"reason"`
				Field  string `json:"field"`
				Count  int    `json:"count"`
			}
			hits, passes := []hit{}, []pass{}
			type unreadable struct {
				StepID int    `json:"step_id"`
				Error  string `json:"error"`
			}
			unread := []unreadable{}
			for _, e := range entries {
				texts, rerr := auditedFields(s, e)
				if rerr != nil {
					unread = append(unread, unreadable{e.StepID, rerr.Error()})
				}
				rules, fields := map[string]bool{}, []string{}
				count := 0
				allowed := map[pass]int{}
				found := map[string]string{} // secret value, lower-cased → rule
				flagged := make([]bool, len(texts))
				for i, f := range texts {
					secrets, ok := sc.Audit(f.text)
					for _, x := range secrets {
						rules[x.RuleID] = true
						count++
						if v := f.text[x.Start:x.End]; len(v) >= 8 {
							found[strings.ToLower(v)] = x.RuleID
						}
					}
					flagged[i] = len(secrets) > 0
					for _, a := range ok {
						allowed[pass{StepID: e.StepID, Rule: a.RuleID, Reason: a.Reason, Field: f.name}]++
					}
				}
				// A secret found in one field is looked for in the others,
				// ASCII case-insensitively: identifiers are lower-cased
				// words of the payload ("aiza…", "sg.…"), which the
				// case-sensitive rules no longer recognise.
				for i, f := range texts {
					if flagged[i] || len(found) == 0 {
						continue
					}
					low := strings.ToLower(f.text)
					for v, rule := range found {
						if c := strings.Count(low, v); c > 0 {
							flagged[i] = true
							rules[rule] = true
							count += c
						}
					}
				}
				for i, f := range texts {
					if flagged[i] {
						fields = append(fields, f.name)
					}
				}
				if count > 0 {
					h := hit{StepID: e.StepID, Findings: count, Fields: fields}
					for r := range rules {
						h.Rules = append(h.Rules, r)
					}
					sort.Strings(h.Rules)
					hits = append(hits, h)
				}
				var ps []pass
				for p, c := range allowed {
					p.Count = c
					ps = append(ps, p)
				}
				sort.Slice(ps, func(i, j int) bool {
					a, b := ps[i], ps[j]
					if a.Field != b.Field {
						return a.Field < b.Field
					}
					if a.Rule != b.Rule {
						return a.Rule < b.Rule
					}
					return a.Reason < b.Reason
				})
				passes = append(passes, ps...)
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				g.writeOut(out, "", map[string]any{"nodes_checked": len(entries), "nodes_with_secrets": hits, "allowed": passes, "nodes_unreadable": unread})
			} else {
				for _, h := range hits {
					fmt.Fprintf(out, "step %-6d %d secret(s): %v in %v\n", h.StepID, h.Findings, h.Rules, h.Fields)
				}
				for _, p := range passes {
					fmt.Fprintf(out, "step %-6d allowed %d× %s in %s (%s)\n", p.StepID, p.Count, p.Rule, p.Field, p.Reason)
				}
				for _, u := range unread {
					fmt.Fprintf(out, "step %-6d unreadable, only its index entry was audited: %s\n", u.StepID, u.Error)
				}
				fmt.Fprintf(out, "%d nodes checked, %d contain secrets, %d allowed (placeholders or the allowlist), %d unreadable\n", len(entries), len(hits), len(passes), len(unread))
				if len(unread) > 0 {
					fmt.Fprintln(out, "the audit is incomplete: a node that cannot be read may hold a secret; run 'contextfold validate' to see why each cannot be read and 'contextfold repair --apply' to quarantine it")
				}
				if len(hits) > 0 {
					fmt.Fprintln(out, "these nodes were written with scrubbing off (--no-scrub, CONTEXTFOLD_SCRUB=off, \"scrub\": false), by another implementation, or by an earlier version whose rules missed these secrets; fold the session again into a new store with this version (scrubbing is on by default), check it with scrub-check, then remove this store")
				}
			}
			if len(hits) > 0 || len(unread) > 0 {
				return &silentExit{code: exitUsage}
			}
			return nil
		},
	}
}

// auditedField is one string field of a stored node, for scrub-check.
type auditedField struct{ name, text string }

// auditedFields lists every string a node of step e holds: the cold node's
// session id, summary, raw content (and normalized content when it is not
// the payload less its trailing white space) and lists (files,
// commands, errors, identifiers, one element a line), or the index entry's
// summary and lists when the node cannot be read, with the read error
// (validate reports why in full).
func auditedFields(s *contextfold.Store, e *contextfold.Entry) ([]auditedField, error) {
	lines := func(l []string) string { return strings.Join(l, "\n") }
	n, err := s.ReadColdNode(e.StepID)
	if err != nil {
		return []auditedField{{"summary", e.Summary}, {"files", lines(e.Files)}, {"commands", lines(e.Commands)},
			{"errors", lines(e.Errors)}, {"identifiers", lines(e.Identifiers)}}, err
	}
	out := []auditedField{{"session_id", n.SessionID}, {"summary", n.Summary}, {"raw_content", n.RawContent}}
	payload := n.RawContent
	if payload == "" {
		payload = n.Summary
	}
	if n.NormalizedContent != strings.TrimRightFunc(payload, unicode.IsSpace) { // NFC changed it (spec §3)
		out = append(out, auditedField{"normalized_content", n.NormalizedContent})
	}
	return append(out, auditedField{"files", lines(n.Files)}, auditedField{"commands", lines(n.Commands)},
		auditedField{"errors", lines(n.Errors)}, auditedField{"identifiers", lines(n.Identifiers)}), nil
}
