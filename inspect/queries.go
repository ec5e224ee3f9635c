package inspect

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// maxQueryBytes bounds a simulator prompt or a recall query.
const maxQueryBytes = 64 << 10

// checkQuery says what is wrong with a prompt or query, "" when nothing.
func checkQuery(q string) string {
	switch {
	case !utf8.ValidString(q):
		return "The text is not valid UTF-8; paste it as text."
	case len(q) > maxQueryBytes:
		return fmt.Sprintf("The text is %d bytes; the inspector takes up to %d.", len(q), maxQueryBytes)
	}
	return ""
}

// termView is one query term of a scan and what became of it.
type termView struct {
	Term string `json:"term"`
	Fate string `json:"fate"` // "hydrated", "dropped" (owned by a pick that did not fit), "unmatched"
	Step int    `json:"step_id,omitempty"`
}

// pickView is one admitted RGSC pick, with what hydrate would do with it.
type pickView struct {
	Order         int      `json:"order"`
	StepID        int      `json:"step_id"`
	MatchedTerms  []string `json:"matched_terms"`
	TokenCost     float64  `json:"token_cost"`
	Summary       string   `json:"summary"`
	BudgetBefore  float64  `json:"budget_left_before"`
	HydrateOK     bool     `json:"hydrate_ok"`
	HydrateError  string   `json:"hydrate_error,omitempty"`
	Truncated     bool     `json:"truncated"`
	ContentTokens int      `json:"content_tokens"`
	Preview       string   `json:"preview"`
}

// dropView is a pick that did not fit the per-turn budget, and why.
type dropView struct {
	Order        int      `json:"order"`
	StepID       int      `json:"step_id"`
	MatchedTerms []string `json:"matched_terms"`
	TokenCost    float64  `json:"token_cost"`
	Summary      string   `json:"summary"`
	BudgetBefore float64  `json:"budget_left_before"`
	Reason       string   `json:"reason"`
}

// scanData is the MMU simulator page.
type scanData struct {
	Prompt       string     `json:"prompt"`
	Showcase     string     `json:"-"`
	Message      string     `json:"message,omitempty"`
	Ran          bool       `json:"ran"`
	QueryTerms   []termView `json:"query_terms"`
	Picks        []pickView `json:"selected"`
	Dropped      []dropView `json:"dropped"`
	Unmatched    []string   `json:"unmatched_terms"`
	BudgetTokens float64    `json:"budget_tokens"`
	UsedTokens   float64    `json:"used_tokens"`
	CapTokens    float64    `json:"max_rehydration_tokens_per_call"`
	Bar          *svgChart  `json:"-"`
	// Ranked is the same prompt under the ranked matcher (package
	// match/ranked), shown beside the exact scan.
	Ranked *rankedView `json:"ranked,omitempty"`
}

// rankedView is a ranked scan explained: each pick with its score and why,
// and what the cut-off and intent ownership left out.
type rankedView struct {
	Terms      []string     `json:"query_terms"`
	Picks      []rankedPick `json:"selected"`
	Dropped    []rankedPick `json:"dropped"`
	CutOff     []rankedPick `json:"cut_off"`
	Superseded []rankedPick `json:"superseded"`
	UsedTokens float64      `json:"used_tokens"`
}

type rankedPick struct {
	StepID    int      `json:"step_id"`
	Score     float64  `json:"score"`
	Why       []string `json:"why"`
	TokenCost float64  `json:"token_cost"`
	Summary   string   `json:"summary"`
	Windows   int      `json:"windows,omitempty"` // focused hydration windows
	Preview   string   `json:"preview,omitempty"`
}

// rankedScan explains the ranked scan of prompt.
func (in *Inspector) rankedScan(prompt string) *rankedView {
	ex, err := match.ExplainRanked(in.store, prompt)
	if err != nil {
		return nil
	}
	conv := func(ps []contextfold.ScanPick, hydrate bool) []rankedPick {
		out := []rankedPick{}
		for _, p := range ps {
			rp := rankedPick{StepID: p.StepID, Score: p.Score, Why: nonNil(p.Why), TokenCost: p.TokenCost, Summary: p.Summary}
			if hydrate {
				if h, err := match.Hydrate(in.store, p.StepID, prompt, match.Ranked); err == nil {
					rp.Windows, rp.Preview = len(h.Windows), preview(h.Content)
				}
			}
			out = append(out, rp)
		}
		return out
	}
	return &rankedView{Terms: nonNil(ex.Result.QueryTerms), Picks: conv(ex.Result.Selected, true), Dropped: conv(ex.Result.Dropped, false),
		CutOff: conv(ex.CutOff, false), Superseded: conv(ex.Superseded, false), UsedTokens: ex.Result.UsedTokens}
}

