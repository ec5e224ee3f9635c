package hooks

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// UserPromptSubmit scans the prompt against the store and returns the
// verified content of the selected nodes as additional context, within
// opts.MaxChars. It returns nil (print nothing) when there is no store or
// nothing matches. A node that fails verification is never included; it is
// reported on opts.Diag and named in the context's closing marker.
func UserPromptSubmit(in *Input, opts Options) (*Output, error) {
	dir, err := StoreDir(in, opts.Dir)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Prompt) == "" || !storeExists(dir) {
		return nil, nil
	}
	store, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		return nil, err
	}
	if err := store.CheckMoved(); err != nil {
		return nil, err // a copied store: the one-line note names the fix
	}
	scan, err := match.Scan(store, in.Prompt, opts.mode())
	if err != nil {
		return nil, err
	}
	idPicks, err := matchIDs(store, in.Prompt, scan)
	if err != nil {
		return nil, err
	}
	reportUnmatched(store, scan, idPicks, in.Prompt, opts)
	picks, dropped, err := admit(store, scan, idPicks)
	if err != nil {
		return nil, err
	}
	if len(picks) == 0 {
		return nil, nil
	}
	var parts []part
	var refused []string
	for _, p := range picks {
		h, err := match.Hydrate(store, p.StepID, in.Prompt, opts.mode())
		if err != nil {
			name := contextfold.ErrorName(err)
			if name == "" {
				name = "error"
			}
			opts.diagf("step %d refused, not injected: %v", p.StepID, err)
			refused = append(refused, fmt.Sprintf("step %d (%s)", p.StepID, name))
			continue
		}
		parts = append(parts, part{h: h, terms: p.MatchedTerms})
	}
	for _, p := range dropped {
		refused = append(refused, fmt.Sprintf("step %d (over the per-turn budget)", p.StepID))
	}
	if len(parts) == 0 {
		return nil, nil // nothing verified to add; the reasons went to Diag
	}
	var refocus func(p part, chars int) *contextfold.Hydration
	if opts.mode() == match.Ranked {
		// A part that does not fit its share of --max-chars is focused on
		// its matched lines within that share, not cut at its head.
		refocus = func(p part, chars int) *contextfold.Hydration {
			for limit := chars; limit >= 64; limit = limit * 3 / 4 {
				h, err := match.HydrateWithin(store, p.h.StepID, in.Prompt, match.Ranked, limit/4)
				if err != nil || h.Windows == nil {
					return nil // no matched line: the head, as before
				}
				if len16(h.Content) <= chars {
					return h
				}
			}
			return nil
		}
	}
	text := renderContext(parts, refused, dir, opts.maxChars(), refocus)
	return &Output{HookSpecificOutput: SpecificOutput{HookEventName: EventUserPromptSubmit, AdditionalContext: text}}, nil
}

// reportUnmatched names, on Diag, the prompt's id-like terms (holding a
// digit) that no pick covers: those no archived node holds ("not in the
// archive"), and apart those that archived nodes hold although none of them
// was picked for this prompt (the scan preferred nodes matching more terms).
// A term of a secret the prompt shows is named in neither.
func reportUnmatched(store *contextfold.Store, scan *contextfold.ScanResult, idPicks []contextfold.ScanPick, prompt string, opts Options) {
	if opts.Diag == nil {
		return
	}
	covered := map[string]bool{}
	for _, ps := range [][]contextfold.ScanPick{scan.Selected, scan.Dropped, idPicks} {
		for _, p := range ps {
			for _, t := range p.MatchedTerms {
				covered[strings.ToLower(t)] = true
			}
		}
	}
	// A term of a secret the prompt shows (a token, the pieces of a
	// password cut at its punctuation) is never echoed: the terms are
	// looked for in the prompt as a fold would store it.
	stored := ""
	if st, n, err := store.ScrubbedTurn(contextfold.Turn{Summary: prompt}); err == nil && n > 0 {
		stored = strings.ToLower(st.Summary)
	}
	var missing, unpicked []string
	seen := map[string]bool{}
	for _, t := range append(slices.Clone(scan.QueryTerms), idTokens(scan.QueryTerms, prompt)...) {
		t = strings.ToLower(t)
		if covered[t] || seen[t] || !strings.ContainsAny(t, "0123456789") {
			continue
		}
		if stored != "" && !strings.Contains(stored, t) {
			continue
		}
		seen[t] = true
		if hits, err := store.Recall(t); err == nil && len(hits) > 0 {
			steps := make([]string, 0, 3)
			for _, h := range hits[:min(3, len(hits))] {
				steps = append(steps, strconv.Itoa(h.StepID))
			}
			more := ""
			if len(hits) > 3 {
				more = ", …"
			}
			unpicked = append(unpicked, fmt.Sprintf("%s (steps %s%s)", t, strings.Join(steps, ", "), more))
			continue
		}
		missing = append(missing, t)
	}
	// A term the index lists under no node may still be in a turn's text
	// ("0003" inside "0003_add_ledger", "40P01"): look through the newest
	// nodes' text before calling it absent.
	var textOnly []string
	missing, textOnly = inArchivedText(store, missing)
	if len(missing) > 0 {
		opts.diagf("not in the archive: %s", strings.Join(missing, ", "))
	}
	if len(textOnly) > 0 {
		opts.diagf("in archived text but not indexed under it (scan cannot pick it; fetch the step with %s): %s", toolFetch, strings.Join(textOnly, "; "))
	}
	if len(unpicked) > 0 {
		opts.diagf("in the archive but not picked for this prompt: %s", strings.Join(unpicked, "; "))
	}
}

