package ranked

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Window is one excerpt placed by Focus: code-point offsets [Start, End)
// into the content and the 1-based lines [FirstLine, LastLine] it spans.
type Window struct {
	Start, End          int
	FirstLine, LastLine int
}

// segment is a line of the content, or a piece of a long line.
type segment struct {
	start, end int // byte offsets
	cpStart    int // code-point offset of start
	cpLen      int
	line       int // 1-based line number
	score      float64
}

// maxSegment is the longest piece (code points) a long line is cut into, so
// that a minified file or a one-line JSON blob still yields a small window.
const maxSegment = 400

// contextLines is the number of segments of context kept on each side of a
// matched one, when the limit allows.
const contextLines = 2

// maxWindows bounds the windows of one focused hydration: past a handful,
// windows are noise around the answer, not the answer.
const maxWindows = 8

// Focus places windows of content around the lines that hold the prompt's
// terms (weights as returned by Index.Weights), whole lines with a little
// context, so that the total — excerpts plus one marker line per window
// naming its lines and character offsets — is at most limit code points.
//
// A line's score is the sum, over the distinct terms it holds, of the
// term's weight × its rarity within the content, log(1 + S/c) / log(1 + S)
// for a term held by c of the content's S lines: a word on every line of a
// log ("batch", "checksum") counts little next to the number or name that
// only the answer line holds ("1700", "worker-3"). Only lines scoring at
// least half the best line's score are placed; the windows come best first
// (a window's score is its best line's; ties in content order), at most
// maxWindows, each admitted only if it fits what the limit leaves — so the
// best window is always first and a weak one never pushes it out.
//
// It returns "" and no windows when no line holds a term or limit is too
// small for one marker line; callers then fall back to the reference's
// prefix truncation. Deterministic; safe for concurrent use.
func Focus(content string, weights map[string]float64, limit int) (string, []Window) {
	return FocusNeedles(content, weights, nil, limit)
}

// FocusNeedles is Focus with the prompt's needles (Needles; rule "exact
// needles"): a line that holds a needle literally (ignoring case) scores
// above every line that holds none, so the lines holding the quoted token
// are placed first, with their context, before any line that only holds
// the prompt's words. A needle that the cut of a long line into pieces
// splits raises both pieces (overlapping), so the window holds it whole.
func FocusNeedles(content string, weights map[string]float64, needles []string, limit int) (string, []Window) {
	if len(weights) == 0 && len(needles) == 0 || limit <= 0 {
		return "", nil
	}
	bonus := 1.0
	for _, w := range weights {
		bonus += w
	}
	segs := segments(content)
	total := utf8.RuneCountInString(content)
	held := make([][]string, len(segs))
	lines := map[string]int{}
	for i := range segs {
		sg := &segs[i]
		seen := map[string]bool{}
		analyzeQuery(content[sg.start:sg.end], func(t Term) {
			if _, ok := weights[t.Text]; ok && !seen[t.Text] {
				seen[t.Text] = true
				held[i] = append(held[i], t.Text)
				lines[t.Text]++
			}
		})
	}
	n := float64(len(segs))
	var scored []int
	for i := range segs {
		for _, t := range held[i] {
			segs[i].score += weights[t] * math.Log(1+n/float64(lines[t])) / math.Log(1+n)
		}
	}
	// A line that asks (ends with a question mark) lends answerLend × its
	// words' score to the line after it (rule "a question lends its terms
	// to its answer", within one node: a chat message run holds the
	// question and its answer on consecutive lines). In reverse, so each
	// line lends its own words' score; a needle's bonus is not lent.
	for i := len(segs) - 2; i >= 0; i-- {
		if segs[i].score > 0 && asks(content[segs[i].start:segs[i].end]) && segs[i+1].line == segs[i].line+1 {
			segs[i+1].score += answerLend * segs[i].score
		}
	}
	for i := range segs {
		for _, nd := range needles {
			if ContainsFold(overlapping(content, segs[i], len(nd)), nd) {
				segs[i].score += bonus
				break
			}
		}
		if segs[i].score > 0 {
			scored = append(scored, i)
		}
	}
	if len(scored) == 0 {
		return "", nil
	}
	sort.SliceStable(scored, func(a, b int) bool { return segs[scored[a]].score > segs[scored[b]].score })
	keep := 0
	for keep < len(scored) && keep < 200 && segs[scored[keep]].score >= 0.5*segs[scored[0]].score {
		keep++
	}
	scored = scored[:keep]
	chosen := make([]bool, len(segs))
	for _, i := range scored {
		if chosen[i] {
			continue
		}
		for _, ctx := range []int{contextLines, 0} {
			trial := append([]bool(nil), chosen...)
			for j := max(0, i-ctx); j <= min(len(segs)-1, i+ctx); j++ {
				trial[j] = true
			}
			text, wins := render(content, segs, trial, total)
			if len(wins) <= maxWindows && utf8.RuneCountInString(text) <= limit {
				chosen = trial
				break
			}
		}
	}
	text, wins := render(content, segs, chosen, total)
	if len(wins) == 0 {
		return "", nil
	}
	return text, wins
}

