package match_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// needleCase is one planted needle: the token a prompt quotes, how the
// prompt quotes it, and the line of the tool output that holds it.
type needleCase struct {
	class, token, quoted, line string
	// decoys are nodes planted after the output (the first more than two
	// steps after it, rule "intent ownership"), each holding a part of the
	// token, the token in another case, or the token in its summary only.
	decoys []contextfold.Turn
}

// decoy is a planted node of needleCase.decoys (its StepID is set when
// planted).
func decoy(summary, raw string) contextfold.Turn {
	return contextfold.Turn{Summary: summary, RawContent: raw}
}

// decoyLog is a tool output of lines lines, every one holding line's
// words (so it is longer than the planted output, and fuller).
func decoyLog(lines int, line string) string {
	var b strings.Builder
	b.WriteString("[tool observation bash]\n")
	for l := 0; l < lines; l++ {
		fmt.Fprintf(&b, "%s (entry %d)\n", line, l)
	}
	return b.String()
}

// needleCases generates one needle of every class (rule "exact needles"),
// distinct per seed: a path, a URL, a version, a decimal, a timestamp
// fragment, a hash, an e-mail, a slash pair of common words, snake_case,
// CamelCase and kebab identifiers, a quoted string, and a 0x address quoted
// without its 0x or without its 0. Then the quoted strings and tokens the
// corpus probes missed, each class with the decoys that made it miss: a
// quoted line of code whose first run (self.<w>, child.get) is in more
// than five nodes; a quoted regular expression (a.py|b.py) whose parts
// are; a quoted phrase whose identifier a newer node holds without the
// phrase; a quoted word or a CamelCase token that a longer, newer node
// writes in another case; a path a longer node names in its summary only;
// a quoted string the nodes write in lower case and the prompt in Turkish
// capitals (İSTANBUL … BAĞLANTISI); a URL the nodes write bare and the
// prompt with its scheme, "www." and a trailing slash.
func needleCases(seed uint64) []needleCase {
	r := rand.New(rand.NewPCG(seed, 7))
	syl := []string{"quor", "van", "tel", "mib", "zor", "pek", "lun", "dras", "wim", "sol"}
	w := func() string { return syl[r.IntN(len(syl))] + syl[r.IntN(len(syl))] + syl[r.IntN(len(syl))] }
	n := func(k int) int { return r.IntN(k) }
	cases := []needleCase{
		{class: "path", token: fmt.Sprintf("internal/%s/%s_rates.go", w(), w())},
		{class: "url", token: fmt.Sprintf("api.%s.fi/protocols", w())},
		{class: "version", token: fmt.Sprintf("%d.%d.%d", 3+n(5), 10+n(80), 1+n(9))},
		{class: "decimal", token: fmt.Sprintf("%d.%d", 51+n(40), 1+n(9))},
		{class: "timestamp", token: fmt.Sprintf("%02d.%06dZ", 10+n(49), 100000+n(899999))},
		{class: "hash", token: fmt.Sprintf("%x", 0xa0000000+uint64(r.Uint32()>>4))},
		{class: "email", token: fmt.Sprintf("%s.%s@example.org", w(), w())},
		{class: "slash", token: "payment/webhook"},
		{class: "snake", token: fmt.Sprintf("settle_%s_batch", w())},
		{class: "camel", token: fmt.Sprintf("Ledger%sSync", strings.Title(w()))},
		{class: "kebab", token: fmt.Sprintf("ledger-%s-sync", w())},
		{class: "quoted", token: fmt.Sprintf("connection reset by %s peer", w())},
		// A pointer printed 0x…, asked about by its digits alone or with
		// the 0 lost (a tokenizer starting identifiers at a letter).
		{class: "hex-address", token: fmt.Sprintf("0x7f%02x%08x", 16+n(200), r.Uint32())},
		{class: "hex-address-x", token: fmt.Sprintf("0x55%02x%08x", 16+n(200), r.Uint32())},
	}
	a, b, c, d, e, f, g := w(), w(), w(), w(), w(), w(), w()
	common := func(lines ...string) []contextfold.Turn {
		var out []contextfold.Turn
		for i := 0; i < 7; i++ {
			out = append(out, decoy("tool: grep output", decoyLog(1, lines[i%len(lines)])))
		}
		return out
	}
	cases = append(cases,
		needleCase{class: "quoted-code", token: fmt.Sprintf("self.%s =", a),
			decoys: common(fmt.Sprintf("x = self.%s.run()", a), fmt.Sprintf("return self.%s", a))},
		needleCase{class: "quoted-escape", token: fmt.Sprintf("%s = child.get('%s')\\n", b, b),
			decoys: common(fmt.Sprintf("%s = child.get('%s')", b, b), fmt.Sprintf("node.%s = child.get('%s') or None", b, b))},
		needleCase{class: "quoted-regex", token: fmt.Sprintf("%s.py|%s.py", c, d),
			decoys: common(fmt.Sprintf("sympy/physics/%s.py sympy/physics/%s.py", c, d))},
		needleCase{class: "quoted-part", token: fmt.Sprintf("def set_%s", e),
			decoys: []contextfold.Turn{decoy("tool: grep output", decoyLog(3, fmt.Sprintf("src/app/view.py:12: self.set_%s(True)  # def unchanged", e)))}},
		needleCase{class: "quoted-case", token: strings.ToUpper(f[:1]) + f[1:] + "ly",
			decoys: []contextfold.Turn{decoy("tool: docs", decoyLog(120, fmt.Sprintf("documented %sly in the %s check", f, f)))}},
		needleCase{class: "camel-case", token: fmt.Sprintf("Type%sVar", strings.Title(g)),
			decoys: []contextfold.Turn{decoy("tool: find", decoyLog(120, fmt.Sprintf("Visiting ./doc/messages/t/type%svar-name-mismatch", g)))}},
		needleCase{class: "summary-only", token: fmt.Sprintf("lib/%s/base_%s.py", a, b),
			decoys: []contextfold.Turn{decoy(fmt.Sprintf("tool bash $ cat lib/%s/base_%s.py: exit 0", a, b), decoyLog(120, "class BaseEstimator: get_params set_params clone"))}},
		needleCase{class: "unicode-case", token: fmt.Sprintf("istanbul %s ba\u011flant\u0131s\u0131 koptu", c)},
		needleCase{class: "url-scheme", token: fmt.Sprintf("api.%s.fi/v2/pools", d)},
	)
	for i := range cases {
		c := &cases[i]
		c.quoted = "`" + c.token + "`"
		switch c.class {
		case "quoted":
			c.quoted = `"` + c.token + `"`
		case "hex-address":
			c.quoted = c.token[2:]
		case "hex-address-x":
			c.quoted = c.token[1:]
		case "quoted-code", "quoted-escape", "quoted-regex", "quoted-part", "quoted-case":
			c.quoted = `"` + c.token + `"`
		case "url-scheme":
			// Asked with the scheme, "www." and a trailing slash the
			// archive does not write.
			c.quoted = "`https://www." + c.token + "/`"
		case "unicode-case":
			// Written lower-case, asked in Turkish capitals: İ folds to i
			// (not i + U+0307), I to the dotless ı's fold.
			c.quoted = `"` + strings.ToUpper(strings.Replace(c.token, "i", "\u0130", 1)) + `"`
		}
		c.line = fmt.Sprintf("src/app/handler.go:%d: observed %s in the %s check (value %d)", 100+i, c.token, c.class, 7000+i)
	}
	return cases
}

