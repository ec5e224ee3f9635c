package scrub

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// Match prefilter.
//
// Gitleaks runs a rule over the whole text as soon as one of the rule's
// keywords occurs anywhere in it. Many rules (the generic API key rule
// among them, whose keywords "key", "token", "api", "auth", … occur in most
// tool output) start with an optional run of name characters,
// [\w.-]{0,50}?, before the literal part: Go's regexp then follows up to
// 50 threads at every byte of the text, some 1 MB/s, and the generic rule
// alone took three quarters of a node's scrubbing time while finding
// nothing in nine texts out of ten.
//
// Such a rule R = X·Y, X an optional prefix without assertions (it can
// match the empty string anywhere), has a match in a text exactly when its
// rest Y has one: Y's match is R's with X empty, and R's match holds Y's.
// When every match of Y starts with one of a few literal strings (derived
// from the expression itself, ASCII case folded), Y has a match exactly
// when it matches, anchored, at one of those strings' occurrences (Y looks
// at nothing before its start: no \b, ^ or \B in it). So the prefilter finds
// the literals' occurrences (a pass over the text with a table of the
// literals' first two bytes), tries Y anchored at each, and hands gitleaks a detector without
// the rules that have no match: they would have found nothing, and a rule
// without findings changes nothing of the others' (gitleaks' generic
// filter only drops generic findings that another rule's findings
// overlap). Rules that do match are run by gitleaks as before, so what
// gitleaks reports is the same, finding for finding.
//
// Go's case folding maps a few non-ASCII letters to ASCII ones (U+017F
// to s, U+212A to k); a text holding one of them is scanned by every rule,
// as before. Rules not of this shape are always run by gitleaks (a new
// rule needs no declaration). The prefilter is generic: it is derived from
// each rule's expression when the detector is built.

// prefilterRule is a gitleaks rule that the prefilter can rule out.
type prefilterRule struct {
	id   string
	rest *regexp.Regexp // Y, anchored at the start of its input
}

// prefilter selects, for a text, the detector to run: the full one less
// the rules whose expression cannot match the text.
type prefilter struct {
	full  *detect.Detector
	rules []prefilterRule
	// bigram maps the first two bytes of a literal (lower case, as
	// c0<<8|c1) to 1 + its index in groups (0: no literal starts so).
	bigram []uint16
	groups [][]prefilterLit
	// foldRunes are the non-ASCII runes that Go's case folding maps to an
	// ASCII letter, UTF-8 encoded.
	foldRunes []string
	dets      sync.Map // the prefiltered rules kept (fmt of their indexes) → *detect.Detector
	ndets     atomic.Int32
}

// prefilterOff turns the prefilter off (tests compare with and without).
var prefilterOff = false

// maxPrefilterLits bounds a rule's literal set: a rule whose expression
// starts with more alternatives is always run.
const maxPrefilterLits = 64

// maxPrefilterDetectors bounds the detectors the prefilter keeps (one
// per set of prefiltered rules that can match a text: a few in practice).
const maxPrefilterDetectors = 64

// newPrefilter derives the prefilter of det's rules.
func newPrefilter(det *detect.Detector) *prefilter {
	p := &prefilter{full: det, foldRunes: foldRunesToASCII()}
	byLit := map[string][]int{}
	ids := make([]string, 0, len(det.Config.Rules))
	for id := range det.Config.Rules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := det.Config.Rules[id]
		if r.Regex == nil {
			continue
		}
		rest, lits, ok := splitOptionalPrefix(r.Regex.String())
		if !ok {
			continue
		}
		re, err := regexp.Compile(`^(?:` + rest + `)`)
		if err != nil {
			continue
		}
		k := len(p.rules)
		p.rules = append(p.rules, prefilterRule{id: id, rest: re})
		for _, l := range lits {
			byLit[l] = append(byLit[l], k)
		}
	}
	all := make([]string, 0, len(byLit))
	for l := range byLit {
		all = append(all, l)
	}
	sort.Strings(all)
	p.bigram = make([]uint16, 1<<16)
	for _, l := range all {
		if len(l) < 2 || len(p.groups) >= 1<<16-1 {
			p.rules = nil // cannot happen with the default rules: no prefilter
			return p
		}
		b := int(l[0])<<8 | int(l[1])
		if p.bigram[b] == 0 {
			p.groups = append(p.groups, nil)
			p.bigram[b] = uint16(len(p.groups))
		}
		g := p.bigram[b] - 1
		p.groups[g] = append(p.groups[g], prefilterLit{lit: l, rules: byLit[l]})
	}
	return p
}

