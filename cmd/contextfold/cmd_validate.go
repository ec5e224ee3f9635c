package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match/ranked"
)

func init() { commands = append(commands, newValidateCmd) }

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Audit every node: path containment, broken references, integrity, orphans (CONF-12)",
		Long: `validate checks every indexed node (path containment, broken reference,
artifact integrity, payload and projection hashes, agreement of the index entry
with its node) and every orphan file in cold_nodes/, and reports the temporary
files an interrupted write left (temp_file). The empty .spare-<digits> files a
running proxy keeps in cold_nodes/ for its next fold event are no part of the
store and not reported; one holding bytes is a temp_file. It continues past
failures, reports each one, changes nothing, and exits 1 when it found any,
or when the store directory does not exist. A store copied or renamed (its
index still names the old directory) fails path containment for every node
for that one cause: the text output says so once, with the count of nodes
and the command that fixes it; --json keeps one finding per node.`,
		Example: "  contextfold validate\n  contextfold validate --json | jq '.findings[].kind'",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.storeURL() == "" {
				// An audit of a directory that does not exist would pass
				// ("ok: 0 nodes"): a mistyped --dir must fail the check.
				if _, err := os.Stat(g.storeDir()); errors.Is(err, fs.ErrNotExist) {
					abs, _ := filepath.Abs(g.storeDir())
					return usagef("no store at %s: the directory does not exist; %s (nothing was validated)", abs, g.storeHint())
				}
			}
			s, err := g.openStoreToRead(cmd)
			if err != nil {
				return err
			}
			rep, err := s.Validate()
			if err != nil {
				return err
			}
			// The shared ranked snapshot (a database store) is derived
			// data, never trusted: one that fails verification is a
			// warning, not a finding (the next ranked scan rebuilds it).
			var warnings []map[string]any
			if _, reason := ranked.CheckShared(s); reason != "" {
				warnings = append(warnings, map[string]any{"kind": "shared_snapshot", "message": "the shared ranked snapshot fails verification: " + reason,
					"remedy": "nothing to do: it is never used as is; the next ranked scan rebuilds it from the cold nodes and replaces it"})
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				fs := make([]map[string]any, 0, len(rep.Findings))
				for _, f := range rep.Findings {
					m := map[string]any{"file": f.File, "kind": f.Kind, "message": f.Message, "remedy": contextfold.Remedy(f.Kind)}
					if f.StepID != nil {
						m["step_id"] = *f.StepID
					}
					fs = append(fs, m)
				}
				if err := g.writeOut(out, "", map[string]any{"ok": rep.OK(), "passed": rep.Passed, "findings": fs, "warnings": warningsOrEmpty(warnings)}); err != nil {
					return err
				}
			} else {
				// A copied or renamed store fails path containment for
				// every node for one cause: say it once, with the count.
				moved, fromMove := movedFindings(s, rep.Findings)
				if moved != nil {
					indexed := fromMove
					if es, err := s.EntriesShared(); err == nil {
						indexed = len(es)
					}
					fmt.Fprintf(out, "%-16s %d of %d indexed nodes: %s\n                 → %s\n", contextfold.KindPathContainment, fromMove, indexed, moved.Error(),
						fmt.Sprintf("contextfold --dir %s repair --apply re-indexes the copy's own files under its name (or rename the directory back to %q)", moved.Dir, moved.From))
				}
				for _, f := range rep.Findings {
					if moved != nil && isFromMove(f, moved) {
						continue
					}
					fmt.Fprintf(out, "%-16s %s\n                 → %s\n", f.Kind, f.Message, contextfold.Remedy(f.Kind))
				}
				for _, w := range warnings {
					fmt.Fprintf(out, "warning          %s\n                 → %s\n", w["message"], w["remedy"])
				}
				if rep.OK() {
					fmt.Fprintf(out, "ok: %d nodes verified, no findings\n", rep.Passed)
				} else {
					fmt.Fprintf(out, "%d findings; %d nodes verified\n", len(rep.Findings), rep.Passed)
				}
			}
			if !rep.OK() {
				return &silentExit{code: exitUsage}
			}
			return nil
		},
	}
}

// warningsOrEmpty is w, or an empty list (JSON [] rather than null).
func warningsOrEmpty(w []map[string]any) []map[string]any {
	if w == nil {
		return []map[string]any{}
	}
	return w
}

// movedFindings returns the store's *MovedStoreError when its recall index
// names another store directory (the store was copied or renamed), with
// the number of findings that cause accounts for; nil, 0 otherwise.
func movedFindings(s *contextfold.Store, fs []contextfold.Finding) (*contextfold.MovedStoreError, int) {
	var moved *contextfold.MovedStoreError
	if !errors.As(s.CheckMoved(), &moved) {
		return nil, 0
	}
	n := 0
	for _, f := range fs {
		if isFromMove(f, moved) {
			n++
		}
	}
	if n == 0 {
		return nil, 0
	}
	return moved, n
}

// isFromMove reports whether finding f is the path containment failure of
// an index entry whose file_path names the store's former directory.
func isFromMove(f contextfold.Finding, moved *contextfold.MovedStoreError) bool {
	var pe *contextfold.PathContainmentError
	return f.Kind == contextfold.KindPathContainment && errors.As(f.Err, &pe) &&
		strings.HasPrefix(pe.FilePath, moved.From+"/"+contextfold.ColdNodesDir+"/")
}
