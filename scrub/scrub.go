// Package scrub removes credentials from text before it is stored.
//
// Detection uses gitleaks (github.com/zricethezav/gitleaks/v8, package
// detect) with its default rule set, plus a few extra rules defined in
// extra.go for classes of secrets that the default rules miss (see there).
// Only the secret part of a finding is replaced, by "[REDACTED:<rule-id>]".
//
// All offsets in this package are byte offsets into the text given.
package scrub

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// Finding is one detected secret.
type Finding struct {
	// RuleID names the rule that found the secret: a gitleaks default rule
	// id (e.g. "github-pat") or one of ours (prefix "contextfold-").
	RuleID string
	// Start and End are byte offsets of the secret in the text: text[Start:End].
	Start, End int
}

// Result is the outcome of Scrub.
type Result struct {
	// Text is the scrubbed text; always valid UTF-8.
	Text string
	// Redactions is the number of "[REDACTED:…]" markers inserted. Findings
	// that overlap or touch are merged into one marker.
	Redactions int
	// Rules holds the sorted, unique rule ids of every finding redacted.
	Rules []string
}

// Scrubber finds and redacts secrets. The zero value is not usable; call New.
// A Scrubber is safe for concurrent use by multiple goroutines.
type Scrubber struct {
	det   *detect.Detector
	rules map[string]config.Rule
	// kw finds the rules' keywords (lower case) in large texts.
	kw *ahocorasick.Trie
	// allow is the allowlist of WithAllowlist (nil: placeholders only).
	allow *compiled
	// names memoizes SafeName (each Scrubber its own: the allowlist
	// changes the answer).
	names *nameMemo
}

var (
	detOnce sync.Once
	detVal  *detect.Detector
	detKW   *ahocorasick.Trie
	detPre  *prefilter
	detErr  error
)

// sharedDetector builds the gitleaks detector once per process: building it
// parses the default TOML config through viper's global instance (not safe
// for concurrent use) and compiles about 200 regular expressions.
func sharedDetector() (*detect.Detector, error) {
	detOnce.Do(func() {
		detVal, detErr = detect.NewDetectorDefaultConfig()
		if detErr != nil {
			return
		}
		// A token is found whatever punctuation follows it (boundary.go).
		for id, r := range detVal.Config.Rules {
			if re, ok := widenBoundaries(r.Regex); ok {
				r.Regex = re
				detVal.Config.Rules[id] = r
			}
		}
		kws := make([]string, 0, len(detVal.Config.Keywords))
		for k := range detVal.Config.Keywords {
			kws = append(kws, strings.ToLower(k))
		}
		sort.Strings(kws)
		detKW = ahocorasick.NewTrieBuilder().AddStrings(kws).Build()
		detPre = newPrefilter(detVal)
	})
	return detVal, detErr
}

// New returns a Scrubber using the gitleaks default rules and our extra rules.
// The underlying detector is built once per process and shared, so New is
// cheap after the first call. It returns an error only if the gitleaks
// default configuration cannot be loaded.
func New() (*Scrubber, error) {
	d, err := sharedDetector()
	if err != nil {
		return nil, err
	}
	return &Scrubber{det: d, rules: d.Config.Rules, kw: detKW, names: new(nameMemo)}, nil
}

// MarkerPrefix opens every redaction marker: "[REDACTED:<rule-id>]" is
// what replaces a secret in a scrubbed text (RedactionMarker).
const MarkerPrefix = "[REDACTED:"

// RedactionMarker returns the text that replaces a secret found by ruleID:
// "[REDACTED:" + ruleID + "]". Every redaction the store writes is made
// of it (the scrubber's own, and the ones the store adds across turns:
// shared values, split keys, credential files), so that one reader
// (MatchesSharedRedactions, markerSpans) finds them all. Pure.
func RedactionMarker(ruleID string) string {
	return MarkerPrefix + ruleID + "]"
}

// Find returns every secret found in text, sorted by Start, then by End
// (longer first), then gitleaks rules before ours, then by RuleID. Findings may overlap. It does not modify
// anything and is meant for audits. Offsets are byte offsets into text, and
// always fall on UTF-8 sequence boundaries of text. Placeholder credentials
// and what the allowlist allows are not secrets (see Audit).
func (s *Scrubber) Find(text string) []Finding {
	secrets, _ := s.split(text, s.findAll(text))
	return secrets
}