// plantNeedles returns n generated turns (testgen.SmallTurn) with each
// case planted as a tool call naming the token, its output (a long log,
// the token on one line in its middle) and the assistant's restatement,
// three consecutive steps; it returns the output steps.
func plantNeedles(g testgen.Gen, n int, cases []needleCase) ([]contextfold.Turn, []int) {
	turns := g.SmallTurns(0, n)
	outputs := make([]int, len(cases))
	for i, c := range cases {
		base := 10 + i*(n-20)/len(cases)
		var log strings.Builder
		for l := 0; l < 80; l++ {
			if l == 40 {
				log.WriteString(c.line + "\n")
				continue
			}
			fmt.Fprintf(&log, "src/app/worker_%d.go:%d: ok scheduler tick %d drained %d items\n", l%7, 10+l, l, 3*l)
		}
		turns[base] = contextfold.Turn{StepID: base, Summary: "assistant: grep for " + c.token,
			RawContent: fmt.Sprintf("[assistant tool_call bash]\n$ grep -rn '%s' src/app\n", c.token)}
		turns[base+1] = contextfold.Turn{StepID: base + 1, Summary: "tool: grep output (80 lines)", RawContent: "[tool observation bash]\n" + log.String()}
		turns[base+2] = contextfold.Turn{StepID: base + 2, Summary: "assistant: " + c.token + " is in the handler check",
			RawContent: fmt.Sprintf("The grep shows %s in the %s check of the handler.\n", c.token, c.class)}
		for k, d := range c.decoys {
			d.StepID = base + 4 + k
			turns[base+4+k] = d
		}
		outputs[i] = base + 1
	}
	return turns, outputs
}

