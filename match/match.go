// Package match dispatches the MMU's matching between the reference's exact
// mode and the ranked mode (package match/ranked), which spec §4 allows "on
// top of the index, without changing the cold storage or hash verification
// contracts": whatever the mode, the cold nodes, the index entries and the
// three hashes are the same, and hydration verifies the whole artifact
// first.
//
//   - Exact is the reference (spec §5): identifiers, files and errors of the
//     prompt, residual greedy set cover, prefix truncation. It is what the
//     conformance vectors check, and the mode of a store whose settings say
//     {"matching": "exact"}.
//   - Ranked (Default: the proxy's, MCP server's, hooks' and command line's)
//     hydrates first the nodes holding a token the prompt quotes (rule
//     "exact needles", needle.go), then weighs terms by rarity (BM25-like),
//     stems, splits identifiers, uses neighbouring turns, cuts off by score,
//     keeps intent ownership (CONF-13), puts the output before its echo,
//     and hydrates large nodes by windows around the matched lines (focused
//     hydration). docs/matching.md describes it.
//
// Every function is read-only towards the store (CONF-08): the ranked index
// lives in memory (one per store directory and process).
package match

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match/ranked"
	"github.com/contextfold/contextfold/tokens"
)

// Mode is a matching mode.
type Mode string

const (
	// Exact is the reference's matching (spec §5).
	Exact Mode = "exact"
	// Ranked is the ranked matcher (package match/ranked).
	Ranked Mode = "ranked"
)

// Modes lists the modes, in the order shown to users.
var Modes = []Mode{Exact, Ranked}

// SettingKey is the store_settings.json key that selects the mode of a
// store ({"matching": "ranked"}).
const SettingKey = "matching"

// ErrUnknownMode is wrapped by ParseMode's error.
var ErrUnknownMode = errors.New("unknown matching mode")

// ParseMode parses a mode name (case-insensitive, surrounding spaces
// ignored). An unknown name is an error wrapping ErrUnknownMode that lists
// the modes.
func ParseMode(s string) (Mode, error) {
	switch Mode(strings.ToLower(strings.TrimSpace(s))) {
	case Exact:
		return Exact, nil
	case Ranked:
		return Ranked, nil
	}
	return "", fmt.Errorf("%w %q: use one of %s", ErrUnknownMode, s, modeList())
}

func modeList() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// StoreMode returns the mode the store's settings ask for: Ranked when
// store_settings.json holds {"matching": "ranked"}, else Exact (also when
// the value is not a known mode name; StoreModeOf reports that as an
// error, and the command line uses it).
func StoreMode(s *contextfold.Store) Mode {
	m, err := StoreModeOf(s)
	if err != nil {
		return Exact
	}
	return m
}

// Default is the mode of a store whose settings name none, wherever the
// MMU matches (proxy, MCP server, Claude Code hooks, and scan and recall on
// the command line): one matching everywhere. A reference store says
// {"matching": "exact"}; a command says --match exact.
const Default = Ranked

// ServingModeOf is the mode the MMU uses for store s: the store's
// "matching" setting when it has one (StoreModeOf, with its error for a
// value that is not a mode), else Default.
func ServingModeOf(s *contextfold.Store) (Mode, error) {
	if _, ok := s.Setting(SettingKey); !ok {
		return Default, nil
	}
	return StoreModeOf(s)
}

// StoreModeOf returns the mode the store's settings ask for: the
// "matching" value of store_settings.json, Exact when the key is absent. A
// value that is not a mode name (a string other than exact or ranked, or
// not a string) is a *contextfold.StoreFileError naming the file, wrapping
// ErrUnknownMode, whose message names the value and the modes.
func StoreModeOf(s *contextfold.Store) (Mode, error) {
	v, ok := s.Setting(SettingKey)
	if !ok {
		return Exact, nil
	}
	name, isString := v.(string)
	if isString {
		if m, err := ParseMode(name); err == nil {
			return m, nil
		}
	}
	val, _ := json.Marshal(v)
	return "", &contextfold.StoreFileError{File: filepath.Join(s.Dir(), contextfold.SettingsFile),
		Err:    fmt.Errorf("%w %s in %q", ErrUnknownMode, val, SettingKey),
		Remedy: fmt.Sprintf("set %q to one of %s, or remove the key (exact)", SettingKey, modeList())}
}

// params are the ranked scorer's constants used by this package.
var params = ranked.DefaultParams()

// SetRankedParams replaces the ranked scorer's constants, for evaluations
// (cmd/cfeval -params); not safe while scans run. Production code keeps
// ranked.DefaultParams.
func SetRankedParams(p ranked.Params) {
	params = p
	focusMemo.clear()
}

// Scan is the MMU's scan in the given mode. Exact: exactly s.Scan(prompt).
// Ranked: first the nodes holding a token the prompt quotes (rule "exact
// needles", needleNodes: at most maxNeedleNodes per token, fullest first;
// each admitted as below), then the ranked picks (rule "the output, not the
// echo" applied, fullestFirst, rule "an output answers for its
// exchange", outputFirst, and rule "a call brings its output",
// withOutputs: a picked call's own output directly before it, and a
// needle node's call's output the ranked stage picked before the call,
// needleCallOutputs), best first, admitted against the same per-turn
// budget as exact (the first pick always, a later one only if its cost,
// min(token_estimate, per-call cap, per-turn budget), fits what remains —
// for a pick over ranked.Params.FocusOver × the store's mean node, the
// tokens of the windows HydrateWithin will place on its matched lines,
// rule "focus long picks";
// the others are Dropped; so is a long pick (over 4 × the store's mean node)
// costing more than a quarter of the budget that holds no specific prompt
// term, is neither the best pick nor the pick holding the largest share of
// the prompt's information while holding a prompt word rare in the store
// (in at most 2 nodes), and holds a share of the prompt's information below
// its share of the budget, rule "cost"). Each ranked pick carries its Score
// and Why.
func Scan(s *contextfold.Store, prompt string, mode Mode) (*contextfold.ScanResult, error) {
	return ScanBefore(s, prompt, mode, -1)
}

// FoldBatch folds turns into store s (Store.FoldBatchEach; the results
// are not kept) for a scan of mode: in Ranked mode each new
// node's text is handed to the store's ranked index (ranked.FoldedNode:
// used only for the index entry of the same artifact_sha256), which is
// refreshed at once, so that the new nodes are analysed without reading
// their files back and the texts are not held past this call (a refresh
// error is left to the next scan, which reports it). The error is the
// fold's. Safe for concurrent use as the Store is.
func FoldBatch(s *contextfold.Store, mode Mode, turns []contextfold.Turn) error {
	if mode != Ranked {
		return s.FoldBatchEach(turns, func(int, *contextfold.FoldResult) {})
	}
	err := s.FoldBatchEach(turns, func(_ int, r *contextfold.FoldResult) {
		if !r.AlreadyIndexed {
			ranked.FoldedNode(s, r.Node)
		}
	})
	_, _ = ranked.For(s) // also after an error: nodes written before it are indexed
	return err
}

