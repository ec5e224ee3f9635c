package ranked

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule "the person named speaks": in a chat log whose turns open with
// their speaker's label ("Caroline: …", or after a bracketed date or time,
// "[8 May, 2023] Caroline: …"), a question about what a person did, said
// or likes ("What did Caroline research?") is answered mostly in that
// person's own turns (on LoCoMo, 86–92 % of the evidence turns of the
// questions that name a speaker, outside the adversarial category), but
// the name, on every turn the person speaks, is a common term and barely
// counts in the score. Among the candidates the prompt's terms found, a
// node whose summary opens with a speaker label whose first word the
// prompt names as written (a capitalised word: "Caroline", "Caroline's")
// ranks with Params.Speaker × its own score added. Like rule "topic
// context" it only orders: the cut-off judges the node's own score, and
// nodes without a speaker label (agent sessions) are ranked as before.
// Its cost: a question that attributes to one person what the other did
// (LoCoMo's adversarial category) is answered less often.

// maxLabelWords bounds a speaker label ("Dr Ana Lopez": three words).
const maxLabelWords = 3

// speakerOf returns the first word of the speaker label a node's summary
// opens with ("" when it opens with none): an optional bracketed prefix,
// then one to maxLabelWords words, each of letters (and ' or -) starting
// with an upper-case letter, then ": ".
func speakerOf(summary string) string {
	s := summary
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "] ")
		if i < 0 {
			return ""
		}
		s = s[i+2:]
	}
	i := strings.Index(s, ": ")
	if i <= 0 {
		return ""
	}
	first, ok := labelWords(s[:i], func(r rune, starts bool) bool {
		return (!starts || unicode.IsUpper(r)) && (unicode.IsLetter(r) || r == '\'' || r == '-')
	})
	if !ok {
		return ""
	}
	return first
}

// labelWords reports whether s is one to maxLabelWords words (as
// strings.Fields splits it: runs of runes that are not unicode.IsSpace)
// whose every rune passes valid (starts: the rune opens its word), and
// returns the first word. One pass over s, nothing allocated: the labels
// of a scan's candidates are read for every candidate.
func labelWords(s string, valid func(r rune, starts bool) bool) (string, bool) {
	n, start, first := 0, -1, ""
	for i, r := range s {
		if unicode.IsSpace(r) {
			if start >= 0 && n == 1 {
				first = s[start:i]
			}
			start = -1
			continue
		}
		starts := start < 0
		if starts {
			if n++; n > maxLabelWords {
				return "", false
			}
			start = i
		}
		if !valid(r, starts) {
			return "", false
		}
	}
	if start >= 0 && n == 1 {
		first = s[start:]
	}
	return first, n > 0
}

// namedWords returns the prompt's words that start with an upper-case
// letter (nil when it has none).
func namedWords(prompt string) map[string]bool {
	var out map[string]bool
	for _, w := range strings.FieldsFunc(prompt, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
			if out == nil {
				out = map[string]bool{}
			}
			out[w] = true
		}
	}
	return out
}

// speakerRank applies rule "the person named speaks" to the candidates
// and orders them again. Callers hold ix.mu.
func (ix *Index) speakerRank(prompt string, cands []*match, p Params) {
	if p.Speaker == 0 || len(cands) == 0 {
		return
	}
	named := namedWords(prompt)
	if named == nil {
		return
	}
	lifted := false
	for _, c := range cands {
		if sp := speakerOf(ix.summaryOf(c.doc)); sp != "" && named[sp] {
			c.raise(p.Speaker*c.score, liftSpeaker)
			lifted = true
		}
	}
	if lifted {
		ix.sortByRank(cands)
	}
}
