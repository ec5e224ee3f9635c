// Package matcheval holds the evaluations of the MMU's matching modes
// (BENCHMARKS.md, "Matching"): LoCoMo evidence-turn recall at a hydration
// budget, and probes of real agent sessions. cmd/cfeval runs them; the
// tests of this package run short versions.
package matcheval

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// LoCoMo is the subset of the LoCoMo schema the evaluation reads: a list of
// samples, each a conversation of sessions of dialog turns and its QA.
type LoCoMo []LoCoMoSample

// LoCoMoSample is one conversation and its questions.
type LoCoMoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []LoCoMoQA                 `json:"qa"`
}

// LoCoMoQA is one question with its evidence turns (dia_ids).
type LoCoMoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

// DialogTurn is one turn of a session.
type DialogTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
	// DateTime is the date and time of the turn's session (the
	// conversation's session_N_date_time), "" when the file has none.
	DateTime string `json:"-"`
}

// LoadLoCoMo reads a LoCoMo JSON file, gzipped when its name ends in .gz.
func LoadLoCoMo(path string) (LoCoMo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = gz
	}
	var d LoCoMo
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: not a LoCoMo file: %w", path, err)
	}
	return d, nil
}

// Turns returns the sample's dialog turns in session order (session_1,
// session_2, …), each with its session's date_time.
func (s *LoCoMoSample) Turns() []DialogTurn {
	var sessions []int
	for k := range s.Conversation {
		if n, ok := strings.CutPrefix(k, "session_"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				sessions = append(sessions, i)
			}
		}
	}
	sort.Ints(sessions)
	var out []DialogTurn
	for _, i := range sessions {
		var turns []DialogTurn
		if json.Unmarshal(s.Conversation["session_"+strconv.Itoa(i)], &turns) == nil {
			var date string
			_ = json.Unmarshal(s.Conversation["session_"+strconv.Itoa(i)+"_date_time"], &date)
			for k := range turns {
				turns[k].DateTime = strings.TrimSpace(date)
			}
			out = append(out, turns...)
		}
	}
	return out
}

// Method names of the LoCoMo report.
const (
	MethodExact  = "exact scan"
	MethodRanked = "ranked scan"
	MethodBM25   = "BM25 top-5"
	// MethodBM25Stem is BM25 with the ranked matcher's stop words and
	// Snowball stemming (ranked.Analyze's word terms), top 5: the standard
	// lexical baseline a scorer must beat.
	MethodBM25Stem = "BM25+stem top-5"
	// MethodBM25StemBudget is BM25+stem's ranking admitted against the
	// ranked scan's per-turn budget as the ranked scan admits its picks
	// (the first always, a later one when it fits what remains): the
	// baseline at the same cost, where BM25 top-5 may spend more tokens
	// than the budget when the best-matching turns are long.
	MethodBM25StemBudget = "BM25+stem in budget"
)

// methods are the LoCoMo report's columns, in order.
var methods = []string{MethodExact, MethodRanked, MethodBM25, MethodBM25Stem, MethodBM25StemBudget}

// Score accumulates evidence recall over questions.
type Score struct {
	Questions int
	Recall    float64 // sum of per-question recall (hits / evidence turns)
	Tokens    float64 // sum of hydrated tokens
}

// Mean returns the mean recall in percent (0 for a nil or empty score).
func (s *Score) Mean() float64 {
	if s == nil || s.Questions == 0 {
		return 0
	}
	return 100 * s.Recall / float64(s.Questions)
}

// LoCoMoReport is the outcome: per method, overall and per category, and
// the same for each half of the conversations (held-out split).
type LoCoMoReport struct {
	Conversations, Turns int
	BudgetTurns          float64
	Undated              bool // turns folded without their session date
	Overall              map[string]*Score
	ByCategory           map[int]map[string]*Score
	// ByHalf splits the questions by their conversation's index in the
	// file: HalfEven (0, 2, 4, …) and HalfOdd (1, 3, …); per half, category
	// 0 is the half's overall score. A change to the scorer is tuned on one
	// half and must help the other as well (a held-out check against
	// fitting one file).
	ByHalf map[string]map[int]map[string]*Score
	// Misses is the study of the ranked scan's misses (nil unless
	// LoCoMoOptions.Misses).
	Misses *LoCoMoMisses
	// Evidence is the ranked scan's outcome on every evidence turn of
	// every question, in the order asked (conversation, question, evidence
	// id): the pairs of Paired, which compares two settings of the scan
	// turn by turn.
	Evidence []EvidenceOutcome
}

