package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
)

func init() { commands = append(commands, newRepairCmd, newCompactCmd) }

func newRepairCmd(g *globals) *cobra.Command {
	var apply bool
	c := &cobra.Command{
		Use:   "repair [--apply]",
		Short: "Plan (and with --apply carry out) the repair of every broken state validate finds",
		Long: `repair shows what it would do and changes nothing; --apply does it:
  - an orphan whose artifact verifies is indexed again (its eviction state is
    restored from the eviction log);
  - a broken reference, or an entry whose path escapes cold_nodes/, leaves the
    index (the entry is kept in quarantine/);
  - a corrupt or tampered file moves to quarantine/ with its index entry;
  - an unreadable index moves to quarantine/ and is rebuilt from cold_nodes/.
Nothing is ever deleted. Every applied action is appended to repair_log.json.
After --apply, validate is clean and a second repair does nothing.`,
		Example: "  contextfold repair\n  contextfold repair --apply --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			s, err := g.openExistingStore(false)
			if err != nil {
				return err
			}
			res, err := s.Repair(apply)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				acts := make([]map[string]any, 0, len(res.Actions))
				for _, a := range res.Actions {
					m := map[string]any{"action": a.Action, "file": a.File, "reason": a.Reason}
					if a.StepID != nil {
						m["step_id"] = *a.StepID
					}
					acts = append(acts, m)
				}
				manual := make([]map[string]any, 0, len(res.Manual))
				for _, f := range res.Manual {
					manual = append(manual, map[string]any{"file": f.File, "kind": f.Kind, "message": f.Message})
				}
				if err := g.writeOut(out, "", map[string]any{"applied": res.Applied, "actions": acts, "manual": manual}); err != nil {
					return err
				}
				if len(res.Manual) > 0 {
					return &silentExit{code: exitUsage}
				}
				return nil
			}
			defer func() {
				for _, f := range res.Manual {
					fmt.Fprintf(out, "needs a hand: %s\n    %s\n", f.File, f.Message)
				}
			}()
			if len(res.Manual) > 0 {
				defer func() { err = &silentExit{code: exitUsage} }()
			}
			if len(res.Actions) == 0 {
				fmt.Fprintln(out, "nothing to repair automatically")
				return nil
			}
			verb := "would"
			if apply {
				verb = "did"
			}
			for _, run := range repairRuns(res.Actions) {
				a := run[0]
				step := "-"
				if a.StepID != nil {
					step = fmt.Sprint(*a.StepID)
				}
				fmt.Fprintf(out, "%s %-14s step %-6s %s\n    because %s\n", verb, a.Action, step, a.File, a.Reason)
				if len(run) > 1 {
					fmt.Fprintf(out, "%s %-14s %d more, the same finding for steps %s (--json lists each)\n", verb, a.Action, len(run)-1, stepRanges(run[1:]))
				}
			}
			if !apply {
				fmt.Fprintln(out, "dry run: nothing changed; run 'contextfold repair --apply' to do it")
			} else {
				fmt.Fprintf(out, "%d actions applied and logged in %s\n", len(res.Actions), contextfold.RepairLogFile)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&apply, "apply", false, "carry out the plan (default: dry run)")
	return c
}

func newCompactCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Write journaled updates of a large store into recall_index.json",
		Long: `Stores whose index is 64 KiB or more journal single folds and evictions in
index_journal.jsonl and rewrite the index every 256 operations (and at the end
of every ingest). compact rewrites it now, so the index file alone describes
the store, as another IPCF implementation (the reference) expects. A no-op
when there is no journal.`,
		Example: "  contextfold compact",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.openExistingStore(false)
			if err != nil {
				return err
			}
			_, statErr := os.Stat(filepath.Join(s.Dir(), contextfold.JournalFile))
			hadJournal := statErr == nil
			if err := s.Compact(); err != nil {
				return err
			}
			if g.jsonOut {
				return g.writeOut(cmd.OutOrStdout(), "", map[string]any{"compacted": hadJournal})
			}
			if hadJournal {
				fmt.Fprintln(cmd.OutOrStdout(), "journaled updates written into recall_index.json")
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), "no journal: recall_index.json was already up to date")
			}
			return nil
		},
	}
}

// minRepairRun is the fewest consecutive actions of one kind for one kind of
// finding that repair's text output shows as one action and a count.
const minRepairRun = 4

var digitRun = regexp.MustCompile(`[0-9]+`)

// repairRuns splits the actions into runs to print: a run of at least
// minRepairRun consecutive actions of one kind whose reasons differ only in
// their numbers (a store copied from .contextfold: every entry's path, one
// finding per step) is one run, printed as its first action and a count;
// every other action is a run of its own. The order is the plan's.
func repairRuns(acts []contextfold.RepairAction) [][]contextfold.RepairAction {
	var runs [][]contextfold.RepairAction
	key := func(a contextfold.RepairAction) string {
		return a.Action + "\x00" + digitRun.ReplaceAllString(a.Reason, "#")
	}
	for i := 0; i < len(acts); {
		j := i + 1
		for j < len(acts) && acts[j].StepID != nil && acts[i].StepID != nil && key(acts[j]) == key(acts[i]) {
			j++
		}
		if j-i >= minRepairRun {
			runs = append(runs, acts[i:j])
		} else {
			for k := i; k < j; k++ {
				runs = append(runs, acts[k:k+1])
			}
		}
		i = j
	}
	return runs
}

// stepRanges names the steps of actions that all have one, as ranges in
// their order: "1–5, 7, 9–12".
func stepRanges(acts []contextfold.RepairAction) string {
	var parts []string
	for i := 0; i < len(acts); {
		j := i
		for j+1 < len(acts) && *acts[j+1].StepID == *acts[j].StepID+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", *acts[i].StepID, *acts[j].StepID))
		} else {
			parts = append(parts, fmt.Sprint(*acts[i].StepID))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
