package matcheval

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// Classes of an evidence turn the ranked scan did not hydrate
// (LoCoMoMisses), from the nearest to the farthest from a hit. For an
// evidence turn held by several nodes (the pieces of a split turn) the
// nearest class of any of them counts.
const (
	// MissFocused: a node holding it was hydrated, focused on its other
	// lines (rule "focus long picks").
	MissFocused = "hydrated, focused away"
	// MissBudget: the scan picked a node holding it, and the per-turn
	// budget (or the cost rule for long nodes) left it out.
	MissBudget = "picked, over budget"
	// MissCutOff: it scored, under the cut-off (Params.Ratio × the best).
	MissCutOff = "under the cut-off"
	// MissSuperseded: intent ownership left it out (a newer node holds
	// every prompt term it holds).
	MissSuperseded = "superseded"
	// MissOutranked: what it says holds a content word of the question and was not
	// among the candidates the scan reports (the best Params.Candidates,
	// the ten best under the cut-off).
	MissOutranked = "outranked"
	// MissNoWord: what it says (its speaker label aside) holds no content
	// word of the question in any form the analyser gives (stems,
	// compounds, numbers): a paraphrase, which a lexical ranking finds only
	// through the speaker's name or the turns around it.
	MissNoWord = "no question word"
)

// missClasses in report order.
var missClasses = []string{MissFocused, MissBudget, MissCutOff, MissSuperseded, MissOutranked, MissNoWord}

// overlapBins are the bounds of the question/evidence overlap bins of
// LoCoMoMisses.ByOverlap: the share of the question's content words the
// evidence turn holds, in (lo, hi]; the first bin is exactly 0.
var overlapBins = []float64{0, 0.25, 0.5, 0.75, 1}

// LoCoMoMisses is the study of the ranked scan's misses (LoCoMoOptions.Misses):
// per category (0: all), how many evidence turns were missed and why; and
// the evidence-turn recall of the ranked scan and of BM25+stem in budget
// by the share of the question's content words the evidence turn holds
// (a measure of how far the question is worded away from its evidence:
// at share 0 only the turns around it can find it).
type LoCoMoMisses struct {
	Evidence map[int]int            // evidence turns asked, by category
	Missed   map[int]map[string]int // missed evidence turns by category, by class
	// BudgetTokens: for the MissBudget evidence turns, the sum of the
	// tokens selected ahead of them, of the evidence node's own tokens,
	// and of the per-turn budget (means: divide by the count).
	BudgetAhead, BudgetOwn, BudgetBudget float64
	// LongAhead: MissBudget turns behind a selected node over twice the
	// conversation's mean node tokens.
	LongAhead int
	// ByOverlap: per bin of overlapBins (index 0: share 0), evidence turns
	// and those found, per method (MethodRanked, MethodBM25StemBudget).
	ByOverlap [][3]int
}

func newLoCoMoMisses() *LoCoMoMisses {
	return &LoCoMoMisses{Evidence: map[int]int{}, Missed: map[int]map[string]int{}, ByOverlap: make([][3]int, len(overlapBins))}
}

// contentTerms are the distinct primary terms of text as the ranked
// matcher analyses it (stop words left out, words stemmed).
func contentTerms(text string) map[string]bool {
	out := map[string]bool{}
	for _, t := range ranked.Analyze(text) {
		if t.Kind == ranked.KindWord || t.Kind == ranked.KindCompound || t.Kind == ranked.KindNumber || t.Kind == ranked.KindCJK {
			out[t.Text] = true
		}
	}
	return out
}

// unlabelled is a node's payload without the "Speaker: " label that opens
// each of its lines (TurnPayload): the overlap measures the words of what
// was said, the question naming the speaker is rule "the person named
// speaks"'s business.
func unlabelled(payload string) string {
	lines := strings.Split(payload, "\n")
	for i, l := range lines {
		if k := strings.Index(l, ": "); k > 0 && k <= 40 && !strings.ContainsAny(l[:k], ".!?") {
			lines[i] = l[k+2:]
		}
	}
	return strings.Join(lines, "\n")
}