// textSearchNodes bounds how many of the newest cold nodes inArchivedText
// reads.
const textSearchNodes = 200

// inArchivedText splits terms into those no newest node's summary or payload
// holds as a word (case-insensitive) and those some does ("term (step N)").
func inArchivedText(store *contextfold.Store, terms []string) (absent, found []string) {
	if len(terms) == 0 {
		return nil, nil
	}
	entries, err := store.Entries()
	if err != nil {
		return terms, nil
	}
	where := map[string]int{}
	for i := len(entries) - 1; i >= 0 && i >= len(entries)-textSearchNodes && len(where) < len(terms); i-- {
		n, err := store.ReadColdNode(entries[i].StepID)
		if err != nil {
			continue
		}
		text := strings.ToLower(n.Summary + "\n" + n.RawContent)
		for _, t := range terms {
			if _, ok := where[t]; !ok && containsTerm(text, t) {
				where[t] = n.StepID
			}
		}
	}
	for _, t := range terms {
		if step, ok := where[t]; ok {
			found = append(found, fmt.Sprintf("%s (step %d)", t, step))
		} else {
			absent = append(absent, t)
		}
	}
	return absent, found
}

// containsTerm reports whether w occurs in text between characters that are
// not letters or digits (or the ends): "_" separates, so "0003" is in
// "0003_add_ledger".
func containsTerm(text, w string) bool {
	for off := 0; ; {
		k := strings.Index(text[off:], w)
		if k < 0 {
			return false
		}
		a, b := off+k, off+k+len(w)
		before, _ := utf8.DecodeLastRuneInString(text[:a])
		after, _ := utf8.DecodeRuneInString(text[b:])
		if (a == 0 || !isAlnum(before)) && (b == len(text) || !isAlnum(after)) {
			return true
		}
		off = a + 1
	}
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func idTokens(queryTerms []string, prompt string) []string {
	terms := map[string]bool{}
	for _, t := range queryTerms {
		terms[t] = true
	}
	var ids []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(prompt, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '.')
	}) {
		w = strings.ToLower(strings.Trim(w, ".-_"))
		if utf8.RuneCountInString(w) < 4 || terms[w] || seen[w] {
			continue
		}
		if !strings.ContainsAny(w, "0123456789") || strings.Trim(w, "0123456789") == "" {
			continue // no digit, or all digits (scan handles numbers)
		}
		seen[w] = true
		ids = append(ids, w)
	}
	return ids
}

// matchIDs finds, for each id-like word of the prompt, the newest node whose
// summary holds it as a word.
func matchIDs(store *contextfold.Store, prompt string, scan *contextfold.ScanResult) ([]contextfold.ScanPick, error) {
	ids := idTokens(scan.QueryTerms, prompt)
	if len(ids) == 0 {
		return nil, nil
	}
	entries, err := store.Entries()
	if err != nil {
		return nil, err
	}
	var picks []contextfold.ScanPick
	byStep := map[int]int{}
	for _, id := range ids {
		for i := len(entries) - 1; i >= 0; i-- {
			e := entries[i]
			if !containsWord(strings.ToLower(e.Summary), id) {
				continue
			}
			if j, ok := byStep[e.StepID]; ok {
				picks[j].MatchedTerms = append(picks[j].MatchedTerms, id)
			} else {
				byStep[e.StepID] = len(picks)
				picks = append(picks, contextfold.ScanPick{StepID: e.StepID, MatchedTerms: []string{id}, Summary: e.Summary, TokenCost: float64(e.TokenEstimate)})
			}
			break
		}
	}
	return picks, nil
}

