package matcheval

import (
	"math/rand/v2"
	"strings"
	"unicode"
)

// node is one folded message of a LoCoMo evaluation: its payload and the
// dialog turns (dia_ids) it holds, whole or in part.
type node struct {
	payload string
	diaIDs  []string
	// lines: for each of diaIDs, the text of the node that turn is (its
	// line of a merged message, the piece, the whole payload): a focused
	// hydration found the turn when it holds that text.
	lines []string
}

// plainNodes is one node per dialog turn (TurnPayload, or UndatedPayload
// when undated).
func plainNodes(turns []DialogTurn, undated bool) []node {
	out := make([]node, 0, len(turns))
	for _, t := range turns {
		p := TurnPayload(t)
		if undated {
			p = UndatedPayload(t)
		}
		out = append(out, node{payload: p, diaIDs: []string{t.DiaID}, lines: []string{p}})
	}
	return out
}

// Shares of the uneven perturbation (unevenNodes).
const (
	unevenSplit = 0.35 // a turn of two sentences or more is sent as one message per sentence
	unevenMerge = 0.15 // a turn opens a run of 2 to 5 turns folded as one message
	unevenLower = 0.5  // a message is written lower-case without end punctuation
)

// unevenNodes perturbs a conversation toward the shape of real chat, where
// LoCoMo's generated turns are even in length and well written: with
// probability unevenSplit a turn of several sentences becomes one message
// per sentence (each "Speaker: sentence"); with probability unevenMerge a
// turn and the 1–4 turns after it become one long message (their
// payloads on separate lines, as a paste or a transcript would be); with
// probability unevenLower a message's text is lower-cased and its
// sentence-final punctuation dropped. An evidence turn is found when any
// node holding it (a piece of it, or the merged message) is picked. The
// draw is seeded by the conversation's index: the same input gives the
// same nodes.
func unevenNodes(turns []DialogTurn, undated bool, seed uint64) []node {
	r := rand.New(rand.NewPCG(seed, 0x1f0c_a5e5))
	casual := func(t DialogTurn) DialogTurn {
		if r.Float64() < unevenLower {
			t.Text = strings.Map(func(c rune) rune {
				if c == '.' || c == '!' {
					return -1
				}
				return unicode.ToLower(c)
			}, t.Text)
		}
		return t
	}
	payload := func(t DialogTurn) string {
		if undated {
			return UndatedPayload(t)
		}
		return TurnPayload(t)
	}
	var out []node
	for i := 0; i < len(turns); i++ {
		t := turns[i]
		if r.Float64() < unevenMerge && i+1 < len(turns) {
			n := min(2+r.IntN(4), len(turns)-i)
			var lines []string
			var ids []string
			for _, m := range turns[i : i+n] {
				lines = append(lines, payload(casual(m)))
				ids = append(ids, m.DiaID)
			}
			out = append(out, node{payload: strings.Join(lines, "\n"), diaIDs: ids, lines: lines})
			i += n - 1
			continue
		}
		if parts := sentences(t.Text); len(parts) > 1 && r.Float64() < unevenSplit {
			caption := t.BlipCaption
			for k, s := range parts {
				piece := t
				piece.Text, piece.BlipCaption = s, ""
				if k == len(parts)-1 {
					piece.BlipCaption = caption
				}
				p := payload(casual(piece))
				out = append(out, node{payload: p, diaIDs: []string{t.DiaID}, lines: []string{p}})
			}
			continue
		}
		p := payload(casual(t))
		out = append(out, node{payload: p, diaIDs: []string{t.DiaID}, lines: []string{p}})
	}
	return out
}

// sentences splits text after each '.', '!' or '?' followed by a space.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(text); i++ {
		if (text[i] == '.' || text[i] == '!' || text[i] == '?') && text[i+1] == ' ' {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 2
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}
