package contextfold

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/contextfold/contextfold/internal/parallel"
	"github.com/contextfold/contextfold/scrub"
)

// ShareSecrets returns turns (a new slice; the turns it changes are
// copies) where every value that the context of one turn reveals as a
// secret (CLOUDFLARE_API_KEY=…, "password": "…", a .pgpass line, docker
// login -p …; scrub.Known.AddContext) is redacted in every other turn of
// the batch that shows it, bare or encoded (base64, percent, JSON, HTML).
// Fold scrubs each turn on its own, so without it a value one turn's tool
// output marked as a secret stayed in plain in the turn whose assistant
// text repeated it ("the key … is set"), earlier or later in the batch.
// A vendor token (ghp_…, sk_live_…) needs no sharing: its rule finds it
// in every turn.
//
// A turn without such a value from another turn is returned as given,
// so work prepared ahead for it (Store.Prepare) still applies; a turn with
// one is scrubbed here once more (its own secrets are redacted with the
// other turns' values, so that a shared value holding part of its context
// hides none of them). With scrubbing off it returns turns unchanged.
// Cost: our context rules over every text of the batch (a fraction of a
// scrub), one scan per text for the values found, and a scrub of each turn
// that shows another's value. Errors: those of the store's scrubber
// settings.
func (s *Store) ShareSecrets(turns []Turn) ([]Turn, error) {
	sc, err := s.scrubber()
	if err != nil || sc == nil || len(turns) < 2 {
		return turns, err
	}
	texts := turnTexts
	// own[i]: the values turn i reveals itself (its own scrub redacts
	// them); all: every turn's.
	own := make([]scrub.Known, len(turns))
	var all scrub.Known
	for i, t := range turns {
		own[i].AddContextSet(sc, texts(t))
		all.Merge(&own[i])
	}
	if all.Len() == 0 {
		return turns, nil
	}
	out := make([]Turn, len(turns))
	copy(out, turns)
	for i, t := range turns {
		out[i].own = &own[i] // the fold event's sharing reads them again
		if own[i].Len() == all.Len() {
			continue // nothing from another turn to share
		}
		if c, ok := shareInto(sc, t, &all, &own[i]); ok {
			c.own = &own[i]
			out[i] = c
		}
	}
	return out, nil
}

// turnTexts lists the texts of t that a fold scrubs.
func turnTexts(t Turn) []string {
	out := []string{t.SessionID, t.Summary, t.RawContent}
	out = append(out, t.Files...)
	out = append(out, t.Commands...)
	return append(out, t.Errors...)
}

// shareInto returns t with the values of all that its texts show, other
// than its own (own: the values t's context reveals itself), redacted,
// and ok; or t and false when it shows none.
func shareInto(sc *scrub.Scrubber, t Turn, all, own *scrub.Known) (Turn, bool) {
	foreign := false
	for _, x := range turnTexts(t) {
		if _, n := all.RedactExcept(x, own); n > 0 {
			foreign = true
			break
		}
	}
	if !foreign {
		return t, false
	}
	// Another turn's value can hold this turn's context (a value
	// read as "SQUARESPACE,<token>" after "?key=" in the tool call
	// holds the keyword the tool output's token needs): redacted
	// first, it would hide the token from this turn's own rules.
	// So every secret this turn's own scrub finds is redacted too,
	// with the other turns' values.
	var k scrub.Known
	k.Merge(all)
	for _, x := range turnTexts(t) {
		k.AddFound(sc, x)
	}
	return redactTurn(t, &k), true
}

// redactTurn returns t with the values of k redacted in every field (session
// id, summary, payload, files, commands, errors), counted in its shared
// redactions.
func redactTurn(t Turn, k *scrub.Known) Turn {
	shared := 0
	red := func(x string) string {
		y, n := k.Redact(x)
		shared += n
		return y
	}
	list := func(l []string) []string {
		if l == nil {
			return nil
		}
		c := make([]string, len(l))
		for j, x := range l {
			c[j] = red(x)
		}
		return c
	}
	c := t
	c.SessionID, c.Summary, c.RawContent = red(t.SessionID), red(t.Summary), red(t.RawContent)
	c.Files, c.Commands, c.Errors = list(t.Files), list(t.Commands), list(t.Errors)
	c.shared += shared
	return c
}

// contextValues returns the values t's context reveals as secrets
// (scrub.Known.AddContextSet over its texts: a value a comma split from
// its NAME= too).
func contextValues(sc *scrub.Scrubber, t Turn) *scrub.Known {
	k := new(scrub.Known)
	k.AddContextSet(sc, turnTexts(t))
	return k
}

