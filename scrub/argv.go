package scrub

import "strings"

// An argument vector written as an array of strings — a JSON or Python
// list (["mysql", "-uroot", "-pSECRET"], a tool call's "command" array,
// subprocess.run([...]), exec.Command("tool", "--password", "…")) — puts
// quotes and commas where a shell command line has blanks, so the rules of
// command-line secrets (--password VALUE, sshpass -p, mysql -p, docker
// login -p, curl -u) did not read it. argvView joins such elements with one
// blank, as a command line, for our rules to read; what they find inside
// one element is mapped back to the text.

// argvView returns the view of text in which each separator between two
// string elements of an array (a quote, blanks, ',', blanks, the same
// quote: `", "`, `','`), and each line break between two items of a YAML
// sequence ("- --token" then "- VALUE"), is one blank, or ok=false when
// text has none, or no element that starts with '-' (an option: without
// one there is no command line to read).
func argvView(text string) (v decodedView, ok bool) {
	yaml := strings.Contains(text, "- -")
	if len(text) > 1<<30 || !strings.Contains(text, `"-`) && !strings.Contains(text, `'-`) && !yaml {
		return v, false
	}
	var b strings.Builder
	last := 0 // text bytes before last are in b
	for i := 0; i < len(text); i++ {
		q := text[i]
		if q == '\n' && yaml {
			// A YAML sequence's next item ("args:" then "- --token",
			// "- VALUE" on the lines below), after an item.
			j := i + 1
			for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
				j++
			}
			if j+1 < len(text) && text[j] == '-' && text[j+1] == ' ' && seqItemLine(text, i) {
				if b.Len() == 0 {
					b.Grow(len(text))
				}
				b.WriteString(text[last:i])
				v.esc = append(v.esc, escapeSpan{v0: b.Len(), v1: b.Len() + 1, t0: i, t1: j + 2})
				b.WriteByte(' ')
				last = j + 2
				i = j + 1
			}
			continue
		}
		if q != '"' && q != '\'' {
			continue
		}
		j := i + 1
		for j < len(text) && isBlankOrBreak(text[j]) {
			j++
		}
		if j == len(text) || text[j] != ',' {
			continue
		}
		j++
		for j < len(text) && isBlankOrBreak(text[j]) {
			j++
		}
		if j == len(text) || text[j] != q {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(text))
		}
		b.WriteString(text[last:i])
		v.esc = append(v.esc, escapeSpan{v0: b.Len(), v1: b.Len() + 1, t0: i, t1: j + 1})
		b.WriteByte(' ')
		last = j + 1
		i = j
	}
	if len(v.esc) == 0 {
		return v, false
	}
	b.WriteString(text[last:])
	v.text = b.String()
	return v, true
}

// seqItemLine reports whether the line that ends at text[end] (a line
// feed) is a YAML sequence item: blanks, then "- ".
func seqItemLine(text string, end int) bool {
	k := strings.LastIndexByte(text[:end], '\n') + 1
	for k < end && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	return k+1 < end && text[k] == '-' && text[k+1] == ' '
}

func isBlankOrBreak(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// argvFindings returns our rules' findings in the argument-vector view of
// text (argvView) that lie within one element, mapped back to text.
func argvFindings(text string) []Finding {
	v, ok := argvView(text)
	if !ok {
		return nil
	}
	var out []Finding
	for _, f := range extraFindings(v.text) {
		if v.joins(f.Start, f.End) {
			continue
		}
		f.Start, f.End = v.span(f.Start, f.End)
		out = append(out, f)
	}
	return out
}

// joins reports whether view bytes [start, end) hold one of v's escapes
// (for an argvView: a separator between two elements).
func (v decodedView) joins(start, end int) bool {
	for _, e := range v.esc {
		if e.v0 >= end {
			break
		}
		if e.v1 > start {
			return true
		}
	}
	return false
}