// FoldBatchDeferred is FoldBatch leaving the batch's durable part running
// (contextfold.Store.FoldBatchEachDeferred): the caller waits for the
// returned commit (nil: nothing left running) before it relies on the
// batch being stored.
func FoldBatchDeferred(s *contextfold.Store, mode Mode, turns []contextfold.Turn) (*contextfold.FoldCommit, error) {
	return foldBatchLeft(s, mode, turns, s.FoldBatchEachDeferred)
}

// FoldBatchHeld is FoldBatchDeferred with the batch's durable part held
// until the returned commit's Start (contextfold.Store.FoldBatchEachHeld):
// the caller starts it once the rest of its path is done, and waits for it
// before it relies on the batch being stored (Wait starts it too).
func FoldBatchHeld(s *contextfold.Store, mode Mode, turns []contextfold.Turn) (*contextfold.FoldCommit, error) {
	return foldBatchLeft(s, mode, turns, s.FoldBatchEachHeld)
}

// FoldBatchHeldIndexLater is FoldBatchHeld leaving the ranked index
// (Ranked mode) as it was: the new nodes' texts are handed to it
// (ranked.FoldedNodeLater) but neither analysed nor indexed until its next
// refresh, which any scan of the store makes first (ranked.For), or
// RefreshIndex. A caller whose path scans nothing after the fold (a proxy's
// fold event on a request that does not end with the human prompt) calls
// it and refreshes the index once the rest of its path is done (while the
// upstream works), so that the analyses of the new nodes (a few
// milliseconds of CPU for a fold event of 50 nodes) are not on that path.
// The index's answers are the same either way: a scan always refreshes
// before it reads. Safe for concurrent use as the Store is.
func FoldBatchHeldIndexLater(s *contextfold.Store, mode Mode, turns []contextfold.Turn) (*contextfold.FoldCommit, error) {
	if mode != Ranked {
		return FoldBatchHeld(s, mode, turns)
	}
	return s.FoldBatchEachHeld(turns, func(_ int, r *contextfold.FoldResult) {
		if !r.AlreadyIndexed {
			ranked.FoldedNodeLater(s, r.Node)
		}
	})
}

// RefreshIndex brings s's ranked index (Ranked mode; nothing in Exact) up
// to date with the store on the caller's goroutine: the nodes a fold
// handed over (FoldBatchHeldIndexLater) are analysed, on every CPU, and
// indexed. An error is left to the next scan, which reports it. Safe for
// concurrent use.
func RefreshIndex(s *contextfold.Store, mode Mode) {
	if mode == Ranked {
		_, _ = ranked.For(s)
	}
}

// foldBatchLeft is FoldBatch through fold, a fold that leaves the batch's
// durable part to its returned commit.
func foldBatchLeft(s *contextfold.Store, mode Mode, turns []contextfold.Turn, fold func([]contextfold.Turn, func(int, *contextfold.FoldResult)) (*contextfold.FoldCommit, error)) (*contextfold.FoldCommit, error) {
	each := func(int, *contextfold.FoldResult) {}
	if mode == Ranked {
		each = func(_ int, r *contextfold.FoldResult) {
			if !r.AlreadyIndexed {
				ranked.FoldedNode(s, r.Node)
			}
		}
	}
	c, err := fold(turns, each)
	if mode == Ranked {
		_, _ = ranked.For(s) // also after an error: nodes written before it are indexed
	}
	return c, err
}

// DeferSnapshotSaves makes s's ranked index (Ranked mode; nothing in
// Exact) leave the snapshot a fold's refresh finds due to
// CompactSnapshot (ranked.Index.DeferSaves): a proxy calls it before a
// fold event, so that the event's path writes no snapshot of the ranked
// index, and CompactSnapshot after the response. Safe for concurrent use.
func DeferSnapshotSaves(s *contextfold.Store, mode Mode) {
	if mode != Ranked {
		return
	}
	if ix, err := ranked.For(s); err == nil {
		ix.DeferSaves()
	}
}

// CompactSnapshot writes the snapshot of s's ranked index that a refresh
// left due (DeferSnapshotSaves; ranked.Index.Compact). Runs on the
// caller's goroutine. Safe for concurrent use.
func CompactSnapshot(s *contextfold.Store, mode Mode) {
	if mode != Ranked {
		return
	}
	if ix, err := ranked.For(s); err == nil && ix.CompactDue() {
		ix.Compact()
	}
}

// Prepare derives, ahead of their fold, what folding turns into s takes
// from their content alone (contextfold.Store.Prepare) and, in Ranked
// mode, the ranked index's analysis of the text each cold node will hold
// (ranked.PrepareAnalysis). A later FoldBatch of the very same turns
// writes the same bytes and indexes the same terms, faster. Runs on the
// caller's goroutine (a caller prepares off its request's path). Safe for
// concurrent use.
func Prepare(s *contextfold.Store, mode Mode, turns []contextfold.Turn) {
	scrubbed := s.Prepare(turns)
	if mode != Ranked {
		return
	}
	for _, t := range scrubbed {
		if t.StepID >= 0 {
			ranked.PrepareAnalysis(s, t.StepID, t.Summary+"\n"+t.Payload())
		}
	}
}

