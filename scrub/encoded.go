package scrub

import (
	"encoding/base64"
	"encoding/hex"
	"sort"
	"strings"
	"unicode/utf8"
)

// Known secret values in other encodings.
//
// A secret value found once (a KEY=value line, a vendor token) is redacted
// wherever else it occurs in the same text, or in the other texts of a
// ScrubSet. An agent also shows a value it has seen in another encoding:
// "echo -n VALUE | base64", a Kubernetes Secret's data, an Authorization:
// Basic header, a URL query (percent-encoded), HTML (entities), a JSON
// string (\u escapes). The repeat pass therefore looks for each value's
// encodings too (knownMatcher):
//
//   - base64, standard and URL-safe alphabets, at each of the three byte
//     alignments the value can have inside an encoded stream: the encoded
//     triples that lie wholly within the value are the same characters
//     whatever precedes and follows it. A hit redacts the whole base64 run
//     around it (what else it encodes sits next to a secret);
//   - hex, lower or upper case (xxd -p, a hex dump's digits);
//   - percent-encoding, HTML character references and JSON or C escapes,
//     or a mix of them: the value is looked for in the text's decoded view
//     too (decodeEscapes), and a hit there maps back to the escaped text.

// base64Byte reports whether c may be part of a base64 run (either
// alphabet, padding included).
func base64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}

// knownNeedle is one encoding of a known value.
type knownNeedle struct {
	rule  string
	value string // the known value it encodes
	// run: a hit stands for the whole base64 run around it.
	run bool
}

// knownMatcher finds known secret values and their encodings.
//
// It scans a text once: a bit per two-byte prefix of a needle rules out
// most positions, and the needles are grouped by their first four bytes
// (every needle has minRepeatLen bytes or more). Building it costs a few
// allocations per needle (an Aho-Corasick automaton over the seven needles
// of each of a text's hundreds of secrets cost 100+ MB per MB scrubbed).
type knownMatcher struct {
	needles map[string]knownNeedle
	// by4 groups the needles by their first four bytes.
	by4 map[uint32][]string
	// has2 has the bit of every needle's first two bytes.
	has2    [1 << 16 / 64]uint64
	longest int // bytes of the longest needle
}

// newKnownMatcher returns a matcher for values (value → rule id), or nil
// when there is none. Deterministic for given values.
func newKnownMatcher(values map[string]string) *knownMatcher {
	if len(values) == 0 {
		return nil
	}
	needles := make(map[string]knownNeedle, 8*len(values))
	add := func(n string, k knownNeedle) {
		if len(n) < minRepeatLen {
			return
		}
		if old, ok := needles[n]; ok && (!old.run || k.run) {
			return // a plain hit is exact: keep it over a run
		}
		needles[n] = k
	}
	keys := make([]string, 0, len(values))
	for v := range values {
		keys = append(keys, v)
	}
	sort.Strings(keys)
	for _, v := range keys {
		rule := values[v]
		add(v, knownNeedle{rule: rule, value: v})
		// Hex, as xxd -p, od or a hex dump's digits show it (either case).
		h := hex.EncodeToString([]byte(v))
		add(h, knownNeedle{rule: rule, value: v})
		add(strings.ToUpper(h), knownNeedle{rule: rule, value: v})
		for skip := 0; skip < 3 && skip < len(v); skip++ {
			w := v[skip:]
			w = w[:len(w)/3*3]
			if len(w) == 0 {
				continue
			}
			std := base64.RawStdEncoding.EncodeToString([]byte(w))
			add(std, knownNeedle{rule: rule, value: v, run: true})
			if u := base64.RawURLEncoding.EncodeToString([]byte(w)); u != std {
				add(u, knownNeedle{rule: rule, value: v, run: true})
			}
		}
	}
	list := make([]string, 0, len(needles))
	for n := range needles {
		list = append(list, n)
	}
	sort.Strings(list)
	k := &knownMatcher{needles: needles, by4: make(map[uint32][]string, len(list))}
	for _, n := range list {
		k.longest = max(k.longest, len(n))
		k.by4[prefix4(n)] = append(k.by4[prefix4(n)], n)
		p2 := uint16(n[0])<<8 | uint16(n[1])
		k.has2[p2/64] |= 1 << (p2 % 64)
	}
	return k
}