// checkNeedles asks, for every case, a question quoting its token: the
// tool output holding it is the first node hydrated (ahead of the call
// and the restatement that also hold it, and of any broader match), and
// its hydrated content holds the token's line.
func checkNeedles(t *testing.T, s *contextfold.Store, cases []needleCase, outputs []int) {
	t.Helper()
	for i, c := range cases {
		prompt := fmt.Sprintf("Going back to the start: what did we find about %s?", c.quoted)
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Selected) == 0 || res.Selected[0].StepID != outputs[i] {
			var got []int
			for _, p := range res.Selected {
				got = append(got, p.StepID)
			}
			t.Errorf("%s %s: hydrated steps %v, want the output %d first", c.class, c.quoted, got, outputs[i])
			continue
		}
		h, err := match.Hydrate(s, outputs[i], prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.Content, c.line) {
			t.Errorf("%s %s: the hydrated output lacks the line %q:\n%s", c.class, c.quoted, c.line, h.Content)
		}
	}
}

// Rule "exact needles" over every class on a store of 1,000 generated
// nodes, with a per-call cap that forces focused hydration of the 80-line
// output. Before the rule: the path, version, decimal, timestamp, slash
// pair and quoted string cases hydrated the call or the restatement first,
// or nothing.
func TestExactNeedlesEveryClass(t *testing.T) {
	testNeedles(t, 1000)
}

// The same at 100,000 nodes (building the store takes minutes): run with
// CONTEXTFOLD_BENCH_LARGE=1, as the scale benchmarks.
func TestExactNeedlesEveryClassLarge(t *testing.T) {
	skipUnlessLarge(t)
	testNeedles(t, 100_000)
}

func testNeedles(t *testing.T, n int) {
	cases := needleCases(uint64(n))
	turns, outputs := plantNeedles(testgen.New(uint64(n)), n, cases)
	s := foldedAgentStore(t, turns)
	checkNeedles(t, s, cases, outputs)
}

// Needles: the tokens a prompt quotes or writes with structure, longest
// first; plain words, years and apostrophes are not needles.
func TestNeedlesOfAPrompt(t *testing.T) {
	cases := map[string][]string{
		"what did api.llama.fi/protocols return?":                {"api.llama.fi/protocols"},
		"was it 3.25.3 or 75.7?":                                 {"3.25.3", "75.7"},
		`the "connection reset" error, and it's in team/feature`: {"connection reset", "team/feature"},
		"what about `x`, in 2023, for the build?":                nil,
		"look at HandleFunc and settle_ledger, port 5433":        {"settle_ledger", "HandleFunc", "5433"},
		"see https://www.api.llama.fi/protocols?":                {"https://www.api.llama.fi/protocols", "api.llama.fi/protocols"},
	}
	for prompt, want := range cases {
		got := ranked.Needles(prompt)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("Needles(%q) = %q, want %q", prompt, got, want)
		}
	}
}