// maxSessionSecrets bounds the values a Store keeps for its session
// (sessionSecrets): past it, the values of new turns are shared within
// their own fold event only.
const maxSessionSecrets = 4096

// sessionSecrets is what the turns a Store has folded (or was shown,
// LearnSecrets) reveal as secrets by their context alone, kept in memory
// for the Store's lifetime so that a later fold event redacts them too:
// a value a tool output marked as a secret in one fold event
// (CLOUDFLARE_API_KEY=…) is redacted in the assistant text that repeats
// it bare, folded by the next fold event of the proxy, the next
// fold_turn of the MCP server or the next Stop hook. At most
// maxSessionSecrets values; held in memory only. Safe for concurrent use.
type sessionSecrets struct {
	mu sync.Mutex
	k  scrub.Known
	// tails: the last seamBytes of the payloads of the latest turns
	// folded, by step (splitSecrets).
	tails map[int]string
	// open: the private key the latest turns folded left open (keyParts).
	open *openKey
	// credStep, when credKnown, is the step of the latest turn folded,
	// and credReads whether it runs a command printing a credential file,
	// whose output is the next step's (credFileOutputs).
	credStep             int
	credKnown, credReads bool
}

// learn adds the values of k unless that would pass maxSessionSecrets
// values, and reports whether it did; mu is held.
func (ss *sessionSecrets) learn(k *scrub.Known) bool {
	if ss.k.Len()+k.Len() > maxSessionSecrets {
		return false
	}
	ss.k.Merge(k)
	return true
}

// LearnSecrets adds to the store's session secrets (kept in memory for
// the Store's lifetime, at most 4,096 values) the values that the context
// of turns reveals as secrets, without folding them: a caller that folds
// only the new turns of a transcript (the Stop hook, an ingest of a
// longer transcript) shows it the turns folded before, so that a value an
// old turn revealed (API_KEY=… in its tool output) is redacted where a new
// turn shows it bare. Every later fold of this Store redacts these values,
// bare or encoded, in the turns it folds. With scrubbing off it does
// nothing. Errors: those of the store's scrubber settings. Safe for
// concurrent use.
func (s *Store) LearnSecrets(turns []Turn) error {
	s.mu.Lock()
	sc, err := s.scrubber()
	s.mu.Unlock()
	if err != nil || sc == nil {
		return err
	}
	var k scrub.Known
	for _, t := range turns {
		k.Merge(contextValues(sc, t))
	}
	s.secrets.mu.Lock()
	s.secrets.learn(&k)
	s.secrets.mu.Unlock()
	return nil
}

// RevealsSecrets reports whether the context of t reveals a value as a
// secret: whether LearnSecrets learns anything from t. A caller that
// shows a later Store only the turns that do (the Stop hook, which keeps
// where they are in the transcript) gives it what the whole would. false
// with scrubbing off. Errors: those of the store's scrubber settings. Safe
// for concurrent use.
func (s *Store) RevealsSecrets(t Turn) (bool, error) {
	s.mu.Lock()
	sc, err := s.scrubber()
	s.mu.Unlock()
	if err != nil || sc == nil {
		return false, err
	}
	return contextValues(sc, t).Len() > 0, nil
}

// shareSession redacts, in the turns at positions want (the new turns of
// a fold event), the values that the session's other turns revealed: those
// of the turns this Store folded before (sessionSecrets) and those of
// the other turns of this event, which it learns. ownOf(k, t) returns
// the values t, the turn at want[k], reveals itself; it is called on every
// CPU (once per k). It returns turns, or a copy with the turns it changed.
// Callers hold s.mu.
func (s *Store) shareSession(sc *scrub.Scrubber, turns []Turn, want []int, ownOf func(k int, t Turn) *scrub.Known) []Turn {
	if sc == nil || len(want) == 0 {
		return turns
	}
	own := make([]*scrub.Known, len(want))
	parallel.Each(len(want), func(k int) { own[k] = ownOf(k, turns[want[k]]) })
	ss := &s.secrets
	ss.mu.Lock()
	defer ss.mu.Unlock()
	all := &ss.k
	for _, o := range own {
		if all == &ss.k && !ss.learn(o) {
			// The session holds all it may: this event's values are
			// shared within the event.
			all = new(scrub.Known)
			all.Merge(&ss.k)
		}
		if all != &ss.k {
			all.Merge(o)
		}
	}
	if all.Len() == 0 {
		return turns
	}
	var out []Turn
	for k, i := range want {
		if own[k].Len() == all.Len() {
			continue // nothing from another turn to share
		}
		if c, ok := shareInto(sc, turns[i], all, own[k]); ok {
			if out == nil {
				out = slices.Clone(turns)
			}
			out[i] = c
		}
	}
	if out == nil {
		return turns
	}
	return out
}