// find returns the findings of the known values and their encodings in
// text (a base64 hit widened to its run), and in its decoded view (the
// value percent-encoded, JSON-escaped, HTML-escaped, or a mix).
func (k *knownMatcher) find(text string) []Finding { return k.findExcept(text, nil) }

// findExcept is find without the values of skip.
func (k *knownMatcher) findExcept(text string, skip map[string]string) []Finding {
	if k == nil {
		return nil
	}
	out := k.findPlain(text, skip)
	// The decoded view a chunk at a time bounds its memory; chunks
	// overlap by more than the longest escaped needle.
	overlap := 6*k.longest + 64
	for off := 0; off < len(text); off += knownChunk {
		end := min(len(text), off+knownChunk+overlap)
		a := off
		for a > 0 && !utf8.RuneStart(text[a]) {
			a--
		}
		if v, ok := decodeEscapes(text[a:end]); ok {
			for _, f := range k.findPlain(v.text, skip) {
				f.Start, f.End = v.span(f.Start, f.End)
				f.Start += a
				f.End += a
				out = append(out, f)
			}
		}
		if end == len(text) {
			break
		}
	}
	return out
}

// knownChunk is the size of the chunks whose decoded view find searches.
const knownChunk = 1 << 20

// findPlain is find without the decoded view.
func (k *knownMatcher) findPlain(text string, skip map[string]string) []Finding {
	var out []Finding
	for p := 0; p+minRepeatLen <= len(text); p++ {
		p2 := uint16(text[p])<<8 | uint16(text[p+1])
		if k.has2[p2/64]&(1<<(p2%64)) == 0 {
			continue
		}
		for _, m := range k.by4[prefix4(text[p:])] {
			// The prefix first: looking a needle up hashes all of it, and
			// a private key block's value may be the whole text (1 MiB of
			// BEGIN lines hashed it at every one of them).
			if !strings.HasPrefix(text[p:], m) {
				continue
			}
			if _, skipped := skip[k.needles[m].value]; !skipped {
				out = append(out, k.finding(text, p, m))
			}
		}
	}
	return out
}

// prefix4 returns the first four bytes of s (len(s) >= 4) as a number.
func prefix4(s string) uint32 {
	return uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
}

// finding returns the finding of needle m at p in text.
func (k *knownMatcher) finding(text string, p int, m string) Finding {
	n := k.needles[m]
	f := Finding{RuleID: n.rule, Start: p, End: p + len(m)}
	if n.run {
		// Padding ends a run: "token=<base64>" keeps its name.
		for f.Start > 0 && base64Byte(text[f.Start-1]) && text[f.Start-1] != '=' {
			f.Start--
		}
		for f.End < len(text) && base64Byte(text[f.End]) && text[f.End] != '=' {
			f.End++
		}
		for pad := 0; pad < 2 && f.End < len(text) && text[f.End] == '='; pad++ {
			f.End++
		}
	}
	return f
}

// Base64-encoded secrets not shown in plain.
//
// A value the text never shows in plain ("echo …| base64" of a token, a
// Kubernetes Secret's data, a .dockerconfigjson) is found by decoding:
// every base64 run of base64MinRun to base64MaxRun characters (either
// alphabet, padded or not) that decodes to text (valid UTF-8, nearly all
// printable) is scanned with every rule, and a run whose text holds a
// secret is redacted whole, under the rule that found it. A run that
// decodes to binary (a hash, a long identifier, image data) is skipped
// before any rule runs.
const (
	base64MinRun = 20
	base64MaxRun = 64 << 10
)