// Rule "the output, not the echo" without a needle: a natural question
// whose words the command, its output and the assistant's restatement all
// hold hydrates the output first, and the output is what the budget holds.
// Before the rule the restatement (the shortest, so the best
// length-normalised score) came first.
func TestOutputBeforeEcho(t *testing.T) {
	s := newStore(t, `{"max_rehydration_tokens_per_call": 400, "max_rehydration_tokens_per_turn": 450}`)
	turns := testgen.New(3).SmallTurns(0, 60)
	var log strings.Builder
	for l := 0; l < 40; l++ {
		fmt.Fprintf(&log, "tests/ledger/test_case_%d ... ok\n", l)
	}
	log.WriteString("FAILED tests/ledger: reconciliation drift of 17 cents in the quarterly ledger totals\n")
	turns[20] = contextfold.Turn{StepID: 20, Summary: "assistant: run the ledger reconciliation tests",
		RawContent: "$ pytest tests/ledger -k reconciliation  # quarterly ledger totals drift check\n"}
	turns[21] = contextfold.Turn{StepID: 21, Summary: "tool: pytest output", RawContent: log.String()}
	turns[22] = contextfold.Turn{StepID: 22, Summary: "assistant: the reconciliation fails",
		RawContent: "The quarterly ledger reconciliation shows a drift in the totals.\n"}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	res, err := match.Scan(s, "what drift did the quarterly ledger reconciliation show in the totals?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Selected) == 0 || res.Selected[0].StepID != 21 {
		var got []int
		for _, p := range res.Selected {
			got = append(got, p.StepID)
		}
		t.Fatalf("hydrated %v, want the output 21 first", got)
	}
}

// Intent ownership (CONF-13) holds for needles: of two nodes quoting the
// same setting, the older one, updated by the newer one many steps later,
// never comes first nor stands in for it; it follows the newer one when
// the budget holds both (the token is the user's, and the older node may
// be what they ask about: TestExactNeedlesHeldAgainEveryClass).
func TestNeedleKeepsIntentOwnership(t *testing.T) {
	s := newStore(t, "")
	turns := testgen.New(5).SmallTurns(0, 60)
	turns[5] = contextfold.Turn{StepID: 5, Summary: "config: db_port_main", RawContent: "set db_port_main = 5433 for PostgreSQL\n"}
	turns[40] = contextfold.Turn{StepID: 40, Summary: "config: db_port_main changed", RawContent: "set db_port_main = 5434 for PostgreSQL (5433 was taken)\n"}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	res, err := match.Scan(s, "what is `db_port_main` set to for PostgreSQL?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, p := range res.Selected {
		got = append(got, p.StepID)
	}
	if len(got) == 0 || got[0] != 40 || slices.Index(got, 5) >= 0 && slices.Index(got, 5) < slices.Index(got, 40) {
		t.Fatalf("hydrated %v, want 40 first and the superseded 5 only after it", got)
	}
}

// Recall (ranked) puts the needle nodes first, as the scan hydrates them:
// for a question quoting a planted token, the first hit is the tool output
// holding it. Before, recall listed by score and coverage only (the call
// or the restatement, or broader matches, came first for most classes).
func TestRecallPutsNeedlesFirst(t *testing.T) {
	s := newStore(t, `{"matching": "ranked"}`)
	cases := needleCases(11)
	turns, outputs := plantNeedles(testgen.New(11), 1000, cases)
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		prompt := fmt.Sprintf("Going back to the start: what did we find about %s?", c.quoted)
		hits, err := match.Recall(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].StepID != outputs[i] || len(res.Selected) == 0 || hits[0].StepID != res.Selected[0].StepID {
			var got []int
			for _, h := range hits {
				got = append(got, h.StepID)
			}
			t.Errorf("%s %s: recall %v, want the output %d first, as the scan", c.class, c.quoted, got, outputs[i])
		}
		// Labels stay chronological: the restatement after the output is
		// the newest node holding the token (when no decoy after it holds
		// it in another case or in its summary).
		for _, h := range hits {
			if len(c.decoys) > 0 {
				break
			}
			if h.StepID == outputs[i]+1 && h.Status != contextfold.StatusLatest {
				t.Errorf("%s: the newest node holding the token (step %d) is labelled %q", c.class, h.StepID, h.Status)
			}
		}
	}
}