// ScanBefore is Scan for a prompt written before step before (every step
// when before < 0): in Ranked mode only the nodes of steps below before are
// candidates (ranked.Index.ScanBefore, rule "the prompt's past"; a harness
// whose step ids are message positions passes the prompt's own position,
// so that a human turn's prompt never hydrates the turn's own calls and
// outputs). Exact mode is the reference's scan whatever before is.
func ScanBefore(s *contextfold.Store, prompt string, mode Mode, before int) (*contextfold.ScanResult, error) {
	if mode != Ranked {
		return s.Scan(prompt)
	}
	capTokens, budget, err := limits(s)
	if err != nil {
		return nil, err
	}
	ix, err := ranked.For(s)
	if err != nil {
		return nil, err
	}
	// The needle stage (rule "exact needles", below) reads and checks its
	// nodes beside the ranked scan: it needs the scan's superseded steps
	// only to order its nodes (needleStage.nodes).
	needles := startNeedles(s, ix, prompt, before, needlesBeside)
	r := ix.ScanPicksBefore(prompt, params, before) // the picks and the superseded steps only
	res := &contextfold.ScanResult{QueryTerms: r.Terms, Selected: []contextfold.ScanPick{}, Dropped: []contextfold.ScanPick{}, BudgetTokens: budget}
	remaining := budget
	admitted := map[int]bool{}
	// admit hydrates pick when it fits (taking its cost from what
	// remains of the per-turn budget), or records it as dropped.
	admit := func(pick contextfold.ScanPick, fits bool) {
		if !fits {
			res.Dropped = append(res.Dropped, pick)
			return
		}
		admitted[pick.StepID] = true
		res.Selected = append(res.Selected, pick)
		remaining -= pick.TokenCost
		res.UsedTokens += pick.TokenCost
	}
	// The largest share of the prompt's information a pick holds itself.
	topShare := 0.0
	for _, p := range r.Picks {
		if !p.IsCompanion {
			topShare = math.Max(topShare, p.Share)
		}
	}
	// Rule "the named thing first": the picks that hold a specific term
	// of the prompt held by at most 2 nodes of the store (Pick.Named: the
	// identifier, path, version or number the human named, where it is)
	// are admitted before the other picks, each group in the scan's
	// order, so that
	// the node holding "HandleFunc" is not left over the per-turn budget
	// behind nodes matching "tool", "output" and "line". Companions follow
	// their picks as before.
	picks := make([]ranked.Pick, 0, len(r.Picks))
	for _, named := range [2]bool{true, false} {
		for _, p := range r.Picks {
			if p.Named == named && !p.IsCompanion {
				picks = append(picks, p)
			}
		}
	}
	picks = fullestFirst(picks)
	if params.OutputFirst {
		picks = outputFirst(picks, ix.NextStep)
	}
	if params.FirstRunFirst && params.FirstAsks && ranked.AsksFirst(prompt) {
		picks = firstRunFirst(picks)
	}
	if params.FirstOfKind && params.FirstAsks && ranked.AsksFirst(prompt) {
		picks = firstOfKind(picks, prompt)
	}
	if params.CallOutput {
		picks = withOutputs(picks, r.Outputs, r.CallOutputs)
	}
	for _, p := range r.Picks {
		if p.IsCompanion {
			picks = append(picks, p)
		}
	}
	// Rule "exact needles": the nodes holding a token the prompt quotes
	// (a path, a URL, a version, an identifier, a quoted string) held by at
	// most maxNeedleNodes nodes come first, fullest evidence first, ahead
	// of any broader match; each is admitted as a first pick is (the
	// first always, the others if they fit what remains).
	superseded := map[int]bool{}
	for _, p := range r.Superseded {
		superseded[p.Step] = true
	}
	focus := &longFocus{s: s, ix: ix, prompt: prompt, capTokens: capTokens, budget: budget}
	nodes := needles.nodes(superseded)
	var brought map[int]ranked.Pick // rule "a call brings its output": by the needle call's step
	if params.CallOutput && len(nodes) > 0 {
		brought = needleCallOutputs(ix, nodes, r.Picks)
	}
	for _, n := range nodes {
		// A long needle node is hydrated as its windows (rule "focus long
		// picks", HydrateWithin): it costs what they cost.
		cost := focus.pickCost(n.step, n.summary, n.tokens)
		pick := contextfold.ScanPick{StepID: n.step, MatchedTerms: append([]string{}, n.held...), TokenCost: cost, Summary: n.summary, Why: n.why()}
		// A node a newer one updates (intent ownership) comes after it
		// and never stands in for it: it is hydrated only beside it.
		updaterIn := n.updatedBy == nil
		for _, u := range n.updatedBy {
			updaterIn = updaterIn || admitted[u]
		}
		if o, ok := brought[n.step]; ok && updaterIn && !admitted[o.Step] {
			// Rule "a call brings its output": the needle's call is
			// preceded by what it printed, when the ranked stage picked
			// that too (freed by rule "an output is updated by its
			// re-run" or not), admitted as a needle node is.
			ocost := focus.pickCost(o.Step, o.Summary, o.Tokens)
			why := append([]string{fmt.Sprintf(`brought by its call at step %d, an exact needle's node (rule "a call brings its output")`, n.step)}, o.Why...)
			opick := contextfold.ScanPick{StepID: o.Step, MatchedTerms: nonNil(o.Terms), TokenCost: ocost, Summary: o.Summary, Score: o.Score, Why: why}
			admit(opick, len(res.Selected) == 0 || ocost <= remaining)
		}
		admit(pick, updaterIn && (len(res.Selected) == 0 || cost <= remaining))
	}
	needled := len(res.Selected) > 0
	// The needle stage's picks by step, as places in res.Selected or
	// res.Dropped (the lists grow below: a pointer into them would be
	// left behind by the first append that moves them).
	type place struct {
		dropped bool
		i       int
	}
	needlePlace := map[int]place{}
	for i := range res.Selected {
		needlePlace[res.Selected[i].StepID] = place{false, i}
	}
	for i := range res.Dropped {
		needlePlace[res.Dropped[i].StepID] = place{true, i}
	}
	needlePick := func(step int) *contextfold.ScanPick {
		pl, ok := needlePlace[step]
		switch {
		case !ok:
			return nil
		case pl.dropped:
			return &res.Dropped[pl.i]
		}
		return &res.Selected[pl.i]
	}
	placed := make(map[int]bool, len(brought))
	for _, o := range brought {
		placed[o.Step] = true // hydrated or dropped before its needle call
	}
	// Rule "an older run beside its re-run" (ranked.Params.RerunBeside):
	// after a re-run is admitted, the best-ranked older run of its command
	// that it superseded and that is not placed yet is admitted right
	// after it if it fits what remains (at most one a re-run; never the
	// first pick, never ahead of its re-run). After an exact needle only
	// an older run holding the needle (a needle node the stage dropped)
	// is, as a freed pick is gated.
	besideRun := map[int]bool{}
	revived := false
	beside := func(step int) {
		for _, o := range r.Older {
			if besideRun[o.Step] || admitted[o.Step] || !slices.Contains(o.UpdatedBy, step) {
				continue
			}
			besideRun[o.Step] = true
			why := fmt.Sprintf(`beside its re-run at step %d (rule "an older run beside its re-run")`, step)
			if needled {
				np := needlePick(o.Step)
				if np == nil || remaining < np.TokenCost {
					return
				}
				pick := *np
				pick.Why = append([]string{why}, pick.Why...)
				admit(pick, true)
				revived = true
				return
			}
			cost := focus.pickCost(o.Step, o.Summary, o.Tokens)
			pick := contextfold.ScanPick{StepID: o.Step, MatchedTerms: nonNil(o.Terms), TokenCost: cost, Summary: o.Summary, Score: o.Score, Why: append([]string{why}, o.Why...)}
			if dropLong(o, cost, budget, false, topShare) {
				res.Dropped = append(res.Dropped, pick)
				return
			}
			admit(pick, cost <= remaining)
			return
		}
	}
	for _, p := range picks {
		if placed[p.Step] {
			continue
		}
		if p.IsOutput && needled {
			// Rule "a call brings its output" (ranked.Params.CallOutput):
			// with an exact needle hydrated, the needle's nodes are the
			// evidence (and a needle's call brought its own output
			// above); a ranked call's output not picked on its own
			// merits is left out, as a freed pick is.
			continue
		}
		if p.Freed && needled {
			// Rule "an output is updated by its re-run" (ranked.Params.Rerun)
			// freed it from intent ownership; with an exact needle
			// hydrated, the needle's nodes are the evidence, and the
			// broader match keeps the newest node of an entity, as before.
			continue
		}
		if np := needlePick(p.Step); np != nil {
			// The ranked scan picked a needle node too: its terms, score and
			// reasons join the needle pick's.
			terms := append(np.MatchedTerms, p.Terms...)
			slices.Sort(terms)
			np.MatchedTerms, np.Score, np.Why = slices.Compact(terms), p.Score, append(np.Why, p.Why...)
			continue
		}
		if admitted[p.Step] {
			continue
		}
		cost := focus.pickCost(p.Step, p.Summary, p.Tokens) // rule "focus long picks": what its windows cost
		pick := contextfold.ScanPick{StepID: p.Step, MatchedTerms: nonNil(p.Terms), TokenCost: cost, Summary: p.Summary, Score: p.Score, Why: p.Why}
		// Rule "cost": a long pick (Pick.Long: over 4 × the store's mean
		// node) that would take more than a quarter of the per-turn
		// budget must hold a specific term of the prompt, or a
		// share of the prompt's information at least its share of the
		// budget, or be the best pick and hold a word of the prompt that
		// is rare in the store (Pick.Rare: in at most 2 nodes): a
		// 2,410-token file read matched on "code" alone does not spend the
		// turn's budget behind the deadlock it was asked about, the build
		// log that alone holds "linker" does. So does the long pick
		// holding the rare words and the largest share of the prompt's
		// information behind a short pick that scored higher on fewer
		// words (the user's own earlier question, an answer next to it):
		// the exact node is not dropped behind broader ones.
		best := (len(res.Selected) == 0 || needled && len(res.Selected) == 1) && len(res.Dropped) == 0
		if dropLong(p, cost, budget, best, topShare) {
			res.Dropped = append(res.Dropped, pick)
			continue
		}
		// A companion (the neighbour of a pick) goes only with its pick.
		admit(pick, (len(res.Selected) == 0 && !p.IsCompanion) || (cost <= remaining && (!p.IsCompanion || admitted[p.CompanionOf])))
		if admitted[p.Step] && len(r.Older) > 0 {
			beside(p.Step)
		}
	}
	if !needled && len(res.Selected) > 0 {
		// Rule "a budget left is filled from below the cut-off"
		// (ranked.Params.Fill): what remains of the per-turn budget after
		// every pick takes the candidates the cut-off kept out, best
		// first, each if it fits (never the first pick, never after an
		// exact needle: the needle's nodes are the evidence).
		for _, p := range r.Below {
			if admitted[p.Step] || placed[p.Step] || needlePick(p.Step) != nil {
				continue
			}
			cost := focus.pickCost(p.Step, p.Summary, p.Tokens)
			why := append([]string{`below the cut-off, in the budget left (rule "a budget left is filled from below the cut-off")`}, p.Why...)
			pick := contextfold.ScanPick{StepID: p.Step, MatchedTerms: nonNil(p.Terms), TokenCost: cost, Summary: p.Summary, Score: p.Score, Why: why}
			if dropLong(p, cost, budget, false, topShare) || cost > remaining {
				continue
			}
			admit(pick, true)
		}
	}
	if revived {
		// A needle node the needle stage dropped and rule "an older run
		// beside its re-run" then admitted is listed once, as hydrated.
		res.Dropped = slices.DeleteFunc(res.Dropped, func(p contextfold.ScanPick) bool { return admitted[p.StepID] })
	}
	return res, nil
}