const previewRunes = 240

// scan runs the store's scan on a prompt and explains it: the pick order of
// the residual greedy set cover is recovered from the result (picks come in
// non-increasing order of covered terms, ties to the larger step id), so the
// budget left before each pick is exact.
func (in *Inspector) scan(prompt string) *scanData {
	d := &scanData{Prompt: prompt, Showcase: contextfold.DemoPrompt, QueryTerms: []termView{}, Picks: []pickView{}, Dropped: []dropView{}, Unmatched: []string{}}
	if pol, err := in.store.Policy(); err == nil {
		d.CapTokens, _ = pol.MaxTokensPerCall()
		d.BudgetTokens, _ = pol.MaxTokensPerTurn()
	}
	if strings.TrimSpace(prompt) == "" {
		return d
	}
	if msg := checkQuery(prompt); msg != "" {
		d.Message = msg
		return d
	}
	res, err := in.store.Scan(prompt)
	if err != nil {
		d.Message = "The scan failed: " + err.Error()
		return d
	}
	d.Ran, d.BudgetTokens, d.UsedTokens = true, res.BudgetTokens, res.UsedTokens
	type ordered struct {
		pick     contextfold.ScanPick
		admitted bool
	}
	var all []ordered
	for _, p := range res.Selected {
		all = append(all, ordered{p, true})
	}
	for _, p := range res.Dropped {
		all = append(all, ordered{p, false})
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i].pick, all[j].pick
		if len(a.MatchedTerms) != len(b.MatchedTerms) {
			return len(a.MatchedTerms) > len(b.MatchedTerms)
		}
		return a.StepID > b.StepID
	})
	owner := map[string]termView{}
	left := res.BudgetTokens
	var admittedSteps []string
	for i, o := range all {
		p := o.pick
		for _, t := range p.MatchedTerms {
			fate := "hydrated"
			if !o.admitted {
				fate = "dropped"
			}
			owner[t] = termView{Term: t, Fate: fate, Step: p.StepID}
		}
		if o.admitted {
			pv := pickView{Order: i + 1, StepID: p.StepID, MatchedTerms: nonNil(p.MatchedTerms), TokenCost: p.TokenCost, Summary: p.Summary, BudgetBefore: left}
			if h, err := in.store.Hydrate(p.StepID); err == nil {
				pv.HydrateOK, pv.Truncated, pv.ContentTokens = true, h.Truncated, h.TokenEstimate
				pv.Preview = preview(h.Content)
			} else {
				pv.HydrateError = err.Error()
			}
			d.Picks = append(d.Picks, pv)
			left -= p.TokenCost
			admittedSteps = append(admittedSteps, fmt.Sprint(p.StepID))
			continue
		}
		reason := fmt.Sprintf("needs %s tokens, but only %s of the %s-token turn budget were left", num(p.TokenCost), num(left), num(res.BudgetTokens))
		if len(admittedSteps) > 0 {
			reason += " after step " + strings.Join(admittedSteps, ", ")
		}
		reason += ". Its terms stay owned by it: no older node stands in for it (intent ownership)."
		d.Dropped = append(d.Dropped, dropView{Order: i + 1, StepID: p.StepID, MatchedTerms: nonNil(p.MatchedTerms), TokenCost: p.TokenCost, Summary: p.Summary, BudgetBefore: left, Reason: reason})
	}
	for _, t := range res.QueryTerms {
		if tv, ok := owner[t]; ok {
			d.QueryTerms = append(d.QueryTerms, tv)
		} else {
			d.QueryTerms = append(d.QueryTerms, termView{Term: t, Fate: "unmatched"})
			d.Unmatched = append(d.Unmatched, t)
		}
	}
	d.Bar = budgetBar(d.Picks, res.BudgetTokens, res.UsedTokens)
	d.Ranked = in.rankedScan(prompt)
	return d
}