// Reword returns question worded away from its evidence (the payloads of
// the nodes holding its evidence turns): of the question's words whose
// content terms (contentTerms) what the evidence says holds (speaker
// labels aside, unlabelled), the first, third, fifth… in the question's
// order are left out (a word's trailing question mark is kept). No
// synonyms are put in their place, so the question only loses the words
// it shares with its evidence, as a paraphrase does; the overlap of
// question and evidence roughly halves. Deterministic.
func Reword(question string, evidence []string) string {
	said := map[string]bool{}
	for _, e := range evidence {
		for t := range contentTerms(unlabelled(e)) {
			said[t] = true
		}
	}
	var out []string
	shared := 0
	for _, w := range strings.Fields(question) {
		hit := false
		for t := range contentTerms(w) {
			hit = hit || said[t]
		}
		if hit {
			if shared++; shared%2 == 1 {
				if strings.HasSuffix(w, "?") {
					out = append(out, "?")
				}
				continue
			}
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// overlapBin returns the bin of overlapBins of share.
func overlapBin(share float64) int {
	if share == 0 {
		return 0
	}
	for i := 1; i < len(overlapBins); i++ {
		if share <= overlapBins[i]+1e-12 {
			return i
		}
	}
	return len(overlapBins) - 1
}

// study adds one question's evidence turns to the misses: ev the steps of
// the nodes holding each evidence turn, texts the nodes' payloads, ranked
// and bm the two methods' picks, meanTokens the conversation's mean node
// cost, reach whether a hydrated node brought evidence turn i
// (recallWith).
func (ms *LoCoMoMisses) study(s *contextfold.Store, question string, cat int, ev [][]int, texts []string, ranked, bm []int, meanTokens float64, reach func(i, step int) bool) error {
	ex, err := match.ExplainRanked(s, question)
	if err != nil {
		return err
	}
	class := map[int]string{}
	for _, p := range ex.Result.Dropped {
		class[p.StepID] = MissBudget
	}
	for _, p := range ex.CutOff {
		if class[p.StepID] == "" {
			class[p.StepID] = MissCutOff
		}
	}
	for _, p := range ex.Superseded {
		if class[p.StepID] == "" {
			class[p.StepID] = MissSuperseded
		}
	}
	rank := map[string]int{}
	for i, c := range missClasses {
		rank[c] = i
	}
	qt := contentTerms(question)
	in := func(picks []int, steps []int, ok func(st int) bool) bool {
		for _, p := range picks {
			for _, st := range steps {
				if p == st && (ok == nil || ok(st)) {
					return true
				}
			}
		}
		return false
	}
	for i, steps := range ev {
		reached := func(st int) bool { return reach(i, st) }
		ms.Evidence[cat]++
		ms.Evidence[0]++
		share := 0.0
		for _, st := range steps {
			held := 0
			for t := range contentTerms(unlabelled(texts[st])) {
				if qt[t] {
					held++
				}
			}
			share = math.Max(share, float64(held)/float64(max(len(qt), 1)))
		}
		b := overlapBin(share)
		ms.ByOverlap[b][0]++
		if in(ranked, steps, reached) {
			ms.ByOverlap[b][1]++
		}
		if in(bm, steps, nil) {
			ms.ByOverlap[b][2]++
		}
		if in(ranked, steps, reached) {
			continue
		}
		best, bestStep := MissNoWord, -1
		if share > 0 {
			best = MissOutranked
		}
		if in(ranked, steps, nil) {
			best = MissFocused
		}
		for _, st := range steps {
			if c := class[st]; c != "" && rank[c] < rank[best] {
				best, bestStep = c, st
			}
		}
		for _, c := range []int{cat, 0} {
			if ms.Missed[c] == nil {
				ms.Missed[c] = map[string]int{}
			}
			ms.Missed[c][best]++
		}
		if best == MissBudget {
			ms.BudgetOwn += float64(contextfold.TokenEstimate(texts[bestStep]))
			ms.BudgetBudget += ex.Result.BudgetTokens
			long := false
			for _, p := range ex.Result.Selected {
				ms.BudgetAhead += p.TokenCost
				long = long || p.TokenCost > 2*meanTokens
			}
			if long {
				ms.LongAhead++
			}
		}
	}
	return nil
}

// Format renders the study as Markdown.
func (ms *LoCoMoMisses) Format() string {
	var b strings.Builder
	b.WriteString("\nRanked misses: evidence turns not hydrated, by category and class\n\n| category | evidence turns | missed |")
	for _, c := range missClasses {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(missClasses)) + "\n")
	var cats []int
	for c := range ms.Evidence {
		if c != 0 {
			cats = append(cats, c)
		}
	}
	sort.Ints(cats)
	for _, c := range append(cats, 0) {
		name := strconv.Itoa(c) + " " + categoryName(c)
		if c == 0 {
			name = "**all**"
		}
		missed := 0
		for _, n := range ms.Missed[c] {
			missed += n
		}
		fmt.Fprintf(&b, "| %s | %d | %d |", name, ms.Evidence[c], missed)
		for _, cl := range missClasses {
			fmt.Fprintf(&b, " %d (%.0f %%) |", ms.Missed[c][cl], 100*float64(ms.Missed[c][cl])/float64(max(missed, 1)))
		}
		b.WriteString("\n")
	}
	if n := float64(ms.Missed[0][MissBudget]); n > 0 {
		fmt.Fprintf(&b, "\nOver budget: the evidence node %.0f tokens on average, %.0f tokens selected ahead of it, budget %.0f; %d of %.0f behind a selected node over twice the mean node\n",
			ms.BudgetOwn/n, ms.BudgetAhead/n, ms.BudgetBudget/n, ms.LongAhead, n)
	}
	b.WriteString("\nEvidence-turn recall by the share of the question's content words the evidence turn holds\n\n| share | evidence turns | ranked | BM25+stem in budget |\n|---|---|---|---|\n")
	for i, c := range ms.ByOverlap {
		name := "0"
		if i > 0 {
			name = fmt.Sprintf("(%.2f, %.2f]", overlapBins[i-1], overlapBins[i])
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f %% | %.1f %% |\n", name, c[0], 100*float64(c[1])/float64(max(c[0], 1)), 100*float64(c[2])/float64(max(c[0], 1)))
	}
	return b.String()
}
