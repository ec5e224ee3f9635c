package match_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
)

// pipLog is a pip install of name==ver over an older version: the
// "Collecting name==ver" and "Requirement already satisfied … (from
// name==ver)" lines write the name and the version apart (two chunks),
// the result line "Successfully installed … name-ver …" joins them (one).
func pipLog(r *rand.Rand, name, ver string) (summary, raw string) {
	words := testgen.Vocabulary()
	var b strings.Builder
	b.WriteString("[tool observation bash]\n\n<returncode>0</returncode>\n<output>\n")
	fmt.Fprintf(&b, "Collecting %s==%s\n", name, ver)
	fmt.Fprintf(&b, "  Downloading %s-%s-py2.py3-none-any.whl.metadata (14 kB)\n", strings.ReplaceAll(name, "-", "_"), ver)
	var deps []string
	for k := range 24 {
		dep := words[r.IntN(len(words))] + words[r.IntN(len(words))]
		deps = append(deps, dep)
		fmt.Fprintf(&b, "Requirement already satisfied: %s>=1.%d in /opt/venv/lib/python3.9/site-packages (from %s==%s) (2.%d.%d)\n", dep, k, name, ver, r.IntN(30), r.IntN(9))
	}
	fmt.Fprintf(&b, "Downloading %s-%s-py2.py3-none-any.whl (36 kB)\n", strings.ReplaceAll(name, "-", "_"), ver)
	fmt.Fprintf(&b, "Installing collected packages: %s, %s\n", deps[0], name)
	fmt.Fprintf(&b, "  Attempting uninstall: %s\n    Found existing installation: %s 9.8.0\n    Uninstalling %s-9.8.0:\n      Successfully uninstalled %s-9.8.0\n", name, name, name, name)
	fmt.Fprintf(&b, "Successfully installed %s-1.6.0 %s-%s six-1.17.0\n</output>\n", deps[0], name, ver)
	return fmt.Sprintf("tool bash $ pip install %s==%s: Collecting %s==%s", name, ver, name, ver), b.String()
}

// Rule "a name and its version" (ranked analyser): a question quoting a
// package and the version it ended up at gets pip's "Successfully
// installed …" line in the focused install log, not only the Collecting
// and Requirement lines that write the two apart. Before the rule the
// result line held neither the version's term nor the name's, scored
// below two dozen requirement lines, and fell out of the window.
func TestNamedVersionInFocusedLog(t *testing.T) {
	words := testgen.Vocabulary()
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 11))
		name := words[r.IntN(len(words))] + "-" + words[r.IntN(len(words))]
		ver := fmt.Sprintf("%d.%d.%d", 1+r.IntN(9), 10+r.IntN(40), r.IntN(20))
		s := newStore(t, "")
		turns := testgen.New(seed).SmallTurns(0, 40)
		summary, raw := pipLog(r, name, ver)
		turns[6] = contextfold.Turn{StepID: 6, Summary: summary, RawContent: raw}
		if _, err := s.FoldBatch(turns); err != nil {
			t.Fatal(err)
		}
		q := fmt.Sprintf("after downgrading, which %s ended up installed - %s?", name, ver)
		want := fmt.Sprintf("%s-%s six-1.17.0", name, ver)
		res, err := match.Scan(s, q, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(steps(res.Selected), 6) {
			t.Fatalf("seed %d: %q selected %v, want the install log (step 6)", seed, q, steps(res.Selected))
		}
		h, err := match.Hydrate(s, 6, q, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Windows) == 0 {
			t.Fatalf("seed %d: the install log was not focused (%d tokens): the test no longer exercises the window", seed, h.TokenEstimate)
		}
		if !strings.Contains(h.Content, want) {
			t.Errorf("seed %d: %q: the focused install log lacks the result line %q:\n%s", seed, q, want, h.Content)
		}
	}
}