// Halves of the held-out split (LoCoMoReport.ByHalf).
const (
	HalfEven = "even"
	HalfOdd  = "odd"
)

// RunLoCoMo folds each conversation turn by turn (one dialog turn = one
// step: payload TurnPayload, "[session date] Speaker: text" plus the
// shared image's caption; summary its first 100 code points) into a new store under tmp, sets the
// per-turn budget to budgetTurns × the conversation's mean turn cost, asks
// every question, and scores evidence-turn recall of the exact scan, the
// ranked scan and a plain BM25 top-5 over the same turns. limit > 0 keeps
// the first limit conversations.
func RunLoCoMo(data LoCoMo, tmp string, budgetTurns float64, limit int) (*LoCoMoReport, error) {
	return RunLoCoMoWith(data, tmp, LoCoMoOptions{BudgetTurns: budgetTurns, Limit: limit})
}

// LoCoMoOptions are RunLoCoMoWith's settings.
type LoCoMoOptions struct {
	// BudgetTurns is the hydration budget per question, in the
	// conversation's average turn cost (the store's
	// max_rehydration_tokens_per_turn is set to it; BM25 takes the top 5).
	BudgetTurns float64
	// Limit > 0 keeps the first Limit conversations.
	Limit int
	// Undated folds each turn as "Speaker: text" without its session date
	// (UndatedPayload): what a proxy sees of a chat, which carries no dates.
	Undated bool
	// Uneven folds the conversation as unevenNodes does instead of one node
	// per turn: turns split into one message per sentence, runs of turns
	// merged into one long message, lower-cased and unpunctuated text — the
	// uneven lengths and casual writing of real chat, as a check that a
	// scoring rule does not only fit LoCoMo's even, well-written turns.
	Uneven bool
	// Misses studies the ranked scan's misses (LoCoMoReport.Misses): why
	// each evidence turn it did not hydrate was left out, and recall by
	// how many of the question's words the evidence holds. It scans each
	// question once more (match.ExplainRanked); the scores are unchanged.
	Misses bool
	// Reword asks each question worded away from its evidence (Reword):
	// a stand-in for paraphrase, which LoCoMo's questions, written from
	// their evidence turns, do little of.
	Reword bool
	// Noisy folds each conversation perturbed toward real human chat in
	// the ways noisyTurns names (user handles for speaker labels, filler
	// one-liners, typos, chat spelling); NoisyParts keeps only those parts
	// (nil: NoisyAll). It composes with Uneven.
	Noisy      bool
	NoisyParts []string
}

