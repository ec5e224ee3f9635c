package matcheval

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/contextfold/contextfold/match"
)

// EvidenceOutcome is whether the ranked scan hydrated one evidence turn of
// one question (LoCoMoReport.Evidence).
type EvidenceOutcome struct {
	// Key names the evidence turn and its question, the same in every
	// chat set built from one file and in its combined store:
	// "C<conversation>/<dia_id>|<question as written>#<n>", n counting
	// earlier questions of the same text with the same evidence turn.
	Key string
	Hit bool
}

// evidenceKey is EvidenceOutcome.Key without its count: the conversation's
// position ci and the evidence turn's dia_id (already prefixed by it in a
// combined file, Combine) and the question as the file writes it (before
// Reword).
func evidenceKey(ci int, diaID, question string) string {
	if !strings.Contains(diaID, "/") {
		diaID = "C" + strconv.Itoa(ci) + "/" + diaID
	}
	return diaID + "|" + question
}

// PairedResult compares two settings of the ranked scan, A (the
// reference) and B (the change), evidence turn by evidence turn.
type PairedResult struct {
	Set string
	// N is the number of pairs; HitsA and HitsB how many each setting
	// found.
	N, HitsA, HitsB int
	// Wins are the pairs B found and A did not; Losses the reverse.
	Wins, Losses int
	// P is the exact two-sided sign test's p-value of Wins against
	// Losses (SignTest).
	P float64
}

// Gain is B's recall minus A's over the pairs, in points (percent).
func (r PairedResult) Gain() float64 {
	return 100 * float64(r.HitsB-r.HitsA) / float64(max(1, r.N))
}

// Significant reports whether the change moved recall at level alpha:
// +1 a significant gain, -1 a significant loss, 0 neither.
func (r PairedResult) Significant(alpha float64) int {
	switch {
	case r.P >= alpha || r.Wins == r.Losses:
		return 0
	case r.Wins > r.Losses:
		return 1
	}
	return -1
}

// Paired pairs a and b by Key (outcomes of the same evidence turns under
// two settings; a key in only one of them is an error: the sets differ)
// and counts wins and losses of b over a.
func Paired(set string, a, b []EvidenceOutcome) (PairedResult, error) {
	r := PairedResult{Set: set}
	hitA := make(map[string]bool, len(a))
	for _, o := range a {
		hitA[o.Key] = o.Hit
	}
	if len(a) != len(b) || len(hitA) != len(a) {
		return r, fmt.Errorf("paired %s: %d and %d outcomes (%d distinct keys): not the same evidence turns", set, len(a), len(b), len(hitA))
	}
	for _, o := range b {
		ha, ok := hitA[o.Key]
		if !ok {
			return r, fmt.Errorf("paired %s: %q only under B", set, o.Key)
		}
		r.add(ha, o.Hit)
	}
	r.P = SignTest(r.Wins, r.Losses)
	return r, nil
}

func (r *PairedResult) add(a, b bool) {
	r.N++
	if a {
		r.HitsA++
	}
	if b {
		r.HitsB++
	}
	switch {
	case b && !a:
		r.Wins++
	case a && !b:
		r.Losses++
	}
}

// PairedUnion pools several chat sets built from one file (each a pair of
// outcome lists, A then B, keyed alike) into one test whose unit is the
// evidence turn, not the pair: the sets are perturbations of the same
// conversations and questions, so one turn's outcomes across them are not
// independent. Per key the net change over the sets (wins minus losses)
// is summed; a key with a positive net is a win, a negative net a loss,
// and the exact sign test is taken over the keys. N, HitsA and HitsB count
// pairs over every set, so Gain is the pooled change in points.
func PairedUnion(sets [][2][]EvidenceOutcome) PairedResult {
	r := PairedResult{Set: "union"}
	net := map[string]int{}
	for _, s := range sets {
		hitA := make(map[string]bool, len(s[0]))
		for _, o := range s[0] {
			hitA[o.Key] = o.Hit
		}
		for _, o := range s[1] {
			ha := hitA[o.Key]
			r.N++
			if ha {
				r.HitsA++
			}
			if o.Hit {
				r.HitsB++
			}
			switch {
			case o.Hit && !ha:
				net[o.Key]++
			case ha && !o.Hit:
				net[o.Key]--
			}
		}
	}
	for _, d := range net {
		switch {
		case d > 0:
			r.Wins++
		case d < 0:
			r.Losses++
		}
	}
	r.P = SignTest(r.Wins, r.Losses)
	return r
}

// SignTest is the exact two-sided sign test of wins against losses (ties
// left out): the probability, under a fair coin over the wins+losses
// discordant pairs, of a split at least as uneven as this one. 1 when
// there are none.
func SignTest(wins, losses int) float64 {
	n := wins + losses
	if n == 0 {
		return 1
	}
	k := min(wins, losses)
	// Sum of C(n, i) / 2^n for i <= k, in logs for large n.
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	tail := 0.0
	for i := 0; i <= k; i++ {
		tail += math.Exp(lg(n) - lg(i) - lg(n-i) - float64(n)*math.Ln2)
	}
	p := 2 * tail
	if wins == losses {
		p = 1
	}
	return math.Min(1, p)
}