// dropLong is rule "cost" for a ranked pick p costing cost of the per-turn
// budget: a long pick (Pick.Long) that would take more than a quarter of
// the budget is dropped unless it holds a specific term of the prompt, or
// a share of the prompt's information at least its share of the budget,
// or a word rare in the store while being the best pick (best) or holding
// the largest share any pick holds (topShare).
func dropLong(p ranked.Pick, cost, budget float64, best bool, topShare float64) bool {
	return p.Long && cost > budget/4 && !p.Special && !(p.Rare && (best || p.Share >= topShare)) && p.Share < cost/budget
}

// Explain is a ranked scan with what it left out, for the inspector: the
// scan result plus the candidates below the cut-off and those superseded by
// a newer node (intent ownership).
type Explain struct {
	Result     *contextfold.ScanResult
	CutOff     []contextfold.ScanPick
	Superseded []contextfold.ScanPick
}

// ExplainRanked runs a ranked scan and reports what the cut-off and intent
// ownership left out (Superseded: the ranked scan's superseded candidates,
// then the picks it freed under rule "an output is updated by its re-run"
// that an exact needle kept out).
func ExplainRanked(s *contextfold.Store, prompt string) (*Explain, error) {
	res, err := Scan(s, prompt, Ranked)
	if err != nil {
		return nil, err
	}
	ix, err := ranked.For(s)
	if err != nil {
		return nil, err
	}
	r := ix.Scan(prompt, params)
	// A step the scan hydrates or drops (a neighbour pick: scored below
	// the cut-off on its own, lifted by its neighbour) is listed there
	// only, not also below the cut-off.
	listed := map[int]bool{}
	for _, p := range res.Selected {
		listed[p.StepID] = true
	}
	for _, p := range res.Dropped {
		listed[p.StepID] = true
	}
	conv := func(ps []ranked.Pick) []contextfold.ScanPick {
		out := []contextfold.ScanPick{}
		for _, p := range ps {
			if listed[p.Step] {
				continue
			}
			out = append(out, contextfold.ScanPick{StepID: p.Step, MatchedTerms: nonNil(p.Terms), TokenCost: float64(p.Tokens), Summary: p.Summary, Score: p.Score, Why: p.Why})
		}
		return out
	}
	// A pick rule "an output is updated by its re-run" freed and the scan
	// left out behind an exact needle (ranked.Pick.Freed) is superseded,
	// as intent ownership has it there.
	sup := append([]ranked.Pick{}, r.Superseded...)
	for _, p := range r.Picks {
		if p.Freed {
			sup = append(sup, p)
		}
	}
	return &Explain{Result: res, CutOff: conv(r.CutOff), Superseded: conv(sup)}, nil
}

