package ranked

import "strings"

// Rule "tool and failure names": a question names a tool by its role or a
// failure by its kind ("what did the linker say?", "where did it
// segfault?"), while the output that answers it names the program or the
// signal ("ld: error: …", "collect2: error: ld returned 1 exit status",
// "SIGSEGV"). A prompt's word listed here also looks for those names, as
// terms of KindAlias (weight kindWeight[KindAlias], in the word's group:
// the word and its aliases count once, by the best of them). Cold nodes
// are indexed as before; only the query grows.
//
// Each entry maps every word of its left side to every word of its right
// side (one direction; the reverse is its own entry where it holds: "ld"
// stands for the linker, "memory" does not stand for an OOM). Words are
// analysed like any text (stems, compounds), so "crashed" is "crash" and
// "golangci-lint" is one compound. The names are those tools and runtimes
// print in their own output, not a dictionary of synonyms.
var aliasTable = [][2]string{
	{"linker", "ld lld collect2 mold linking"},
	{"ld lld collect2", "linker"},
	{"compiler", "cc gcc clang rustc javac tsc"},
	{"gcc clang rustc javac", "compiler"},
	{"linter", "eslint ruff flake8 pylint golangci-lint clippy shellcheck rubocop"},
	{"typechecker typecheck", "mypy pyright tsc"},
	{"debugger", "gdb lldb delve pdb"},
	{"segfault segfaulted", "sigsegv segmentation"},
	{"sigsegv", "segfault segmentation"},
	{"oom", "memory oomkilled"},
	{"timeout", "timed deadline etimedout"},
	{"permission", "eacces eperm"},
	{"crash crashed", "panic traceback sigabrt fatal"},
	{"exception", "traceback"},
	// A failure is printed as an error ("Configuration error", "make: ***
	// [html] Error 2", "[error]" on a failed command's output), seldom as
	// "failed"; "blew up" is how a user says it failed.
	{"fail failed failing fails failure failures", "error"},
	{"blow blew blows", "fail error"},
	{"traceback", "exception"},
	{"database db", "postgres postgresql mysql sqlite psql"},
	{"container", "docker podman"},
	// A definition is written with its language's keyword: "where is
	// _discover_files defined?" is answered by "568: def _discover_files(…)".
	{"defined define defines definition declared declare declares declaration", "def func fn"},
	// A page lists its links as <a href="…">: "which links did the index
	// page list?" is answered by the fetched HTML, which never says "link".
	{"link links hyperlink hyperlinks", "href"},
}

// aliases maps a prompt term (its analysed text) to the terms of its
// aliases.
var aliases = func() map[string][]string {
	terms := func(words string) []string {
		var out []string
		analyzeInto(words, func(t Term) {
			if t.Kind == KindWord || t.Kind == KindCompound {
				out = append(out, t.Text)
			}
		})
		return out
	}
	m := map[string][]string{}
	for _, e := range aliasTable {
		to := terms(e[1])
		for _, from := range terms(e[0]) {
			for _, t := range to {
				if t != from && !contains(m[from], t) {
					m[from] = append(m[from], t)
				}
			}
		}
	}
	return m
}()

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// agentMarkup are the elements agents add to the human's message on their
// own (Claude Code's and Qwen Code's <system-reminder> with the date, the
// todo list or a hook's output; Codex's <environment_context> and
// <user_instructions>; the IDE's opened file and selection; Claude Code's
// record of a local command such as /compact, which it sends before the
// next question: its name, arguments, output and the caveat that it was no
// request): the agent's boilerplate, not the human's question.
var agentMarkup = []string{"system-reminder", "environment_context", "user_instructions", "ide_opened_file", "ide_selection",
	"local-command-caveat", "command-name", "command-message", "command-args", "local-command-stdout", "local-command-stderr"}

// stripAgentMarkup removes the agentMarkup elements (rule "the human's
// words"): a prompt is scanned for what the human asked, so that the
// date note an agent wraps around every prompt neither dilutes the
// question's information with words the archive never saw ("Tuesday",
// "authoritative") nor matches the earlier turns that carried the same
// note. An element without its closing tag is kept as it is.
func stripAgentMarkup(prompt string) string {
	if !strings.Contains(prompt, "<") {
		return prompt
	}
	for _, tag := range agentMarkup {
		open, close := "<"+tag, "</"+tag+">"
		for from := 0; from < len(prompt); {
			k := strings.Index(prompt[from:], open)
			if k < 0 {
				break
			}
			i := from + k
			// "<tag>" or "<tag attr…>", not "<tagger>".
			if rest := prompt[i+len(open):]; rest == "" || (rest[0] != '>' && rest[0] != ' ' && rest[0] != '\n') {
				from = i + len(open)
				continue
			}
			j := strings.Index(prompt[i:], close)
			if j < 0 {
				break
			}
			prompt = prompt[:i] + prompt[i+j+len(close):]
			from = i
		}
	}
	return prompt
}