// findAll is Find before placeholders and the allowlist are applied. The
// result of a short text is memoized (shortFinds); callers must not modify
// the slice.
func (s *Scrubber) findAll(text string) []Finding {
	if len(text) > maxShortFind {
		return s.findAllDepth(text, base64Depth, nil)
	}
	return s.findShort(text)
}

// findAllExtra is findAll, with extra: extraFindings(text), which findAll
// computes on the way for a text longer than maxShortFind (and which is
// computed here for a shorter one, whose findAll is memoized). Callers
// must not modify all.
func (s *Scrubber) findAllExtra(text string) (all, extra []Finding) {
	if len(text) > maxShortFind {
		all = s.findAllDepth(text, base64Depth, &extra)
		return all, extra
	}
	return s.findShort(text), extraFindings(text)
}

// findShort is findAll of a text of at most maxShortFind bytes, memoized.
func (s *Scrubber) findShort(text string) []Finding {
	if fs, ok := shortFinds.get(text); ok {
		return fs
	}
	fs := s.findAllDepth(text, base64Depth, nil)
	fs = fs[:len(fs):len(fs)] // an append by a caller copies
	shortFinds.put(text, fs)
	return fs
}

// shortFinds memoizes findAll for texts of at most maxShortFind bytes: a
// fold scrubs the session id with every turn, and short fields recur (a
// file name, a command). findAll depends on the text alone (the rules are
// the process's; the allowlist applies after it), so the memo is the
// process's.
var shortFinds findMemo

const (
	maxShortFind  = 256  // bytes
	maxShortFinds = 4096 // texts held; past that the memo starts again
)

// findMemo maps a text to findAll's result. Safe for concurrent use.
type findMemo struct {
	mu sync.Mutex
	m  map[string][]Finding
}

func (fm *findMemo) get(text string) ([]Finding, bool) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	fs, ok := fm.m[text]
	return fs, ok
}

func (fm *findMemo) put(text string, fs []Finding) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	if fm.m == nil || len(fm.m) >= maxShortFinds {
		fm.m = make(map[string][]Finding)
	}
	fm.m[strings.Clone(text)] = fs
}

// base64Depth is how many levels of base64 encoding findAll looks into
// (encoded.go).
const base64Depth = 2

// findAllDepth is findAll looking into depth levels of base64; extra,
// when not nil, receives extraFindings(text) (before they join the
// others).
func (s *Scrubber) findAllDepth(text string, depth int, extra *[]Finding) []Finding {
	fs := s.findWith(text, s.det, true, extra)
	if depth > 0 {
		fs = append(fs, s.base64Findings(text, depth)...)
		sortFindings(fs)
		fs = dedupe(fs)
	}
	return fs
}

