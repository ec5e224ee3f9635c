// Command cfeval runs the matching evaluations of BENCHMARKS.md
// ("Matching"): LoCoMo evidence-turn recall and agent-session probes.
//
//	go run ./cmd/cfeval locomo [-file F] [-budget 5] [-n 0] [-combined]
//	go run ./cmd/cfeval probes [-dir ingest/testdata/transcripts]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/contextfold/contextfold/internal/matcheval"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cfeval locomo|probes [flags]")
		os.Exit(1)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	file := fs.String("file", "internal/matcheval/testdata/locomo/locomo10.json.gz", "LoCoMo-schema JSON file (.gz allowed)")
	budget := fs.Float64("budget", 5, "hydration budget per question, in average dialog turns")
	n := fs.Int("n", 0, "conversations to run (0: all)")
	combined := fs.Bool("combined", false, "locomo: ask every question of one store holding all the conversations (matcheval.Combine)")
	dir := fs.String("dir", "ingest/testdata/transcripts", "directory of agent transcripts (probes)")
	verbose := fs.Bool("v", false, "print every probe that misses")
	paramJSON := fs.String("params", "", `ranked scorer constants to override, as JSON (e.g. {"Ratio":0.2}); default ranked.DefaultParams()`)
	fs.Parse(os.Args[2:])
	if *paramJSON != "" {
		p := ranked.DefaultParams()
		if err := json.Unmarshal([]byte(*paramJSON), &p); err != nil {
			fail(fmt.Errorf("-params: %w", err))
		}
		match.SetRankedParams(p)
	}
	tmp, err := os.MkdirTemp("", "cfeval-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	switch os.Args[1] {
	case "locomo":
		data, err := matcheval.LoadLoCoMo(*file)
		if err != nil {
			fail(err)
		}
		if *combined {
			if *n > 0 && *n < len(data) {
				data = data[:*n]
			}
			if data, err = matcheval.Combine(data); err != nil {
				fail(err)
			}
		}
		rep, err := matcheval.RunLoCoMo(data, tmp, *budget, *n)
		if err != nil {
			fail(err)
		}
		fmt.Print(rep.Format())
	case "probes":
		rep, err := matcheval.RunProbes(*dir, tmp)
		if err != nil {
			fail(err)
		}
		fmt.Print(rep.Format(*verbose))
	default:
		fmt.Fprintln(os.Stderr, "usage: cfeval locomo|probes [flags]")
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cfeval:", err)
	os.Exit(1)
}
