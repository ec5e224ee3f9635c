// Command cfeval runs the matching evaluations of BENCHMARKS.md
// ("Matching"): LoCoMo evidence-turn recall and agent-session probes.
//
//	go run ./cmd/cfeval locomo [-file F] [-budget 5] [-n 0] [-combined] [-undated] [-uneven] [-reword] [-noisy [-noisy-parts P]] [-misses]
//	go run ./cmd/cfeval probes [-dir ingest/testdata/transcripts]
//	go run ./cmd/cfeval corpus [-dir ingest/testdata/transcripts/mini-swe-agent/corpus] [-per 0]
//	go run ./cmd/cfeval questions [-q internal/matcheval/testdata/endq-questions.jsonl] [-dir ingest/testdata/transcripts] [-v]
//	go run ./cmd/cfeval paired -params B [-base A] [-file F] [-sets locomo,uneven,reword,noisy,combined] [-agents=true]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/contextfold/contextfold/internal/matcheval"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cfeval locomo|probes|corpus|paired|questions [flags]")
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
	qfile := fs.String("q", "internal/matcheval/testdata/endq-questions.jsonl", "questions: JSON-lines file of hand-written end-of-session questions (matcheval.Question), sessions relative to -dir; a glob (quoted: 'internal/matcheval/testdata/endq-*.jsonl') runs every set it matches and adds their total")
	verbose := fs.Bool("v", false, "print every probe that misses")
	qtypos := fs.Bool("typos", false, "questions: misspell one plain word of each question by one edit (matcheval.MisspellQuestions)")
	paramJSON := fs.String("params", "", `ranked scorer constants to override, as JSON (e.g. {"Ratio":0.2}); default ranked.DefaultParams()`)
	baseJSON := fs.String("base", "", `paired: the reference setting A, as -params (default ranked.DefaultParams()); -params is B`)
	sets := fs.String("sets", "locomo,uneven,reword,noisy,combined", "paired: the chat sets, comma-separated (locomo, uneven, reword, noisy, noisy-uneven, reword-uneven, combined, combined-noisy), all undated")
	agents := fs.Bool("agents", true, "paired: compare the agent probes and the corpus too")
	fs.Parse(os.Args[2:])
	if os.Args[1] == "paired" {
		if err := paired(*file, *baseJSON, *paramJSON, parts(*sets), *budget, *agents, *dir); err != nil {
			fail(err)
		}
		return
	}
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
	case "questions":
		files, err := filepath.Glob(*qfile)
		if err != nil || len(files) == 0 {
			files = []string{*qfile} // LoadQuestions names the problem
		}
		var all []matcheval.QuestionResult
		for _, f := range files {
			qs, err := matcheval.LoadQuestions(f)
			if err != nil {
				fail(err)
			}
			if *qtypos {
				qs = matcheval.MisspellQuestions(qs)
			}
			rs, err := matcheval.RunQuestions(qs, *dir, tmp)
			if err != nil {
				fail(err)
			}
			if len(files) > 1 {
				fmt.Printf("## %s\n\n", f)
			}
			fmt.Print(matcheval.FormatQuestions(rs, *verbose))
			all = append(all, rs...)
		}
		if len(files) > 1 {
			fmt.Printf("## all %d sets\n\n%s", len(files), matcheval.FormatQuestionsTotal(all))
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: cfeval locomo|probes|corpus|paired|questions [flags]")
		os.Exit(1)
	}
}

// params is ranked.DefaultParams() with the JSON's fields over it.
func params(js string) (ranked.Params, error) {
	p := ranked.DefaultParams()
	if js != "" {
		if err := json.Unmarshal([]byte(js), &p); err != nil {
			return p, err
		}
	}
	return p, nil
}

// paired runs every chat set and the agent sets under the ranked settings
// base (A) and change (B) and prints the paired comparison
// (matcheval.FormatPaired): per evidence turn, hit or miss under each.
func paired(file, baseJSON, changeJSON string, sets []string, budget float64, agents bool, dir string) error {
	pa, err := params(baseJSON)
	if err != nil {
		return fmt.Errorf("-base: %w", err)
	}
	pb, err := params(changeJSON)
	if err != nil {
		return fmt.Errorf("-params: %w", err)
	}
	data, err := matcheval.LoadLoCoMo(file)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cfeval-paired-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	run := 0
	// with runs f under p, in a directory of its own (the ranked index lives
	// in memory per store directory).
	with := func(p ranked.Params, f func(dir string) error) error {
		match.SetRankedParams(p)
		defer match.SetRankedParams(ranked.DefaultParams())
		run++
		d := filepath.Join(tmp, strconv.Itoa(run))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		defer os.RemoveAll(d)
		return f(d)
	}
	var chats []matcheval.PairedResult
	var pooled [][2][]matcheval.EvidenceOutcome
	for _, set := range sets {
		o := matcheval.LoCoMoOptions{BudgetTurns: budget, Undated: true}
		d := data
		for _, part := range strings.Split(set, "-") {
			switch part {
			case "locomo":
			case "uneven":
				o.Uneven = true
			case "reword":
				o.Reword = true
			case "noisy":
				o.Noisy = true
			case "combined":
				if d, err = matcheval.Combine(data); err != nil {
					return err
				}
			default:
				return fmt.Errorf("-sets: unknown set %q", set)
			}
		}
		var out [2][]matcheval.EvidenceOutcome
		for k, p := range []ranked.Params{pa, pb} {
			if err := with(p, func(dir string) error {
				rep, err := matcheval.RunLoCoMoWith(d, dir, o)
				if err == nil {
					out[k] = rep.Evidence
				}
				return err
			}); err != nil {
				return err
			}
		}
		r, err := matcheval.Paired(set, out[0], out[1])
		if err != nil {
			return err
		}
		chats = append(chats, r)
		pooled = append(pooled, out)
	}
	union := matcheval.PairedUnion(pooled)
	var ag []matcheval.PairedAgent
	if agents {
		for _, a := range []struct {
			name string
			run  func(tmp string) (*matcheval.ProbeReport, error)
		}{
			{"probes", func(t string) (*matcheval.ProbeReport, error) { return matcheval.RunProbes(dir, t) }},
			{"corpus", func(t string) (*matcheval.ProbeReport, error) {
				return matcheval.RunNeedleProbes(filepath.Join(dir, "mini-swe-agent", "corpus"), t, 0)
			}},
		} {
			var reps [2]*matcheval.ProbeReport
			for k, p := range []ranked.Params{pa, pb} {
				if err := with(p, func(t string) error {
					rep, err := a.run(t)
					reps[k] = rep
					return err
				}); err != nil {
					return err
				}
			}
			r, err := matcheval.PairAgent(a.name, reps[0], reps[1])
			if err != nil {
				return err
			}
			ag = append(ag, r)
		}
	}
	fmt.Printf("paired: A %s, B %s, budget %g average turns, undated\n\n", orDefault(baseJSON), orDefault(changeJSON), budget)
	fmt.Print(matcheval.FormatPaired(chats, union, ag))
	return nil
}

func orDefault(js string) string {
	if js == "" {
		return "defaults"
	}
	return js
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
