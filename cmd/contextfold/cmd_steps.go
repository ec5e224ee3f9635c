package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold/harness"
)

func init() { commands = append(commands, newStepsCmd) }

func newStepsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "steps",
		Short: "List the folded-step records (the hot projection, spec §8) of every folded turn",
		Long: `steps prints, for every folded turn of the store, the folded-step record that
stays in the prompt in place of the turn: step_id, timestamp, target_files,
action_type, summary (at most 280 characters), status and
artifacts.cold_node_ref. Records are derived from the recall index and the
verified cold node; a node that fails verification is described from its
index entry alone. steps changes nothing in the store.`,
		Example: `  contextfold steps
  contextfold steps --json | jq '.[] | select(.status == "FAILED")'
  contextfold --dir ~/.cache/contextfold/proxy/s-1a2b3c4d5e6f7a8b/g1 steps`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.openStoreToUse(cmd)
			if err != nil {
				return err
			}
			entries, err := s.Entries()
			if err != nil {
				return err
			}
			steps := make([]harness.FoldedStep, 0, len(entries))
			for _, e := range entries {
				raw := ""
				if h, err := s.Hydrate(e.StepID); err == nil {
					raw = h.RawContent
				}
				steps = append(steps, harness.ProjectEntry(e, raw))
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				return g.writeOut(out, "steps", steps)
			}
			if len(steps) == 0 {
				fmt.Fprintln(out, "no folded steps")
				return nil
			}
			// One header row, then one row per step, columns aligned (the
			// summary last, as long as it is).
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "STEP\tFOLDED\tACTION\tSTATUS\tSUMMARY")
			for _, st := range steps {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", st.StepID, st.Timestamp, st.ActionType, st.Status, oneLine(st.Summary))
			}
			return tw.Flush()
		},
	}
}