// prefilterLit is a literal that starts the matches of some prefiltered
// rules.
type prefilterLit struct {
	lit   string // lower case ASCII, 2 bytes or more
	rules []int  // indexes in prefilter.rules
}

// hasPrefixASCIIFold reports whether s, ASCII lower-cased, starts with lit.
func hasPrefixASCIIFold(s, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if asciiLowerByte(s[i]) != lit[i] {
			return false
		}
	}
	return true
}

// foldRunesToASCII returns the non-ASCII runes whose case-folding orbit
// holds an ASCII letter, UTF-8 encoded.
func foldRunesToASCII() []string {
	var out []string
	for c := 'A'; c <= 'z'; c++ {
		if !unicode.IsLetter(c) {
			continue
		}
		for r := unicode.SimpleFold(c); r != c; r = unicode.SimpleFold(r) {
			if r >= utf8.RuneSelf {
				out = append(out, string(r))
			}
		}
	}
	sort.Strings(out)
	return slicesCompact(out)
}

func slicesCompact(ss []string) []string {
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// detector returns the detector to run on text: det itself when the
// prefilter does not apply, else det less the rules that cannot match text.
func (p *prefilter) detector(text string) *detect.Detector {
	if prefilterOff || len(p.rules) == 0 {
		return p.full
	}
	for _, r := range p.foldRunes {
		if strings.Contains(text, r) {
			return p.full
		}
	}
	match := make([]bool, len(p.rules))
	var kept []int // the prefiltered rules that can match, ascending
	// Every occurrence of every literal, ASCII case folded: positions
	// whose two bytes start no literal are passed over at a table lookup.
	for pos := 0; pos+1 < len(text); pos++ {
		g := p.bigram[int(asciiLowerByte(text[pos]))<<8|int(asciiLowerByte(text[pos+1]))]
		if g == 0 {
			continue
		}
		for _, l := range p.groups[g-1] {
			if !hasPrefixASCIIFold(text[pos:], l.lit) {
				continue
			}
			for _, k := range l.rules {
				if !match[k] && p.rules[k].rest.MatchString(text[pos:]) {
					match[k] = true
					kept = append(kept, k)
				}
			}
		}
	}
	if len(kept) == len(p.rules) {
		return p.full
	}
	sort.Ints(kept)
	key := fmt.Sprint(kept)
	if d, ok := p.dets.Load(key); ok {
		return d.(*detect.Detector)
	}
	cfg := p.full.Config
	cfg.Rules = make(map[string]config.Rule, len(p.full.Config.Rules))
	for id, r := range p.full.Config.Rules {
		cfg.Rules[id] = r
	}
	for k, ok := range match {
		if !ok {
			delete(cfg.Rules, p.rules[k].id)
		}
	}
	cfg.OrderedRules = nil
	for _, id := range p.full.Config.OrderedRules {
		if _, ok := cfg.Rules[id]; ok {
			cfg.OrderedRules = append(cfg.OrderedRules, id)
		}
	}
	if p.ndets.Add(1) > maxPrefilterDetectors {
		p.ndets.Add(-1)
		return p.full // an unusual set of rules: the full detector finds the same
	}
	// The keywords stay: a rule kept finds its own among them.
	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = p.full.MaxDecodeDepth
	v, _ := p.dets.LoadOrStore(key, d)
	return v.(*detect.Detector)
}

// splitOptionalPrefix parses expr (Go syntax) and, when it is a
// concatenation whose leading parts can match the empty string and hold no
// assertion, followed by a rest that holds no assertion looking behind its
// start (\b, \B, ^, \A) and whose every match starts with one of at most
// maxPrefilterLits ASCII literals, returns that rest (Go syntax) and the
// literals, lower case.
func splitOptionalPrefix(expr string) (rest string, lits []string, ok bool) {
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", nil, false
	}
	if tree.Op != syntax.OpConcat {
		return "", nil, false
	}
	n := 0
	for n < len(tree.Sub) && optionalNoAssert(tree.Sub[n]) {
		n++
	}
	if n == 0 || n == len(tree.Sub) {
		return "", nil, false // no prefix to skip: gitleaks' own scan is as fast
	}
	subs := tree.Sub[n:]
	for _, s := range subs {
		if looksBehind(s) {
			return "", nil, false
		}
	}
	y := &syntax.Regexp{Op: syntax.OpConcat, Sub: subs, Flags: tree.Flags}
	set, _, ok := startLits(y)
	if !ok || len(set) == 0 {
		return "", nil, false
	}
	for _, l := range set {
		if l == "" {
			return "", nil, false
		}
	}
	return y.String(), set, true
}