// A quoted phrase of common words ("x + Poly(x):") is a needle when a
// node holds it literally, even when more nodes than the first look-up's
// bound hold every one of its words: a sympy session prints x and Poly(x)
// in hundreds of outputs and quotes one line of one of them.
func TestQuotedPhraseOfCommonWords(t *testing.T) {
	s := newStore(t, `{"max_rehydration_tokens_per_call": 2000, "max_rehydration_tokens_per_turn": 4000, "matching": "ranked"}`)
	const n, answer = 200, 117
	turns := make([]contextfold.Turn, n)
	for i := range turns {
		var b strings.Builder
		for j := range 20 {
			fmt.Fprintf(&b, "line %d: print(x, Poly(x)) gives %d for sample %d\n", j, i*j%97, i)
		}
		if i == answer {
			b.WriteString("print(\"x + Poly(x):\", x + Poly(x))\n")
		}
		turns[i] = contextfold.Turn{StepID: i, Summary: fmt.Sprintf("tool: poly run %d", i), RawContent: b.String()}
	}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	res, err := match.Scan(s, `Where did "x + Poly(x):" come from, and what was around it?`, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Selected) == 0 || res.Selected[0].StepID != answer {
		var got []int
		for _, p := range res.Selected {
			got = append(got, p.StepID)
		}
		t.Fatalf("selected %v, want step %d first", got, answer)
	}
}

// Rule "the human's words" holds for needles: the tokens of the notes an
// agent wraps around every prompt (Claude Code's todo reminder naming
// TodoWrite, a CLAUDE.md excerpt naming a path, Codex's environment
// context naming the working directory) are not needles. Before, every
// question wrapped in them hydrated the nodes holding the notes' tokens
// first — four different questions, the same nodes — and the token the
// human quoted came after them or over the budget.
func TestNeedlesIgnoreAgentMarkup(t *testing.T) {
	s := newStore(t, agentPolicy)
	cases := needleCases(21)[:12]
	turns, outputs := plantNeedles(testgen.New(21), 1000, cases)
	// The notes' tokens, each in a long node of its own.
	for i, line := range []string{"TodoWrite tool call: 3 todos", "cat /home/dev/work/app/CLAUDE.md: project instructions", "cwd /home/dev/work/app/services/ledger-api"} {
		st := 990 - i
		turns[st] = contextfold.Turn{StepID: st, Summary: "tool: note " + line, RawContent: decoyLog(150, line)}
	}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	const notes = "<system-reminder>\nThis is a reminder that your todo list is currently empty. DO NOT mention this to the user explicitly. If you are working on tasks that would benefit from a todo list please use the TodoWrite tool to create one.\n</system-reminder>\n" +
		"<system-reminder>\nContents of /home/dev/work/app/CLAUDE.md (project instructions, checked into the codebase):\n- run make test before committing\n</system-reminder>\n" +
		"<environment_context>\n  <cwd>/home/dev/work/app/services/ledger-api</cwd>\n  <shell>bash</shell>\n</environment_context>\n"
	for i, c := range cases {
		prompt := notes + fmt.Sprintf("Going back to the start: what did we find about %s?", c.quoted)
		if got := ranked.Needles(prompt); !slices.ContainsFunc(got, func(n string) bool { return strings.Contains(c.quoted, n) }) || slices.Contains(got, "TodoWrite") {
			t.Errorf("%s: needles %q", c.class, got)
		}
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if got := steps(res.Selected); len(got) == 0 || got[0] != outputs[i] || slices.ContainsFunc(got, func(st int) bool { return st >= 988 }) {
			t.Errorf("%s %s: hydrated %v, want the output %d first and no node of the notes", c.class, c.quoted, got, outputs[i])
		}
	}
}

// BenchmarkNeedleScan is the ranked scan of a question quoting a needle of
// every class in turn (needleCases) on a store of 10,000 generated nodes:
// the needle stage's look-ups and reads (at most maxNeedleNodes holders a
// needle; more for a phrase whose words are common).
func BenchmarkNeedleScan(b *testing.B) {
	s, err := contextfold.Open(b.TempDir(), contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(s.Dir()+"/store_settings.json", []byte(`{"matching": "ranked"}`), 0o644); err != nil {
		b.Fatal(err)
	}
	cases := needleCases(10_000)
	turns, _ := plantNeedles(testgen.New(10_000), 10_000, cases)
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		b.Fatal(err)
	}
	prompts := make([]string, len(cases))
	for i, c := range cases {
		prompts[i] = fmt.Sprintf("Going back to the start: what did we find about %s?", c.quoted)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := match.Scan(s, prompts[i%len(prompts)], match.Ranked); err != nil {
			b.Fatal(err)
		}
	}
}