// MatchesSharedRedactions reports whether scrubbed (a turn's payload as
// its own scrub leaves it: Store.ScrubbedTurn) is what stored (the
// payload of its cold node) was folded from, stored's redaction markers
// ("[REDACTED:<rule>]") each standing for a non-empty run of scrubbed: a
// fold event redacts the values other turns of the session revealed
// (shareSession), which the turn's own scrub does not know once the
// process that folded it is gone. Everything outside the markers must be
// equal, byte for byte. O(len(stored) + len(scrubbed)).
func MatchesSharedRedactions(stored, scrubbed string) bool {
	var pieces []string
	for rest := stored; ; {
		i := strings.Index(rest, scrub.MarkerPrefix)
		if i < 0 {
			pieces = append(pieces, rest)
			break
		}
		j := strings.IndexByte(rest[i:], ']')
		if j < 0 {
			pieces = append(pieces, rest)
			break
		}
		pieces = append(pieces, rest[:i])
		rest = rest[i+j+1:]
	}
	if len(pieces) == 1 {
		return stored == scrubbed
	}
	first, last := pieces[0], pieces[len(pieces)-1]
	if !strings.HasPrefix(scrubbed, first) || !strings.HasSuffix(scrubbed, last) || len(first)+len(last) > len(scrubbed) {
		return false
	}
	p, end := len(first), len(scrubbed)-len(last)
	for _, m := range pieces[1 : len(pieces)-1] {
		// Each marker stands for one byte at least.
		if p+1 > end {
			return false
		}
		k := strings.Index(scrubbed[p+1:end], m)
		if k < 0 {
			return false
		}
		p += 1 + k + len(m)
	}
	return p < end
}

// seamBytes is how much of the end of one message and the start of the
// next splitSecrets reads together (bytes each, at most a line).
const seamBytes = 256

// seamJoins reports whether a message ending in byte a and the next one
// starting with byte b may cut one token: both are token characters, or a
// ends an assignment ('=', ':') and b starts its value.
func seamJoins(a, b byte) bool {
	tok := func(c byte) bool { return isTokenByte(c) }
	return tok(b) && (tok(a) || a == '=' || a == ':')
}

// isTokenByte reports whether c may be part of a token: an ASCII letter
// or digit, or one of "+/=_-~" (not a sentence's ".")
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+/=_-~", c) >= 0
}

// seamTailsMax bounds the message ends a Store keeps for the next fold
// event's seams (sessionSecrets.tails).
const seamTailsMax = 64