// optionalNoAssert reports whether re can match the empty string and holds
// no empty-width assertion (so it matches the empty string anywhere).
func optionalNoAssert(re *syntax.Regexp) bool {
	if hasAssert(re) {
		return false
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpRepeat:
		return re.Min == 0
	}
	return false
}

// hasAssert reports whether re holds an empty-width assertion.
func hasAssert(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, s := range re.Sub {
		if hasAssert(s) {
			return true
		}
	}
	return false
}

// looksBehind reports whether re holds an assertion about what precedes a
// position (so that matching re on a suffix of a text is not matching it
// in the text).
func looksBehind(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, s := range re.Sub {
		if looksBehind(s) {
			return true
		}
	}
	return false
}

// startLits returns a set of lower-case ASCII strings such that every
// match of re, ASCII lower-cased, starts with one of them (in a text
// without the non-ASCII runes that fold to ASCII letters), and whether
// every match is exactly one of them (complete). ok is false when no such
// set of at most maxPrefilterLits strings is found.
func startLits(re *syntax.Regexp) (set []string, complete, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			switch {
			case r < utf8.RuneSelf:
				b.WriteByte(asciiLowerByte(byte(r)))
			default:
				return nil, false, false
			}
		}
		return []string{b.String()}, true, true
	case syntax.OpCharClass:
		seen := map[string]bool{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi-lo > maxPrefilterLits {
				return nil, false, false
			}
			for r := lo; r <= hi; r++ {
				if r >= utf8.RuneSelf {
					if isFoldRune(r) {
						continue // a text holding it is scanned by every rule
					}
					return nil, false, false
				}
				seen[string(asciiLowerByte(byte(r)))] = true
			}
		}
		if len(seen) == 0 || len(seen) > maxPrefilterLits {
			return nil, false, false
		}
		for s := range seen {
			set = append(set, s)
		}
		sort.Strings(set)
		return set, true, true
	case syntax.OpCapture:
		return startLits(re.Sub[0])
	case syntax.OpAlternate:
		complete = true
		for _, s := range re.Sub {
			l, c, ok := startLits(s)
			if !ok {
				return nil, false, false
			}
			set = append(set, l...)
			complete = complete && c
		}
		sort.Strings(set)
		set = slicesCompact(set)
		if len(set) > maxPrefilterLits {
			return nil, false, false
		}
		return set, complete, true
	case syntax.OpConcat:
		set, complete = []string{""}, true
		for _, s := range re.Sub {
			l, c, ok := startLits(s)
			if !ok || len(set)*len(l) > maxPrefilterLits {
				complete = false
				break
			}
			next := make([]string, 0, len(set)*len(l))
			for _, a := range set {
				for _, b := range l {
					next = append(next, a+b)
				}
			}
			set = next
			if !c {
				complete = false
				break
			}
		}
		sort.Strings(set)
		set = slicesCompact(set)
		if len(set) == 1 && set[0] == "" {
			return nil, false, false
		}
		return set, complete, true
	}
	return nil, false, false
}

// isFoldRune reports whether r is a non-ASCII rune that Go's case folding
// maps to an ASCII letter.
func isFoldRune(r rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return true
		}
	}
	return false
}

func asciiLowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