// "The matched lines are inside the hydrated window": a focused hydration
// cuts a long line (minified JSON, a one-line log) into pieces of 400 code
// points, and a needle that a cut splits must still be whole in the
// window. Before, neither piece held the needle literally, so neither was
// raised, and the window showed other pieces: 5 of the 14 offsets around
// the first cut lost the token.
func TestNeedleSplitByLongLineCut(t *testing.T) {
	s := newStore(t, agentPolicy)
	turns := testgen.New(3).SmallTurns(0, 120)
	var b strings.Builder
	for b.Len() < 8000 {
		fmt.Fprintf(&b, `{"k%d":"v%d"},`, b.Len(), b.Len())
	}
	blob := b.String()
	want := map[int]string{}
	for k, off := 0, 380; off < 420; k, off = k+1, off+3 {
		tok := fmt.Sprintf("settle_%s_batch", strings.Repeat(string(rune('a'+k)), 3))
		st := 10 + 7*k
		turns[st] = contextfold.Turn{StepID: st, Summary: "tool: minified response",
			RawContent: blob[:off] + " " + tok + " " + blob[off:] + "\n"}
		want[st] = tok
	}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	for st, tok := range want {
		prompt := "what did the response say about `" + tok + "`?"
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Selected) == 0 || res.Selected[0].StepID != st {
			t.Errorf("%s: selected %v, want %d first", tok, steps(res.Selected), st)
			continue
		}
		h, err := match.Hydrate(s, st, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Truncated || !strings.Contains(h.Content, tok) {
			t.Errorf("%s: the focused hydration (truncated %v) lacks the token: %.200q", tok, h.Truncated, h.Content)
		}
	}
}