// splitSecrets redacts a secret that a message boundary split: its first
// characters at the end of one turn, the rest at the start of the next
// (step ids one apart; a token, "export API_KEY=" and its value cut by a
// terminal's or a tool's chunking; a PEM block's two parts are each found
// by their own rule). When the joint may cut a token (seamJoins), the last
// line of one turn's payload and the first line of the next are read
// together (seamBytes each at most) and a secret found across the joint
// is redacted on both sides, each part under its own marker; a secret that starts just at the joint counts
// when the first turn ends in '=' or ':' with no blank (its value is
// the next turn's start). The previous turn may be one an earlier fold
// event of this Store folded (its end is kept in memory, seamTailsMax
// turns at most): then only the new turn changes. The parts a turn shows
// again elsewhere are redacted there too by the sharing that follows
// (Known). Callers hold s.mu; ss.mu is taken here.
func (s *Store) splitSecrets(sc *scrub.Scrubber, turns []Turn, want []int) []Turn {
	if sc == nil || len(want) == 0 {
		return turns
	}
	ss := &s.secrets
	ss.mu.Lock()
	defer ss.mu.Unlock()
	pos := make(map[int]int, len(want)) // step → position in turns
	for _, i := range want {
		pos[turns[i].StepID] = i
	}
	var out []Turn
	set := func(i int, t Turn) {
		if out == nil {
			out = slices.Clone(turns)
		}
		out[i] = t
	}
	cur := func(i int) Turn {
		if out != nil {
			return out[i]
		}
		return turns[i]
	}
	for _, i := range want {
		b := cur(i)
		step := b.StepID
		var tail string
		j, inBatch := pos[step-1]
		if inBatch {
			tail = cur(j).RawContent
		} else if t, ok := ss.tails[step-1]; ok {
			tail = t
		} else {
			continue
		}
		// The joined line: the last line of the one, the first of the
		// other, seamBytes at most each.
		tail = tail[len(tail)-min(len(tail), seamBytes):]
		tail = tail[strings.LastIndexByte(tail, '\n')+1:]
		head := b.RawContent[:min(len(b.RawContent), seamBytes)]
		if k := strings.IndexByte(head, '\n'); k >= 0 {
			head = head[:k]
		}
		if tail == "" || head == "" || !seamJoins(tail[len(tail)-1], head[0]) {
			continue
		}
		seam := tail + head
		at := len(tail)
		cut := -1 // where the secret starts in the seam
		end := -1 // where it ends
		for _, f := range sc.Find(seam) {
			crosses := f.Start < at && f.End > at
			starts := f.Start == at && f.End > at && (tail[len(tail)-1] == '=' || tail[len(tail)-1] == ':')
			if crosses || starts {
				if cut < 0 || f.Start < cut {
					cut = f.Start
				}
				end = max(end, f.End)
			}
		}
		if cut < 0 {
			continue
		}
		// What the joined line shows as secrets (the secret across the
		// joint, whole and as its two parts, and the others of the two
		// lines: the part replaced may hold one of the turn's own, as
		// "API_TOKEN=…" after a token the joint cut) is redacted in
		// every field of the two turns, and learnt for the session's
		// later turns: a summary repeating the value held it.
		var k scrub.Known
		k.AddFound(sc, seam)
		k.AddValue(seam[cut:at], "contextfold-split-secret")
		k.AddValue(seam[at:end], "contextfold-split-secret")
		if cut < at && inBatch {
			a := cur(j)
			n := len(a.RawContent) - (at - cut)
			a.RawContent = a.RawContent[:n] + scrub.RedactionMarker("contextfold-split-secret")
			a.shared++
			set(j, redactTurn(a, &k))
		}
		b.RawContent = scrub.RedactionMarker("contextfold-split-secret") + b.RawContent[min(end-at, len(b.RawContent)):]
		b.shared++
		set(i, redactTurn(b, &k))
		ss.learn(&k)
	}
	// The ends of this event's latest turns, as given, for the next event
	// (seamTailsMax in all: the highest steps).
	if ss.tails == nil {
		ss.tails = map[int]string{}
	}
	last := slices.Clone(want)
	slices.SortFunc(last, func(x, y int) int { return turns[x].StepID - turns[y].StepID })
	for _, i := range last[max(0, len(last)-seamTailsMax):] {
		t := turns[i].RawContent
		ss.tails[turns[i].StepID] = strings.Clone(t[len(t)-min(len(t), seamBytes):])
	}
	if len(ss.tails) > seamTailsMax {
		steps := make([]int, 0, len(ss.tails))
		for st := range ss.tails {
			steps = append(steps, st)
		}
		slices.Sort(steps)
		for _, st := range steps[:len(steps)-seamTailsMax] {
			delete(ss.tails, st)
		}
	}
	if out == nil {
		return turns
	}
	return out
}

// openKeySteps bounds how far (in steps) after the turn that showed the
// latest part of a private key left open the next turns are read for the
// rest of its body (keyParts).
const openKeySteps = 16

// openKey is a private key a turn left open: a PEM block's BEGIN line
// without its END line, or a PuTTY key's Private-Lines with fewer lines
// after it than it announces.
type openKey struct {
	step int // the latest step that showed a part of it
	left int // PuTTY: the private lines still to come; -1: a PEM block, until its END line
}

// rule is the rule that redacts the key's parts.
func (o *openKey) rule() string {
	if o.left < 0 {
		return "contextfold-private-key-block"
	}
	return "contextfold-putty-private-key"
}

// OpenKey is a private key the turns a Store folded left open (a PEM
// block's BEGIN line without its END line, a PuTTY key short of the lines
// its Private-Lines announces): the next turns' first run of base64 lines,
// up to openKeySteps (16) steps after Step, are redacted as its rest. It
// holds no part of the key. The Stop hook keeps it between its processes
// (Store.OpenKey, then Store.ResumeOpenKey in the next).
type OpenKey struct {
	// Step is the latest step that showed a part of the key.
	Step int `json:"step"`
	// Left is, for a PuTTY key, how many of its private lines are still
	// to come; -1 for a PEM block, open until its END line.
	Left int `json:"left"`
}

