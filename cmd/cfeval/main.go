// Command cfeval runs the matching evaluations of BENCHMARKS.md
// ("Matching"): LoCoMo evidence-turn recall and agent-session probes.
//
//	go run ./cmd/cfeval locomo [-file F] [-budget 5] [-n 0] [-combined] [-undated] [-uneven] [-reword] [-noisy [-noisy-parts P]] [-misses]
//	go run ./cmd/cfeval probes [-dir ingest/testdata/transcripts]
//	go run ./cmd/cfeval corpus [-dir ingest/testdata/transcripts/mini-swe-agent/corpus] [-per 0]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/contextfold/contextfold/internal/matcheval"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cfeval locomo|probes|corpus [flags]")
		os.Exit(1)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	file := fs.String("file", "internal/matcheval/testdata/locomo/locomo10.json.gz", "LoCoMo-schema JSON file (.gz allowed)")
	budget := fs.Float64("budget", 5, "hydration budget per question, in average dialog turns")
	n := fs.Int("n", 0, "conversations to run (0: all)")
	undated := fs.Bool("undated", false, "locomo: fold turns as \"Speaker: text\" without the session date (what a proxy sees)")
	uneven := fs.Bool("uneven", false, "locomo: fold each conversation perturbed toward real chat (turns split by sentence, runs merged, lower-cased; matcheval.LoCoMoOptions.Uneven)")
	combined := fs.Bool("combined", false, "locomo: ask every question of one store holding all the conversations (matcheval.Combine)")
	misses := fs.Bool("misses", false, "locomo: study the ranked scan's misses (why each evidence turn was left out; recall by question/evidence word overlap)")
	reword := fs.Bool("reword", false, "locomo: ask each question worded away from its evidence (every other word it shares with the evidence left out; matcheval.Reword)")
	noisy := fs.Bool("noisy", false, "locomo: fold each conversation perturbed toward real human chat (user handles for speaker labels, filler one-liners, typos, chat spelling; matcheval.LoCoMoOptions.Noisy)")
	noisyParts := fs.String("noisy-parts", "", "locomo -noisy: only these parts, comma-separated (handles,filler,typos,abbrev; default all; threads: another conversation's turns interleaved, only by name)")
	dir := fs.String("dir", "ingest/testdata/transcripts", "directory of agent transcripts (probes)")
	per := fs.Int("per", 0, "corpus: probes per session (0: all)")
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
		rep, err := matcheval.RunLoCoMoWith(data, tmp, matcheval.LoCoMoOptions{BudgetTurns: *budget, Limit: *n, Undated: *undated, Uneven: *uneven, Misses: *misses, Reword: *reword, Noisy: *noisy, NoisyParts: parts(*noisyParts)})
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
	case "corpus":
		d := *dir
		if d == "ingest/testdata/transcripts" {
			d = "ingest/testdata/transcripts/mini-swe-agent/corpus"
		}
		rep, err := matcheval.RunNeedleProbes(d, tmp, *per)
		if err != nil {
			fail(err)
		}
		fmt.Print(rep.Format(*verbose))
	default:
		fmt.Fprintln(os.Stderr, "usage: cfeval locomo|probes|corpus [flags]")
		os.Exit(1)
	}
}

// parts splits a comma-separated list (nil when empty).
func parts(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cfeval:", err)
	os.Exit(1)
}
