package ranked

import (
	"sort"
	"strings"
	"unicode"
)

// Rule "a when-question is answered by a time": a prompt that asks when
// something happened ("When did Caroline go to the support group?",
// "what year did we move?", "how long ago…", "¿cuándo…?", "ne zaman…",
// "什么时候…") is answered by the turn that says when ("I went yesterday",
// "last weekend", "in March"), not by the turns that only mention the same
// event. Among the candidates the prompt's terms found, a node that holds
// a time expression of its own (timeWords: the words of relative and
// calendar time, not the prompt's words) has its ranking score raised by
// Params.When × its own score. Like rule "topic context" it only orders:
// the cut-off (Ratio, Floor, MinShare) judges the node's own score, no
// node becomes a candidate through a time word, and a prompt that asks
// no when-question is scored as before.
//
// Measured on LoCoMo (BENCHMARKS.md): 87 % of the evidence turns of its
// when-questions hold such a word, against 24 % of all turns.

// timeWords are the words of relative and calendar time of English,
// Spanish, Turkish and Chinese (analysed like any text, so "weeks" is
// "week"; the stop words among them, "last", "next", "may", drop out).
const timeWords = `
yesterday today tonight tomorrow ago recently lately week weekend fortnight month year day days
morning afternoon evening night overnight noon midnight
monday tuesday wednesday thursday friday saturday sunday
spring summer autumn winter
ayer hoy mañana anoche anteayer semana fin mes año día madrugada tarde noche
lunes martes miércoles jueves viernes sábado domingo
primavera verano otoño invierno
dün bugün yarın hafta ay yıl gün sabah akşam gece geçen
pazartesi salı çarşamba perşembe cuma cumartesi pazar
昨天 今天 明天 前天 后天 上周 下周 本周 周末 上个 去年 今年 明年 早上 晚上 下午 上午 星期 礼拜
`

// timeTerms are the analysed terms of timeWords (primary forms only).
var timeTerms = func() []string {
	seen := map[string]bool{}
	var out []string
	analyzeInto(timeWords, func(t Term) {
		if (t.Kind == KindWord || t.Kind == KindCJK) && !seen[t.Text] {
			seen[t.Text] = true
			out = append(out, t.Text)
		}
	})
	return out
}()

// whenAux are the auxiliaries that make "when" a question ("when did",
// "when was", "when is") rather than a conjunction ("what did it print
// when I ran the tests").
var whenAux = map[string]bool{}

// timeNouns follow "what"/"which" in a question for a time ("what year",
// "which month", "what date").
var timeNouns = map[string]bool{}

func init() {
	for _, w := range strings.Fields("did do does is was were will would has have had are am can could should might must shall") {
		whenAux[w] = true
	}
	for _, w := range strings.Fields("year years month months day days date dates time week weekend season") {
		timeNouns[w] = true
	}
}

// asksWhen reports whether the prompt asks for a time (rule "a
// when-question is answered by a time").
func asksWhen(prompt string) bool {
	for _, s := range []string{"什么时候", "何时", "哪天", "哪一天", "几号", "哪年", "哪一年", "几月", "几点"} {
		if strings.Contains(prompt, s) {
			return true
		}
	}
	words := promptWords(prompt)
	for i, w := range words {
		next := wordAfter(words, i)
		switch {
		case w == "cuándo", w == "ne" && next == "zaman":
			return true
		case w == "when" && (whenAux[next] || next == ""):
			return true
		case (w == "what" || w == "which") && timeNouns[next]:
			return true
		case w == "how" && next == "long":
			return true
		}
	}
	return false
}

// timeIDs returns the ids of the time terms the index knows.
func (ix *Index) timeIDs() []int32 {
	var ids []int32
	for _, t := range timeTerms {
		if id, ok := ix.termID(t); ok && ix.liveDF(id) > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// holdsTime reports whether doc d holds one of the terms ids.
func (ix *Index) holdsTime(d int32, ids []int32) bool {
	for _, id := range ids {
		if ix.tf(id, d) > 0 {
			return true
		}
	}
	return false
}

// whenRank applies rule "a when-question is answered by a time" to the
// candidates (best first by rank) and orders them again. Callers hold
// ix.mu.
func (ix *Index) whenRank(q *Query, cands []*match, p Params) {
	if !q.when || p.When == 0 || len(cands) == 0 {
		return
	}
	ids := ix.timeIDs()
	if len(ids) == 0 {
		return
	}
	for _, c := range cands {
		if ix.holdsTime(c.doc, ids) {
			c.raise(p.When*c.score, liftWhen)
		}
	}
	ix.sortByRank(cands)
}

// sortByRank orders candidates by rank, then newest step (deterministic).
func (ix *Index) sortByRank(out []*match) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.rank() != b.rank() {
			return a.rank() > b.rank()
		}
		return ix.docs[a.doc].step > ix.docs[b.doc].step
	})
}

// promptWords returns the prompt's words, lower-cased, as the question
// rules read them: runs of letters and apostrophes ("where's", "ne
// zaman"), digits and punctuation between them.
func promptWords(prompt string) []string {
	return strings.FieldsFunc(strings.ToLower(prompt), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
}

// wordAfter is the word after words[i], "" at the end.
func wordAfter(words []string, i int) string {
	if i+1 < len(words) {
		return words[i+1]
	}
	return ""
}