// Recall is recall in the given mode. Exact: exactly s.Recall(query).
// Ranked: when the query quotes a needle (rule "exact needles"), the
// nodes holding it come first, in the scan's order (needlesFirst);
// otherwise the nodes the ranked scorer finds (before any cut-off by budget),
// labelled as CONF-04 does: the nodes holding the most distinct prompt
// terms form the primary tier, newest first, labelled
// latest_chronological, superseded…, historical; the others follow by
// score, labelled related. Score is the ranked score × 100, rounded.
func Recall(s *contextfold.Store, query string, mode Mode) ([]contextfold.RecallHit, error) {
	if mode != Ranked {
		return s.Recall(query)
	}
	ix, err := ranked.For(s)
	if err != nil {
		return nil, err
	}
	hits := ix.Recall(query, params)
	out := []contextfold.RecallHit{}
	if needles := needleNodes(s, ix, query, -1, nil); len(needles) > 0 {
		return needlesFirst(needles, hits), nil
	}
	if len(hits) == 0 {
		return out, nil
	}
	maxCov := 0
	for _, h := range hits {
		maxCov = max(maxCov, h.Coverage)
	}
	var primary, rest []contextfold.RecallHit
	for _, h := range hits {
		rh := contextfold.RecallHit{StepID: h.Step, Coverage: h.Coverage, Score: int(math.Round(h.Score * 100)), Summary: h.Summary, Evicted: h.Evicted}
		if h.Coverage == maxCov {
			primary = append(primary, rh)
		} else {
			rh.Status = contextfold.StatusRelated
			rest = append(rest, rh)
		}
	}
	sort.SliceStable(primary, func(i, j int) bool { return primary[i].StepID > primary[j].StepID })
	for i := range primary {
		switch {
		case i == 0:
			primary[i].Status = contextfold.StatusLatest
		case i == len(primary)-1:
			primary[i].Status = contextfold.StatusHistorical
		default:
			primary[i].Status = contextfold.StatusSuperseded
		}
	}
	return append(out, append(primary, rest...)...), nil
}

// needlesFirst is Recall's order when the query quotes a needle (rule
// "exact needles"): the nodes holding it literally come first, in the
// order the scan hydrates them (needleNodes: most needles, then fullest
// evidence first: the tool output before the command and the restatement),
// labelled by chronology among themselves as CONF-04 labels its primary
// tier (the newest latest_chronological, the oldest historical, the others
// superseded); the other ranked hits follow by score, labelled related.
// A needle node's Coverage is the primary prompt terms it holds (the
// ranked hit's) or, when the ranked scorer did not list it, the needles it
// holds; its Score is the ranked hit's, 0 when unlisted.
func needlesFirst(needles []*needleNode, hits []ranked.Hit) []contextfold.RecallHit {
	byStep := map[int]ranked.Hit{}
	for _, h := range hits {
		byStep[h.Step] = h
	}
	out := make([]contextfold.RecallHit, 0, len(needles)+len(hits))
	newest, oldest := needles[0].step, needles[0].step
	for _, n := range needles {
		newest, oldest = max(newest, n.step), min(oldest, n.step)
	}
	inTier := map[int]bool{}
	for _, n := range needles {
		rh := contextfold.RecallHit{StepID: n.step, Coverage: len(n.held), Summary: n.summary, Status: contextfold.StatusSuperseded}
		if h, ok := byStep[n.step]; ok {
			rh.Coverage, rh.Score, rh.Evicted = h.Coverage, int(math.Round(h.Score*100)), h.Evicted
		}
		switch n.step {
		case newest:
			rh.Status = contextfold.StatusLatest
		case oldest:
			rh.Status = contextfold.StatusHistorical
		}
		inTier[n.step] = true
		out = append(out, rh)
	}
	for _, h := range hits {
		if !inTier[h.Step] {
			out = append(out, contextfold.RecallHit{StepID: h.Step, Coverage: h.Coverage, Score: int(math.Round(h.Score * 100)), Summary: h.Summary, Evicted: h.Evicted, Status: contextfold.StatusRelated})
		}
	}
	return out
}

// Hydrate pages a cold node in. Exact: exactly s.Hydrate(step) (the
// reference's prefix truncation). Ranked: the same verified hydration (the
// whole artifact and payload are verified first, with the same errors);
// then, when the node exceeds the per-call cap and a line of it holds a
// term of prompt, Content holds windows of whole lines around the matched
// lines, each after a marker line naming its lines and character offsets
// (Windows lists them), within 4 × cap code points (the heuristic's
// characters per token; with an exact token counter, within cap tokens).
// Without a matched line, Content is the reference's truncation.
//
// It is HydrateWithin(s, step, prompt, mode, 0).
func Hydrate(s *contextfold.Store, step int, prompt string, mode Mode) (*contextfold.Hydration, error) {
	return HydrateWithin(s, step, prompt, mode, 0)
}

// HydrateWithin is Hydrate under the caller's own per-call cap: maxTokens
// (tokens of the store's token_counter), when it is positive and below the
// policy's max_rehydration_tokens_per_call, is the cap applied instead — a
// harness whose context budget leaves a node less room than the store's
// policy does, or a hook whose output is capped in characters. A node over
// the cap applied is focused on the prompt's matched lines (Ranked), or cut
// to its first 4 × cap code points when no line matches or in Exact mode
// (Truncated, TokenEstimate = the cap). In Ranked mode a node over
// ranked.Params.FocusOver × the store's mean node (and that many tokens
// below the cap applied) is focused within that many tokens when a line of
// it holds a prompt term, and hydrated as before when none does (rule
// "focus long picks"; Scan costs it the same windows). maxTokens ≤ 0
// applies the policy's cap only (Hydrate). The focusing a scan costed
// for the same node, prompt and limit is reused when the verified
// payload and the prompt's weights are those it was computed from
// (focusMemo). Errors are s.Hydrate's, and a *StoreFileError for a
// policy whose caps are not numbers. Read-only (CONF-08); safe for
// concurrent use as the store is.
func HydrateWithin(s *contextfold.Store, step int, prompt string, mode Mode, maxTokens int) (*contextfold.Hydration, error) {
	h, err := s.Hydrate(step)
	if err != nil {
		return h, err
	}
	if mode != Ranked && (maxTokens <= 0 || !h.Truncated && h.TokenEstimate <= maxTokens) {
		return h, nil
	}
	policyCap, _, err := limits(s)
	if err != nil {
		return nil, err
	}
	capTokens := policyCap
	if maxTokens > 0 && float64(maxTokens) < capTokens {
		capTokens = float64(maxTokens)
	}
	counter := s.TokenCounter()
	if mode == Ranked && (params.FocusOver > 0 || params.FocusAgentOver > 0) {
		// Rule "focus long picks": a node over FocusOver × the store's
		// mean node is its windows, as the scan costed it; with no line
		// holding a prompt term it goes on as any node does.
		ix, err := ranked.For(s)
		if err != nil {
			return nil, err
		}
		if lim, ok := focusLimit(ix, h.Summary, h.TokenEstimate, capTokens); ok {
			weights := ix.Weights(prompt, params)
			key := focusKey{ix: ix, step: step, prompt: prompt, lim: lim, counter: counter.Name()}
			f, ok := focusMemo.get(key, h, weights)
			if !ok {
				f.text, f.wins, f.n = focusWithin(h.RawContent, weights, ranked.Needles(prompt), lim, counter)
			}
			if f.wins != nil {
				setWindows(h, f.text, f.wins, f.n)
				return h, nil
			}
		}
	}
	if !h.Truncated && float64(h.TokenEstimate) <= capTokens {
		return h, nil // whole, within the cap applied
	}
	if mode == Ranked {
		ix, err := ranked.For(s)
		if err != nil {
			return nil, err
		}
		if text, wins, n := focusWithin(h.RawContent, ix.Weights(prompt, params), ranked.Needles(prompt), capTokens, counter); wins != nil {
			setWindows(h, text, wins, n)
			return h, nil
		}
	}
	if capTokens < policyCap || !h.Truncated {
		// The reference's prefix truncation, at the cap applied.
		h.Content, h.TokenEstimate, h.Truncated = prefixCodePoints(h.RawContent, int(math.Floor(capTokens*4))), int(capTokens), true
	}
	return h, nil
}