// base64Findings returns the base64 runs of text whose decoded text holds
// a secret (depth: how many more levels of encoding to look into).
func (s *Scrubber) base64Findings(text string, depth int) []Finding {
	var out []Finding
	for i := 0; i < len(text); {
		if !base64Byte(text[i]) || text[i] == '=' {
			i++
			continue
		}
		// A run starts after a non-base64 byte: never mid-word. Lines
		// of exactly 64 or 76 characters (base64(1), openssl, PEM
		// wrapping) continue on the next line.
		j, line, wrapped := i, i, false
		for j < len(text) && j-i <= base64MaxRun {
			for j < len(text) && base64Byte(text[j]) && text[j] != '=' {
				j++
			}
			nl := 0
			if j < len(text) && text[j] == '\n' {
				nl = 1
			} else if j+1 < len(text) && text[j] == '\r' && text[j+1] == '\n' {
				nl = 2
			}
			if w := j - line; nl == 0 || w != 64 && w != 76 || j+nl >= len(text) || !base64Byte(text[j+nl]) || text[j+nl] == '=' {
				break
			}
			j += nl
			line, wrapped = j, true
		}
		end := j
		for end < len(text) && end-j < 2 && text[end] == '=' {
			end++
		}
		if n := j - i; n >= base64MinRun && n <= base64MaxRun {
			run := text[i:j]
			if wrapped {
				run = strings.NewReplacer("\r", "", "\n", "").Replace(run)
			}
			if dec, ok := decodeBase64Text(run); ok {
				var fs []Finding
				if depth > 0 {
					fs = s.findAllDepth(dec, depth-1, nil)
				}
				fs, _ = s.split(dec, fs)
				if len(fs) > 0 {
					out = append(out, Finding{RuleID: fs[0].RuleID, Start: i, End: end})
				}
			}
		}
		i = max(end, i+1)
	}
	return out
}

// decodeBase64Text decodes run (no padding) in the standard or URL-safe
// alphabet, and reports whether it holds text: valid UTF-8 with at most
// one byte in 32 a control character other than white space.
func decodeBase64Text(run string) (string, bool) {
	if len(run)%4 == 1 {
		return "", false
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(run)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			bad++
		}
	}
	if bad*32 > len(b) {
		return "", false
	}
	return string(b), true
}

// Secrets shared between texts that are scrubbed apart.
//
// ScrubSet shares what one field's context reveals with the other fields of
// one turn. Turns folded together (one ingest, one fold event) are scrubbed
// one by one, so a value only its context marks as a secret
// (CLOUDFLARE_API_KEY=… in turn 3's tool output) stayed in the turn that
// shows it bare (turn 5's assistant text: "the key … is set"). Known and
// Known.Redact let a caller share such values across the texts of a batch.

// Known is a set of secret values, each with the rule that revealed it.
// The zero value is an empty set; not safe for concurrent use (Redact
// caches its matcher). The values are held in memory only.
type Known struct {
	values map[string]string
	km     *knownMatcher // built by Redact, dropped by AddContext
}

// AddContext adds the values of text that only their context reveals as
// secrets (our NAME=value, name: value, --flag value, <tag>, URL password,
// .netrc, .pgpass and command-line password rules), of minRepeatLen bytes
// or more, not placeholders nor allowed, and reports how many were new. A
// vendor token is not added: its rule finds it wherever it is, and
// neither is code (looksLikeCode) nor an ordinary word (plainWord).
func (k *Known) AddContext(s *Scrubber, text string) int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return k.addContextFindings(s, text, extraFindings(text))
}

// addContextFindings is AddContext of a valid UTF-8 text whose
// extraFindings are extra.
func (k *Known) addContextFindings(s *Scrubber, text string, extra []Finding) int {
	fs, _ := s.split(text, extra)
	return k.addShared(text, fs)
}

// addShared adds the values of the findings fs of text that are shared:
// not a self-evident token, not code, not an ordinary word.
func (k *Known) addShared(text string, fs []Finding) int {
	n := 0
	for _, f := range fs {
		switch f.RuleID {
		case "contextfold-private-key-block", "contextfold-jwt", "contextfold-aws-access-key-id", "contextfold-llm-api-key":
			continue // self-evident tokens
		}
		if v := text[f.Start:f.End]; !looksLikeCode(v) && !plainWord(v) {
			n += k.add(v, f.RuleID)
		}
	}
	return n
}

// AddContextSet is AddContext over each of texts (the texts of one turn,
// in the order ScrubSet reads them), and also adds the values a text that
// ends in an assignment or an option shows at the start of the next one
// ("DB_PASSWORD=" then "VALUE": a list split on commas), which ScrubSet
// reads joined and redacts; it reports how many were new. So a value a
// comma split from its NAME= is shared with later turns as any other.
func (k *Known) AddContextSet(s *Scrubber, texts []string) int {
	clean := make([]string, len(texts))
	n := 0
	for i, t := range texts {
		if !utf8.ValidString(t) {
			t = strings.ToValidUTF8(t, "\uFFFD")
		}
		clean[i] = t
		n += k.addContextFindings(s, t, extraFindings(t))
	}
	return n + k.addSplitValues(s, clean, 0)
}

