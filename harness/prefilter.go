package harness

import (
	"slices"
	"strings"
)

// Literal prefilters for the regular expressions that read a turn's text
// (Summarize, Project). Each regular expression can only match text that
// holds one of a few literals; a turn without them is answered by a scan for
// those literals (memchr-speed) instead of a regular-expression run over the
// whole text, which was most of a fold event's CPU time. Where a literal is
// found, the expression still decides, so every answer, and every byte of a
// record, is what the expression alone gives (TestPrefilterMatchesRegexp
// compares the two over every turn of the bundled transcripts).

// failureMarkers holds, for every alternative of failureLine, a literal that
// each of its matches contains (the expression is case-sensitive): "FAIL"
// (FAIL, FAILED, --- FAIL:, BUILD FAILED/FAILURE, test result: FAILED),
// "Traceback", "panic: ", "*** " (make), "error"/"fatal"/"ERR"/"FATAL"
// (error:, fatal:, ERROR:, FATAL:, npm ERR!, [ERROR], error Command failed,
// :L:C: error, error TS2339:), "Error: "/"Exception: ", "Segmentation
// fault", "rake aborted!", ".go:" (file.go:L:C:), " fail" (N failed, N
// failing, Build failed, Compilation failed, Tests failed) and "command not
// found".
var failureMarkers = []string{
	"FAIL", "Traceback", "panic: ", "*** ", "error", "fatal", "ERR", "FATAL",
	"Error: ", "Exception: ", "Segmentation fault", "rake aborted!", ".go:", " fail",
	"command not found",
}

// hasFailureLine reports failureLine.MatchString(text), running the
// expression only on the lines that hold a failure marker, each on its own:
// a match holds its marker; one whose `^\s*` starts on an earlier line also
// matches from its marker's line; a line start is a line start, a word
// boundary a boundary and a line end a line end whether the text around
// the line is there or not. The one alternative that can go on past its
// marker's line is "error[…]: " with a bracket left open at the line's end:
// from such a line on, the expression reads the rest of the text.
func hasFailureLine(text string) bool {
	var starts []int
	for _, m := range failureMarkers {
		for off := 0; off < len(text); {
			i := strings.Index(text[off:], m)
			if i < 0 {
				break
			}
			i += off
			starts = append(starts, strings.LastIndexByte(text[:i], '\n')+1)
			off = lineEnd(text, i) + 1 // the line is a candidate already
		}
	}
	if len(starts) == 0 {
		return false
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	for _, ls := range starts {
		line := text[ls:lineEnd(text, ls)]
		if failureLine.MatchString(line) {
			return true
		}
		if strings.LastIndexByte(line, '[') > strings.LastIndexByte(line, ']') {
			return failureLine.MatchString(text[ls:])
		}
	}
	return false
}

// lineEnd returns the index of the first '\n' of text at or after i, or
// len(text).
func lineEnd(text string, i int) int {
	if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(text)
}

// exitMarkers: every match of exitCodeRe and exitRe (case-insensitive)
// holds "exit" or "returncode" in some case. None of their letters has a
// case-fold partner outside ASCII (unlike k and s: K, ſ), so an ASCII
// case-insensitive search is exact (TestExitMarkersFoldASCII).
var exitMarkers = []string{"exit", "returncode"}

// mayHaveExitCode reports whether text holds an exit marker in any case: when
// it does not, exitCodeRe cannot match it.
func mayHaveExitCode(text string) bool {
	for _, m := range exitMarkers {
		if indexFoldASCII(text, m) >= 0 {
			return true
		}
	}
	return false
}

// indexFoldASCII returns the first index of lower (lower-case ASCII letters)
// in s, ASCII letters compared without case, or -1.
func indexFoldASCII(s, lower string) int {
	firsts := string([]byte{lower[0], lower[0] - 'a' + 'A'})
	for i := 0; i+len(lower) <= len(s); i++ {
		j := strings.IndexAny(s[i:len(s)-len(lower)+1], firsts)
		if j < 0 {
			return -1
		}
		i += j
		k := 1
		for ; k < len(lower); k++ {
			if s[i+k]|0x20 != lower[k] {
				break
			}
		}
		if k == len(lower) {
			return i
		}
	}
	return -1
}

// stripTags is tagLineRe.ReplaceAllString(l, ""): every tag needs a '<'.
func stripTags(l string) string {
	if strings.IndexByte(l, '<') < 0 {
		return l
	}
	return tagLineRe.ReplaceAllString(l, "")
}