// OpenKey returns the private key the turns this Store folded left open,
// if any (scrubbing on). Safe for concurrent use.
func (s *Store) OpenKey() (OpenKey, bool) {
	ss := &s.secrets
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.open == nil {
		return OpenKey{}, false
	}
	return OpenKey{Step: ss.open.step, Left: ss.open.left}, true
}

// ResumeOpenKey tells the Store that the turns folded before it was opened
// (by another process: an earlier Stop hook) left k open, as OpenKey
// returned it there: the parts of the key the next turns it folds show are
// redacted. A k with Left 0 or below -1 is ignored. Safe for concurrent use.
func (s *Store) ResumeOpenKey(k OpenKey) {
	if k.Left == 0 || k.Left < -1 {
		return
	}
	ss := &s.secrets
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.open = &openKey{step: k.Step, left: k.Left}
}

// keyParts redacts the middle parts of a private key that tool outputs
// split in three or more (cat of a key read in pieces): a part with
// neither its BEGIN nor its END line (plain base64 lines) is no secret by
// itself, and the scrub of each text left it. After a turn whose payload
// leaves a key open (leftOpen), the first run of base64 lines (the first
// of them 16 characters or more) of each of the next turns' payloads, for
// openKeySteps steps after the latest part, is redacted up to and with
// the END line (PEM), or for the private lines still to come (PuTTY,
// until Private-MAC); the key is closed there. Turns in between without
// such lines (the tool calls) change nothing. The key left open by an
// earlier fold event of this Store is kept in memory. Callers hold s.mu;
// ss.mu is taken here.
func (s *Store) keyParts(sc *scrub.Scrubber, turns []Turn, want []int) []Turn {
	if sc == nil || len(want) == 0 {
		return turns
	}
	ss := &s.secrets
	ss.mu.Lock()
	defer ss.mu.Unlock()
	order := slices.Clone(want)
	slices.SortFunc(order, func(x, y int) int { return turns[x].StepID - turns[y].StepID })
	var out []Turn
	open := ss.open
	if open == nil {
		// A key the batch's stored turns before its first new one left
		// open, unknown to this Store (another process folded them: an
		// ingest of a longer transcript, a proxy started again): the
		// same state machine over them, redacting nothing.
		open = storedOpenKey(turns, want, turns[order[0]].StepID)
	}
	for _, i := range order {
		t := turns[i]
		raw := t.RawContent
		next, start, end := advanceOpenKey(open, t.StepID, raw)
		if end > start {
			if out == nil {
				out = slices.Clone(turns)
			}
			// Each line is redacted in the turn's other fields too (a
			// summary quoting the first), and learnt for later turns.
			var k scrub.Known
			for _, l := range strings.Split(raw[start:end], "\n") {
				if l = strings.Trim(l, " \t\r"); isKeyLine(l) {
					k.AddValue(l, open.rule())
				}
			}
			c := out[i]
			c.RawContent = raw[:start] + scrub.RedactionMarker(open.rule()) + raw[end:]
			c.shared++
			out[i] = redactTurn(c, &k)
			ss.learn(&k)
		}
		open = next
	}
	ss.open = open
	if out == nil {
		return turns
	}
	return out
}

// storedOpenKey returns the key left open after the turns of the batch
// that are not in want (stored before) and come before step first, read
// in step order from none open (nil: none).
func storedOpenKey(turns []Turn, want []int, first int) *openKey {
	isNew := make(map[int]bool, len(want))
	for _, i := range want {
		isNew[i] = true
	}
	var old []int
	for i, t := range turns {
		if !isNew[i] && t.StepID < first {
			old = append(old, i)
		}
	}
	slices.SortStableFunc(old, func(x, y int) int { return turns[x].StepID - turns[y].StepID })
	var open *openKey
	last := 0
	for k, i := range old {
		if k > 0 && turns[i].StepID == last {
			continue // a step given twice: read once
		}
		last = turns[i].StepID
		open, _, _ = advanceOpenKey(open, turns[i].StepID, turns[i].RawContent)
	}
	return open
}