// addSplitValues adds the shared values that texts[i] reveals at the start
// of texts[i+1] (splitValueFindings), for i+1 >= from.
func (k *Known) addSplitValues(s *Scrubber, texts []string, from int) int {
	n := 0
	for i := max(from-1, 0); i+1 < len(texts); i++ {
		if fs, _ := s.split(texts[i+1], splitValueFindings(texts[i], texts[i+1])); len(fs) > 0 {
			n += k.addShared(texts[i+1], fs)
		}
	}
	return n
}

// AddFound adds the values of every secret s finds in text (any rule, as
// Find: placeholders and allowed values left out), of minRepeatLen bytes
// or more, and reports how many were new.
func (k *Known) AddFound(s *Scrubber, text string) int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	n := 0
	for _, f := range s.Find(text) {
		n += k.add(text[f.Start:f.End], f.RuleID)
	}
	return n
}

// AddValue adds v, a secret value rule revealed, unless it is shorter than
// minRepeatLen bytes or already there, and reports whether it was new (1)
// or not (0): a caller that cut a secret apart (the two parts of a token a
// message boundary split) has it share each part.
func (k *Known) AddValue(v, rule string) int { return k.add(v, rule) }

// Merge adds the values of other to k.
func (k *Known) Merge(other *Known) {
	for v, r := range other.values {
		k.add(v, r)
	}
}

// add adds value v of rule to k (1) unless it is shorter than
// minRepeatLen or already there (0).
func (k *Known) add(v, rule string) int {
	if len(v) < minRepeatLen {
		return 0
	}
	if k.values == nil {
		k.values = map[string]string{}
	}
	if _, ok := k.values[v]; ok {
		return 0
	}
	k.values[v] = rule
	k.km = nil
	return 1
}

// looksLikeCode reports whether a value a context rule read after
// "password = " or "auth: " is more likely code than a secret: it has
// white space, a call's or an index's brackets ("get_auth_from_url(proxy)",
// "parts[1]"), or is a dotted path of identifiers ("parsed.auth"). Such a
// value is redacted where its context shows it, but not shared with the
// other turns of a batch, where it would take code away from every turn.
func looksLikeCode(v string) bool {
	if strings.ContainsAny(v, " \t()[]{}") {
		return true
	}
	dots := 0
	for _, seg := range strings.Split(v, ".") {
		if seg == "" || !(seg[0] == '_' || seg[0] >= 'a' && seg[0] <= 'z' || seg[0] >= 'A' && seg[0] <= 'Z') {
			return false
		}
		for i := 0; i < len(seg); i++ {
			if !isWordByte(seg[i]) {
				return false
			}
		}
		dots++
	}
	return dots >= 2
}

// plainWord reports whether a value a context rule read is an ordinary
// word: ASCII letters only, all of one case or capitalised ("postgres",
// "Postgres", "POSTGRES"). Such a value is redacted where its context
// shows it ("config token postgres") but not shared with the other turns
// of a batch or a session, where a rule's mistake would take the word away
// from every turn (a password of letters only is rarely worth that risk).
func plainWord(v string) bool {
	upper, lower := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			if i > 0 {
				upper++
			}
		default:
			return false
		}
	}
	return upper == 0 || lower == 0
}

// Len is the number of values in k.
func (k *Known) Len() int { return len(k.values) }

// Redact returns text with every occurrence of a value of k, and of its
// encodings (as for repeats within a text: base64, percent, JSON, HTML),
// replaced by a marker of the value's rule, and the number of markers
// inserted. Redaction markers already in text are kept.
func (k *Known) Redact(text string) (string, int) { return k.RedactExcept(text, nil) }

// RedactExcept is Redact without the values of except (nil: none): a
// caller leaves the values a text reveals itself to that text's own
// scrub, which redacts them with their context.
func (k *Known) RedactExcept(text string, except *Known) (string, int) {
	if len(k.values) == 0 || text == "" {
		return text, 0
	}
	var skip map[string]string
	if except != nil {
		skip = except.values
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	if k.km == nil {
		k.km = newKnownMatcher(k.values)
	}
	fs := k.km.findExcept(text, skip)
	if len(fs) == 0 {
		return text, 0
	}
	markers := markerSpans(text)
	kept := fs[:0]
	for _, f := range fs {
		if !overlapsAny(f, markers) {
			kept = append(kept, f)
		}
	}
	sortFindings(kept)
	r := redact(text, dedupe(kept))
	return r.Text, r.Redactions
}