// focusWithin focuses content on the lines holding the prompt's terms
// (ranked.FocusNeedles) within capTokens of counter: the first windows
// of at most 4 × capTokens code points, then 3/4 of that, until they count
// at most capTokens (the heuristic counter: at once). nil windows: no
// line holds a term. The content's lines are analysed once
// (ranked.AnalyzeFocus) for every limit tried.
func focusWithin(content string, weights map[string]float64, needles []string, capTokens float64, counter tokens.Counter) (string, []ranked.Window, int) {
	limit := int(math.Floor(capTokens * 4))
	var fa *ranked.FocusAnalysis
	for limit > 0 {
		if fa == nil {
			fa = ranked.AnalyzeFocus(content, weights, needles)
		}
		text, wins := fa.Place(limit)
		if wins == nil {
			break
		}
		n := counter.Count(text)
		if counter.Name() == tokens.HeuristicName || n <= int(capTokens) {
			return text, wins, n
		}
		limit = limit * 3 / 4
	}
	return "", nil, 0
}

// setWindows makes h the focused hydration text of n tokens placed as wins.
func setWindows(h *contextfold.Hydration, text string, wins []ranked.Window, n int) {
	h.Content, h.TokenEstimate, h.Truncated = text, n, true
	h.Windows = make([]contextfold.Window, len(wins))
	for i, w := range wins {
		h.Windows[i] = contextfold.Window{Start: w.Start, End: w.End, FirstLine: w.FirstLine, LastLine: w.LastLine}
	}
}

// focusLimit is rule "focus long picks" (ranked.Params.FocusOver): a node
// of nodeTokens tokens over FocusOver × the store's mean node is focused
// within that many tokens, when that is below the cap applied (else the
// cap's own focusing holds); with FocusAgentOver set, a tool's output or
// an assistant's node (summary's RoleOf "tool" or "assistant") over
// FocusAgentOver × the mean within that many (rule "an agent's node is
// its matched lines"). ok false: the rule does not apply.
func focusLimit(ix *ranked.Index, summary string, nodeTokens int, capTokens float64) (float64, bool) {
	over := params.FocusOver
	if params.FocusAgentOver > 0 {
		if role := ranked.RoleOf(summary); role == "tool" || role == "assistant" {
			over = params.FocusAgentOver
		}
	}
	if over <= 0 {
		return 0, false
	}
	lim := over * ix.MeanTokens()
	return lim, float64(nodeTokens) > lim && lim < capTokens
}

// longFocus computes, for one scan, what rule "focus long picks" makes a
// long pick cost: its focused hydration's tokens (HydrateWithin applies
// the same rule to the same node, prompt and index).
type longFocus struct {
	s         *contextfold.Store
	ix        *ranked.Index
	prompt    string
	capTokens float64
	budget    float64            // the per-turn budget (tokens)
	weights   map[string]float64 // the prompt's, computed at the first long pick
	needles   []string
}

// pickCost is what node step (of nodeTokens tokens, summary its summary)
// costs the per-turn budget: min(token_estimate, per-call cap, per-turn
// budget), or its focused windows' tokens when fewer (cost).
func (f *longFocus) pickCost(step int, summary string, nodeTokens int) float64 {
	c := math.Min(float64(nodeTokens), math.Min(f.capTokens, f.budget))
	if n, ok := f.cost(step, summary, nodeTokens); ok {
		c = math.Min(c, float64(n))
	}
	return c
}

// cost returns the tokens node step (of nodeTokens tokens, summary its
// summary, for FocusAgentOver) costs focused; ok false when the rule does
// not apply to it, it is over the per-call cap (it costs the cap), its
// node cannot be read (the hydration will say why), or no line of it
// holds a prompt term. The node is read, not verified; its focusing is
// kept in focusMemo for the hydration.
func (f *longFocus) cost(step int, summary string, nodeTokens int) (int, bool) {
	lim, ok := focusLimit(f.ix, summary, nodeTokens, f.capTokens)
	if !ok {
		return 0, false
	}
	if float64(nodeTokens) > f.capTokens {
		// A node over the per-call cap costs the cap, as its hydration's
		// token estimate (the reference's truncation) has it.
		return 0, false
	}
	// Read, not verified: the scan only costs the node (as the needle
	// stage searches the nodes it reads); the hydration verifies it.
	n, err := f.s.ReadColdNode(step)
	if err != nil || n.TokenEstimate != nodeTokens {
		return 0, false
	}
	if f.weights == nil {
		f.weights, f.needles = f.ix.Weights(f.prompt, params), ranked.Needles(f.prompt)
	}
	counter := f.s.TokenCounter()
	var fc focused
	fc.text, fc.wins, fc.n = focusWithin(n.RawContent, f.weights, f.needles, lim, counter)
	focusMemo.put(focusKey{ix: f.ix, step: step, prompt: f.prompt, lim: lim, counter: counter.Name()}, n.RawContent, f.weights, fc)
	return fc.n, fc.wins != nil
}

// focused is one node's focused text for one prompt (focusWithin): its
// windows (nil: no line holds a prompt term) and its n tokens.
type focused struct {
	text string
	wins []ranked.Window
	n    int
}

// focusKey names a focusing: the store's index (its weights), the node,
// the prompt, the limit (tokens) and the token counter's name.
type focusKey struct {
	ix      *ranked.Index
	step    int
	prompt  string
	lim     float64
	counter string
}

// focusEntry is a focusing kept (focusMemo): what it was computed from
// beyond its key (the node's payload, the prompt's weights then) and its
// result.
type focusEntry struct {
	content string
	weights map[string]float64
	f       focused
}

// focusMemo keeps the focusings of the latest long picks the scans costed
// (longFocus.cost), so that HydrateWithin, hydrating a selected pick for
// the same prompt, places the windows the scan costed without analysing
// the node's lines again: a selected pick is read twice (the hydration
// verifies it) but focused once. An entry is used only when the verified
// payload and the prompt's weights (the index may have changed since) are
// those it was computed from, so a hit is exactly what focusWithin would
// return. Bounded (focusMemoMax entries and focusMemoBytes of payload, the
// oldest dropped first); safe for concurrent use.
var focusMemo = focusCache{m: map[focusKey]*focusEntry{}}