// advanceOpenKey returns the key left open after the turn at step with
// payload raw, given open, the key left open before it (nil: none), and
// [start, end), the span of raw holding the open key's rest (end <= start:
// none), which keyParts redacts.
func advanceOpenKey(open *openKey, step int, raw string) (next *openKey, start, end int) {
	next = open
	if open != nil && step > open.step && step-open.step <= openKeySteps {
		var used int
		var closed bool
		start, end, used, closed = keyBody(raw, open.left)
		if end > start {
			next = &openKey{step: step, left: open.left}
			if next.left > 0 {
				next.left -= used
			}
		}
		if closed {
			next = nil
		}
	} else if open != nil && step-open.step > openKeySteps {
		next = nil
	}
	if o := leftOpen(raw); o != nil {
		o.step = step
		next = o
	}
	return next, start, end
}

// OpenKeyAfter returns the private key left open after t, a turn already
// folded that a caller reads again (its payload as it was before the
// scrub), given prev, the key left open before t (nil: none): what
// Store.OpenKey would say had this Store folded t. The Stop hook, reading
// a transcript whole (its state file lost, the transcript rewritten),
// passes it the stored turns before the first new one, in step order, and
// hands the result to Store.ResumeOpenKey: the rest of a key those turns
// left open is redacted in the new turns as if the state had been kept.
// Pure: no Store, no I/O; nil when no key is open.
func OpenKeyAfter(prev *OpenKey, t Turn) *OpenKey {
	var open *openKey
	if prev != nil && !(prev.Left == 0 || prev.Left < -1) {
		open = &openKey{step: prev.Step, left: prev.Left}
	}
	next, _, _ := advanceOpenKey(open, t.StepID, t.RawContent)
	if next == nil {
		return nil
	}
	return &OpenKey{Step: next.step, Left: next.left}
}

// isKeyLine reports whether line (without its newline) is a line of a
// key's base64 body: base64 characters alone, blanks and a CR around.
func isKeyLine(line string) bool {
	line = strings.Trim(line, " \t\r")
	if line == "" {
		return false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// isPEMEnd reports whether line is the END line of a PEM private key.
func isPEMEnd(line string) bool {
	line = strings.Trim(line, " \t\r")
	return strings.HasPrefix(line, "-----END") && strings.HasSuffix(line, "PRIVATE KEY-----")
}

// keyBody finds in text the first run of key lines, the first of them 16
// characters or more: [start, end) up to the end of its last line, or of
// the END line after it (a PEM key, left < 0), or of the left-th line (a
// PuTTY key); used: the lines taken; closed: the key ends here (its END
// line, its last private line, or Private-MAC after the run).
func keyBody(text string, left int) (start, end, used int, closed bool) {
	start = -1
	for p := 0; p < len(text); {
		e := strings.IndexByte(text[p:], '\n')
		if e < 0 {
			e = len(text)
		} else {
			e += p
		}
		line := text[p:e]
		switch {
		case start < 0 && isKeyLine(line) && len(strings.Trim(line, " \t\r")) >= 16:
			start, end, used = p, e, 1
		case start >= 0 && left > 0 && used == left:
			return start, end, used, true
		case start >= 0 && isKeyLine(line):
			end = e
			used++
		case start >= 0 && left < 0 && isPEMEnd(line):
			return start, e, used, true
		case start >= 0:
			return start, end, used, strings.HasPrefix(line, "Private-MAC:")
		}
		p = e + 1
	}
	if start < 0 {
		return 0, 0, 0, false
	}
	return start, end, used, left > 0 && used >= left
}

// leftOpen returns the key text leaves open, or nil: a PEM private key's
// BEGIN line with no END line after it, or a PuTTY key's "Private-Lines:
// N" with fewer than N key lines after it (and no Private-MAC).
func leftOpen(text string) *openKey {
	if b := strings.LastIndex(text, "-----BEGIN"); b >= 0 {
		line := text[b:]
		if e := strings.IndexByte(line, '\n'); e >= 0 {
			line = line[:e]
		}
		if strings.Contains(line, "PRIVATE KEY") && !strings.Contains(text[b:], "-----END") {
			return &openKey{left: -1}
		}
	}
	p := strings.LastIndex(text, "Private-Lines:")
	if p < 0 || strings.Contains(text[p:], "Private-MAC:") {
		return nil
	}
	rest := text[p+len("Private-Lines:"):]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		nl = len(rest)
	}
	n, err := strconv.Atoi(strings.Trim(rest[:nl], " \t\r"))
	if err != nil || n <= 0 || n > 1024 {
		return nil
	}
	have := 0
	for _, line := range strings.Split(rest[min(nl+1, len(rest)):], "\n") {
		if !isKeyLine(line) {
			break
		}
		have++
	}
	if have >= n {
		return nil
	}
	return &openKey{left: n - have}
}