// findWith is findAll with the gitleaks rules of det, and our extra rules
// when extra is set; extraOut, when not nil (extra set), receives
// extraFindings(text), the extra rules' findings over the whole text.
func (s *Scrubber) findWith(text string, det *detect.Detector, extra bool, extraOut *[]Finding) []Finding {
	if text == "" {
		return nil
	}
	var out []Finding
	for _, w := range s.windows(text) {
		seg := text[w[0]:w[1]]
		for _, f := range s.gitleaksFindings(det, seg) {
			f.Start += w[0]
			f.End += w[0]
			out = append(out, f)
		}
		// The same window with its escapes decoded (boundary.go); what is
		// found there is mapped back to the escaped text. Decoding a
		// window at a time bounds the memory of a large text.
		// Our extra rules read the decoded window too: a JSON document
		// inside a JSON string (\\\"password\\\": …) decodes to what
		// they expect.
		if v, ok := decodeEscapes(seg); ok {
			fs := s.gitleaksFindings(det, v.text)
			if extra {
				fs = append(fs, extraFindings(v.text)...)
				fs = append(fs, argvFindings(v.text)...)
			}
			// Escaped invisible characters (PASS\\u200bWORD in a JSON
			// string) show in the decoded view only: fold it too.
			if fv, ok := foldInvisible(v.text); ok {
				ffs := s.gitleaksFindings(det, fv.text)
				if extra {
					ffs = append(ffs, extraFindings(fv.text)...)
					ffs = append(ffs, argvFindings(fv.text)...)
				}
				for _, f := range ffs {
					f.Start, f.End = fv.span(f.Start, f.End)
					fs = append(fs, f)
				}
			}
			for _, f := range fs {
				f.Start, f.End = v.span(f.Start, f.End)
				f.Start += w[0]
				f.End += w[0]
				out = append(out, f)
			}
		}
	}
	if extra {
		whole := extraFindings(text)
		if extraOut != nil {
			*extraOut = whole
		}
		out = append(out, whole...)
		// An argument vector written as an array of strings (argv.go):
		// ["sshpass", "-p", "…"], over the whole text as our rules are.
		out = append(out, argvFindings(text)...)
	}
	// The same text with its invisible and full-width characters folded
	// (invisible.go): PASS\u200bWORD=…, API_KEY＝…, around each of them in
	// a large text. The view has none of them left, so this recursion
	// stops there.
	for _, w := range foldWindows(text) {
		if v, ok := foldInvisible(text[w[0]:w[1]]); ok {
			for _, f := range s.findWith(v.text, det, extra, nil) {
				f.Start, f.End = v.span(f.Start, f.End)
				f.Start += w[0]
				f.End += w[0]
				out = append(out, f)
			}
		}
	}
	// In one order whatever order gitleaks ran its rules in (a map's):
	// the passes below label a value by the first finding of it.
	sortFindings(out)
	// A token a terminal wrapped onto the next line (named.go).
	out = append(out, wrappedFindings(text, out)...)
	out = append(out, repeatFindings(text, out)...)
	// A redaction marker is not a secret, nor part of one: scrubbing is
	// idempotent, and an audit of a scrubbed store finds nothing (not even
	// "https://[REDACTED:github-pat]@host" read as user "[REDACTED" with
	// password "github-pat]").
	markers := markerSpans(text)
	kept := out[:0]
	for _, f := range out {
		if !overlapsAny(f, markers) {
			kept = append(kept, f)
		}
	}
	sortFindings(kept)
	return dedupe(kept)
}

// maxSettleRounds bounds the rescans of settle.
const maxSettleRounds = 3

// settle rescans a redacted text with the gitleaks rules that fired on it.
// A rule's matches do not overlap: a match spanning several lines (curl's
// "-u user:pass" up to five lines after "curl") can swallow a second
// secret, which only a scan of the redacted text reveals. Without settle,
// scrubbing would not be idempotent and scrub-check would blame a store
// the fold just wrote. Only the rules that fired are run again, each with
// a detector of its own (ruleDetector), so a text without secrets costs
// nothing more.
func (s *Scrubber) settle(r Result, fired []Finding) Result {
	for round := 0; round < maxSettleRounds; round++ {
		var fs []Finding
		seen := map[string]bool{}
		for _, f := range fired {
			if isOurs(f.RuleID) || seen[f.RuleID] {
				continue
			}
			seen[f.RuleID] = true
			if _, ok := s.rules[f.RuleID]; !ok {
				continue
			}
			fs = append(fs, s.findWith(r.Text, ruleDetector(s.det, f.RuleID), false, nil)...)
		}
		if len(fs) == 0 {
			return r
		}
		sortFindings(fs)
		fs, _ = s.split(r.Text, dedupe(fs))
		if len(fs) == 0 {
			return r
		}
		next := redact(r.Text, fs)
		r.Text, r.Redactions = next.Text, r.Redactions+next.Redactions
		r.Rules = mergeSorted(r.Rules, next.Rules)
		fired = fs
	}
	return r
}

