package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/internal/matcheval"
	"github.com/contextfold/contextfold/scrub"
)

// endQuestionSets are the hand-written end-of-session question sets
// (internal/matcheval/testdata; docs/matching.md, "Measuring it").
// defaultCorpusSession is the long mini-swe-agent session whose questions
// TestWireEndQuestions asks by default, beside the Claude Code
// transcript's: 66 steps a format, 11 questions of the five sets.
const defaultCorpusSession = "pylint-dev__pylint-6528"

var endQuestionSets = []string{"endq-questions.jsonl", "endq-heldout.jsonl", "endq-fresh.jsonl", "endq-fourth.jsonl", "endq-fifth.jsonl", "endq-sixth.jsonl", "endq-seventh.jsonl", "endq-eighth.jsonl", "endq-ninth.jsonl", "endq-tenth.jsonl", "endq-eleventh.jsonl"}

// TestWireEndQuestions asks the hand-written end-of-session questions
// (each about a turn of its session's first half, a third to a half of
// them quoting a token with punctuation, the rest in plain or
// half-remembered words) through the real proxy, in every client's wire
// format, as a user returning to an old problem asks them: each bundled
// transcript is replayed as the client sends its growing history, and at
// its end each question of the sets about it is asked. A question is a hit
// when its answer line (or an Also line) is in the hydration the upstream
// received; one whose answer line is still verbatim in the prompt (not
// folded, or in a folded step's record) is no question of recall and is
// counted apart, and one whose answer line scrubbing redacts (a password's
// value) is not asked or not counted. This is cfeval's `questions` as the
// model lives it: the proxy's own folding, rendering, scrubbing and
// per-turn budget. Wanted, in every format: the questions the direct scan
// of the ingested session answers (matcheval.RunQuestions) reach the model
// through the proxy too, but for at most 2 % of those asked (the proxy's
// nodes are its messages, not ingest's turns: their summaries and
// boundaries differ a little); and the formats agree: of the questions
// asked in every format (the answer line folded out of each prompt), at
// most 2 % answered in some formats and missed in others (Claude Code's
// tool results arrive in user messages, Codex's calls in items of their
// own: both once lost a third of the hits). Agreement is judged question
// by question, not by hit rate: a format whose prompt still holds one more
// answer line asks one question fewer, which moves a rate over a few
// dozen questions by points.
//
// By default the Claude Code transcript's questions and one long corpus
// session's (defaultCorpusSession; a few seconds); every
// transcript with CONTEXTFOLD_REPLAY_FULL=1 (the 25 long corpus sessions
// included: about two minutes). CONTEXTFOLD_REPLAY_DEBUG=1 logs every miss.
func TestWireEndQuestions(t *testing.T) {
	skipReplayUnderRace(t)
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	full := os.Getenv("CONTEXTFOLD_REPLAY_FULL") == "1"
	only := os.Getenv("CONTEXTFOLD_REPLAY_ONLY")
	type asked struct {
		set string
		matcheval.Question
	}
	bySession := map[string][]asked{}
	for _, set := range endQuestionSets {
		qs, err := matcheval.LoadQuestions(filepath.Join("../internal/matcheval/testdata", set))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			bySession[q.Session] = append(bySession[q.Session], asked{strings.TrimSuffix(strings.TrimPrefix(set, "endq-"), ".jsonl"), q})
		}
	}
	sessions := make([]string, 0, len(bySession))
	for s := range bySession {
		sessions = append(sessions, s)
	}
	sort.Strings(sessions)
	sc, err := scrub.New()
	if err != nil {
		t.Fatal(err)
	}
	tally := map[string]*probeTally{} // by set and client
	quotedMissed := 0
	lost := map[string]int{}   // by client: hit by the direct scan, missed on the wire
	nAsked := map[string]int{} // by client: the questions of recall asked
	hits := map[string]int{}   // by client
	redacted := 0
	common, apart := 0, 0 // questions asked in every format; answered in some only
	for _, name := range sessions {
		if !full && !strings.HasPrefix(name, "claude-code/") && !strings.Contains(name, defaultCorpusSession) || !strings.Contains(name, only) {
			continue
		}
		res, err := ingest.ParseFile(filepath.Join(transcriptsDir, name), ingest.FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// A question whose answer line scrubbing redacts (a password's
		// value) asks for what the store never holds and the model never
		// sees, by design: it is no question of recall, and not asked.
		var qs []asked
		for _, q := range bySession[name] {
			if sc.Scrub(q.Answer).Text != q.Answer {
				t.Logf("%s (%s): %q asks for a line scrubbing redacts: not asked", name, q.set, q.Q)
				continue
			}
			qs = append(qs, q)
		}
		// The direct scan of the ingested session (cfeval questions): what
		// the engine finds, to compare with what reaches the model.
		plain := make([]matcheval.Question, len(qs))
		for i, q := range qs {
			plain[i] = q.Question
		}
		direct, err := matcheval.RunQuestions(plain, transcriptsDir, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		probes := make([]matcheval.Probe, len(qs))
		for i, q := range qs {
			probes[i] = matcheval.Probe{Session: name, Step: q.Output, Question: q.Q, Answer: q.Answer, Class: q.Class, Also: q.Also}
		}
		type run struct {
			f      wireFormat
			client string
			rs     []wireProbeResult
		}
		var runs []run
		for _, f := range wireFormats {
			if f.api == APIAnthropic {
				system, msgs := anthropicMessages(res.Turns)
				runs = append(runs, run{f, f.name, wireAsk(t, name, system, msgs, f, needleProbeConfig, probes)})
			} else {
				runs = append(runs, run{f, f.name, wireAsk(t, name, "", chatMessages(res.Turns), f, needleProbeConfig, probes)})
			}
		}
		if res.Format == ingest.FormatClaudeCode {
			// And as Claude Code itself sent it (the records' messages,
			// thinking and all; a hot window of 2, as the needle probes).
			msgs, _ := rawClaudeCode(t, filepath.Join(transcriptsDir, name))
			cfg := needleProbeConfig
			cfg.HotWindow = 2
			runs = append(runs, run{wireFormats[0], wireFormats[0].name + " (as sent)", wireAsk(t, name, "", msgs, wireFormats[0], cfg, probes)})
		}
		outcome := make([]map[string]bool, len(qs)) // by question: hit by format, when asked
		for _, x := range runs {
			f := wireFormat{name: x.client}
			for i, r := range x.rs {
				if !r.InPrompt && !r.Stored {
					// Scrubbing redacted the answer line in the store (a
					// credential learned from another turn): the model
					// never sees it, by design; no question of recall.
					t.Logf("%s (%s, %s): %q: its answer line is redacted in the store: not counted", name, f.name, qs[i].set, qs[i].Q)
					redacted++
					continue
				}
				for _, key := range []string{qs[i].set + "|" + f.name, "all|" + f.name} {
					if tally[key] == nil {
						tally[key] = &probeTally{}
					}
					tally[key].add(r)
				}
				quoted := qs[i].Class != "natural" && qs[i].Class != "vague"
				if !r.Hit && !r.InPrompt && (quoted || os.Getenv("CONTEXTFOLD_REPLAY_DEBUG") != "") {
					t.Logf("%s (%s, %s): missed %s %q (answer in turn %d): hydrated %v", name, f.name, qs[i].set, qs[i].Class, qs[i].Q, qs[i].Output, r.Steps)
				}
				if quoted && !r.Hit && !r.InPrompt {
					quotedMissed++
				}
				if !r.InPrompt {
					nAsked[f.name]++
					if r.Hit {
						hits[f.name]++
					}
					if x.client == x.f.name {
						if outcome[i] == nil {
							outcome[i] = map[string]bool{}
						}
						outcome[i][f.name] = r.Hit
					}
				}
				if direct[i].Hit && !r.Hit && !r.InPrompt {
					lost[f.name]++
					t.Logf("%s (%s, %s): %s %q hit by the direct scan (%v), missed on the wire: hydrated %v", name, f.name, qs[i].set, qs[i].Class, qs[i].Q, direct[i].Picked, r.Steps)
				}
			}
		}
		for i, o := range outcome {
			if len(o) < len(wireFormats) {
				continue // still in some format's prompt: not asked in all
			}
			common++
			n := 0
			for _, hit := range o {
				if hit {
					n++
				}
			}
			if n > 0 && n < len(o) {
				apart++
				t.Logf("%s (%s): %s %q answered in some formats only: %v", name, qs[i].set, qs[i].Class, qs[i].Q, o)
			}
		}
	}
	var b strings.Builder
	b.WriteString("\n| set | client | answer line hydrated |\n|---|---|---|\n")
	keys := make([]string, 0, len(tally))
	for k := range tally {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set, client, _ := strings.Cut(k, "|")
		fmt.Fprintf(&b, "| %s | %s | %s |\n", set, client, tally[k])
	}
	t.Log(b.String())
	t.Logf("hit by the direct scan, missed on the wire: %v; answer line redacted in the store: %d", lost, redacted)
	if len(keys) == 0 {
		t.Fatal("no question was asked")
	}
	if quotedMissed > 0 {
		t.Logf("%d questions quoting a token missed their answer line through the proxy", quotedMissed)
	}
	rate := map[string]float64{}
	for _, f := range wireFormats {
		if nAsked[f.name] == 0 {
			t.Fatalf("%s: no question of recall was asked", f.name)
		}
		rate[f.name] = 100 * float64(hits[f.name]) / float64(nAsked[f.name])
		if allowed := nAsked[f.name] / 50; lost[f.name] > allowed {
			t.Errorf("%s: %d questions the direct scan answers missed their answer line through the proxy (of %d asked; at most %d)", f.name, lost[f.name], nAsked[f.name], allowed)
		}
	}
	t.Logf("hit rate by format: %v; of %d questions asked in every format, %d answered in some only", rate, common, apart)
	if allowed := common / 50; apart > allowed {
		t.Errorf("%d of the %d questions asked in every format are answered in some formats only (at most %d)", apart, common, allowed)
	}
}
