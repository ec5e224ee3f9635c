package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newScanCmd, newRecallCmd) }

func newScanCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "scan <prompt…>",
		Short: "Show which cold nodes the MMU would hydrate for a prompt (push, CONF-13)",
		Long: `scan matches a prompt against the recall index the way the software MMU does
before a turn: query terms are the prompt's identifiers, files and error names;
nodes are picked by residual greedy set cover (most uncovered terms first, the
larger step id on ties), admitted while they fit the per-turn budget. scan
changes nothing; use hydrate to page a node in.`,
		Example: `  contextfold scan "What port are we using for PostgreSQL, and which migration applied the billing table?"
  contextfold scan --json -- "-v flag broke tests/test_api.py"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("scan needs a prompt: contextfold scan <prompt…>")
			}
			s, err := g.openStoreToRead(cmd)
			if err != nil {
				return err
			}
			res, err := s.Scan(strings.Join(args, " "))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				var sel, drop []pickJSON
				for _, p := range res.Selected {
					sel = append(sel, pickJSON{p.StepID, p.MatchedTerms, numberOut(p.TokenCost), p.Summary})
				}
				for _, p := range res.Dropped {
					drop = append(drop, pickJSON{p.StepID, p.MatchedTerms, numberOut(p.TokenCost), p.Summary})
				}
				if sel == nil {
					sel = []pickJSON{}
				}
				if drop == nil {
					drop = []pickJSON{}
				}
				return writeJSON(out, map[string]any{"query_terms": res.QueryTerms, "selected": sel, "dropped": drop,
					"budget_tokens": numberOut(res.BudgetTokens), "used_tokens": numberOut(res.UsedTokens)})
			}
			fmt.Fprintf(out, "query terms: %s\n", strings.Join(res.QueryTerms, " "))
			if len(res.Selected) == 0 {
				fmt.Fprintln(out, "no cold node matches; nothing would be hydrated")
				return nil
			}
			fmt.Fprintf(out, "would hydrate (%v of %v tokens):\n", numberOut(res.UsedTokens), numberOut(res.BudgetTokens))
			for i, p := range res.Selected {
				fmt.Fprintf(out, "  %d. step %d  [%s]  %v tokens  %s\n", i+1, p.StepID, strings.Join(p.MatchedTerms, ", "), numberOut(p.TokenCost), preview(p.Summary, 80))
			}
			for _, p := range res.Dropped {
				fmt.Fprintf(out, "  dropped: step %d  [%s]  %v tokens do not fit the per-turn budget\n", p.StepID, strings.Join(p.MatchedTerms, ", "), numberOut(p.TokenCost))
			}
			return nil
		},
	}
}

type pickJSON struct {
	StepID       int      `json:"step_id"`
	MatchedTerms []string `json:"matched_terms"`
	TokenCost    any      `json:"token_cost"`
	Summary      string   `json:"summary"`
}

// numberOut prints integral values as integers.
func numberOut(f float64) any {
	if f == float64(int64(f)) {
		return int64(f)
	}
	return f
}

func newRecallCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "recall <query…>",
		Short: "Rank archived turns for a query, newest first (pull, CONF-04)",
		Long: `recall ranks the nodes that hold the query's identifiers. The nodes with the
highest coverage come first, newest step first, labelled latest_chronological,
superseded…, historical; the other candidates follow, labelled related. The
score is +2 per query term in the node's summary and +1 per term in the node.`,
		Example: `  contextfold recall PostgreSQL port
  contextfold recall --json migration V12`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("recall needs a query: contextfold recall <query…>")
			}
			s, err := g.openStoreToRead(cmd)
			if err != nil {
				return err
			}
			hits, err := s.Recall(strings.Join(args, " "))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				rows := make([]map[string]any, len(hits))
				for i, h := range hits {
					rows[i] = map[string]any{"step_id": h.StepID, "status": h.Status, "coverage": h.Coverage, "score": h.Score, "summary": h.Summary, "evicted": h.Evicted}
				}
				return writeJSON(out, rows)
			}
			if len(hits) == 0 {
				fmt.Fprintln(out, "no archived turn matches")
				return nil
			}
			for _, h := range hits {
				fmt.Fprintf(out, "step %-6d %-21s coverage %d  score %d  %s\n", h.StepID, h.Status, h.Coverage, h.Score, preview(h.Summary, 80))
			}
			return nil
		},
	}
}
