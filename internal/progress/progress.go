// Package progress recognises the lines of download and build progress
// displays (curl's meter, wget's dots, pip's bars), which say nothing of
// what a command did: the summaries of package ingest and package harness
// pass over them.
package progress

import "strings"

// Line reports a line of a download or build progress display
// rather than a message: curl's progress-meter header ("% Total  % Received
// % Xferd  Average Speed …", "Dload  Upload  Total  Spent …") and rows, which
// hold only numbers, sizes (12.3k, 1M), percentages and times (--:--:--,
// 0:00:01); wget's dotted rows; pip's bars drawn with block characters
// followed by sizes, rates and "eta".
func Line(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 {
		return false
	}
	switch {
	case strings.Contains(line, "% Total") && strings.Contains(line, "% Received"):
		return true
	case f[0] == "Dload" && len(f) >= 2 && f[1] == "Upload":
		return true
	}
	numeric := 0
	for _, w := range f {
		if progressToken(w) {
			numeric++
		}
	}
	return len(f) >= 3 && numeric == len(f)
}

// progressToken is a number, a size with a unit suffix, a percentage, a
// time or ETA, or a run of progress-bar characters.
func progressToken(w string) bool {
	switch strings.ToLower(w) {
	case "b", "kb", "mb", "gb", "kib", "mib", "gib", "b/s", "kb/s", "mb/s", "gb/s", "kib/s", "mib/s", "it/s", "s/it", "eta":
		return true
	}
	w = strings.TrimSuffix(w, "%")
	w = strings.TrimRight(w, "kKMGTBbs/")
	if w == "" {
		return true
	}
	for _, r := range w {
		switch {
		case r >= '0' && r <= '9', r == '.', r == ':', r == '-', r == ',', r == '|', r == '#', r == '=', r == '>', r == '/':
		case r == '━' || r == '█' || r == '░' || r == '▒' || r == '▓' || r == '─':
		default:
			return false
		}
	}
	return true
}