// The needle stage decodes a node only when its bytes may hold the needle
// (a node read to verify a needle that it does not hold is searched, not
// decoded), and that changes no scan: every pick, its order and its
// reasons, and every recall hit, are the same with the byte check off.
// The nodes that hold a quoted phrase are found whatever escapes their
// file writes it with (a slash as \/, an underscore as \u005f: valid
// JSON another writer may produce), up to case, or in the summary only; a
// torn file is judged as before; the 30 nodes holding the phrase's words
// but not the phrase are not decoded. The same with a needle buffer too
// small for most nodes.
func TestNeedleByteCheckSameScans(t *testing.T) {
	s := newStore(t, `{"matching": "ranked"}`)
	g := testgen.New(77)
	turns := g.SmallTurns(0, 400)
	plant := func(step int, summary, raw string) {
		turns[step] = contextfold.Turn{StepID: step, Summary: summary, RawContent: raw}
	}
	plant(40, "tool: router log", "[tool observation bash]\nwarn: the route/quill failed twice during the drain\nok\n")
	plant(80, "tool: ledger log", "[tool observation bash]\nerror: ledger_sync stalled again at offset 7\n")
	plant(120, "tool: sync log", "[tool observation bash]\nLEDGER-Sync Stalled Twice at the boundary\n")
	plant(160, "assistant: the quill_merge mirror drifted", "[assistant]\nI checked the mirrors and the merges.\n")
	plant(200, "tool: torn", "[tool observation bash]\nthe route/quill failed twice here too\n")
	// Decoys: the phrases' words in another order (candidates to read).
	for k := 0; k < 30; k++ {
		plant(240+k, "tool: grep output", fmt.Sprintf("[tool observation bash]\ntwice %d the quill failed on route; again stalled sync ledger drifted mirror merge quill (entry %d)\n", k, k))
	}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		t.Fatal(err)
	}
	rewrite := func(step int, edit func([]byte) []byte) {
		path := s.NodePath(step)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, edit(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(40, func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "/", `\/`)) })
	rewrite(80, func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "_", `\u005f`)) })
	rewrite(200, func(b []byte) []byte { return b[:len(b)/2] })

	prompts := []string{
		`why did "route/quill failed twice" happen?`,
		`what does "ledger_sync stalled again" mean?`,
		`and "ledger-sync stalled twice"?`,
		"what about quill_merge?",
	}
	for i := 0; i < 40; i++ {
		prompts = append(prompts, g.Prompt(i))
	}
	type outcome struct {
		scan   contextfold.ScanResult
		recall []contextfold.RecallHit
	}
	run := func(check bool) ([]outcome, int64) {
		defer match.SetNeedleByteCheck(match.SetNeedleByteCheck(check))
		before := match.NeedleDecodes()
		var out []outcome
		for _, p := range prompts {
			res, err := match.Scan(s, p, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			hits, err := match.Recall(s, p, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, outcome{*res, hits})
		}
		return out, match.NeedleDecodes() - before
	}
	fast, fastDecodes := run(true)
	full, fullDecodes := run(false)
	for i, p := range prompts {
		if !reflect.DeepEqual(fast[i], full[i]) {
			t.Errorf("%q: with the byte check\n%+v\nwithout\n%+v", p, fast[i], full[i])
		}
	}
	// The nodes' bytes are read into a buffer reused scan after scan;
	// with one that holds a node or two (the rest read each into its own)
	// nothing changes either.
	was := match.SetNeedleBuf(700)
	small, _ := run(true)
	match.SetNeedleBuf(was)
	for i, p := range prompts {
		if !reflect.DeepEqual(small[i], full[i]) {
			t.Errorf("%q: with a small buffer\n%+v\nwithout the byte check\n%+v", p, small[i], full[i])
		}
	}
	// The needle stage reads and checks its nodes beside the ranked scan;
	// after it, the same.
	beside := match.SetNeedlesBeside(false)
	after, _ := run(true)
	match.SetNeedlesBeside(beside)
	for i, p := range prompts {
		if !reflect.DeepEqual(after[i], fast[i]) {
			t.Errorf("%q: the needle stage after the scan\n%+v\nbeside it\n%+v", p, after[i], fast[i])
		}
	}
	for i, want := range []int{40, 80, 120, 160} {
		if sel := fast[i].scan.Selected; len(sel) == 0 || sel[0].StepID != want {
			t.Errorf("%q: selected %v, want step %d first", prompts[i], steps(sel), want)
		}
	}
	// The first prompt reads the 32 nodes holding its words and decodes
	// only step 40 (its bytes write the slash as \/) and the torn one.
	defer match.SetNeedleByteCheck(match.SetNeedleByteCheck(true))
	d0 := match.NeedleDecodes()
	if _, err := match.Scan(s, prompts[0], match.Ranked); err != nil {
		t.Fatal(err)
	}
	if n := match.NeedleDecodes() - d0; n > 2 {
		t.Errorf("the phrase's scan decoded %d nodes, want at most 2 (the holder and the torn node)", n)
	}
	if fastDecodes >= fullDecodes {
		t.Errorf("decoded %d nodes with the byte check, %d without: the check saved nothing", fastDecodes, fullDecodes)
	}
	t.Logf("nodes decoded by the needle stage: %d with the byte check, %d without", fastDecodes, fullDecodes)
}

// BenchmarkNeedleVerify is the needle stage's verification on a store of
// 2,000 generated nodes where 200 nodes hold every word of a quoted phrase
// but not the phrase, and one holds it: a scan reads the 201 candidates,
// and decodes only those whose bytes may hold the phrase.
func BenchmarkNeedleVerify(b *testing.B) {
	s, err := contextfold.Open(b.TempDir(), contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		b.Fatal(err)
	}
	turns := testgen.New(5).SmallTurns(0, 2000)
	for k := 0; k < 200; k++ {
		st := 100 + 9*k
		turns[st] = contextfold.Turn{StepID: st, Summary: "tool: drain log",
			RawContent: decoyLog(30, fmt.Sprintf("the quill drain on route %d failed twice", k))}
	}
	turns[1950] = contextfold.Turn{StepID: 1950, Summary: "tool: router log", RawContent: "warn: the route quill drain failed twice\n"}
	if err := match.FoldBatch(s, match.Ranked, turns); err != nil {
		b.Fatal(err)
	}
	prompt := `why did "route quill drain failed twice" happen?`
	b.ResetTimer()
	for b.Loop() {
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Selected) == 0 || res.Selected[0].StepID != 1950 {
			b.Fatalf("selected %v, want step 1950 first", steps(res.Selected))
		}
	}
}
