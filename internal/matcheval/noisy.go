package matcheval

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Parts of the noisy perturbation (LoCoMoOptions.Noisy, noisyTurns): each
// can be turned on alone (LoCoMoOptions.NoisyParts) to see what it costs.
const (
	// NoisyHandles: each speaker writes under a user handle (the first
	// name lower-cased with two digits, "caroline37"), as a chat app or a
	// forum shows it, while the questions still name the person.
	NoisyHandles = "handles"
	// NoisyFiller: one-line replies that say nothing ("lol", "yeah",
	// "omg same") interleaved after a share of the turns.
	NoisyFiller = "filler"
	// NoisyTypos: a share of the longer words misspelt by one edit.
	NoisyTypos = "typos"
	// NoisyAbbrev: chat spelling ("u", "ur", "bc", "tho", "rly", "ppl").
	NoisyAbbrev = "abbrev"
	// NoisyThreads: another conversation's turns interleaved in runs of
	// one to three, as two threads of a group chat are (its turns are no
	// question's evidence). Not in NoisyAll: asked for by name.
	NoisyThreads = "threads"
)

// NoisyAll is every part of the noisy perturbation.
var NoisyAll = []string{NoisyHandles, NoisyFiller, NoisyTypos, NoisyAbbrev}

// Shares of the noisy perturbation.
const (
	noisyFiller = 0.3  // a turn is followed by a filler one-liner
	noisyTypo   = 0.06 // a word of five letters or more is misspelt
	noisyAbbrev = 0.7  // a word with a chat spelling is written so
)

// fillers are the one-line replies the noisy perturbation interleaves.
var fillers = []string{"lol", "haha", "yeah", "omg", "nice", "ok", "true", "same", "wow that's cool", "ikr", "yep", "hmm",
	"haha yes", "oh nice", "right?", "no way", "cool cool", "lmao", "for sure", "aww", "ya", "omg same"}

// chatSpelling maps a word to its chat spelling (noisyAbbrev).
var chatSpelling = map[string]string{"you": "u", "your": "ur", "you're": "ur", "are": "r", "because": "bc", "really": "rly",
	"though": "tho", "people": "ppl", "thanks": "thx", "please": "pls", "tonight": "tonite", "tomorrow": "tmrw",
	"about": "abt", "something": "smth", "probably": "prob", "definitely": "def", "going to": "gonna", "want to": "wanna",
	"okay": "ok", "see": "c", "before": "b4", "great": "gr8", "love": "luv", "what": "wut", "with": "w", "favorite": "fav",
	"awesome": "awsome", "amazing": "amazin", "pictures": "pics", "picture": "pic", "right now": "rn", "to be honest": "tbh"}

// noisyTurns perturbs a conversation's turns toward real human chat in
// ways LoCoMo's generated turns never show (the parts named in parts; nil:
// NoisyAll): user handles for speaker labels, filler one-liners between
// turns, typos, chat spelling, and (NoisyThreads) the turns of another
// conversation, other, interleaved. The questions are asked as LoCoMo wrote
// them: a real person's question does not follow the chat's spelling. A
// filler turn has no dia_id and is no question's evidence. The draw is
// seeded by the conversation's index: the same input gives the same turns.
func noisyTurns(turns, other []DialogTurn, seed uint64, parts []string) []DialogTurn {
	if parts == nil {
		parts = NoisyAll
	}
	on := map[string]bool{}
	for _, p := range parts {
		on[p] = true
	}
	r := rand.New(rand.NewPCG(seed, 0x6e01_5e17))
	handle := map[string]string{}
	var speakers []string
	for _, t := range turns {
		if _, ok := handle[t.Speaker]; !ok {
			first := strings.ToLower(strings.Fields(t.Speaker + " x")[0])
			handle[t.Speaker] = fmt.Sprintf("%s%02d", first, r.IntN(100))
			speakers = append(speakers, t.Speaker)
		}
	}
	var out []DialogTurn
	if on[NoisyThreads] && len(other) > 0 {
		turns = interleave(turns, other, r)
	}
	for i, t := range turns {
		if on[NoisyAbbrev] {
			t.Text = chatWords(t.Text, r)
		}
		if on[NoisyTypos] {
			t.Text = typos(t.Text, r)
		}
		speaker := t.Speaker
		if on[NoisyHandles] {
			t.Speaker = handle[speaker]
		}
		out = append(out, t)
		if on[NoisyFiller] && r.Float64() < noisyFiller {
			// The other speaker answers with a filler (the same one when the
			// chat has a single speaker).
			other := speaker
			for _, s := range speakers {
				if s != speaker {
					other = s
					break
				}
			}
			if i+1 < len(turns) && turns[i+1].Speaker != speaker {
				other = turns[i+1].Speaker
			}
			f := DialogTurn{Speaker: other, Text: fillers[r.IntN(len(fillers))], DateTime: t.DateTime}
			if on[NoisyHandles] {
				f.Speaker = handle[other]
			}
			out = append(out, f)
		}
	}
	return out
}