// answerLend is the share of an asking line's score its next line gets
// (Params.Answer's default).
const answerLend = 0.8

// asks reports whether a line ends, spaces aside, with a question mark.
func asks(line string) bool {
	return strings.HasSuffix(strings.TrimRightFunc(line, unicode.IsSpace), "?")
}

// overlapping returns the text of sg widened by n-1 bytes on each side (to
// rune boundaries): it holds every needle of n bytes that overlaps sg, so a
// needle that a long line's cut into pieces of maxSegment code points
// splits between two pieces raises both, and its window holds it whole.
func overlapping(content string, sg segment, n int) string {
	start, end := max(0, sg.start-(n-1)), min(len(content), sg.end+(n-1))
	for start > 0 && !utf8.RuneStart(content[start]) {
		start--
	}
	for end < len(content) && !utf8.RuneStart(content[end]) {
		end++
	}
	return content[start:end]
}

// render writes the chosen segments as windows, each after a marker line,
// best window first (its best segment's score; ties in content order).
func render(content string, segs []segment, chosen []bool, total int) (string, []Window) {
	type run struct {
		i, j  int
		score float64
	}
	var runs []run
	for i := 0; i < len(segs); {
		if !chosen[i] {
			i++
			continue
		}
		j := i
		best := segs[i].score
		for j+1 < len(segs) && chosen[j+1] {
			j++
			best = math.Max(best, segs[j].score)
		}
		runs = append(runs, run{i, j, best})
		i = j + 1
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].score > runs[b].score })
	var b strings.Builder
	var wins []Window
	for _, r := range runs {
		i, j := r.i, r.j
		w := Window{Start: segs[i].cpStart, End: segs[j].cpStart + segs[j].cpLen, FirstLine: segs[i].line, LastLine: segs[j].line}
		wins = append(wins, w)
		fmt.Fprintf(&b, "[contextfold: lines %d-%d, characters %d-%d of %d]\n", w.FirstLine, w.LastLine, w.Start, w.End, total)
		b.WriteString(strings.TrimSuffix(content[segs[i].start:segs[j].end], "\n"))
		b.WriteByte('\n')
	}
	return b.String(), wins
}

// segments cuts content into lines (each holding its newline) and long lines
// into pieces of at most maxSegment code points.
func segments(content string) []segment {
	var segs []segment
	line, cp := 1, 0
	start, startCP, n := 0, 0, 0
	for i, r := range content {
		n++
		if r == '\n' || n == maxSegment {
			_, size := utf8.DecodeRuneInString(content[i:])
			end := i + size
			segs = append(segs, segment{start: start, end: end, cpStart: startCP, cpLen: n, line: line})
			cp += n
			start, startCP, n = end, cp, 0
			if r == '\n' {
				line++
			}
		}
	}
	if start < len(content) {
		segs = append(segs, segment{start: start, end: len(content), cpStart: startCP, cpLen: n, line: line})
	}
	return segs
}