// containsWord reports whether w occurs in s between non-word characters.
func containsWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(w):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		off = i + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

// admit merges the id matches (first: they are the most specific) with the
// scan's picks and admits them under the per-turn budget the way scan does:
// the first pick always, a later one only if its cost fits what is left.
func admit(store *contextfold.Store, scan *contextfold.ScanResult, idPicks []contextfold.ScanPick) (picks, dropped []contextfold.ScanPick, err error) {
	if len(idPicks) == 0 {
		return scan.Selected, scan.Dropped, nil
	}
	policy, err := store.Policy()
	if err != nil {
		return nil, nil, err
	}
	capTokens, err := policy.MaxTokensPerCall()
	if err != nil {
		return nil, nil, err
	}
	budget := scan.BudgetTokens
	used := 0.0
	seen := map[int]bool{}
	for _, p := range append(idPicks, scan.Selected...) {
		if seen[p.StepID] {
			continue
		}
		seen[p.StepID] = true
		if p.TokenCost > capTokens {
			p.TokenCost = capTokens
		}
		if p.TokenCost > budget {
			p.TokenCost = budget
		}
		if len(picks) > 0 && used+p.TokenCost > budget {
			dropped = append(dropped, p)
			continue
		}
		used += p.TokenCost
		picks = append(picks, p)
	}
	for _, p := range scan.Dropped {
		if !seen[p.StepID] {
			dropped = append(dropped, p)
		}
	}
	return picks, dropped, nil
}

type part struct {
	h     *contextfold.Hydration
	terms []string
}

// len16 is the length of s in UTF-16 code units.
func len16(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// renderContext lays out the hydrated parts within maxChars UTF-16 units.
// Whatever does not fit is cut on a line boundary (or, when a line is too
// long, a character boundary), and a closing marker says what was left out
// and how to fetch it.
//
// refocus, when not nil, is asked for a part whose content exceeds its share
// (chars UTF-16 units): it returns the part's hydration focused within that
// share (ranked focused hydration), or nil to cut the content as above.
func renderContext(parts []part, refused []string, dir string, maxChars int, refocus func(p part, chars int) *contextfold.Hydration) string {
	avail := maxChars
	// Each round shrinks the space by what the last one overran, and by a
	// little more each time: the marker grows as the body shrinks (more
	// parts cut, longer counts), and without the margin that chase could
	// outlast the rounds and leave only the marker.
	for round := range 16 {
		body, cuts := layout(parts, dir, avail, refocus)
		marker := closingMarker(cuts, refused, dir)
		text := body + marker
		over := len16(text) - maxChars
		if over <= 0 {
			return text
		}
		avail -= over + round*round
	}
	// The marker alone does not fit: keep what fits of it.
	var all []cut
	for _, p := range parts {
		all = append(all, cut{step: p.h.StepID, total: utf8.RuneCountInString(p.h.RawContent)})
	}
	s, _ := cutTo(closingMarker(all, refused, dir), maxChars)
	return s
}

// cut records the part of a node's content that was left out.
type cut struct {
	step, shown, total int // code points
	// focused: the content shown is focused hydration's windows (ranked),
	// not a prefix; shown counts their characters.
	focused bool
}

// layout renders the header and the parts within avail UTF-16 units and
// reports each node whose content was not shown whole. Parts keep their pick
// order; the room is shared so that small parts are shown whole and the
// large ones split what is left.
func layout(parts []part, dir string, avail int, refocus func(p part, chars int) *contextfold.Hydration) (string, []cut) {
	const header = "[contextfold] Verified archived context for this prompt (IPCF-1.1: hydrated for this turn only; every part matched its SHA-256 hashes).\n"
	heads := make([]string, len(parts))
	foots := make([]string, len(parts))
	for i, p := range parts {
		h := p.h
		heads[i] = fmt.Sprintf("\n=== step %d · %s · matched %s · sha256 %.12s ===\n", h.StepID, oneLine(h.Summary), strings.Join(p.terms, ", "), h.ArtifactSHA256)
		foots[i] = fmt.Sprintf("\n=== end of step %d ===\n", h.StepID)
	}
	// Show as many parts (in pick order) as leave each some room.
	var room int
	k := len(parts)
	for ; k > 0; k-- {
		room = avail - len16(header)
		for i := range k {
			room -= len16(heads[i]) + len16(foots[i])
		}
		if room >= 16*k {
			break
		}
	}
	if k == 0 {
		room = 0
	}
	var cuts []cut
	parts, rest := parts[:k], parts[k:]
	// Fair shares, smallest content first.
	share := make([]int, len(parts))
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len16(parts[order[a]].h.Content) < len16(parts[order[b]].h.Content) })
	for k, i := range order {
		fair := 0
		if room > 0 {
			fair = room / (len(order) - k)
		}
		share[i] = min(len16(parts[i].h.Content), fair)
		room -= share[i]
	}
	var b strings.Builder
	b.WriteString(header)
	for i, p := range parts {
		h := p.h
		if refocus != nil && len16(h.Content) > share[i] && share[i] > 0 {
			if f := refocus(p, share[i]); f != nil {
				h = f
			}
		}
		total := utf8.RuneCountInString(h.RawContent)
		content, _ := cutTo(h.Content, share[i])
		shown := utf8.RuneCountInString(content)
		if shown < total {
			cuts = append(cuts, cut{step: h.StepID, shown: shown, total: total, focused: h.Windows != nil})
		}
		if shown == 0 && total > 0 {
			continue // nothing of it fits: named in the marker only
		}
		b.WriteString(heads[i])
		b.WriteString(content)
		b.WriteString(foots[i])
	}
	for _, p := range rest {
		cuts = append(cuts, cut{step: p.h.StepID, total: utf8.RuneCountInString(p.h.RawContent)})
	}
	return b.String(), cuts
}

