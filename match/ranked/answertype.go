package ranked

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule "a question is answered by its type" (Params.AnswerType): question
// classification to an expected answer type, as in QA passage retrieval
// (Moldovan et al. 2000; Prager et al. 2000, "predictive annotation"),
// kept small and lexical. A prompt that asks where, how many / how much,
// or who expects a place, a quantity or a person; among the candidates the
// prompt's terms found, a chat turn (a node whose summary opens with a
// speaker label that is no agent role, Index.chatTurn) whose text holds
// something of that type the prompt does not already say ranks with
// AnswerType × its own score added. Like rule "a when-question is
// answered by a time" (when.go, which serves "when" and "how long") it
// only orders: the cut-off judges the node's own score, no node becomes
// a candidate by its type, a prompt of no such type is scored as before,
// and agent sessions, whose nodes carry role labels, are never touched.
//
// What holds a type (answerTyped):
//   - a place: a place word (placeWords: "beach", "shelter", "country",
//     …), or a capitalised word right after in / at / from / to that is
//     not a speaker's name;
//   - a quantity: a run of digits that is not a year, or a number word
//     (quantityWords: "three", "twice", "dozen", …);
//   - a person: a word for a person (personWords: "mom", "colleague",
//     "aunt", …), or a capitalised word that does not open a sentence and
//     is not a speaker's name, a day or a month.
//
// Words the prompt holds (as written, lower-cased) do not count: the
// answer is what the question does not say.

// answerType is the answer type a prompt asks for.
type answerType uint8

// Answer types (answerType).
const (
	typeNone answerType = iota
	typePlace
	typeQuantity
	typePerson
)

// typeTop bounds how many candidates, best first by rank, the rule reads
// (each read means its text: at most typeTop a scan, and only for a
// prompt of a type).
const typeTop = 32

const placeList = `
home house apartment country city town village hometown state island beach mountain mountains forest
woods park lake river ocean sea coast shore camp campsite trail shelter church temple gym school
college university campus office studio store shop mall market restaurant cafe cafeteria bar pub
museum gallery library hospital clinic club festival concert theater theatre stadium arena farm
garden zoo hotel airport station street downtown neighborhood neighbourhood abroad overseas center
centre hall department company bakery kitchen backyard yard garage basement
`

const quantityList = `
zero two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred hundreds
thousand thousands million millions dozen dozens couple twice thrice several half
`

const personList = `
mom mum mother dad father parent parents sister brother sibling siblings aunt auntie uncle cousin
grandma grandmother grandpa grandfather granddaughter grandson niece nephew husband wife partner
boyfriend girlfriend fiance fiancee son daughter kid kids child children baby family friend friends
buddy colleague colleagues coworker coworkers boss manager mentor mentors teacher teachers coach
neighbor neighbour neighbors neighbours classmate classmates roommate teammate teammates doctor
therapist counselor pastor
`

var placeWords, quantityWords, personWords, notNames = wordSet(placeList), wordSet(quantityList), wordSet(personList),
	wordSet(`i i'm i've i'd i'll monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december hey hi hello thanks wow oh omg lol ok okay yes yeah`)

func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}

// asksType returns the answer type a prompt asks for: where (or "what /
// which" + a place noun) a place, "how many" / "how much" a quantity,
// "who" / "whom" as a question word a person; typeNone otherwise. "when"
// and "how long" are rule "a when-question is answered by a time".
func asksType(prompt string) answerType {
	words := promptWords(prompt)
	for i, w := range words {
		next := wordAfter(words, i)
		switch {
		case w == "where" && (whenAux[next] || next == ""):
			return typePlace
		case (w == "what" || w == "which") && (next == "city" || next == "country" || next == "place" || next == "state" || next == "town"):
			return typePlace
		case w == "how" && (next == "many" || next == "much"):
			return typeQuantity
		case (w == "who" || w == "whom") && (i == 0 || whenAux[next]):
			return typePerson
		}
	}
	return typeNone
}

// answerTyped reports whether text holds something of type t that the
// prompt does not say (promptWords, lower-cased), a speaker's name
// (names, lower-cased) set aside.
func answerTyped(text string, t answerType, promptWords, names map[string]bool) bool {
	prev := "."   // the previous word, lower-cased ("." at a sentence start)
	start := true // the next word opens a sentence
	found := false
	i := 0
	for i < len(text) && !found {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if r == '.' || r == '!' || r == '?' || r == '\n' || r == ':' {
				start = true
			}
			i += n
			continue
		}
		j := i
		for j < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r2) && !unicode.IsDigit(r2) && r2 != '\'' {
				break
			}
			j += n2
		}
		word := strings.TrimRight(text[i:j], "'")
		lower := strings.ToLower(word)
		lower = strings.TrimSuffix(lower, "'s")
		capital := unicode.IsUpper(r) && !start && !names[lower] && !notNames[lower]
		if !promptWords[lower] {
			switch t {
			case typePlace:
				found = placeWords[lower] || (capital && (prev == "in" || prev == "at" || prev == "from" || prev == "to"))
			case typeQuantity:
				found = quantityWords[lower] || isCount(lower)
			case typePerson:
				found = personWords[lower] || capital
			}
		}
		prev, start = lower, false
		i = j
	}
	return found
}

// isCount reports whether w is a run of digits that is not a year
// (1900–2099).
func isCount(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return !(len(w) == 4 && (strings.HasPrefix(w, "19") || strings.HasPrefix(w, "20")))
}

// typeRank applies rule "a question is answered by its type" to the
// candidates (best first by rank) and orders them again. Callers hold
// ix.mu.
func (ix *Index) typeRank(prompt string, cands []*match, p Params) {
	if p.AnswerType == 0 || len(cands) == 0 {
		return
	}
	t := asksType(prompt)
	if t == typeNone {
		return
	}
	promptWords := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(prompt), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		promptWords[strings.TrimSuffix(w, "'s")] = true
	}
	// The speakers' names: the labels of the candidates (a chat turn
	// addresses the other speaker by name: "Thanks, Caroline!").
	names := map[string]bool{}
	for _, c := range cands {
		if l := labelOf(ix.summaryOf(c.doc)); l != "" {
			f, _, _ := strings.Cut(l, " ")
			names[strings.TrimRight(strings.ToLower(f), "0123456789_")] = true
		}
	}
	lifted := false
	for k, c := range cands {
		if k == typeTop {
			break
		}
		if !ix.chatTurn(c.doc) {
			continue
		}
		text, ok := ix.textOf(c.doc)
		if !ok {
			continue
		}
		// The label is no answer: read what the speaker says.
		if l := labelOf(ix.summaryOf(c.doc)); l != "" {
			if _, rest, ok := strings.Cut(text, l+": "); ok {
				text = rest
			}
		}
		if answerTyped(text, t, promptWords, names) {
			c.raise(p.AnswerType*c.score, liftType)
			lifted = true
		}
	}
	if lifted {
		ix.sortByRank(cands)
	}
}
