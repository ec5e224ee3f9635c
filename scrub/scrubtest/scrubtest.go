// Package scrubtest builds sample credentials for tests: one token for every
// regular-expression rule the scrubber runs, generated at run time from the
// rule's own expression (so no secret-looking literal is ever committed),
// and the punctuation a token may sit next to in real text (a file name, a
// query string, URL user-info, a CSV field, a call, JSON-escaped text).
//
// Tests cross Samples with Before and After and check that no secret
// survives a write path; see scrub's TestEveryRuleEveryNeighbour and the
// store-level tests that search every byte written.
package scrubtest

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"unicode"

	"github.com/contextfold/contextfold/scrub"
)

// Sample is a token of one rule with the context its rule needs before it.
type Sample struct {
	// RuleID is the rule the token was generated from (and is found by).
	RuleID string
	// Prefix is the text the rule needs before the secret ("api_key = ",
	// "https://user:", …), empty for a token that stands alone.
	Prefix string
	// Secret is the part the scrubber redacts: it must not reach disk.
	Secret string
}

// After lists what follows a token in the texts tests build: the
// punctuation of file names, query strings, URL user-info, CSV fields and
// calls, quotes, JSON escapes (\" \n \t \u0026), white space, and a few
// non-ASCII characters.
var After = []string{
	"&page=2", ".json", "@example.com", ")", "),", ",next", ":443", "]", "/path", "?q=1", "=", "#frag",
	"'", `"`, "`", `\"`, `\n`, `\r\n`, `\t`, `\u0026x`, "%20x", ";", "!", "*", "|", "<", ">", "}", "{", "^", "$",
	"\n", " ", "\t", "\u2026", "\u2019", "\u00a0", "_", "_y", "-y",
}

// Before lists what precedes a token in the texts tests build.
var Before = []string{
	" ", "/", "=", ":", "@", "(", "[", "{", `"`, "'", "`", `\"`, `\n`, `\t`, `\u0026`, "%2F", "%3D",
	",", ";", "&", "?", "#", "<", ">", "|", "!", "*", "~", "^", "\n", "\t", "\u2026", "\u2019", "_", "x_", "x-",
}

// Samples returns one sample for every rule of sc.RuleExpressions for which
// a token can be generated that sc finds, in a line of its own, under that
// rule; missing lists the rules for which none could be (rules that match a
// file path only, or whose expression demands more than the generator
// does). The result is deterministic.
func Samples(sc *scrub.Scrubber) (samples []Sample, missing []string) {
	for _, r := range sc.RuleExpressions() {
		id, src := r[0], r[1]
		tree, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			missing = append(missing, id)
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(id))
		found := false
		for attempt := uint64(0); attempt < 24 && !found; attempt++ {
			g := &gen{rng: rand.New(rand.NewPCG(h.Sum64(), attempt)), inSecret: !hasCapture(tree)}
			g.walk(tree)
			text := "\n" + g.b.String() + "\n"
			for _, f := range sc.Find(text) {
				if f.RuleID != id || f.End-f.Start < 8 {
					continue
				}
				s := Sample{RuleID: id, Prefix: strings.TrimLeft(text[:f.Start], "\n"), Secret: text[f.Start:f.End]}
				if strings.ContainsAny(s.Secret, "\n") || !isFound(sc, s) {
					continue
				}
				samples = append(samples, s)
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, id)
		}
	}
	return samples, missing
}

// isFound reports whether the secret of s, after its prefix on a line of
// its own, is redacted.
func isFound(sc *scrub.Scrubber, s Sample) bool {
	return !strings.Contains(sc.Scrub("\n"+s.Prefix+s.Secret+"\n").Text, s.Secret)
}

// Line returns the text of s between before and after: before + prefix +
// secret + after.
func (s Sample) Line(before, after string) string {
	return before + s.Prefix + s.Secret + after
}

// JSONLine returns Line(before, after) as a JSON string literal (quotes,
// control characters, '&', '<' and '>' escaped as encoding/json does).
func (s Sample) JSONLine(before, after string) string {
	b, _ := json.Marshal(s.Line(before, after))
	return string(b)
}

