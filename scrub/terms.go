package scrub

import "strings"

// minEchoedFragment is the shortest search term (bytes, '*' marks
// stripped) RedactTerms reads as a fragment of a secret: shorter ones
// ("ghp", "fak") say nothing of it.
const minEchoedFragment = 4

// RedactTerms returns terms, the search terms a query or prompt text was
// split into (lower case, maybe with a '*' prefix mark), with every term
// that is a fragment of a secret Find finds in text, or holds one, ASCII
// case-insensitively, replaced by that secret's marker ("[REDACTED:rule]").
// It is for replies that echo a query back (a recall or scan result): the
// search itself may use the terms as they were. Order is kept; a marker
// appears once. terms is not modified; the result is a new slice (nil when
// terms is nil).
func (s *Scrubber) RedactTerms(text string, terms []string) []string {
	if terms == nil {
		return nil
	}
	fs := s.Find(text)
	if len(fs) == 0 {
		return append([]string(nil), terms...)
	}
	secrets := make([]string, len(fs))
	for i, f := range fs {
		secrets[i] = strings.ToLower(text[f.Start:f.End])
	}
	out := make([]string, 0, len(terms))
	seen := map[string]bool{}
	for _, t := range terms {
		core := strings.ToLower(strings.Trim(t, "*"))
		for i, sec := range secrets {
			if len(core) >= minEchoedFragment && strings.Contains(sec, core) || strings.Contains(core, sec) {
				t = RedactionMarker(fs[i].RuleID)
				break
			}
		}
		if strings.HasPrefix(t, MarkerPrefix) {
			if seen[t] {
				continue
			}
			seen[t] = true
		}
		out = append(out, t)
	}
	return out
}
