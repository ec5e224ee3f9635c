package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/pgstore"
)

func init() { commands = append(commands, newDemoCmd) }

func newDemoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the 8-turn IPCF demo session: fold, recall, scan, hydrate, evict, validate",
		Long: `demo folds the specification's 8-turn session (steps 37, 91, 137, 200, 318,
342, 447, 499) and walks through the protocol: recall disambiguates the
PostgreSQL port over time, the MMU scan of the showcase question hydrates
steps 342, 137 and 447 (verified), they are evicted after the response, and
validate finds the store clean.

It runs in the store given by --store (a directory, or a PostgreSQL session
postgres://…?session=NAME) or --dir. Without either, it uses a new temporary
store, so it never touches an existing one (not even $CONTEXTFOLD_STORE's or
$CONTEXTFOLD_DIR's); the path is printed so you can explore it afterwards. The
temporary directory stays (each run makes a new one): the demo ends by naming
it and the command that removes it.`,
		Example: "  contextfold demo\n  contextfold demo --dir /tmp/demo-store\n  contextfold demo --store 'postgres://cf@127.0.0.1:5432/contextfold?session=demo'\n  contextfold demo --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// --store (a directory or a postgres:// session) and --dir are
			// honoured; without either the demo makes a temporary store.
			// $CONTEXTFOLD_STORE/$CONTEXTFOLD_DIR are not read: a demo
			// never folds into the store a shell points at by accident.
			dir, tmp := g.dir, ""
			var s *contextfold.Store
			var err error
			explore := ""
			switch {
			case g.store != "":
				if s, err = g.openStore(); err != nil {
					return err
				}
				explore = "--store '" + g.store + "'"
				if u := g.storeURL(); u != "" {
					explore = "--store '" + pgstore.Redact(u) + "'"
				}
			default:
				if dir == "" {
					if tmp, err = os.MkdirTemp("", "contextfold-demo-"); err != nil {
						return err
					}
					dir = tmp + "/.contextfold"
				}
				if s, err = contextfold.Open(dir, g.storeOptions()); err != nil {
					return err
				}
				explore = "--dir " + shellQuote(s.Dir())
			}
			out := cmd.OutOrStdout()
			say := func(format string, a ...any) {
				if !g.jsonOut {
					fmt.Fprintf(out, format, a...)
				}
			}
			say("IPCF demo store: %s\n\n1. Fold 8 verbose turns into cold storage (page-out)\n", s.Dir())
			results, err := s.FoldBatch(contextfold.DemoTurns())
			if err != nil {
				return err
			}
			for _, r := range results {
				state := "folded"
				if r.AlreadyIndexed {
					state = "already indexed"
				}
				say("   step %-4d %-16s %s\n", r.Entry.StepID, state, r.Entry.Summary)
			}
			st, err := s.Status()
			if err != nil {
				return err
			}
			say("   %d nodes, %d tokens archived; only the summaries stay in the prompt\n\n", st.Total, st.TotalTokens)

			say("2. Recall %q (pull, CONF-04: temporal disambiguation)\n", contextfold.DemoRecallQuery)
			hits, err := s.Recall(contextfold.DemoRecallQuery)
			if err != nil {
				return err
			}
			for _, h := range hits {
				say("   step %-4d %-21s %s\n", h.StepID, h.Status, h.Summary)
			}

			say("\n3. The user asks: %q\n   The MMU scans the prompt before the turn (push, CONF-13)\n", contextfold.DemoPrompt)
			res, err := s.Scan(contextfold.DemoPrompt)
			if err != nil {
				return err
			}
			say("   query terms: %s\n", strings.Join(res.QueryTerms, " "))
			var hydrated []map[string]any
			for i, p := range res.Selected {
				h, err := s.Hydrate(p.StepID)
				if err != nil {
					return err
				}
				say("   %d. hydrate step %d for [%s] — SHA-256 verified (%s…), %d tokens:\n      %s\n",
					i+1, p.StepID, strings.Join(p.MatchedTerms, ", "), h.ArtifactSHA256[:12], h.TokenEstimate, strings.ReplaceAll(h.Content, "\n", "\n      "))
				hydrated = append(hydrated, map[string]any{"step_id": p.StepID, "matched_terms": p.MatchedTerms, "content": h.Content, "artifact_sha256": h.ArtifactSHA256})
			}
			say("   %v of %v per-turn tokens used; the cold nodes join this turn only\n\n", numberOut(res.UsedTokens), numberOut(res.BudgetTokens))

			say("4. After the response, evict them (CONF-07: no creep into later turns)\n")
			for _, p := range res.Selected {
				ev, err := s.Evict(p.StepID)
				if err != nil {
					return err
				}
				say("   evicted step %d at %s\n", ev.StepID, ev.EvictedAt)
			}
			rep, err := s.Validate()
			if err != nil {
				return err
			}
			say("\n5. Validate the store: ")
			if rep.OK() {
				say("clean — %d nodes verified, no orphans, no broken references\n", rep.Passed)
			} else {
				say("%d findings (run 'contextfold validate')\n", len(rep.Findings))
			}
			self := selfCommand()
			say("\nExplore it:\n   %s %s status\n   %s %s hydrate 137\n   %s %s ui --open\n", self, explore, self, explore, self, explore)
			if tmp != "" {
				// Each run without --dir makes a new temporary directory: say
				// that it stays, and how to remove it.
				say("\nThe demo store stays in the temporary directory %s; remove it with:\n   rm -rf %s\n", tmp, shellQuote(tmp))
			}
			if g.jsonOut {
				ids := []int{}
				for _, p := range res.Selected {
					ids = append(ids, p.StepID)
				}
				doc := map[string]any{"dir": s.Dir(), "folded": len(results), "hydrated_steps": ids, "hydrated": hydrated, "validate_ok": rep.OK(), "passed": rep.Passed}
				if tmp != "" {
					doc["temporary_dir"] = tmp // left in place; remove it when done
				}
				return writeJSON(out, doc)
			}
			return nil
		},
	}
}

// selfCommand is how to run this binary again from a shell: "contextfold"
// when that name on PATH is this binary, else the path of the running
// binary (os.Executable; quoted for a POSIX shell when it needs it), so
// that the commands the demo prints run the binary that printed them
// (one run by its path, or another version on PATH). "contextfold" when
// the running binary's path is unknown.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "contextfold"
	}
	if p, err := exec.LookPath("contextfold"); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(exe)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "contextfold"
		}
	}
	return shellQuote(exe)
}
