package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold/schema"
)

func init() { commands = append(commands, newSchemaCmd) }

func newSchemaCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "schema [NAME]",
		Short: "Print the JSON Schemas (draft 2020-12) of the store's files",
		Long: `schema prints one JSON Schema by name, or all of them as one JSON object
keyed by name, so other implementations can check their files. Every artifact
contextfold writes is validated against its schema before the write, and
'contextfold validate' reports files that do not follow theirs (kind "schema").

Names: cold_node, recall_index, hydration_policy, eviction_log, folded_step,
repair_log, store_settings.`,
		Example: "  contextfold schema cold_node\n  contextfold schema > ipcf-schemas.json",
		Args:    maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				src, err := schema.Source(args[0])
				if err != nil {
					return usagef("%v; names: %v", err, schema.Names())
				}
				fmt.Fprintln(out, string(src))
				return nil
			}
			all := map[string]json.RawMessage{}
			for _, n := range schema.Names() {
				src, err := schema.Source(n)
				if err != nil {
					return err
				}
				all[n] = src
			}
			return writeJSON(out, all)
		},
	}
}