// mergeSorted returns the sorted union of two sorted lists of rule ids.
func mergeSorted(a, b []string) []string {
	set := map[string]bool{}
	for _, x := range append(append([]string{}, a...), b...) {
		set[x] = true
	}
	out := make([]string, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}

var ruleDets sync.Map // rule id → *detect.Detector holding that rule alone

// ruleDetector returns a detector that runs only rule id of det, built once
// per process.
func ruleDetector(det *detect.Detector, id string) *detect.Detector {
	if v, ok := ruleDets.Load(id); ok {
		return v.(*detect.Detector)
	}
	cfg := det.Config
	r := cfg.Rules[id]
	cfg.Rules = map[string]config.Rule{id: r}
	cfg.OrderedRules = []string{id}
	cfg.Keywords = map[string]struct{}{}
	for _, k := range r.Keywords {
		cfg.Keywords[strings.ToLower(k)] = struct{}{}
	}
	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = det.MaxDecodeDepth
	v, _ := ruleDets.LoadOrStore(id, d)
	return v.(*detect.Detector)
}

// markerSpans returns the [start, end) byte spans of the redaction markers
// "[REDACTED:<rule-id>]" in text, in order.
func markerSpans(text string) [][2]int {
	var out [][2]int
	for off := 0; ; {
		k := strings.Index(text[off:], MarkerPrefix)
		if k < 0 {
			return out
		}
		a := off + k
		e := strings.IndexByte(text[a:], ']')
		if e < 0 {
			return out
		}
		id := text[a+len(MarkerPrefix) : a+e]
		if !isRuleID(id) {
			off = a + 1
			continue
		}
		out = append(out, [2]int{a, a + e + 1})
		off = a + e + 1
	}
}

// isRuleID reports whether id can be a rule id in a marker: letters,
// digits, '-', '_' and '.'.
func isRuleID(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(isWordByte(c) || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// overlapsAny reports whether f overlaps one of the sorted spans.
func overlapsAny(f Finding, spans [][2]int) bool {
	for _, sp := range spans {
		if sp[0] >= f.End {
			return false
		}
		if f.Start < sp[1] {
			return true
		}
	}
	return false
}

// Scrub returns text with the secret part of every finding replaced by
// "[REDACTED:<rule-id>]". Invalid UTF-8 in text is first replaced by U+FFFD
// (one per maximal invalid sequence), so the result is always valid UTF-8.
// Overlapping or adjacent findings are merged into one span, labelled with
// the rule of the finding that comes first in Find's order. The result is deterministic for a given text.
func (s *Scrubber) Scrub(text string) Result {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	fs := s.Find(text)
	return s.settle(redact(text, fs), fs)
}

// ScrubSet scrubs texts that belong together, such as the fields of one
// turn (payload, summary, files, commands, errors, session id): each is
// scrubbed as by Scrub, and a secret value found in any of them (of
// minRepeatLen bytes or more) is also redacted wherever it occurs in the
// others. A short field cannot hold the context some rules need (a list
// item split off its "token=", a file name cut from its line), but what the
// payload's context revealed is still redacted there. The results are in
// the order of texts; deterministic for given texts.
func (s *Scrubber) ScrubSet(texts []string) []Result { return s.ScrubSetKnown(texts, nil, 0) }

// ScrubSetKnown is ScrubSet that also adds to k (when not nil) the values
// the context of texts[from:] reveals as secrets, each text in order, as
// k.AddContext(s, text) would, and the values a text ending in NAME= or an
// option shows at the start of the next (AddContextSet): from the findings of our rules the scrub
// makes anyway, rather than a second run of those rules over every text
// (a fold event derives both for every new turn). The results are
// ScrubSet's, and k holds what the AddContext calls would have given it.
func (s *Scrubber) ScrubSetKnown(texts []string, k *Known, from int) []Result {
	clean := make([]string, len(texts))
	found := make([][]Finding, len(texts))
	known := map[string]string{} // secret value → rule
	for i, t := range texts {
		if !utf8.ValidString(t) {
			t = strings.ToValidUTF8(t, "\uFFFD")
		}
		clean[i] = t
		if k == nil || i < from {
			found[i] = s.Find(t)
		} else {
			all, extra := s.findAllExtra(t)
			found[i], _ = s.split(t, all)
			k.addContextFindings(s, t, extra)
		}
	}
	for i := 0; i+1 < len(clean); i++ {
		if fs, _ := s.split(clean[i+1], splitValueFindings(clean[i], clean[i+1])); len(fs) > 0 {
			if k != nil && i+1 >= from {
				k.addShared(clean[i+1], fs) // as AddContextSet adds them
			}
			fs = append(fs, found[i+1]...)
			sortFindings(fs)
			found[i+1] = dedupe(fs)
		}
	}
	for i, t := range clean {
		for _, f := range found[i] {
			v := t[f.Start:f.End]
			if _, ok := known[v]; !ok && len(v) >= minRepeatLen {
				known[v] = f.RuleID
			}
			addKeyBlockLines(known, f.RuleID, v)
		}
	}
	km := newKnownMatcher(known) // the values and their encodings
	out := make([]Result, len(texts))
	for i, t := range clean {
		fs := found[i]
		if km != nil {
			markers := markerSpans(t)
			for _, f := range km.find(t) {
				if !overlapsAny(f, markers) {
					fs = append(fs, f)
				}
			}
			sortFindings(fs)
			fs = dedupe(fs)
		}
		out[i] = s.settle(redact(t, fs), fs)
	}
	return out
}

// redact replaces the sorted findings fs of text by markers (see Scrub).
func redact(text string, fs []Finding) Result {
	if len(fs) == 0 {
		return Result{Text: text}
	}
	ruleSet := map[string]struct{}{}
	var b strings.Builder
	b.Grow(len(text))
	pos, n := 0, 0
	for i := 0; i < len(fs); {
		start, end, label := fs[i].Start, fs[i].End, fs[i].RuleID
		ruleSet[fs[i].RuleID] = struct{}{}
		j := i + 1
		for ; j < len(fs) && fs[j].Start <= end; j++ {
			if fs[j].End > end {
				end = fs[j].End
			}
			ruleSet[fs[j].RuleID] = struct{}{}
		}
		b.WriteString(text[pos:start])
		b.WriteString(RedactionMarker(label))
		pos = end
		n++
		i = j
	}
	b.WriteString(text[pos:])
	rules := make([]string, 0, len(ruleSet))
	for r := range ruleSet {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	return Result{Text: b.String(), Redactions: n, Rules: rules}
}

// Windowing. Gitleaks runs a rule on a fragment only when one of the rule's
// keywords occurs in it, and its rules then scan the whole fragment with
// Go's regexp, at roughly 1 MB/s per rule. On a large text nearly every
// common keyword (key, token, api, …) occurs somewhere, so we instead run the
// detector on windows around the keyword occurrences: the keyword's line and
// the next one, but at most windowBefore bytes before the keyword and
// windowAfter bytes after it (to the END line for a private key), widened to
// the nearest whitespace and merged when they overlap. A match reaching
// further from its keyword can be missed; our extra rules and the repeat
// pass always run on the whole text.
const (
	windowMinText = 16 << 10 // texts up to this size are scanned whole
	windowBefore  = 512
	windowAfter   = 2048
	windowSnap    = 128 // how far an edge may move to reach whitespace
	pemMaxBlock   = 64 << 10
)

// windowMaxMerged bounds a window merged from overlapping ones: past it
// the next keyword's window starts a window of its own, overlapping the
// last (each keyword's window is still whole in one window). Gitleaks
// compares every finding of a fragment with every other (its generic
// filter) and locates each by the fragment's lines: one fragment of a
// dense text — 1 MiB of TOKEN=… lines, 55,000 findings — took minutes.
const windowMaxMerged = 64 << 10

// windows returns the [start, end) byte ranges of text to run gitleaks on,
// sorted by start; they overlap only where a merged window reached
// windowMaxMerged.
func (s *Scrubber) windows(text string) [][2]int {
	if len(text) <= windowMinText {
		return [][2]int{{0, len(text)}}
	}
	lower := asciiLower(text)
	var ws [][2]int
	for _, m := range s.kw.MatchString(lower) {
		p := int(m.Pos())
		a := max(0, p-windowBefore)
		if nl := strings.LastIndexByte(text[a:p], '\n'); nl >= 0 {
			a += nl + 1
		}
		b := min(len(text), p+len(m.Match())+windowAfter)
		if nl := strings.IndexByte(text[p:b], '\n'); nl >= 0 {
			if nl2 := strings.IndexByte(text[p+nl+1:b], '\n'); nl2 >= 0 {
				b = p + nl + 1 + nl2
			}
		}
		if m.MatchString() == "-----begin" {
			if k := strings.Index(text[p:min(len(text), p+pemMaxBlock)], "-----END"); k >= 0 {
				b = max(b, min(len(text), p+k+128))
			}
		}
		ws = append(ws, [2]int{snapBack(text, a), snapForward(text, b)})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i][0] < ws[j][0] })
	var out [][2]int
	for _, w := range ws {
		if n := len(out); n > 0 && w[0] <= out[n-1][1] && (w[1]-out[n-1][0] <= windowMaxMerged || w[1] <= out[n-1][1]) {
			out[n-1][1] = max(out[n-1][1], w[1])
			continue
		}
		out = append(out, w)
	}
	// Never split a UTF-8 sequence.
	for i := range out {
		for out[i][0] > 0 && !utf8.RuneStart(text[out[i][0]]) {
			out[i][0]--
		}
		for out[i][1] < len(text) && !utf8.RuneStart(text[out[i][1]]) {
			out[i][1]++
		}
	}
	return out
}

// asciiLower lower-cases ASCII letters only, keeping byte offsets intact.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// snapBack moves a window start back to just after whitespace, if near.
func snapBack(text string, a int) int {
	for i := a; i > 0 && a-i < windowSnap; i-- {
		if isSpaceByte(text[i-1]) {
			return i
		}
	}
	return a
}

// snapForward moves a window end forward to whitespace, if near.
func snapForward(text string, b int) int {
	for i := b; i < len(text) && i-b < windowSnap; i++ {
		if isSpaceByte(text[i]) {
			return i
		}
	}
	return b
}

// gitleaksFindings runs the gitleaks detector and converts its findings to
// byte offsets. Gitleaks reports the match text and the secret, but only
// line/column locations; we recover exact offsets by re-running the rule's
// own regular expression over the text and pairing its matches, in order,
// with the findings of that rule (gitleaks keeps them in match order and
// only filters some out).
func (s *Scrubber) gitleaksFindings(det *detect.Detector, text string) []Finding {
	if det == detPre.full {
		det = detPre.detector(text) // the same findings (prefilter.go)
	}
	found := det.DetectString(text)
	if len(found) == 0 {
		return nil
	}
	byRule := map[string][]report.Finding{}
	var ruleOrder []string
	for _, f := range found {
		if _, ok := byRule[f.RuleID]; !ok {
			ruleOrder = append(ruleOrder, f.RuleID)
		}
		byRule[f.RuleID] = append(byRule[f.RuleID], f)
	}
	var out []Finding
	for _, id := range ruleOrder {
		fs := byRule[id]
		rule, ok := s.rules[id]
		if !ok || rule.Regex == nil {
			out = append(out, locateByValue(text, fs)...)
			continue
		}
		matches := rule.Regex.FindAllStringIndex(text, -1)
		j := 0
		for _, f := range fs {
			located := false
			for ; j < len(matches); j++ {
				m := matches[j]
				raw := text[m[0]:m[1]]
				trimmed := strings.Trim(raw, "\n")
				if trimmed != f.Match {
					continue
				}
				mStart := m[0] + strings.Index(raw, trimmed)
				gs, ge, ok := secretSpan(rule, trimmed, f.Secret)
				if !ok {
					continue
				}
				out = append(out, Finding{RuleID: id, Start: mStart + gs, End: mStart + ge})
				located = true
				j++
				break
			}
			if !located {
				out = append(out, locateByValue(text, []report.Finding{f})...)
			}
		}
	}
	return out
}

// secretSpan finds the secret inside a gitleaks match the way gitleaks
// extracts it: by running the rule's regex on the match text alone and taking
// the rule's secret group, or else the first non-empty group, or else the
// whole match. It reports whether the result equals the secret gitleaks gave.
func secretSpan(rule config.Rule, match, secret string) (int, int, bool) {
	start, end := 0, len(match)
	if idx := rule.Regex.FindStringSubmatchIndex(match); len(idx) >= 4 {
		if rule.SecretGroup > 0 {
			if 2*rule.SecretGroup+1 < len(idx) && idx[2*rule.SecretGroup] >= 0 {
				start, end = idx[2*rule.SecretGroup], idx[2*rule.SecretGroup+1]
			}
		} else {
			for g := 1; 2*g+1 < len(idx); g++ {
				if idx[2*g] >= 0 && idx[2*g+1] > idx[2*g] {
					start, end = idx[2*g], idx[2*g+1]
					break
				}
			}
		}
	}
	if match[start:end] != secret {
		// Fall back to the first occurrence of the secret inside the match.
		k := strings.Index(match, secret)
		if k < 0 || secret == "" {
			return 0, 0, false
		}
		start, end = k, k+len(secret)
	}
	return start, end, true
}

// locateByValue is the fallback when a finding cannot be paired with a regex
// match: every occurrence of its secret value in text is reported.
func locateByValue(text string, fs []report.Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Secret == "" {
			continue
		}
		for off := 0; ; {
			k := strings.Index(text[off:], f.Secret)
			if k < 0 {
				break
			}
			out = append(out, Finding{RuleID: f.RuleID, Start: off + k, End: off + k + len(f.Secret)})
			off += k + len(f.Secret)
		}
	}
	return out
}

// minRepeatLen is the shortest secret value whose other occurrences in the
// same text are redacted too.
const minRepeatLen = 8

// repeatFindings reports further occurrences of secret values already found,
// so that a secret recognised in one place (say a KEY=value line) is also
// removed where it is repeated without context (say an echo of the value).
func repeatFindings(text string, fs []Finding) []Finding {
	values := map[string]string{}
	for _, f := range fs {
		v := text[f.Start:f.End]
		if len(v) < minRepeatLen {
			continue
		}
		if _, ok := values[v]; !ok {
			values[v] = f.RuleID
		}
		addKeyBlockLines(values, f.RuleID, v)
	}
	// And the values' encodings (encoded.go).
	return newKnownMatcher(values).find(text)
}

// keyLineMin is the shortest body line of a private key block that
// addKeyBlockLines makes a value of its own.
const keyLineMin = 16

// addKeyBlockLines adds to values, when rule is the private key block
// rule, each body line of the block v (base64 characters alone, at least
// keyLineMin of them, blanks and a CR around; lines cut by real newlines
// or by JSON/C "\n" escapes) as a value of its own. A block is one value,
// but a text shown with it may quote a single line of it: a summary that
// leads with the first line after the BEGIN line (harness.Summarize skips
// the BEGIN line as a "-----" banner), a later echo of one line. Without
// this, that line reached disk although the block was redacted. Other
// rules: values unchanged.
func addKeyBlockLines(values map[string]string, rule, v string) {
	if rule != "contextfold-private-key-block" {
		return
	}
	v = strings.NewReplacer(`\r\n`, "\n", `\n`, "\n", `\r`, "\n").Replace(v)
	for _, l := range strings.Split(v, "\n") {
		l = strings.Trim(l, " \t\r")
		if len(l) < keyLineMin || !keyLine(l) {
			continue
		}
		if _, ok := values[l]; !ok {
			values[l] = rule
		}
	}
}

// keyLine reports whether l is base64 characters alone (the standard
// alphabet and padding, as PEM and OpenSSH bodies write them).
func keyLine(l string) bool {
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// isOurs reports whether ruleID is one of our extra rules.
func isOurs(ruleID string) bool { return strings.HasPrefix(ruleID, "contextfold-") }

func sortFindings(fs []Finding) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End
		}
		if ao, bo := isOurs(a.RuleID), isOurs(b.RuleID); ao != bo {
			return bo // gitleaks' rule names the kind first
		}
		return a.RuleID < b.RuleID
	})
}