// RunLoCoMoWith is RunLoCoMo with options (undated payloads).
func RunLoCoMoWith(data LoCoMo, tmp string, o LoCoMoOptions) (*LoCoMoReport, error) {
	budgetTurns, limit := o.BudgetTurns, o.Limit
	rep := &LoCoMoReport{BudgetTurns: budgetTurns, Undated: o.Undated, Overall: map[string]*Score{}, ByCategory: map[int]map[string]*Score{},
		ByHalf: map[string]map[int]map[string]*Score{HalfEven: {}, HalfOdd: {}}}
	for _, m := range methods {
		rep.Overall[m] = &Score{}
	}
	if o.Misses {
		rep.Misses = newLoCoMoMisses()
	}
	// scores returns the accumulators a question of category cat in
	// conversation ci adds to for method m.
	scores := func(ci, cat int, m string) []*Score {
		half := HalfEven
		if ci%2 == 1 {
			half = HalfOdd
		}
		out := []*Score{rep.Overall[m]}
		for k, byCat := range []map[int]map[string]*Score{rep.ByCategory, rep.ByHalf[half]} {
			for _, c := range []int{cat, 0} {
				if c == 0 && k == 0 { // rep.Overall is the whole file's category 0
					continue
				}
				if byCat[c] == nil {
					byCat[c] = map[string]*Score{}
				}
				if byCat[c][m] == nil {
					byCat[c][m] = &Score{}
				}
				out = append(out, byCat[c][m])
			}
		}
		return out
	}
	for ci, sample := range data {
		if limit > 0 && ci >= limit {
			break
		}
		turns := sample.Turns()
		if o.Noisy {
			var other []DialogTurn
			if len(data) > 1 {
				other = data[(ci+1)%len(data)].Turns()
			}
			turns = noisyTurns(turns, other, uint64(ci), o.NoisyParts)
		}
		dir := filepath.Join(tmp, fmt.Sprintf("locomo-%d", ci), ".contextfold")
		s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
		if err != nil {
			return nil, err
		}
		step := map[string][]int{}
		line := map[string][]string{} // per dia_id, its text in each node of step
		var folds []contextfold.Turn
		var texts []string
		total := 0
		nodes := plainNodes(turns, o.Undated)
		if o.Uneven {
			nodes = unevenNodes(turns, o.Undated, uint64(ci))
		}
		for i, nd := range nodes {
			for k, id := range nd.diaIDs {
				step[normDiaID(id)] = append(step[normDiaID(id)], i)
				line[normDiaID(id)] = append(line[normDiaID(id)], nd.lines[k])
			}
			folds = append(folds, contextfold.Turn{StepID: i, Summary: clip(nd.payload, 100), RawContent: nd.payload})
			texts = append(texts, nd.payload)
			total += contextfold.TokenEstimate(nd.payload)
		}
		if len(folds) == 0 {
			continue
		}
		budget := math.Floor(budgetTurns * float64(total) / float64(len(folds)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, contextfold.PolicyFile), []byte(fmt.Sprintf(`{"max_rehydration_tokens_per_turn": %v}`, budget)), 0o644); err != nil {
			return nil, err
		}
		if _, err := s.FoldBatch(folds); err != nil {
			return nil, err
		}
		bm := newBM25(texts, bm25Tokens)
		bms := newBM25(texts, bm25StemTokens)
		rep.Conversations++
		rep.Turns += len(folds)
		asked := map[string]int{} // per key, how often it was asked before: duplicate questions stay apart
		for _, qa := range sample.QA {
			question := qa.Question
			// ev: per evidence turn, the steps of the nodes holding it (one,
			// or its pieces when the turn was split).
			var ev [][]int
			var evLines [][]string
			var evKeys []string
			evSeen := map[string]bool{}
			for _, e := range qa.Evidence {
				for _, id := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || unicode.IsSpace(r) }) {
					if st, ok := step[normDiaID(id)]; ok && !evSeen[normDiaID(id)] {
						evSeen[normDiaID(id)] = true
						ev = append(ev, st)
						evLines = append(evLines, line[normDiaID(id)])
						evKeys = append(evKeys, evidenceKey(ci, normDiaID(id), question))
					}
				}
			}
			if len(ev) == 0 {
				continue
			}
			if o.Reword {
				var said []string
				for _, steps := range ev {
					for _, st := range steps {
						said = append(said, texts[st])
					}
				}
				qa.Question = Reword(qa.Question, said)
			}
			got := map[string][]int{}
			tok := map[string]float64{}
			for _, m := range []match.Mode{match.Exact, match.Ranked} {
				res, err := match.Scan(s, qa.Question, m)
				if err != nil {
					return nil, err
				}
				name := MethodExact
				if m == match.Ranked {
					name = MethodRanked
				}
				for _, p := range res.Selected {
					got[name] = append(got[name], p.StepID)
				}
				tok[name] = res.UsedTokens
			}
			for _, d := range bm.top(qa.Question, 5) {
				got[MethodBM25] = append(got[MethodBM25], d)
				tok[MethodBM25] += float64(contextfold.TokenEstimate(texts[d]))
			}
			for _, d := range bms.top(qa.Question, 5) {
				got[MethodBM25Stem] = append(got[MethodBM25Stem], d)
				tok[MethodBM25Stem] += float64(contextfold.TokenEstimate(texts[d]))
			}
			left := budget
			for _, d := range bms.top(qa.Question, len(texts)) {
				cost := float64(contextfold.TokenEstimate(texts[d]))
				if len(got[MethodBM25StemBudget]) > 0 && cost > left {
					continue
				}
				got[MethodBM25StemBudget] = append(got[MethodBM25StemBudget], d)
				tok[MethodBM25StemBudget] += cost
				left -= cost
			}
			if os.Getenv("CFEVAL_DEBUG_CONVERSATION") == strconv.Itoa(ci) && recall(ev, got[MethodRanked]) < recall(ev, got[MethodBM25StemBudget]) {
				fmt.Printf("Q[%d] %s\n  evidence %v ranked %v bm25 %v\n", qa.Category, qa.Question, ev, got[MethodRanked], got[MethodBM25StemBudget])
				for _, e := range ev {
					for _, st := range e {
						fmt.Printf("  ev %d: %s\n", st, texts[st])
					}
				}
				if len(got[MethodRanked]) > 0 {
					fmt.Printf("  r1 %d: %s\n", got[MethodRanked][0], texts[got[MethodRanked][0]])
				}
			}
			reach := reacher(s, qa.Question, ev, evLines)
			if rep.Misses != nil {
				if err := rep.Misses.study(s, qa.Question, qa.Category, ev, texts, got[MethodRanked], got[MethodBM25StemBudget], float64(total)/float64(len(folds)), reach); err != nil {
					return nil, err
				}
			}
			for i, hit := range hitsWith(ev, got[MethodRanked], reach) {
				k := evKeys[i]
				rep.Evidence = append(rep.Evidence, EvidenceOutcome{Key: k + "#" + strconv.Itoa(asked[k]), Hit: hit})
				asked[k]++
			}
			for _, name := range methods {
				r := 0.0 // no pick at all: recall 0
				if picks, ok := got[name]; ok {
					if name == MethodRanked {
						r = recallWith(ev, picks, reach)
					} else {
						r = recall(ev, picks)
					}
				}
				for _, sc := range scores(ci, qa.Category, name) {
					sc.Questions++
					sc.Recall += r
					sc.Tokens += tok[name]
				}
			}
		}
		if err := os.RemoveAll(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// UndatedPayload is TurnPayload without the session date: "Speaker:
// text", plus the shared image's caption.
func UndatedPayload(t DialogTurn) string {
	t.DateTime = ""
	return TurnPayload(t)
}

// TurnPayload is the folded text of one dialog turn: "[date] Speaker:
// text", plus " [shares a photo: caption]" when the turn shares an image.
// The date is the session's date (sessionDate: "1:56 pm on 8 May, 2023" →
// "8 May 2023"), left out when the file has none.
//
// Why the date is in the payload: a chat client shows each session's date,
// so the turn a user saw carried it; a question that dates the event it
// asks about ("What setback did Melanie face in October 2023?", 13 % of
// LoCoMo's questions name a month or a year) can only be matched through
// it, and the hydrated turn is what answers a when-question ("yesterday"
// means something only next to the date). Exact scan, ranked scan and BM25
// read the same payload, so the comparison stays fair.
func TurnPayload(t DialogTurn) string {
	payload := t.Speaker + ": " + t.Text
	if dt := sessionDate(t.DateTime); dt != "" {
		payload = "[" + dt + "] " + payload
	}
	if t.BlipCaption != "" {
		payload += " [shares a photo: " + t.BlipCaption + "]"
	}
	return payload
}

// dateLayouts are the session date_time forms sessionDate reads: LoCoMo's
// own ("1:56 pm on 8 May, 2023") and the ISO forms other files of the
// schema may use.
var dateLayouts = []string{"3:04 pm on 2 January, 2006", "3:04 PM on 2 January, 2006", "3:04 pm on 2 Jan, 2006",
	"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02",
	"2 January, 2006", "2 January 2006", "January 2, 2006"}

// sessionDate renders a session's date_time as the day it names ("8 May
// 2023"), without the time of day: a clock time ("1:56") or an ISO date
// ("2023-05-08") is a compound, a specific term, to the ranked analyser,
// so every turn of a session would share one and intent ownership would
// take the session's turns for updates of one fact (with the time of day
// in the payload LoCoMo's ranked recall fell to 56 %). A form it does not
// know is kept as written after " on " if it has one, else whole.
func sessionDate(dt string) string {
	dt = strings.TrimSpace(dt)
	if dt == "" {
		return ""
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, dt); err == nil {
			return t.Format("2 January 2006")
		}
	}
	if _, date, ok := strings.Cut(dt, " on "); ok && strings.TrimSpace(date) != "" {
		return strings.TrimSpace(date)
	}
	return dt
}

