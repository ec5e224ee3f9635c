package ranked

import (
	"fmt"
	"sort"
	"strings"
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

// Focus places windows of content around the lines that hold the prompt's
// terms (weights as returned by Index.Weights), whole lines with a little
// context — the lines scoring at least half the best line's score (the sum
// of the weights of the distinct terms a line holds), best first — so that
// the total — excerpts plus one marker line
// per window naming its lines and character offsets — is at most limit code
// points. It returns "" and no windows when no line holds a term or limit
// is too small for one marker line; callers then fall back to the
// reference's prefix truncation. Deterministic; safe for concurrent use.
func Focus(content string, weights map[string]float64, limit int) (string, []Window) {
	if len(weights) == 0 || limit <= 0 {
		return "", nil
	}
	segs := segments(content)
	total := utf8.RuneCountInString(content)
	var scored []int
	for i := range segs {
		sg := &segs[i]
		seen := map[string]bool{}
		analyzeInto(content[sg.start:sg.end], func(t Term) {
			if w, ok := weights[t.Text]; ok && !seen[t.Text] {
				seen[t.Text] = true
				sg.score += w
			}
		})
		if sg.score > 0 {
			scored = append(scored, i)
		}
	}
	if len(scored) == 0 {
		return "", nil
	}
	sort.SliceStable(scored, func(a, b int) bool { return segs[scored[a]].score > segs[scored[b]].score })
	// Only the lines that hold the prompt's terms about as well as the best
	// line does (at least half its score); the limit may cut them further.
	keep := 0
	for keep < len(scored) && keep < 200 && segs[scored[keep]].score >= 0.5*segs[scored[0]].score {
		keep++
	}
	scored = scored[:keep]
	chosen := make([]bool, len(segs))
	for _, i := range scored {
		for _, ctx := range []int{contextLines, 0} {
			trial := append([]bool(nil), chosen...)
			for j := max(0, i-ctx); j <= min(len(segs)-1, i+ctx); j++ {
				trial[j] = true
			}
			if text, _ := render(content, segs, trial, total); utf8.RuneCountInString(text) <= limit {
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

// render writes the chosen segments as windows, each after a marker line.
func render(content string, segs []segment, chosen []bool, total int) (string, []Window) {
	var b strings.Builder
	var wins []Window
	for i := 0; i < len(segs); {
		if !chosen[i] {
			i++
			continue
		}
		j := i
		for j+1 < len(segs) && chosen[j+1] {
			j++
		}
		w := Window{Start: segs[i].cpStart, End: segs[j].cpStart + segs[j].cpLen, FirstLine: segs[i].line, LastLine: segs[j].line}
		wins = append(wins, w)
		fmt.Fprintf(&b, "[contextfold: lines %d-%d, characters %d-%d of %d]\n", w.FirstLine, w.LastLine, w.Start, w.End, total)
		b.WriteString(strings.TrimSuffix(content[segs[i].start:segs[j].end], "\n"))
		b.WriteByte('\n')
		i = j + 1
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