func preview(s string) string {
	if utf8.RuneCountInString(s) <= previewRunes {
		return s
	}
	r := []rune(s)
	return string(r[:previewRunes]) + "…"
}

// recallView is one recall hit with its tier.
type recallView struct {
	StepID   int    `json:"step_id"`
	Tier     string `json:"tier"` // "primary" (maximum coverage) or "related"
	Label    string `json:"status"`
	Coverage int    `json:"coverage"`
	Score    int    `json:"score"`
	Summary  string `json:"summary"`
	Evicted  bool   `json:"evicted"`
}

// recallData is the recall page.
type recallData struct {
	Query   string       `json:"query"`
	Example string       `json:"-"`
	Message string       `json:"message,omitempty"`
	Ran     bool         `json:"ran"`
	Terms   []string     `json:"query_terms"`
	Hits    []recallView `json:"hits"`
}

func (in *Inspector) recall(q string) *recallData {
	d := &recallData{Query: q, Example: contextfold.DemoRecallQuery, Terms: []string{}, Hits: []recallView{}}
	if strings.TrimSpace(q) == "" {
		return d
	}
	if msg := checkQuery(q); msg != "" {
		d.Message = msg
		return d
	}
	d.Terms = nonNil(contextfold.RecallTerms(q))
	hits, err := in.store.Recall(q)
	if err != nil {
		d.Message = "Recall failed: " + err.Error()
		return d
	}
	d.Ran = true
	for _, h := range hits {
		tier := "primary"
		if h.Status == contextfold.StatusRelated {
			tier = "related"
		}
		d.Hits = append(d.Hits, recallView{StepID: h.StepID, Tier: tier, Label: h.Status, Coverage: h.Coverage, Score: h.Score, Summary: h.Summary, Evicted: h.Evicted})
	}
	return d
}

// evictionView is one event of the eviction log.
type evictionView struct {
	N         int    `json:"n"`
	StepID    int    `json:"step_id"`
	EvictedAt string `json:"evicted_at"`
	Summary   string `json:"summary"`
	Known     bool   `json:"indexed"`
}

// evictionsData is the eviction log page.
type evictionsData struct {
	Events   []evictionView `json:"events"`
	Days     []evictionDay  `json:"-"`
	Warnings []string       `json:"warnings"`
	Chart    *svgChart      `json:"-"`
}

// evictionDay groups the events of one day for the timeline.
type evictionDay struct {
	Day    string
	Events []evictionView
}

func (in *Inspector) evictions() *evictionsData {
	sn := in.snapshot(false)
	d := &evictionsData{Events: []evictionView{}, Warnings: nonNil(sn.warnings)}
	for i, ev := range sn.log {
		v := evictionView{N: i + 1, StepID: ev.StepID, EvictedAt: ev.EvictedAt}
		if r, ok := sn.byStep[ev.StepID]; ok && r.Indexed {
			v.Summary, v.Known = r.Summary, true
		}
		d.Events = append(d.Events, v)
		day := ev.EvictedAt
		if len(day) >= 10 {
			day = day[:10]
		}
		if len(d.Days) == 0 || d.Days[len(d.Days)-1].Day != day {
			d.Days = append(d.Days, evictionDay{Day: day})
		}
		d.Days[len(d.Days)-1].Events = append(d.Days[len(d.Days)-1].Events, v)
	}
	d.Chart = hydrationsChart(sn.rows)
	return d
}

// validateData is the validate page.
type validateData struct {
	OK       bool          `json:"ok"`
	Passed   int           `json:"passed"`
	Findings []findingView `json:"findings"`
	Dir      string        `json:"dir"`
	StoreArg string        `json:"-"` // --dir DIR or --store URL (no password)
	// CheckedAt is when the report was made: pages reuse it while no store
	// file changed (names, sizes, times); ?fresh=1 validates again.
	CheckedAt string `json:"checked_at"`
}

func (in *Inspector) validate(fresh bool) (*validateData, error) {
	rep, at, err := in.reportAt(fresh)
	if err != nil {
		return nil, err
	}
	d := &validateData{OK: rep.OK(), Passed: rep.Passed, Findings: []findingView{}, Dir: in.store.Dir(), StoreArg: in.storeArg(), CheckedAt: at}
	for _, f := range rep.Findings {
		d.Findings = append(d.Findings, viewFinding(f))
	}
	return d, nil
}