// PairedAgent compares two settings of the ranked scan on an agent probe
// set: hits and hydrated tokens, and the probes each finds that the other
// does not.
type PairedAgent struct {
	Set                      string
	Probes                   int
	HitsA, HitsB             int
	Wins, Losses             int
	TokensA, TokensB         int // summed over the probes
	NullTokensA, NullTokensB int // the null prompts' hydrated tokens
}

// TokenChange is B's hydrated tokens relative to A's, in percent.
func (r PairedAgent) TokenChange() float64 {
	return 100 * (float64(r.TokensB) - float64(r.TokensA)) / math.Max(1, float64(r.TokensA))
}

// PairAgent compares the ranked results of two runs of the same probes.
func PairAgent(set string, a, b *ProbeReport) (PairedAgent, error) {
	ra, rb := a.Results[match.Ranked], b.Results[match.Ranked]
	r := PairedAgent{Set: set, Probes: len(ra)}
	if len(ra) != len(rb) {
		return r, fmt.Errorf("paired %s: %d and %d probes", set, len(ra), len(rb))
	}
	for i := range ra {
		if ra[i].Question != rb[i].Question {
			return r, fmt.Errorf("paired %s: probe %d differs", set, i)
		}
		if ra[i].Hit {
			r.HitsA++
		}
		if rb[i].Hit {
			r.HitsB++
		}
		switch {
		case rb[i].Hit && !ra[i].Hit:
			r.Wins++
		case ra[i].Hit && !rb[i].Hit:
			r.Losses++
		}
		r.TokensA += ra[i].Tokens
		r.TokensB += rb[i].Tokens
	}
	for _, t := range a.Nulls[match.Ranked] {
		r.NullTokensA += t
	}
	for _, t := range b.Nulls[match.Ranked] {
		r.NullTokensB += t
	}
	return r, nil
}

// PairedVerdict is the decision rule of docs/matching.md ("Deciding a
// rule"): a change is on by default when it gains significantly (sign test
// p < Alpha) on the union of the chat sets, loses significantly on none of
// them, loses no agent probe, and costs the agent sets less than
// MaxTokenRise percent more hydrated tokens.
type PairedVerdict struct {
	Keep    bool
	Reasons []string
}

// Decision constants of PairedVerdict.
const (
	Alpha        = 0.05
	MaxTokenRise = 5.0
)

// Decide applies the rule to a union result, the per-set chat results and
// the agent results.
func Decide(union PairedResult, chats []PairedResult, agents []PairedAgent) PairedVerdict {
	v := PairedVerdict{Keep: true}
	if union.Significant(Alpha) != 1 {
		v.Keep = false
		v.Reasons = append(v.Reasons, fmt.Sprintf("no significant gain on the union (%+d net turns, p %.3g)", union.Wins-union.Losses, union.P))
	}
	for _, c := range chats {
		if c.Significant(Alpha) == -1 {
			v.Keep = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("significant loss on %s (p %.3g)", c.Set, c.P))
		}
	}
	for _, a := range agents {
		if a.Losses > 0 {
			v.Keep = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s loses %d probe(s)", a.Set, a.Losses))
		}
		if a.TokenChange() >= MaxTokenRise {
			v.Keep = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s spends %+.1f %% tokens", a.Set, a.TokenChange()))
		}
	}
	return v
}

// FormatPaired renders a paired comparison as Markdown: one row per chat
// set and the union, one per agent set, and the verdict.
func FormatPaired(chats []PairedResult, union PairedResult, agents []PairedAgent) string {
	var b strings.Builder
	b.WriteString("| chat set | evidence turns | A | B | gain (points) | wins | losses | p (sign test) |\n|---|---|---|---|---|---|---|---|\n")
	row := func(r PairedResult) {
		fmt.Fprintf(&b, "| %s | %d | %.1f %% | %.1f %% | %+.2f | %d | %d | %.3g |\n", r.Set, r.N,
			100*float64(r.HitsA)/float64(max(1, r.N)), 100*float64(r.HitsB)/float64(max(1, r.N)), r.Gain(), r.Wins, r.Losses, r.P)
	}
	for _, c := range chats {
		row(c)
	}
	row(union)
	if len(agents) > 0 {
		b.WriteString("\n| agent set | probes | hits A | hits B | wins | losses | tokens/probe A | tokens/probe B | change | null tokens A / B |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, a := range agents {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.0f | %.0f | %+.1f %% | %d / %d |\n", a.Set, a.Probes, a.HitsA, a.HitsB, a.Wins, a.Losses,
				float64(a.TokensA)/float64(max(1, a.Probes)), float64(a.TokensB)/float64(max(1, a.Probes)), a.TokenChange(), a.NullTokensA, a.NullTokensB)
		}
	}
	v := Decide(union, chats, agents)
	if v.Keep {
		b.WriteString("\nverdict: on by default (significant gain on the union, no significant loss, no agent cost)\n")
	} else {
		sort.Strings(v.Reasons)
		b.WriteString("\nverdict: not a default: " + strings.Join(v.Reasons, "; ") + "\n")
	}
	return b.String()
}
