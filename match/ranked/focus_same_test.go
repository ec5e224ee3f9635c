package ranked

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFocusNeedlesSameAsReference: FocusNeedles (AnalyzeFocus, each
// distinct chunk analysed once, terms gathered without a map a line,
// trial placements counted rather than rendered) places the same windows
// with the same text as the line-by-line analysis it replaced
// (focusNeedlesRef, kept here as it was), on generated logs (repeated
// words, long lines cut into pieces, multibyte text, questions, needles)
// and on the bundled transcripts' files, for several prompts and limits.
func TestFocusNeedlesSameAsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := []string{"error", "errors", "failed", "build", "worker-3", "1700", "batch", "checksum", "config.yaml", "src/app/main.go:42", "TenantBilling", "migrations", "şifre", "configuración", "端口是多少", "v1.2.3", "the", "what", "Logistic", "deadlock", "42", "2023", "e2e", "HTTPServer", "ünïcødé", "x"}
	var contents []string
	for k := 0; k < 40; k++ {
		var b strings.Builder
		lines := 1 + rng.IntN(300)
		for l := 0; l < lines; l++ {
			words := rng.IntN(12)
			if rng.IntN(20) == 0 {
				words = 200 + rng.IntN(400) // a long line, cut into pieces
			}
			for w := 0; w < words; w++ {
				if w > 0 {
					b.WriteString([]string{" ", " ", ", ", "/", "\t", ": "}[rng.IntN(6)])
				}
				b.WriteString(vocab[rng.IntN(len(vocab))])
			}
			if rng.IntN(8) == 0 {
				b.WriteString("?")
			}
			if l < lines-1 || rng.IntN(2) == 0 {
				b.WriteByte('\n')
			}
		}
		contents = append(contents, b.String())
	}
	contents = append(contents, "", "\n\n", "no terms at all here\n", "\xff\xfe error \xff\n?\nerror")
	// The bundled transcripts' files, as real tool output and chat.
	filepath.WalkDir(filepath.Join("..", "..", "ingest", "testdata", "transcripts"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || len(contents) >= 80 {
			return nil
		}
		if data, err := os.ReadFile(path); err == nil && utf8.Valid(data) {
			s := string(data)
			for len(s) > 0 && len(contents) < 80 {
				n := min(len(s), 4000+rng.IntN(12000))
				for n < len(s) && !utf8.RuneStart(s[n]) {
					n++
				}
				contents = append(contents, s[:n])
				s = s[n:]
			}
		}
		return nil
	})
	prompts := []string{
		"which worker failed the checksum in batch 1700?",
		"what did the build print for Logistic errors",
		"TenantBilling migrations config.yaml deadlock",
		"şifre configuración 端口",
		"what version v1.2.3 was installed, and which tests failed?",
		"the",
	}
	needles := [][]string{nil, {"worker-3"}, {"src/app/main.go:42", "v1.2.3"}}
	cases := 0
	for _, content := range contents {
		for pi, prompt := range prompts {
			weights := map[string]float64{}
			analyzeQuery(prompt, func(tm Term) { weights[tm.Text] += 1 + float64(len(tm.Text)%3) })
			nd := needles[pi%len(needles)]
			for _, limit := range []int{0, 40, 900, 4000, 1 << 20} {
				wantText, wantWins := focusNeedlesRef(content, weights, nd, limit)
				gotText, gotWins := FocusNeedles(content, weights, nd, limit)
				if gotText != wantText || fmt.Sprint(gotWins) != fmt.Sprint(wantWins) {
					t.Fatalf("content %.80q, prompt %q, limit %d:\n got %q %v\nwant %q %v", content, prompt, limit, gotText, gotWins, wantText, wantWins)
				}
				cases++
			}
		}
	}
	t.Logf("%d contents, %d cases", len(contents), cases)
	if cases < 1000 {
		t.Fatalf("only %d cases", cases)
	}
}

// focusNeedlesRef is FocusNeedles as it was before AnalyzeFocus: each
// segment analysed on its own (analyzeQuery), its terms gathered in a map,
// every trial placement rendered (with rule "the needle's lines, then the
// question's words", written again here the simple way).
func focusNeedlesRef(content string, weights map[string]float64, needles []string, limit int) (string, []Window) {
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
	words := make([]float64, len(segs))
	needled := map[int]bool{}
	for i := range segs {
		words[i] = segs[i].score
		for _, nd := range needles {
			if ContainsFold(overlapping(content, segs[i], len(nd)), nd) {
				segs[i].score += bonus
				needled[i] = true
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
	all := scored
	scored = scored[:keep]
	if len(needled) > 0 {
		// Rule "the needle's lines, then the question's words": the
		// best needleHeadLines needle lines, then the lines of words
		// scoring at least half the best of the others, then the rest.
		head := min(len(needled), needleHeadLines)
		order := append([]int(nil), scored[:head]...)
		placed := map[int]bool{}
		for _, i := range order {
			placed[i] = true
		}
		var others []int
		for _, i := range all {
			if !placed[i] && words[i] > 0 {
				others = append(others, i)
			}
		}
		sort.SliceStable(others, func(a, b int) bool { return words[others[a]] > words[others[b]] })
		for _, i := range others {
			if words[i] < 0.5*words[others[0]] || len(order) == 200 {
				break
			}
			order = append(order, i)
			placed[i] = true
		}
		for _, i := range scored[head:] {
			if !placed[i] && len(order) < 200 {
				order = append(order, i)
				placed[i] = true
			}
		}
		scored = order
	}
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
			text, wins := renderRef(content, segs, trial, total)
			if len(wins) <= maxWindows && utf8.RuneCountInString(text) <= limit {
				chosen = trial
				break
			}
		}
	}
	text, wins := renderRef(content, segs, chosen, total)
	if len(wins) == 0 {
		return "", nil
	}
	return text, wins
}

// renderRef is render as it was: writes the chosen segments as windows, each after a marker line,
// best window first (its best segment's score; ties in content order).
func renderRef(content string, segs []segment, chosen []bool, total int) (string, []Window) {
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

// TestEachChunkSameAsRange: eachChunk (ASCII bytes classed by a table)
// cuts the same chunks as the range loop it replaced, on random bytes
// (invalid UTF-8, multibyte letters, joiners, spaces).
func TestEachChunkSameAsRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []string{"a", "Z", "9", "_", ".", "/", "-", ":", "\\", "@", "#", "+", " ", "\n", "\t", ",", "é", "ı", "端", "口", "\xff", "\xe2\x82", "€", "٣", "!", "?"}
	for k := 0; k < 5000; k++ {
		var b strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := b.String()
		var got, want []string
		eachChunk(text, func(c string) { got = append(got, c) })
		start := -1
		for i, r := range text {
			if isChunkRune(r) {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 {
				want = append(want, text[start:i])
				start = -1
			}
		}
		if start >= 0 {
			want = append(want, text[start:])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: chunks %q, want %q", text, got, want)
		}
	}
}
