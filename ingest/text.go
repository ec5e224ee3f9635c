package ingest

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/progress"
)

// MaxSummary is the maximum length of Turn.Summary in code points.
const MaxSummary = 280

// maxSummaryCommand caps the command shown in a summary, in code points.
const maxSummaryCommand = 120

// summarize builds the extractive one-liner of a turn.
func summarize(label, tool, command, source string, isError bool) string {
	var b strings.Builder
	b.WriteString(label)
	if tool != "" {
		b.WriteString(" ")
		b.WriteString(tool)
	}
	if command != "" {
		b.WriteString(" $ ")
		b.WriteString(clip(oneLine(command), maxSummaryCommand))
	}
	if isError {
		b.WriteString(" [error]")
	}
	line := ""
	if isError {
		line = errorLine(source)
	}
	if line == "" {
		line = meaningfulLine(source)
	}
	if line != "" {
		b.WriteString(": ")
		b.WriteString(line)
	}
	return clip(oneLine(b.String()), MaxSummary)
}

// oneLine turns control characters into spaces, collapses runs of white
// space into one space and trims the ends. Invalid UTF-8 becomes U+FFFD.
func oneLine(s string) string {
	s = validText(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u200b' || r == '\ufeff' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// clip cuts s to at most max code points on a character boundary, ending
// with "…" when something was cut.
func clip(s string, max int) string {
	if max <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}

// meaningfulLine returns the first line that contains a letter or a digit
// and is not progress noise (see progressLine). A line redrawn with
// carriage returns counts as its last drawing.
func meaningfulLine(s string) string {
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if i := strings.LastIndexByte(strings.TrimRight(line, "\r"), '\r'); i >= 0 {
			line = line[i+1:]
		}
		line = processDone.ReplaceAllString(line, "")
		if hasAlnum(line) && !progressLine(line) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// processDone is older SWE-agent's end-of-output marker
// ("///PROCESS-DONE:0:PROCESS-DONE///", glued to output without a final
// newline): not a word of the output.
var processDone = regexp.MustCompile(`///PROCESS-DONE:-?\d+:PROCESS-DONE///`)

// progressLine reports a line of a download or build progress display
// rather than a message (progress.Line).
func progressLine(line string) bool { return progress.Line(line) }

var errorWords = []string{"error", "exception", "traceback", "fatal", "failed", "failure", "panic", "fail:", "--- fail", "not found", "denied", "segmentation fault"}

// errorLine returns the first line that looks like an error message.
func errorLine(s string) string {
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		check := line
		if len(check) > 4096 {
			check = check[:4096]
		}
		lower := strings.ToLower(check)
		for _, w := range errorWords {
			if strings.Contains(lower, w) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

func hasAlnum(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// joinSections joins non-empty sections with a blank line.
func joinSections(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	return b.String()
}

// header is the first line of every payload.
func header(role, kind, tool string) string {
	h := "[" + role + " " + kind
	if tool != "" {
		h += " " + tool
	}
	return h + "]"
}