// cutTo returns the longest prefix of s within max UTF-16 units, ending at a
// line break when one lies in the second half of that prefix, else at a
// character boundary; whole reports that s was not cut.
func cutTo(s string, max int) (prefix string, whole bool) {
	if len16(s) <= max {
		return s, true
	}
	n, end := 0, 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if n+w > max {
			break
		}
		n += w
		end = i + utf8.RuneLen(r)
	}
	p := s[:end]
	if nl := strings.LastIndexByte(p, '\n'); nl >= 0 && nl+1 >= len(p)/2 {
		p = p[:nl+1]
	}
	return p, false
}

// closingMarker says what was left out and how to fetch it.
func closingMarker(cuts []cut, refused []string, dir string) string {
	if len(cuts) == 0 && len(refused) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n[contextfold: left out —")
	for i, c := range cuts {
		if i > 0 {
			b.WriteString(";")
		}
		switch {
		case c.shown == 0:
			fmt.Fprintf(&b, " all %s characters of step %d", group(c.total), c.step)
		case c.focused:
			fmt.Fprintf(&b, " step %d is shown as excerpts around the matched lines (%s of its %s characters, offsets in each excerpt's marker)", c.step, group(c.shown), group(c.total))
		default:
			fmt.Fprintf(&b, " %s of %s characters of step %d (shown up to character %s)", group(c.total-c.shown), group(c.total), c.step, group(c.shown))
		}
	}
	if len(refused) > 0 {
		if len(cuts) > 0 {
			b.WriteString(";")
		}
		b.WriteString(" not included: " + strings.Join(refused, ", "))
	}
	b.WriteString(".")
	if len(cuts) > 0 {
		c := cuts[0]
		if c.focused {
			c.shown = 0 // the whole node, from its start
		}
		fmt.Fprintf(&b, " Fetch the rest, verified, with the MCP tool %s {\"step_id\": %d, \"offset\": %d} or the command: contextfold hydrate %d --dir %s",
			toolFetch, c.step, c.shown, c.step, strconv.Quote(dir))
		if c.shown > 0 {
			fmt.Fprintf(&b, " --offset %d", c.shown) // the same page as the tool's
		}
		if len(cuts) > 1 {
			b.WriteString(" (likewise for the other steps)")
		}
		b.WriteString(".")
	}
	b.WriteString("]")
	return b.String()
}

// group writes n with thousands separators.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// oneLine flattens s to one line of at most 160 code points.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 160 {
		r := []rune(s)
		s = string(r[:159]) + "…"
	}
	return s
}