func normDiaID(id string) string {
	return strings.ToUpper(strings.TrimSpace(strings.ReplaceAll(id, " ", "")))
}

// reacher returns, for one question, whether the ranked hydration of node
// step holds evidence turn i's text there (evLines[i][k]: its text in its
// k-th node ev[i][k]): a node hydrated whole holds it, a node focused on
// its other lines (rule "focus long picks") does not. Each node is
// hydrated once.
func reacher(s *contextfold.Store, question string, ev [][]int, evLines [][]string) func(i, step int) bool {
	content := map[int]string{}
	return func(i, step int) bool {
		c, ok := content[step]
		if !ok {
			if h, err := match.Hydrate(s, step, question, match.Ranked); err == nil {
				c = h.Content
			}
			content[step] = c
		}
		for k, st := range ev[i] {
			if st == step {
				return strings.Contains(c, evLines[i][k])
			}
		}
		return false
	}
}

// recall is the share of the evidence turns found: an evidence turn
// (the steps of the nodes holding it) is found when a pick is one of its
// nodes. Two evidence turns merged into one node are both found by it.
func recall(evidence [][]int, picks []int) float64 {
	return recallWith(evidence, picks, nil)
}

// recallWith is recall where a picked node finds evidence turn i only when
// reach(i, step) (nil: always).
func recallWith(evidence [][]int, picks []int, reach func(i, step int) bool) float64 {
	hit := 0
	for _, h := range hitsWith(evidence, picks, reach) {
		if h {
			hit++
		}
	}
	return float64(hit) / float64(max(len(evidence), 1))
}