// Needles returns the strings whose presence in written bytes is a leak:
// the secret as it is, lower-cased (the index's identifiers are), and
// JSON-escaped.
func (s Sample) Needles() []string {
	out := []string{s.Secret}
	if l := strings.ToLower(s.Secret); l != s.Secret {
		out = append(out, l)
	}
	if j, _ := json.Marshal(s.Secret); string(j[1:len(j)-1]) != s.Secret {
		out = append(out, string(j[1:len(j)-1]))
	}
	return out
}

// gen writes one string matching a parsed expression.
type gen struct {
	rng      *rand.Rand
	b        strings.Builder
	inSecret bool // inside the secret (a capture, or a rule without one)
}

func hasCapture(t *syntax.Regexp) bool {
	if t.Op == syntax.OpCapture {
		return true
	}
	for _, s := range t.Sub {
		if hasCapture(s) {
			return true
		}
	}
	return false
}

// count chooses how many times a repeated node is written: the minimum
// outside the secret (optional context stays out), a length with room for
// entropy inside it.
func (g *gen) count(min, max int) int {
	if !g.inSecret {
		if min == 0 && max != 0 && g.rng.IntN(4) == 0 {
			return 1
		}
		return min
	}
	n := min + 24
	if min >= 24 {
		n = min
	}
	if max >= 0 && n > max {
		n = max
	}
	return n
}

func (g *gen) walk(t *syntax.Regexp) {
	switch t.Op {
	case syntax.OpLiteral:
		for _, r := range t.Rune {
			g.b.WriteRune(r)
		}
	case syntax.OpCharClass:
		g.b.WriteRune(g.pick(t.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		g.b.WriteByte("abcdefghijklmnopqrstuvwxyz"[g.rng.IntN(26)])
	case syntax.OpCapture:
		was := g.inSecret
		g.inSecret = true
		g.walk(t.Sub[0])
		g.inSecret = was
	case syntax.OpConcat:
		for _, s := range t.Sub {
			g.walk(s)
		}
	case syntax.OpAlternate:
		// A terminator around the secret that may be the start or end of
		// the text ("(?:\A|[^0-9A-Za-z])", scrub's widened boundaries)
		// takes that branch: the sample holds no random character there,
		// and the tests' neighbours (Before, After) supply one.
		if !g.inSecret {
			for _, b := range t.Sub {
				if b.Op == syntax.OpBeginText || b.Op == syntax.OpEndText || b.Op == syntax.OpBeginLine || b.Op == syntax.OpEndLine {
					return
				}
			}
		}
		g.walk(t.Sub[g.rng.IntN(len(t.Sub))])
	case syntax.OpStar:
		for i, n := 0, g.count(0, -1); i < n; i++ {
			g.walk(t.Sub[0])
		}
	case syntax.OpPlus:
		for i, n := 0, g.count(1, -1); i < n; i++ {
			g.walk(t.Sub[0])
		}
	case syntax.OpQuest:
		if g.count(0, 1) == 1 {
			g.walk(t.Sub[0])
		}
	case syntax.OpRepeat:
		for i, n := 0, g.count(t.Min, t.Max); i < n; i++ {
			g.walk(t.Sub[0])
		}
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpEmptyMatch:
	}
}

// pick chooses a character of a class: a letter or digit when the class
// has one, else a printable ASCII character, else its first character.
func (g *gen) pick(ranges []rune) rune {
	var alnum, printable []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < 0x7f; r++ {
			switch {
			case r < 0x21:
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				alnum = append(alnum, r)
			default:
				printable = append(printable, r)
			}
		}
	}
	switch {
	case len(alnum) > 0:
		return alnum[g.rng.IntN(len(alnum))]
	case len(printable) > 0:
		return printable[g.rng.IntN(len(printable))]
	case len(ranges) > 0:
		return ranges[0]
	}
	return 'x'
}