// chatWords writes each word (or phrase) of chatSpelling in its chat
// spelling with probability noisyAbbrev, keeping everything else as is.
func chatWords(text string, r *rand.Rand) string {
	words := strings.Split(text, " ")
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		// Two- and three-word phrases first.
		done := false
		for n := 3; n >= 2 && !done; n-- {
			if i+n > len(words) {
				continue
			}
			phrase := strings.ToLower(strings.Join(words[i:i+n], " "))
			core, tail := trimTail(phrase)
			if c, ok := chatSpelling[core]; ok {
				if r.Float64() < noisyAbbrev {
					out = append(out, c+tail)
					i += n - 1
					done = true
				}
			}
		}
		if done {
			continue
		}
		core, tail := trimTail(strings.ToLower(w))
		if c, ok := chatSpelling[core]; ok && r.Float64() < noisyAbbrev {
			out = append(out, c+tail)
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// trimTail splits a word from its trailing punctuation.
func trimTail(w string) (core, tail string) {
	i := len(w)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(w[:i])
		if unicode.IsLetter(r) || r == '\'' {
			break
		}
		i -= size
	}
	return w[:i], w[i:]
}

// typos misspells each word of five letters or more with probability
// noisyTypo by one edit: two inner letters swapped, an inner letter dropped,
// or one doubled.
func typos(text string, r *rand.Rand) string {
	words := strings.Split(text, " ")
	for i, w := range words {
		core, tail := trimTail(w)
		rs := []rune(core)
		if len(rs) < 5 || r.Float64() >= noisyTypo {
			continue
		}
		letters := true
		for _, c := range rs {
			letters = letters && unicode.IsLetter(c)
		}
		if !letters {
			continue
		}
		words[i] = string(misspell(rs, r)) + tail
	}
	return strings.Join(words, " ")
}

// misspell makes one edit to a word of three letters or more: two inner
// letters swapped, an inner letter dropped, or one doubled.
func misspell(rs []rune, r *rand.Rand) []rune {
	k := 1 + r.IntN(len(rs)-2) // an inner letter
	switch r.IntN(3) {
	case 0:
		rs[k], rs[k+1] = rs[k+1], rs[k]
	case 1:
		rs = append(rs[:k], rs[k+1:]...)
	default:
		rs = append(rs[:k+1], rs[k:]...)
	}
	return rs
}

// interleave puts runs of one to three of other's turns (their dia_ids
// cleared) after runs of one to three of turns, until turns run out.
func interleave(turns, other []DialogTurn, r *rand.Rand) []DialogTurn {
	var out []DialogTurn
	j := 0
	for i := 0; i < len(turns); {
		n := min(1+r.IntN(3), len(turns)-i)
		out = append(out, turns[i:i+n]...)
		i += n
		for k := 1 + r.IntN(3); k > 0 && j < len(other); k-- {
			t := other[j]
			t.DiaID = ""
			out = append(out, t)
			j++
		}
	}
	return out
}
