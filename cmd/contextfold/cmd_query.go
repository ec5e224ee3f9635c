package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/scrub"
)

func init() { commands = append(commands, newScanCmd, newRecallCmd) }

// matchFlag adds --match to a query command; resolve gives the mode: the
// flag's, else the store's {"matching": …} setting, else ranked — the
// matching of the proxy, the MCP server and the hooks (match.Default).
func matchFlag(c *cobra.Command) func(s *contextfold.Store) (match.Mode, error) {
	var name string
	c.Flags().StringVar(&name, "match", "", "matching mode: ranked (rarity-weighted terms, exact needles, cut-off; what the proxy, MCP server and hooks use) or exact (the reference's scan, spec §5); default: the store's \"matching\" setting, else ranked")
	return func(s *contextfold.Store) (match.Mode, error) {
		if name == "" {
			return match.ServingModeOf(s)
		}
		m, err := match.ParseMode(name)
		if err != nil {
			return "", usagef("--match: %v", err)
		}
		return m, nil
	}
}

func newScanCmd(g *globals) *cobra.Command {
	var mode func(*contextfold.Store) (match.Mode, error)
	c := &cobra.Command{
		Use:   "scan <prompt…>",
		Short: "Show which cold nodes the MMU would hydrate for a prompt (push, CONF-13)",
		Long: `scan matches a prompt against the recall index the way the software MMU does
before a turn, with the matching of the proxy, the MCP server and the hooks:
the ranked matcher (package match/ranked) unless the store's settings say
{"matching": "exact"} or --match exact is given. Ranked: a token the prompt
quotes or writes with structure (a path, URL, version, decimal, hash, e-mail,
slash pair, identifier or quoted string) held by a few nodes hydrates those
nodes first ("exact needles"); then terms weighed by rarity, stems and
identifier parts, neighbouring turns, a score cut-off (nothing when nothing
scores clearly) and intent ownership; each pick shows its score and why it
matched. Exact (the reference, spec §5): query terms are the prompt's
identifiers, files and error names; nodes are picked by residual greedy set
cover (most uncovered terms first, the larger step id on ties). Either way
picks are admitted while they fit the per-turn budget, each costing
min(its tokens, per-call cap, per-turn budget), or its windows' tokens under
rule "focus long picks". A ranked pick over the per-call cap that hydration
focuses on its matched lines shows the tokens hydration places, marked
"(focused …)" (--json: placed_tokens) next to what it holds against the
budget. A prompt with no query term says so. When a ranked scan selects
nothing, it says how many turns the exact match finds with the prompt's
words (none passed the ranked cut-off; --json: exact_matches). scan changes
nothing; use hydrate to page a node in.

With --dir a directory of session stores (the proxy's --dir, a project's
.contextfold of the Claude Code hooks, or its sessions/), scan reads every
session's store (read-only) and merges their picks by score, then the newest
session first, within the smallest per-turn budget of the sessions; each pick
names its session. --session ID scans that session's store alone, as --dir
with its store would.`,
		Example: `  contextfold scan "What port are we using for PostgreSQL, and which migration applied the billing table?"
  contextfold scan --json -- "-v flag broke tests/test_api.py"
  contextfold scan "what did api.example.com/v2/prices return?"
  contextfold scan --match exact "why did the tenant billing migration fail?"
  contextfold scan --dir .contextfold "which migration failed last week?"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("scan needs a prompt: contextfold scan <prompt…>")
			}
			if set, err := g.sessionSet(); err != nil || set != nil {
				if err != nil {
					return err
				}
				return scanSessions(cmd, g, set, strings.Join(args, " "), mode)
			}
			s, err := g.openStoreToUse(cmd)
			if err != nil {
				return err
			}
			m, err := mode(s)
			if err != nil {
				return err
			}
			prompt := strings.Join(args, " ")
			res, err := match.Scan(s, prompt, m)
			if err != nil {
				return err
			}
			placed := placedTokens(s, prompt, m, res.Selected)
			terms := echoTerms(prompt, res.QueryTerms)
			out := cmd.OutOrStdout()
			if g.jsonOut {
				var sel, drop []pickJSON
				for _, p := range res.Selected {
					pj := pickJSON{p.StepID, p.MatchedTerms, numberOut(p.TokenCost), p.Summary, p.Score, p.Why, nil}
					if n, ok := placed[p.StepID]; ok {
						pj.PlacedTokens = n
					}
					sel = append(sel, pj)
				}
				for _, p := range res.Dropped {
					drop = append(drop, pickJSON{p.StepID, p.MatchedTerms, numberOut(p.TokenCost), p.Summary, p.Score, p.Why, nil})
				}
				if sel == nil {
					sel = []pickJSON{}
				}
				if drop == nil {
					drop = []pickJSON{}
				}
				doc := map[string]any{"query_terms": terms, "selected": sel, "dropped": drop,
					"budget_tokens": numberOut(res.BudgetTokens), "used_tokens": numberOut(res.UsedTokens)}
				if m == match.Ranked {
					doc["match"] = string(m)
					if len(res.Selected) == 0 {
						// The text's below-cut-off hint, as a number.
						if hits, err := match.Recall(s, prompt, match.Exact); err == nil {
							doc["exact_matches"] = len(hits)
						}
					}
				}
				return g.writeOut(out, "", doc)
			}
			if len(terms) == 0 {
				fmt.Fprintln(out, "query terms: none (the prompt has no word to look up in the recall index: stop words, greetings and single letters are skipped)")
			} else {
				fmt.Fprintf(out, "query terms: %s\n", strings.Join(terms, " "))
			}
			if len(res.Selected) == 0 {
				fmt.Fprintln(out, "no cold node matches; nothing would be hydrated")
				if m == match.Ranked {
					if hits, err := match.Recall(s, prompt, match.Exact); err == nil {
						belowCutoffHint(out, len(hits), "scan")
					}
				}
				return nil
			}
			fmt.Fprintf(out, "would hydrate (%v of %v tokens):\n", numberOut(res.UsedTokens), numberOut(res.BudgetTokens))
			for i, p := range res.Selected {
				cost := fmt.Sprintf("%v tokens", numberOut(p.TokenCost))
				if n, ok := placed[p.StepID]; ok {
					cost = fmt.Sprintf("%d tokens (focused on its matched lines; %v held against the per-turn budget)", n, numberOut(p.TokenCost))
				}
				fmt.Fprintf(out, "  %d. step %d  [%s]  %s  %s\n", i+1, p.StepID, strings.Join(p.MatchedTerms, ", "), cost, preview(p.Summary, 80))
				if m == match.Ranked {
					fmt.Fprintf(out, "     score %.3f: %s\n", p.Score, strings.Join(p.Why, "; "))
				}
			}
			for _, p := range res.Dropped {
				fmt.Fprintf(out, "  dropped: step %d  [%s]  %v tokens do not fit the per-turn budget\n", p.StepID, strings.Join(p.MatchedTerms, ", "), numberOut(p.TokenCost))
			}
			return nil
		},
	}
	mode = matchFlag(c)
	return c
}

type pickJSON struct {
	StepID       int      `json:"step_id"`
	MatchedTerms []string `json:"matched_terms"`
	TokenCost    any      `json:"token_cost"`
	Summary      string   `json:"summary"`
	Score        float64  `json:"score,omitempty"` // ranked only
	Why          []string `json:"why,omitempty"`   // ranked only
	// PlacedTokens, for a selected pick that hydration focuses on its
	// matched lines to fewer tokens than token_cost, is the tokens the
	// hydration places; absent otherwise.
	PlacedTokens any `json:"placed_tokens,omitempty"`
}

// placedTokens returns, for each selected pick whose hydration for prompt
// is focused on its matched lines (match.Hydrate: the per-call cap's
// focusing, which the scan's TokenCost does not cost) to fewer tokens than
// its TokenCost, the tokens that hydration places. Reporting only: the
// scan's admission and TokenCost are unchanged. A pick whose node does not
// hydrate is left out (hydrate says why).
func placedTokens(s *contextfold.Store, prompt string, m match.Mode, picks []contextfold.ScanPick) map[int]int {
	out := map[int]int{}
	if m != match.Ranked {
		return out
	}
	for _, p := range picks {
		h, err := match.Hydrate(s, p.StepID, prompt, m)
		if err == nil && len(h.Windows) > 0 && float64(h.TokenEstimate) < p.TokenCost {
			out[p.StepID] = h.TokenEstimate
		}
	}
	return out
}

// numberOut prints integral values as integers.
func numberOut(f float64) any {
	if f == float64(int64(f)) {
		return int64(f)
	}
	return f
}

func newRecallCmd(g *globals) *cobra.Command {
	var mode func(*contextfold.Store) (match.Mode, error)
	var limit int
	c := &cobra.Command{
		Use:   "recall <query…>",
		Short: "Rank archived turns for a query: the best-covered first, newest first among them (pull, CONF-04)",
		Long: `recall ranks the nodes that hold the query's identifiers. The nodes with the
highest coverage come first, newest step first, labelled latest_chronological,
superseded…, historical; the other candidates follow, labelled related. The
score is the ranked scorer's × 100 (the default, as for scan: the store's
"matching" setting, else ranked), or with --match exact the reference's: +2
per query term in the node's summary and +1 per term in the node. In ranked
mode a query that quotes a needle (a path, URL, version, identifier or quoted
string held by at most 5 nodes) lists the nodes holding it first, in the order
scan hydrates them (fullest evidence first), labelled by chronology among
themselves; the other candidates follow, labelled related.

With --dir a directory of session stores (the proxy's --dir, a project's
.contextfold of the Claude Code hooks, or its sessions/), recall reads every
session's store (read-only) and lists at most 20 candidates by score, then
the newest session first, each with its session (--json: an object with
candidates, omitted, sessions_searched and failed_sessions); labels are
those within each session. A session whose store cannot be read is named on
stderr and the others are searched. --session ID recalls in that session's
store alone, as --dir with its store would.

--limit N lists at most N candidates (default: all of them in one store, 20
across sessions; -1: all), as the MCP tool's limit does; the text output
says how many were left out, --json across sessions counts them in omitted.`,
		Example: `  contextfold recall PostgreSQL port
  contextfold recall --json migration V12
  contextfold recall --dir .contextfold migration V12
  contextfold recall --dir .contextfold --session 5a9d… migration V12
  contextfold recall --limit 5 migration`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("recall needs a query: contextfold recall <query…>")
			}
			if cmd.Flags().Changed("limit") && (limit == 0 || limit < -1) {
				return usagef("--limit %d: give the most candidates to list, 1 or more, or -1 for all (default: all in one store, %d across sessions)", limit, sessiondir.DefaultRecallLimit)
			}
			if set, err := g.sessionSet(); err != nil || set != nil {
				if err != nil {
					return err
				}
				if !cmd.Flags().Changed("limit") {
					limit = sessiondir.DefaultRecallLimit
				}
				return recallSessions(cmd, g, set, strings.Join(args, " "), mode, limit)
			}
			s, err := g.openStoreToUse(cmd)
			if err != nil {
				return err
			}
			m, err := mode(s)
			if err != nil {
				return err
			}
			hits, err := match.Recall(s, strings.Join(args, " "), m)
			if err != nil {
				return err
			}
			omitted := 0
			if limit > 0 && len(hits) > limit {
				omitted = len(hits) - limit
				hits = hits[:limit]
			}
			out := cmd.OutOrStdout()
			if g.jsonOut {
				rows := make([]map[string]any, len(hits))
				for i, h := range hits {
					rows[i] = map[string]any{"step_id": h.StepID, "status": h.Status, "coverage": h.Coverage, "score": h.Score, "summary": h.Summary, "evicted": h.Evicted}
				}
				return g.writeOut(out, "candidates", rows)
			}
			if len(hits) == 0 {
				fmt.Fprintln(out, "no archived turn matches")
				if m == match.Ranked {
					if ex, err := match.Recall(s, strings.Join(args, " "), match.Exact); err == nil {
						belowCutoffHint(out, len(ex), "recall")
					}
				}
				return nil
			}
			for _, h := range hits {
				fmt.Fprintf(out, "step %-6d %-21s coverage %d  score %d  %s\n", h.StepID, h.Status, h.Coverage, h.Score, preview(h.Summary, 80))
			}
			if omitted > 0 {
				noun := "candidates"
				if omitted == 1 {
					noun = "candidate"
				}
				fmt.Fprintf(out, "… %d more %s left out by --limit %d (-1: all)\n", omitted, noun, limit)
			}
			return nil
		},
	}
	c.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("list at most this many candidates (default: all in one store, %d across a directory of session stores; -1: all)", sessiondir.DefaultRecallLimit))
	mode = matchFlag(c)
	return c
}

// echoTerms returns the query terms scan prints: those that are part of a
// secret in the prompt (a token pasted by mistake) replaced by its marker
// (scrub.RedactTerms); none but a marker when the scrubber cannot be built.
func echoTerms(prompt string, terms []string) []string {
	sc, err := scrub.New()
	if err != nil {
		return []string{"[REDACTED:terms withheld]"}
	}
	return sc.RedactTerms(prompt, terms)
}

// belowCutoffHint explains, after a ranked scan or recall that found nothing,
// that the reference's exact match finds n turns (n > 0) holding the query's
// words: no turn passed the ranked match's cut-off (rule Floor and MinShare,
// docs/matching.md: a word in many of the store's turns, stems included,
// weighs little, and a turn must hold enough of the query), so the user can
// add a rarer word or list them with --match exact. Nothing for n 0.
func belowCutoffHint(out io.Writer, n int, command string) {
	if n == 0 {
		return
	}
	turns := "turns"
	if n == 1 {
		turns = "turn"
	}
	fmt.Fprintf(out, "  (--match exact finds %d %s with the query's words, but no turn passes the ranked match's cut-off: a word in many of the store's turns, stems included, weighs little; add a rarer word from the turn you want, or list them: contextfold %s --match exact …)\n", n, turns, command)
}