// hitsWith is, per evidence turn, whether recallWith counts it found.
func hitsWith(evidence [][]int, picks []int, reach func(i, step int) bool) []bool {
	picked := map[int]bool{}
	for _, p := range picks {
		picked[p] = true
	}
	out := make([]bool, len(evidence))
	for i, steps := range evidence {
		for _, s := range steps {
			if picked[s] && (reach == nil || reach(i, s)) {
				out[i] = true
				break
			}
		}
	}
	return out
}

// Format renders the report as a Markdown table.
func (r *LoCoMoReport) Format() string {
	var b strings.Builder
	dated := "dated"
	if r.Undated {
		dated = "undated"
	}
	fmt.Fprintf(&b, "LoCoMo: %d conversations, %d turns (%s), budget %.0f average turns per question\n\n", r.Conversations, r.Turns, dated, r.BudgetTurns)
	b.WriteString("| category | questions |")
	for _, m := range methods {
		fmt.Fprintf(&b, " %s |", m)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(methods)) + "\n")
	var cats []int
	for c := range r.ByCategory {
		cats = append(cats, c)
	}
	sort.Ints(cats)
	row := func(name string, sc map[string]*Score) {
		fmt.Fprintf(&b, "| %s | %d |", name, sc[MethodRanked].Questions)
		for _, m := range methods {
			fmt.Fprintf(&b, " %.1f %% (%.0f tok) |", sc[m].Mean(), sc[m].Tokens/float64(max(1, sc[m].Questions)))
		}
		b.WriteString("\n")
	}
	for _, c := range cats {
		row(strconv.Itoa(c)+" "+categoryName(c), r.ByCategory[c])
	}
	row("**overall**", r.Overall)
	// The held-out split: the same figures per half of the conversations.
	fmt.Fprintf(&b, "\nHeld-out split (conversations by index: even | odd)\n\n| category | questions even / odd |")
	for _, h := range []string{HalfEven, HalfOdd} {
		for _, m := range methods {
			fmt.Fprintf(&b, " %s %s |", m, h)
		}
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", 2*len(methods)) + "\n")
	for _, c := range append(cats, 0) {
		name := strconv.Itoa(c) + " " + categoryName(c)
		if c == 0 {
			name = "**overall**"
		}
		even, odd := r.ByHalf[HalfEven][c], r.ByHalf[HalfOdd][c]
		fmt.Fprintf(&b, "| %s | %d / %d |", name, even[MethodRanked].count(), odd[MethodRanked].count())
		for _, sc := range []map[string]*Score{even, odd} {
			for _, m := range methods {
				fmt.Fprintf(&b, " %.1f %% |", sc[m].Mean())
			}
		}
		b.WriteString("\n")
	}
	if r.Misses != nil {
		b.WriteString(r.Misses.Format())
	}
	return b.String()
}

func (s *Score) count() int {
	if s == nil {
		return 0
	}
	return s.Questions
}

func categoryName(c int) string {
	switch c {
	case 1:
		return "multi-hop"
	case 2:
		return "temporal"
	case 3:
		return "open-domain"
	case 4:
		return "single-hop"
	case 5:
		return "adversarial"
	}
	return ""
}