// dedupe removes exact duplicates from sorted findings.
func dedupe(fs []Finding) []Finding {
	out := fs[:0]
	for i, f := range fs {
		if i > 0 && f == fs[i-1] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// RuleExpressions returns, for every regular-expression rule of the gitleaks
// default set as this package runs it (terminators widened, boundary.go),
// the rule id and the expression's source, sorted by rule id. Our own rules
// (extra.go) are not included. It is meant for audits and for test
// generators that build a sample token of every rule (package
// scrub/scrubtest).
func (s *Scrubber) RuleExpressions() [][2]string {
	out := make([][2]string, 0, len(s.rules))
	for id, r := range s.rules {
		if r.Regex != nil {
			out = append(out, [2]string{id, r.Regex.String()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// splitValueFindings returns the findings of our rules in next that hold
// the value of an assignment or option prev ends with: a list split on
// commas (fold --commands "DB_PASSWORD=,VALUE", ["--token", "VALUE"] as
// two items) puts "NAME=" or "--token" in one text and the value in the
// next. prev and next are read joined (with nothing after '=' or ':',
// with a blank after an option); a finding that starts in next is mapped
// back to it. prev must end in '=' or ':', or its last word must start
// with '-'; otherwise nothing is joined.
func splitValueFindings(prev, next string) []Finding {
	p := strings.TrimRight(prev, " \t")
	if p == "" || len(next) == 0 {
		return nil
	}
	sep := ""
	switch c := p[len(p)-1]; {
	case c == '=' || c == ':':
	default:
		w := p[strings.LastIndexAny(p, " \t")+1:]
		if !strings.HasPrefix(w, "-") || len(w) < 2 {
			return nil
		}
		sep = " "
	}
	v := strings.TrimLeft(next, " \t")
	off := len(next) - len(v) // blanks trimmed from next
	if len(p) > 512 {
		p = p[len(p)-512:] // the assignment, not the whole payload
	}
	head := p + sep
	var out []Finding
	for _, f := range extraFindings(head + v) {
		if f.Start < len(head) || f.End > len(head)+len(v) {
			continue
		}
		f.Start += off - len(head)
		f.End += off - len(head)
		out = append(out, f)
	}
	return out
}