// focusMemoHits counts the hydrations focusMemo spared an analysis (for
// tests).
var focusMemoHits atomic.Int64

// focusMemoMax and focusMemoBytes bound focusMemo: a scan costs a few
// long picks, and the hydrations follow it.
const focusMemoMax, focusMemoBytes = 64, 8 << 20

// focusCache is focusMemo's type.
type focusCache struct {
	mu    sync.Mutex
	m     map[focusKey]*focusEntry
	order []focusKey // oldest first
	bytes int        // the payloads held
}

// put keeps f as the focusing of key for payload content under weights
// (not copied: a scan's weights are not modified). A payload over a
// quarter of focusMemoBytes is not kept.
func (c *focusCache) put(key focusKey, content string, weights map[string]float64, f focused) {
	if len(content) > focusMemoBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.bytes -= len(e.content)
	} else {
		c.order = append(c.order, key)
	}
	c.m[key] = &focusEntry{content: content, weights: weights, f: f}
	c.bytes += len(content)
	for len(c.order) > focusMemoMax || c.bytes > focusMemoBytes {
		c.bytes -= len(c.m[c.order[0]].content)
		delete(c.m, c.order[0])
		c.order = append(c.order[:0], c.order[1:]...)
	}
}

// get returns the focusing kept for key when it was computed from h's
// payload and equal weights.
func (c *focusCache) get(key focusKey, h *contextfold.Hydration, weights map[string]float64) (focused, bool) {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e == nil || e.content != h.RawContent || !maps.Equal(e.weights, weights) {
		return focused{}, false
	}
	focusMemoHits.Add(1)
	return e.f, true
}

// clear empties the cache (SetRankedParams: the weights and limits may
// change with the params).
func (c *focusCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.order, c.bytes = c.order[:0], 0
}

// prefixCodePoints returns the first n code points of s.
func prefixCodePoints(s string, n int) string {
	k := 0
	for i := range s {
		if k == n {
			return s[:i]
		}
		k++
	}
	return s
}

