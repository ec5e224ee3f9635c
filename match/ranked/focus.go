package ranked

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	snowball "github.com/blevesearch/snowballstem"
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
//
// It is AnalyzeFocus(content, weights, needles).Place(limit).
func FocusNeedles(content string, weights map[string]float64, needles []string, limit int) (string, []Window) {
	if len(weights) == 0 && len(needles) == 0 || limit <= 0 {
		return "", nil
	}
	return AnalyzeFocus(content, weights, needles).Place(limit)
}

// FocusAnalysis is the line analysis FocusNeedles places its windows
// from: content's lines (and pieces of long lines) scored on one prompt's
// weights and needles, the best of them ranked. It depends on the limit
// not at all, so one analysis serves every limit a caller tries
// (Place). Immutable once made: safe for concurrent use.
type FocusAnalysis struct {
	content string
	segs    []segment
	scored  []int // the segments placed, best first (at most 200)
	total   int   // content's code points
}

// AnalyzeFocus scores content's lines as FocusNeedles does (the terms of
// weights each line holds, their rarity within content, rule "a question
// lends its terms to its answer", needles' bonus). Each distinct run of
// word characters is analysed once per call (a log repeats its words and
// numbers line after line), and the terms a line holds are gathered in
// reused buffers, not a map a line; the scores are those the line-by-line
// analysis gave, bit for bit (the same sums in the same order). A nil
// *FocusAnalysis (no weights and no needles) places nothing.
// Deterministic; safe for concurrent use.
func AnalyzeFocus(content string, weights map[string]float64, needles []string) *FocusAnalysis {
	if len(weights) == 0 && len(needles) == 0 {
		return nil
	}
	bonus := 1.0
	for _, w := range weights {
		bonus += w
	}
	segs := segments(content)
	fa := &FocusAnalysis{content: content, segs: segs, total: utf8.RuneCountInString(content)}
	if len(weights) > 0 {
		scoreTerms(content, segs, weights)
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
	var scored []int
	var words []float64 // each segment's score from the prompt's words alone, when needles are given
	if len(needles) > 0 {
		words = make([]float64, len(segs))
	}
	needled := 0
	for i := range segs {
		if words != nil {
			words[i] = segs[i].score
		}
		for _, nd := range needles {
			if ContainsFold(overlapping(content, segs[i], len(nd)), nd) {
				segs[i].score += bonus
				needled++
				break
			}
		}
		if segs[i].score > 0 {
			scored = append(scored, i)
		}
	}
	if len(scored) == 0 {
		return fa
	}
	sort.SliceStable(scored, func(a, b int) bool { return segs[scored[a]].score > segs[scored[b]].score })
	keep := 0
	for keep < len(scored) && keep < 200 && segs[scored[keep]].score >= 0.5*segs[scored[0]].score {
		keep++
	}
	fa.scored = scored[:keep]
	if needled > 0 {
		fa.scored = needleHead(fa.scored, scored, words, min(needled, needleHeadLines))
	}
	return fa
}

// needleHeadLines is how many lines holding a needle rule "the needle's
// lines, then the question's words" places ahead of the rest.
const needleHeadLines = 3

// needleHead is rule "the needle's lines, then the question's words": the
// order in which Place admits a focused node's lines when some hold a
// needle. kept is the needle-first order (every line holding a needle,
// best first, then lines of the prompt's words scoring at least half the
// best line, needle bonus included: none, in practice); scored every line
// with a score, best first; words each segment's score from the prompt's
// words alone (no needle bonus). The result: kept's first k (the needle's
// best lines: the quoted token is shown, with its context), then every
// other line whose words score at least half the best such score (needle
// lines past the k-th included, on their words alone), best first, then
// the rest of kept in its order, at most 200 in all.
//
// Why: a quoted token often names where to look (the package installed,
// the function, the file), and the question's other words what to read
// there (the wheel's size, what the function returns). With every needle
// line ranked above every other line, a log printing the token on twenty
// lines ("(from pytest-xdist==1.34.0)") filled the window with them, and
// the answer line (holding "execnet" and "downloaded", not the token) or
// the line three below a def was never placed.
func needleHead(kept, scored []int, words []float64, k int) []int {
	out := append(make([]int, 0, len(kept)+8), kept[:k]...)
	in := make(map[int]bool, len(kept)+8)
	for _, i := range out {
		in[i] = true
	}
	var rest []int
	best := 0.0
	for _, i := range scored {
		if !in[i] && words[i] > 0 {
			rest = append(rest, i)
			best = max(best, words[i])
		}
	}
	sort.SliceStable(rest, func(a, b int) bool { return words[rest[a]] > words[rest[b]] })
	for _, i := range rest {
		if words[i] < 0.5*best || len(out) >= 200 {
			break
		}
		out = append(out, i)
		in[i] = true
	}
	for _, i := range kept[k:] {
		if len(out) >= 200 {
			break
		}
		if !in[i] {
			out = append(out, i)
			in[i] = true
		}
	}
	return out
}

// Matched reports whether a line of the content holds a term or a needle
// of the prompt (Place then places a window when the limit leaves room
// for one).
func (fa *FocusAnalysis) Matched() bool { return fa != nil && len(fa.scored) > 0 }

// Place places the windows within limit code points, as FocusNeedles
// documents: "" and no windows when no line holds a term or limit is too
// small for one marker line. The size of each trial placement is counted,
// not rendered; only the placement kept is written.
func (fa *FocusAnalysis) Place(limit int) (string, []Window) {
	if !fa.Matched() || limit <= 0 {
		return "", nil
	}
	segs := fa.segs
	chosen := make([]bool, len(segs))
	trial := make([]bool, len(segs))
	for _, i := range fa.scored {
		if chosen[i] {
			continue
		}
		for _, ctx := range []int{contextLines, 0} {
			copy(trial, chosen)
			for j := max(0, i-ctx); j <= min(len(segs)-1, i+ctx); j++ {
				trial[j] = true
			}
			size, wins := renderSize(fa.content, segs, trial, fa.total)
			if wins <= maxWindows && size <= limit {
				chosen, trial = trial, chosen
				break
			}
		}
	}
	text, wins := render(fa.content, segs, chosen, fa.total)
	if len(wins) == 0 {
		return "", nil
	}
	return text, wins
}

// scoreTerms adds to each segment's score, over the distinct terms of
// weights it holds (in order of first occurrence), the term's weight ×
// its rarity within the content: log(1 + S/c) / log(1 + S) for a term
// held by c of the S segments. A segment's terms are the terms of its
// chunks (eachChunk, analyzer.chunk as a prompt is analysed: what
// analyzeQuery of the segment's text emits), each distinct chunk analysed
// once.
func scoreTerms(content string, segs []segment, weights map[string]float64) {
	a := &analyzer{env: snowball.NewEnv(""), query: true}
	type span struct{ from, to int32 }
	chunks := map[string]span{} // chunk → its weighted terms, ids[from:to]
	var ids []int32             // the weighted terms of the chunks analysed, as term ids
	termID := map[string]int32{}
	var weight []float64 // by term id
	var lines []int      // by term id: the segments holding it
	var stamp []int32    // by term id: 1 + the last segment counted holding it
	held := make([]int32, 0, 64)
	heldAt := make([]int32, len(segs)+1) // segment i holds held[heldAt[i]:heldAt[i+1]]
	var emitted []int32                  // one chunk's ids, in order, while it is analysed
	for i := range segs {
		heldAt[i] = int32(len(held))
		eachChunk(content[segs[i].start:segs[i].end], func(c string) {
			sp, ok := chunks[c]
			if !ok {
				emitted = emitted[:0]
				a.chunk(c, func(t Term) {
					w, ok := weights[t.Text]
					if !ok {
						return
					}
					id, ok := termID[t.Text]
					if !ok {
						id = int32(len(weight))
						termID[t.Text] = id
						weight, lines, stamp = append(weight, w), append(lines, 0), append(stamp, 0)
					}
					emitted = append(emitted, id)
				})
				sp = span{int32(len(ids)), int32(len(ids) + len(emitted))}
				ids = append(ids, emitted...)
				if len(chunks) < focusChunksMax {
					chunks[c] = sp
				}
			}
			for _, id := range ids[sp.from:sp.to] {
				if stamp[id] != int32(i+1) {
					stamp[id] = int32(i + 1)
					held = append(held, id)
					lines[id]++
				}
			}
			if !ok && len(chunks) >= focusChunksMax {
				ids = ids[:sp.from] // not kept: its ids are not needed again
			}
		})
	}
	heldAt[len(segs)] = int32(len(held))
	n := float64(len(segs))
	for i := range segs {
		for _, id := range held[heldAt[i]:heldAt[i+1]] {
			segs[i].score += weight[id] * math.Log(1+n/float64(lines[id])) / math.Log(1+n)
		}
	}
}

// focusChunksMax bounds the distinct chunks one analysis keeps the terms
// of (a variable for tests); past it a new chunk is analysed each time.
var focusChunksMax = 1 << 16

// renderSize is the code points render's text would hold and its windows,
// counted without writing it: each window is its marker line (ASCII) and
// its segments' code points, less the trailing newline render trims, plus
// the newline it adds.
func renderSize(content string, segs []segment, chosen []bool, total int) (size, windows int) {
	for i := 0; i < len(segs); {
		if !chosen[i] {
			i++
			continue
		}
		j, cps := i, segs[i].cpLen
		for j+1 < len(segs) && chosen[j+1] {
			j++
			cps += segs[j].cpLen
		}
		if segs[j].end > segs[j].start && content[segs[j].end-1] == '\n' {
			cps--
		}
		size += len(markerOpen) + digits(segs[i].line) + 1 + digits(segs[j].line) + len(markerChars) + digits(segs[i].cpStart) + 1 + digits(segs[j].cpStart+segs[j].cpLen) + len(markerOf) + digits(total) + len(markerClose) + cps + 1
		windows++
		i = j + 1
	}
	return size, windows
}

// The parts of a window's marker line (render), around its numbers.
const (
	markerOpen  = "[contextfold: lines "
	markerChars = ", characters "
	markerOf    = " of "
	markerClose = "]\n"
)

// digits is the number of decimal digits of n ≥ 0.
func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
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
		fmt.Fprintf(&b, markerOpen+"%d-%d"+markerChars+"%d-%d"+markerOf+"%d"+markerClose, w.FirstLine, w.LastLine, w.Start, w.End, total)
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