// "link" also looks for "href" (rule "tool and failure names"): a page a
// tool fetched lists its links as <a href=…>, without the word "link",
// and a question about "the links on the front page" finds it among
// turns that talk about pages and links in prose.
func TestLinksFindTheAnchors(t *testing.T) {
	s := newStore(t, "")
	turns := testgen.New(3).SmallTurns(0, 40)
	turns[3] = contextfold.Turn{StepID: 3, Summary: "tool $ curl http://web.example.test:8000: <html>", RawContent: "[tool observation]\n<html>\n  <head><title>Examples</title></head>\n  <body>\n    <ul>\n" +
		"      <li><a href=\"/cgi-bin/hello.pl\">Hello World</a></li>\n      <li><a href=\"/cgi-bin/forms.pl\">Forms</a></li>\n      <li><a href=\"/cgi-bin/upload.pl\">Uploads</a></li>\n    </ul>\n  </body>\n</html>\n"}
	turns[20] = contextfold.Turn{StepID: 20, Summary: "assistant: the upload page", RawContent: "The upload page posts the file to the server; the front page only links to it, nothing else stands out on that page."}
	turns[24] = contextfold.Turn{StepID: 24, Summary: "assistant: page source", RawContent: "I will check the page source of the form page next, and follow each link the server lists."}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	const q = "which links did the front page list?"
	res, err := match.Scan(s, q, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps(res.Selected), 3) {
		t.Fatalf("%q selected %v (dropped %v), want the fetched page (step 3)", q, steps(res.Selected), steps(res.Dropped))
	}
}

// A question names a failure by its kind ("why did it fail?", "what blew
// up?"); the output that answers it prints "error" ("Configuration error",
// "make: *** … Error 2"), never "fail" or "blow". Without the aliases the
// re-runs and the assistant's notes, which say "fail", outrank the failed
// run (rule "tool and failure names").
func TestFailuresFindTheError(t *testing.T) {
	s := newStore(t, "")
	turns := testgen.New(5).SmallTurns(0, 200)
	turns[3] = contextfold.Turn{StepID: 3, Summary: "assistant bash $ cd docs && make html: build the documentation", RawContent: "[assistant tool_call bash]\nBuild the documentation.\n```bash\ncd docs && make html\n```"}
	turns[4] = contextfold.Turn{StepID: 4, Summary: "tool bash $ cd docs && make html [error]: Configuration error:", RawContent: "[tool observation bash]\n<returncode>2</returncode>\nRunning Sphinx v4.1.0\n\nConfiguration error:\nThere is a programmable error in your configuration file:\n  File \"docs/conf.py\", line 65, in <module>\nNameError: name 'os' is not defined\nmake: *** [Makefile:20: html] Error 2\n"}
	for i := range 28 {
		step := 20 + 6*i
		turns[step] = contextfold.Turn{StepID: step, Summary: "assistant bash $ sed -i s/old/new/ docs/example.py && cd docs && make html: check the html again", RawContent: "[assistant tool_call bash]\nThe html build should not fail this time; if the html check fails again I will look at the html template.\n```bash\nsed -i s/old/new/ docs/example.py && cd docs && make html\n```"}
		turns[step+1] = contextfold.Turn{StepID: step + 1, Summary: "tool bash $ sed -i s/old/new/ docs/example.py && cd docs && make html: Running Sphinx v4.1.0", RawContent: fmt.Sprintf("[tool observation bash]\n<returncode>0</returncode>\nRunning Sphinx v4.1.0\nbuilding [html]: targets for %d source files\n%sbuild succeeded.\nThe HTML pages are in _build/html.\n", i+1, strings.Repeat("reading sources... [100%] index\nwriting output... [100%] index html\n", 40))}
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"why did the first make html fail?", "what blew up in the first html build?"} {
		res, err := match.Scan(s, q, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(steps(res.Selected), 4) {
			t.Errorf("%q selected %v (dropped %v), want the failed build (step 4)", q, steps(res.Selected), steps(res.Dropped))
		}
	}
}