func limits(s *contextfold.Store) (capTokens, budget float64, err error) {
	policy, err := s.Policy()
	if err != nil {
		return 0, 0, err
	}
	if capTokens, err = policy.MaxTokensPerCall(); err != nil {
		return 0, 0, &contextfold.StoreFileError{File: filepath.Join(s.Dir(), contextfold.PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_call to a number"}
	}
	if budget, err = policy.MaxTokensPerTurn(); err != nil {
		return 0, 0, &contextfold.StoreFileError{File: filepath.Join(s.Dir(), contextfold.PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_turn to a number"}
	}
	return capTokens, budget, nil
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// echoSpan is how many steps apart a tool call, its output and the
// assistant's restatement of it lie (rule "the output, not the echo").
const echoSpan = 2

// fullestFirst is rule "the output, not the echo": when a pick has a later
// pick within echoSpan steps of it that matched every prompt term it
// matched and is longer (more tokens), the longer one goes first — the tool
// output holding the lines over the command that asked for them and the
// assistant's sentence restating them, which a length-normalised score
// puts first. One pass in order: each pick is preceded by the longest such
// pick, which keeps its own place otherwise. Deterministic; picks is not
// modified.
func fullestFirst(picks []ranked.Pick) []ranked.Pick {
	out := make([]ranked.Pick, 0, len(picks))
	moved := make([]bool, len(picks))
	for i, p := range picks {
		if moved[i] {
			continue
		}
		best := -1
		for j := i + 1; j < len(picks); j++ {
			q := picks[j]
			if moved[j] || q.Named != p.Named || q.Step-p.Step > echoSpan || p.Step-q.Step > echoSpan || q.Tokens < 2*p.Tokens || !holdsAll(q.Terms, p.Terms) {
				continue
			}
			if best < 0 || q.Tokens > picks[best].Tokens {
				best = j
			}
		}
		if best >= 0 {
			moved[best] = true
			out = append(out, picks[best])
		}
		moved[i] = true
		out = append(out, p)
	}
	return out
}

// holdsAll reports whether sorted terms a hold every term of sorted b.
func holdsAll(a, b []string) bool {
	i := 0
	for _, t := range b {
		for i < len(a) && a[i] < t {
			i++
		}
		if i == len(a) || a[i] != t {
			return false
		}
	}
	return true
}

// outputFirst is rule "an output answers for its exchange"
// (ranked.Params.OutputFirst), step 3 of the ranked scan beside
// fullestFirst, for the picks of an agent session: an assistant's pick
// (RoleOf "assistant": the call that ran a command, with the sentence the
// agent wrote around it, or a note restating what a command printed) is
// preceded by a later-ranked tool output that holds the evidence it
// stands for —
//   - its own output: the pick at the next step (nextStep of the
//     assistant's step: the next indexed one, which through the proxy's
//     Responses items lies two on, past the function_call item; nil: the
//     step after), a tool's output of the same command (when both summaries name one) that matched a prompt
//     term the call matched; the call's sentence holds the question's
//     words ("which version of urllib3 is installed in the environment?")
//     and a length-normalised score puts it over the lines the command
//     printed;
//   - else the first later-ranked tool output holding every prompt term
//     the assistant's pick matched (covers: a prefix form by a word it
//     opens), at any distance and of any length (a note forty steps on
//     restating an error).
//
// It only orders: every pick stays, each moved output directly before the
// assistant's pick, which keeps its place otherwise; tool outputs, user
// prompts and chat turns (no agent role) are never preceded. One pass in
// order, deterministic; picks is not modified.
func outputFirst(picks []ranked.Pick, nextStep func(step int) (int, bool)) []ranked.Pick {
	pos := make(map[int]int, len(picks))
	role := make([]string, len(picks))
	for i, p := range picks {
		pos[p.Step], role[i] = i, ranked.RoleOf(p.Summary)
	}
	out := make([]ranked.Pick, 0, len(picks))
	moved := make([]bool, len(picks))
	for i, p := range picks {
		if moved[i] {
			continue
		}
		if role[i] == "assistant" {
			best := -1
			next, ok := p.Step+1, true
			if nextStep != nil {
				next, ok = nextStep(p.Step)
			}
			if j, in := pos[next]; ok && in && j > i && !moved[j] && role[j] == "tool" && sameCommand(picks[j], p) && sharesTerm(picks[j].Terms, p.Terms) {
				best = j
			}
			for j := i + 1; best < 0 && j < len(picks); j++ {
				if !moved[j] && role[j] == "tool" && covers(picks[j].Terms, p.Terms) {
					best = j
				}
			}
			if best >= 0 {
				moved[best] = true
				out = append(out, picks[best])
			}
		}
		moved[i] = true
		out = append(out, p)
	}
	return out
}

// firstRunFirst is rule "the first run first" (ranked.Params.FirstRunFirst),
// step 3 of the ranked scan after outputFirst, for a prompt that asks for
// the first or original one (ranked.AsksFirst, the words rule "a first
// asks for the oldest" reads): the picks that are runs — tool outputs of
// a command (ranked.CommandOf, not "") of which the picks hold two
// outputs or more — take the places the runs hold in picks, oldest step
// first. "What did the first text build render?" is answered by the
// first run ahead of its re-runs, which the scan ranks over it (a newer
// node's score: the assistant's notes near it hold the question's words
// too); the runs are ordered together, not command by command, since a
// session's first run and its re-runs are often written differently
// (`sphinx-build …`, then `rm -rf _build && sphinx-build …`, the `cat` of
// the page after each). A tool output holding less than runShare of the
// share of the prompt the fullest tool output holds is the run of
// something else (another script re-run, matched on the prompt's
// common words) and keeps its place; so does a command run once, and
// every other pick; none is added or dropped.
// Deterministic; picks is not modified.
func firstRunFirst(picks []ranked.Pick) []ranked.Pick {
	command := make([]string, len(picks))
	best := 0.0 // the largest share of the prompt a tool output holds
	for i, p := range picks {
		if ranked.RoleOf(p.Summary) == "tool" {
			command[i] = ranked.CommandOf(p.Summary)
			best = max(best, p.Share)
		}
	}
	outputs := map[string]int{} // command → its runs among picks
	for i, p := range picks {
		if command[i] != "" && p.Share < runShare*best {
			command[i] = "" // a run of something else
		}
		if command[i] != "" {
			outputs[command[i]]++
		}
	}
	var at []int // the runs' places, in order
	for i, c := range command {
		if outputs[c] > 1 {
			at = append(at, i)
		}
	}
	return oldestFirstAt(picks, at)
}

// oldestFirstAt returns a copy of picks in which the picks at the places
// at (ascending) take those places again, oldest step first; every other
// pick keeps its place. Rules "the first run first" and "the first of its
// kind" order their picks so.
func oldestFirstAt(picks []ranked.Pick, at []int) []ranked.Pick {
	moved := make([]ranked.Pick, len(at))
	for k, i := range at {
		moved[k] = picks[i]
	}
	slices.SortStableFunc(moved, func(a, b ranked.Pick) int { return a.Step - b.Step })
	out := slices.Clone(picks)
	for k, i := range at {
		out[i] = moved[k]
	}
	return out
}

// runShare is the share of the fullest tool output's share of the prompt
// (ranked.Pick.Share) a run must hold to be ordered with the others by
// rule "the first run first".
const runShare = 0.5

// sameCommand reports whether tool output q, at the step after the
// assistant's pick call, is the output of call's command: its summary
// names the command call's names (ranked.CommandOf), or either names none
// (Claude Code's Edit call and its result).
func sameCommand(q, call ranked.Pick) bool {
	a, b := ranked.CommandOf(q.Summary), ranked.CommandOf(call.Summary)
	return a == "" || b == "" || a == b
}

// covers reports whether sorted terms a hold every term of sorted b, a
// fuzzy prefix form of b ("dril*", ranked's "prefix of") also by a term
// of a it opens: the tool output holding "DrilwenkSefrogd" holds its
// parts "drilwenk" and "sefrogd" (identifier parts, no prefix forms),
// the note holding the plain words holds "dril*" and "sefr*" besides.
func covers(a, b []string) bool {
	for _, t := range b {
		if _, ok := slices.BinarySearch(a, t); ok {
			continue
		}
		pre, fuzzy := strings.CutSuffix(t, "*")
		if !fuzzy {
			return false
		}
		i, _ := slices.BinarySearch(a, pre)
		for ; i < len(a) && strings.HasPrefix(a[i], pre) && strings.HasSuffix(a[i], "*"); i++ {
		}
		if i == len(a) || !strings.HasPrefix(a[i], pre) {
			return false
		}
	}
	return true
}

// sharesTerm reports whether sorted terms a and b hold a term in common.
func sharesTerm(a, b []string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// withOutputs is rule "a call brings its output" (ranked.Params.CallOutput)
// for the ranked picks: each pick that is an assistant's call with an own
// output (pairs, ranked.Result.CallOutputs: call step → output step) is
// directly preceded by that output — the pick of outputs
// (ranked.Result.Outputs) when the scan did not pick it, else its own
// pick, moved from a later place (an output placed before the call
// already, by rule "an output answers for its exchange", stays there).
// Deterministic; picks is not modified.
func withOutputs(picks, outputs []ranked.Pick, pairs map[int]int) []ranked.Pick {
	if len(pairs) == 0 {
		return picks
	}
	pos := make(map[int]int, len(picks))
	for i, p := range picks {
		pos[p.Step] = i
	}
	brought := make(map[int]ranked.Pick, len(outputs))
	for _, o := range outputs {
		brought[o.Step] = o
	}
	out := make([]ranked.Pick, 0, len(picks)+len(outputs))
	done := make(map[int]bool, len(picks)+len(outputs))
	for i, p := range picks {
		if done[p.Step] {
			continue
		}
		if o, ok := pairs[p.Step]; ok && !done[o] {
			if q, ok := brought[o]; ok {
				out, done[o] = append(out, q), true
			} else if j, ok := pos[o]; ok && j > i {
				out, done[o] = append(out, picks[j]), true
			}
		}
		out, done[p.Step] = append(out, p), true
	}
	return out
}

// needleCallOutputs is rule "a call brings its output" for the needle
// stage: of the needle nodes that are assistants' calls, the own output
// (ranked.Index.OwnOutputStep) that is no needle node itself and that the
// ranked stage picked on its own merits (in picks, not a companion;
// freed by rule "an output is updated by its re-run" or not), by the
// call's step. The ranked pick is the gate: an output holding none of the
// prompt's other words (a needle quoted in the agent's sentence, beside
// an unrelated command) stays out, so needle probes cost what they did.
func needleCallOutputs(ix *ranked.Index, nodes []*needleNode, picks []ranked.Pick) map[int]ranked.Pick {
	byStep := make(map[int]ranked.Pick, len(picks))
	for _, p := range picks {
		if !p.IsCompanion && !p.IsOutput {
			byStep[p.Step] = p
		}
	}
	isNeedle := make(map[int]bool, len(nodes))
	for _, n := range nodes {
		isNeedle[n.step] = true
	}
	var m map[int]ranked.Pick
	for _, n := range nodes {
		// The own output's step: the next step of an ingested exchange,
		// two on through the proxy's Responses items (the function_call
		// item between is never folded).
		step, ok := ix.OwnOutputStep(n.step)
		if !ok {
			continue
		}
		o, ok := byStep[step]
		if !ok || isNeedle[o.Step] {
			continue
		}
		if m == nil {
			m = map[int]ranked.Pick{}
		}
		m[n.step] = o
	}
	return m
}
