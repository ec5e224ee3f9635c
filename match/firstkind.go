package match

import (
	"strings"

	"github.com/contextfold/contextfold/match/ranked"
)

// Rule "the first of its kind" (ranked.Params.FirstOfKind), step 3 of the
// ranked scan after rule "the first run first", for a prompt that asks for
// the first (ranked.AsksFirst) and names what ran: "the first curl of the
// index page", "why did the first make html fail", "in the first repro
// run". A session's first run of a program is seldom written as its
// re-runs are (`curl http://host:8000`, then `curl -X POST -F … http://
// host:8000/cgi-bin/…`; `cd reproduction && make html`, then `sed -i … &&
// cd reproduction && make html && grep …`; `python reproduce.py`, then
// `python reproduce_v2.py`), so rule "the first run first", which orders
// the runs of one command, leaves them where the scan ranked them: the
// re-runs, whose notes hold more of the question's words, over the first.
// Here the picks whose command runs a program the prompt names — calls and
// outputs alike, so that a call brings its own output after it — take
// the places those picks held, oldest step first. None is added or
// dropped; the per-turn budget admits them in the new order. A prompt that
// names no program of the picks, or of one pick only, is left as it was.

// firstOfKind orders picks as rule "the first of its kind" says; prompt is
// the scan's prompt. Deterministic; picks is not modified.
func firstOfKind(picks []ranked.Pick, prompt string) []ranked.Pick {
	var words []string // the prompt's words, stop words aside
	for _, t := range ranked.Analyze(prompt) {
		if t.Kind == ranked.KindWord && !ranked.IsStopWord(t.Text) {
			words = append(words, t.Text)
		}
	}
	var at []int // the places of the picks of the kind, in order
	for i, p := range picks {
		if namesProgram(words, programsOf(ranked.CommandOf(p.Summary))) {
			at = append(at, i)
		}
	}
	if len(at) < 2 {
		return picks
	}
	return oldestFirstAt(picks, at)
}

// namesProgram reports whether a word of words (analysed prompt words) is
// a term of one of programs: the same term, or, for a word of four
// letters or more, the start of one ("repro" of "reproduce_issue.py").
func namesProgram(words, programs []string) bool {
	for _, prog := range programs {
		for _, t := range ranked.Analyze(prog) {
			for _, w := range words {
				if t.Text == w || len(w) >= 4 && strings.HasPrefix(t.Text, w) {
					return true
				}
			}
		}
	}
	return false
}

// programsOf returns the programs a shell command line runs, one for each
// command of it (split at && || ; | and newlines), in order: the program's
// name without its directory, and for a runner (runners) the script,
// target or subcommand it runs: "cd docs && make html" → ["make html"],
// "python reproduce_issue.py --x" → ["python reproduce_issue.py"],
// "curl -s http://…" → ["curl"]. Environment assignments and the
// wrappers sudo, env, time and timeout N are passed over; cd, export and
// source run nothing of interest. nil for "".
func programsOf(cmd string) []string {
	var progs []string
	for _, part := range strings.FieldsFunc(commandSeparators.Replace(cmd), func(r rune) bool { return r == ';' || r == '\n' }) {
		f := unwrapped(strings.Fields(part))
		if len(f) == 0 || f[0] == "cd" || f[0] == "export" || f[0] == "source" {
			continue
		}
		prog := f[0][strings.LastIndexByte(f[0], '/')+1:]
		if runners[prog] {
			for _, w := range f[1:] {
				if strings.HasPrefix(w, "-") {
					continue
				}
				if !strings.ContainsAny(w, "\"'$<>|`") {
					prog += " " + w
				}
				break
			}
		}
		progs = append(progs, prog)
	}
	return progs
}

// unwrapped returns the words of a command from its program on:
// environment assignments (NAME=value) and the wrappers sudo, env, time
// and timeout N passed over.
func unwrapped(f []string) []string {
	for len(f) > 0 {
		switch {
		case f[0] == "timeout" && len(f) > 1:
			f = f[2:]
		case f[0] == "sudo" || f[0] == "env" || f[0] == "time" || strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-"):
			f = f[1:]
		default:
			return f
		}
	}
	return f
}

// commandSeparators turns the separators of a command line into ";".
var commandSeparators = strings.NewReplacer("&&", ";", "||", ";", "|", ";")

// runners are programs whose first argument names what they run: a
// script, a make target, a subcommand (python reproduce.py, make html,
// go test, npm run).
var runners = map[string]bool{
	"python": true, "python3": true, "python2": true, "node": true, "deno": true, "bun": true,
	"bash": true, "sh": true, "zsh": true, "ruby": true, "perl": true, "java": true,
	"go": true, "cargo": true, "make": true, "npm": true, "npx": true, "yarn": true, "pnpm": true,
	"uv": true, "poetry": true, "dotnet": true,
}
