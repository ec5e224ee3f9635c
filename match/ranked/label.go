package ranked

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule "a label is no entity": intent ownership (Params.Supersede) takes a
// newer node for an update of an older one's fact when both hold every
// prompt term the older holds and share a specific term — a path, a
// version, an identifier: the entity the fact is about. A chat written
// under user handles ("caroline37: …", "user_2: …", "JohnD: …") puts a
// specific term at the head of every message of a speaker, and a tool
// label ("tool mcp__fs__read: …") at the head of every call of a tool:
// shared by half a conversation, it names who speaks, not what the
// message is about, and with it intent ownership dropped every older
// message of a speaker that a newer one of the same speaker repeated the
// question's words in (LoCoMo with handles for speaker labels, `cfeval
// locomo -undated -noisy -noisy-parts handles`: ranked recall 63.5 →
// 49.7 %, below BM25+stem top-5). With Params.SkipLabel the terms of the
// label a node's summary opens with do not make two nodes about one
// entity.

// maxLabelBytes bounds where a summary's label may end (its ": ").
const maxLabelBytes = 64

// labelOf returns the label a summary opens with ("" when none): after an
// optional bracketed prefix ("[8 May 2023] "), one to maxLabelWords
// words of letters, digits and _ - . @ ' followed by ": ".
func labelOf(summary string) string {
	s := summary
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "] ")
		if i < 0 || i > maxLabelBytes {
			return ""
		}
		s = s[i+2:]
	}
	i := strings.Index(s, ": ")
	if i <= 0 || i > maxLabelBytes {
		return ""
	}
	if _, ok := labelWords(s[:i], func(r rune, _ bool) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.@'", r)
	}); !ok {
		return ""
	}
	return s[:i]
}

// labelTerms memoises, for one scan, the term ids of each doc's label
// (nil: none).
type labelTerms map[int32][]int32

// labelHolds reports whether term id is a term of the label doc d's
// summary opens with (labelOf), each doc's label analysed once a scan.
// Callers hold ix.mu.
func (ix *Index) labelHolds(memo labelTerms, d int32, id int32) bool {
	ids, ok := memo[d]
	if !ok {
		if label := labelOf(ix.summaryOf(d)); label != "" {
			analyzeInto(label, func(t Term) {
				if tid, ok := ix.termID(t.Text); ok {
					ids = append(ids, tid)
				}
			})
		}
		memo[d] = ids
	}
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// roles are the labels of an agent session's messages (package harness).
var roles = map[string]bool{"user": true, "assistant": true, "tool": true, "system": true}

// chatTurn reports whether doc d's summary opens with a speaker label that
// is no agent role and names a person: its first word starts with an
// upper-case letter ("Caroline: …", "Dr Ana Lopez: …") or holds a digit,
// as a user handle does ("caroline37: …", "mike_88: …"). A lower-case
// word without a digit ("config: db_port_main", "step 12: …", "note: …")
// is a summary's heading, not a speaker: such a node is no chat turn, and
// intent ownership (CONF-13) holds for it whatever ChatOwn says.
func (ix *Index) chatTurn(d int32) bool {
	l := labelOf(ix.summaryOf(d))
	if l == "" {
		return false
	}
	f, _, _ := strings.Cut(l, " ")
	if roles[strings.ToLower(f)] {
		return false
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsUpper(r) || strings.ContainsAny(f, "0123456789")
}