// bm25 is the plain baseline: lower-cased word tokens, a short English stop
// list, no stemming, k1 = 1.2, b = 0.75.
type bm25 struct {
	docs []map[string]int
	lens []float64
	df   map[string]int
	avg  float64
	// tokens analyses a text (bm25Tokens or bm25StemTokens).
	tokens func(string) []string
}

var bm25Stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an the and or but of to in on at for with by from is are was were be been am do does did i you he she it we they me my your his her its our their what when where who whom which why how this that these those as if so not no") {
		bm25Stop[w] = true
	}
}

func bm25Tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !bm25Stop[w] {
			out = append(out, w)
		}
	}
	return out
}

// bm25StemTokens are the primary word terms of ranked.Analyze (its stop
// words removed, words Snowball-stemmed, numbers and compounds as written).
func bm25StemTokens(s string) []string {
	var out []string
	for _, t := range ranked.Analyze(s) {
		if t.Kind == ranked.KindWord || t.Kind == ranked.KindCompound || t.Kind == ranked.KindNumber || t.Kind == ranked.KindCJK {
			out = append(out, t.Text)
		}
	}
	return out
}

func newBM25(texts []string, tokens func(string) []string) *bm25 {
	b := &bm25{df: map[string]int{}, tokens: tokens}
	total := 0.0
	for _, t := range texts {
		tf := map[string]int{}
		toks := tokens(t)
		for _, w := range toks {
			if tf[w] == 0 {
				b.df[w]++
			}
			tf[w]++
		}
		b.docs = append(b.docs, tf)
		b.lens = append(b.lens, float64(len(toks)))
		total += float64(len(toks))
	}
	b.avg = total / float64(max(1, len(texts)))
	return b
}

func (b *bm25) top(q string, k int) []int {
	n := float64(len(b.docs))
	scores := make([]float64, len(b.docs))
	seen := map[string]bool{}
	for _, w := range b.tokens(q) {
		if seen[w] || b.df[w] == 0 {
			continue
		}
		seen[w] = true
		df := float64(b.df[w])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for i, d := range b.docs {
			if tf := float64(d[w]); tf > 0 {
				scores[i] += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*b.lens[i]/b.avg))
			}
		}
	}
	idx := make([]int, 0, len(b.docs))
	for i, s := range scores {
		if s > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return scores[idx[i]] > scores[idx[j]] })
	if len(idx) > k {
		idx = idx[:k]
	}
	return idx
}

// Combine returns data as one conversation: every sample's sessions in
// order, renumbered, with each turn's dia_id and each evidence id prefixed
// by its sample's position ("C3/D1:3"), so that every question is asked of
// one store holding all the conversations (5,882 turns for LoCoMo's ten:
// a store past the ranked scorer's large-store rules, with other
// conversations' turns as distractors). The held-out halves of a combined
// report are not meaningful (it is one conversation).
func Combine(data LoCoMo) (LoCoMo, error) {
	out := LoCoMoSample{SampleID: "combined", Conversation: map[string]json.RawMessage{}}
	session := 0
	for ci := range data {
		prefix := "C" + strconv.Itoa(ci) + "/"
		var keys []int
		for k := range data[ci].Conversation {
			if n, ok := strings.CutPrefix(k, "session_"); ok {
				if i, err := strconv.Atoi(n); err == nil {
					keys = append(keys, i)
				}
			}
		}
		sort.Ints(keys)
		for _, i := range keys {
			var turns []map[string]any
			if json.Unmarshal(data[ci].Conversation["session_"+strconv.Itoa(i)], &turns) != nil {
				continue
			}
			for _, t := range turns {
				if id, ok := t["dia_id"].(string); ok {
					t["dia_id"] = prefix + id
				}
			}
			session++
			b, err := json.Marshal(turns)
			if err != nil {
				return nil, err
			}
			out.Conversation["session_"+strconv.Itoa(session)] = b
			if dt, ok := data[ci].Conversation["session_"+strconv.Itoa(i)+"_date_time"]; ok {
				out.Conversation["session_"+strconv.Itoa(session)+"_date_time"] = dt
			}
		}
		for _, qa := range data[ci].QA {
			var ev []string
			for _, e := range qa.Evidence {
				for _, id := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || unicode.IsSpace(r) }) {
					ev = append(ev, prefix+id)
				}
			}
			qa.Evidence = ev
			out.QA = append(out.QA, qa)
		}
	}
	return LoCoMo{out}, nil
}
