package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold/scrub"
)

func init() { commands = append(commands, newScrubCheckCmd) }

func newScrubCheckCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "scrub-check",
		Short: "Audit a store (e.g. one written by the reference) for secrets, changing nothing",
		Long: `scrub-check runs gitleaks' default rules (and our extra rules) over the
summary and raw content of every cold node and reports the nodes that contain
secrets: the step, the rule ids and the count, never the secret itself. It
changes nothing and exits 1 when it found any.`,
		Example: "  contextfold scrub-check\n  contextfold scrub-check --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.openStoreToRead(cmd)
			if err != nil {
				return err
			}
			sc, err := scrub.New()
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
			}
			hits := []hit{}
			for _, e := range entries {
				n, err := s.ReadColdNode(e.StepID)
				if err != nil {
					continue // validate reports unreadable nodes
				}
				rules := map[string]bool{}
				count := 0
				for _, text := range []string{n.Summary, n.RawContent} {
					for _, f := range sc.Find(text) {
						rules[f.RuleID] = true
						count++
					}
				}
				if count > 0 {
					h := hit{StepID: e.StepID, Findings: count}
					for r := range rules {
						h.Rules = append(h.Rules, r)
					}
					sort.Strings(h.Rules)
					hits = append(hits, h)
				}
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				writeJSON(out, map[string]any{"nodes_checked": len(entries), "nodes_with_secrets": hits})
			} else {
				for _, h := range hits {
					fmt.Fprintf(out, "step %-6d %d secret(s): %v\n", h.StepID, h.Findings, h.Rules)
				}
				fmt.Fprintf(out, "%d nodes checked, %d contain secrets\n", len(entries), len(hits))
				if len(hits) > 0 {
					fmt.Fprintln(out, "the store was written without scrubbing; re-fold the session with scrubbing on (the default) to replace it")
				}
			}
			if len(hits) > 0 {
				return &silentExit{code: exitUsage}
			}
			return nil
		},
	}
}
