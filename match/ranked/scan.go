package ranked

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Params are the scorer's constants. The zero value is not valid; use
// DefaultParams.
type Params struct {
	K1, B float64 // BM25 term-frequency saturation and length normalisation
	// MaxLenRatio caps a node's length relative to the average in the
	// length normalisation, so that the matched line of a 3,000-token file
	// view still counts (rule "long nodes").
	MaxLenRatio float64
	// Neighbour is the weight of a term matched in the node just before or
	// after (rule "conversation structure": a tool result is found through
	// its call, a call through its result, an answer through its question).
	// Below 1 so that the node holding the term itself wins. A companion
	// must score over the cut-off on the words it lacks, at most Neighbour
	// × its pick's own score against Ratio × the best own score: the rule
	// admits nodes only when Neighbour > Ratio (not at the defaults, where
	// a neighbour holding none of the best pick's words falls exactly on
	// the cut-off and is left out).
	Neighbour float64
	// Answer is the weight of a term of a question turn lent to the turn
	// after it (rule "a question lends its terms to its answer"), counted in
	// the answer's score; Asker scales the question turn's own score, so
	// that the answer wins over the question that asked for it.
	Answer, Asker float64
	// Covered is the weight left to a term already covered by an earlier
	// pick of the same scan (rule "ranked set cover"), until the picks
	// cover CoverShare of the prompt (rule "cover, then rank").
	Covered float64
	// CoverShare: once the picks cover this share of the prompt's term
	// weight, Covered no longer applies (rule "cover, then rank"; 0: it
	// always applies).
	CoverShare float64
	// Ratio: a pick needs a marginal score of at least Ratio × the best
	// node's score (rule "cut-off").
	Ratio float64
	// Floor: the best node must score at least Floor, in idf units (rule
	// "cut-off": nothing is hydrated when nothing scores clearly).
	Floor float64
	// MinShare: the best node must cover at least this share of the
	// prompt's information (the idf mass of its terms, unknown specific
	// terms counted at the highest idf, unknown ordinary words at
	// UnknownWord × that): a prompt about something the archive never saw
	// hydrates nothing even if one of its words matches.
	MinShare, UnknownWord float64
	// Supersede turns on intent ownership (spec §4, CONF-13): a node is
	// never picked when a newer node about the same entity (they share a
	// specific term: a path, a version, a number, an identifier) holds
	// every prompt term it holds — the newer node updated that fact.
	Supersede bool
	// MaxTerms bounds the prompt terms kept (the rarest), so a 1 MB prompt
	// costs what 64 terms cost.
	MaxTerms int
	// Candidates bounds the nodes examined by the selection.
	Candidates int
	// Common: in a store of at least smallStore nodes, the best node must
	// hold a term held by at most this share of them (rule "only common
	// words", Index.passes).
	Common float64
	// FindCommon: in a store of at least commonMinNodes nodes, a term held
	// by more than this share of them finds no candidates when the prompt
	// has a rarer term that does (its postings are long and its weight low:
	// at 100k nodes a term in 10 % of them is 10,000 postings of idf ≈ 2.3,
	// against ≈ 11 for a rare term); it still counts in the scores of the
	// candidates the rarer terms found. A prompt whose terms are all this
	// common still walks them (score). Measured with `cfeval locomo
	// -combined` (all ten LoCoMo conversations in one store of 5,882 nodes,
	// where the rule applies): ranked recall 63.0 % at 0.3, 62.8 % at 0.1,
	// 61.4 % at 0.05; the ranked scan at 100k nodes: p50 2.7 ms at 0.3,
	// 1.3–1.4 ms at 0.1 (BENCHMARKS.md, "Speed"). Stores under
	// commonMinNodes (every LoCoMo conversation, the agent probes) are not
	// affected.
	FindCommon float64
	// Context1, Context2, Context3: rule "topic context". A node's ranking
	// score adds Context1 × the scores of the nodes one step away, Context2
	// × those two steps away and Context3 × those three away (consecutive
	// steps only; the default is a flat window of two steps each side,
	// 0.3, 0.3, 0: in a dialog of two the turn two steps away is the same
	// speaker's, as close to the topic as the reply between): a conversation stays
	// on a topic for a few turns, so the turn beside the strongest match
	// is likelier the answer than an equal match elsewhere ("It was Matt
	// Patterson" two turns after the birthday concert). It only orders:
	// the cut-off (Ratio, Floor, MinShare) judges a node's own score, so
	// no node passes on its neighbours' terms alone.
	Context1, Context2, Context3 float64
	// When: rule "a when-question is answered by a time" (when.go). For a
	// prompt that asks when, a candidate holding a time expression ranks
	// with When × its own score added; ordering only, like topic context.
	When float64
	// Near: rule "a chat's topic admits" (chat.go). A chat-log turn whose
	// own score is at least Near × the cut-off passes when its topic
	// context reaches the cut-off (0: off).
	Near float64
	// Speaker: rule "the person named speaks" (speaker.go). A candidate
	// whose summary opens with the speaker label of a person the prompt
	// names ranks with Speaker × its own score added; ordering only.
	Speaker float64
	// Delta: rule "long turns are not over-penalised", the lower bound of
	// BM25+ (Lv and Zhai, "Lower-bounding term frequency normalization",
	// CIKM 2011). A node holding a term scores at least Delta × its
	// weight for it, whatever its length: BM25's length normalisation
	// drives the score of a term in a long node towards 0, so a long
	// message that holds a prompt word (several chat messages sent as
	// one, a turn that tells two pieces of news) loses to a short one
	// that does not hold the word at all but holds another. Delta is
	// added to the saturation (Index.sat), so every rule that weighs a
	// saturation (a question lends its terms, topic context, the
	// cut-off) sees it; in the ranked set cover a term an earlier pick
	// covers lends no such presence credit (0: plain BM25). Measured
	// (docs/matching.md, "Paraphrase methods"): 0.5 against 0, LoCoMo
	// undated 63.5 → 63.5 %, its uneven perturbation 55.0 → 56.6 %, the
	// agent sets' hits unchanged.
	Delta float64
	// Proximity: rule "the prompt's words together" (proximity.go), the
	// weight of a term-proximity bonus (Büttcher et al. 2006) for two
	// different prompt words held within a few words of each other, added
	// to the ranking score of the best candidates only; ordering only, never
	// negative (0: off).
	Proximity float64
	// FocusOver: rule "focus long picks" (package match). A ranked pick of
	// more than FocusOver × the store's mean node tokens that has lines
	// holding prompt terms is hydrated as windows around those lines
	// (Focus), within FocusOver × the mean, and costs the per-turn budget
	// what those windows cost, so that a long message does not spend the
	// budget on its lines that say nothing about the question (0: off;
	// a node is then focused only over the per-call cap). Measured
	// (docs/matching.md, "Paraphrase methods"): 4 against 0, LoCoMo's
	// uneven perturbation 56.9 → 59.0 % (both halves up), LoCoMo itself
	// unchanged, the agent sets' hits unchanged at 39–49 % fewer tokens.
	FocusOver float64
	// FocusAgentOver: rule "an agent's node is its matched lines"
	// (package match). A tool's output or an assistant's node (RoleOf
	// "tool" or "assistant": a command's output, a call writing a script,
	// a long note) is focused as FocusOver has it from FocusAgentOver ×
	// the store's mean node, within that many tokens, instead of
	// FocusOver's (0: as any node). Chat turns (a speaker's label, no
	// agent role), the user's prompts and system prompts keep FocusOver.
	// On (2): it keeps every hit and takes 16 % of the tokens a question
	// off the 80 end-of-session questions (+3 held-out hits), 17 % off
	// the probes, 36 % off the corpus, chat unchanged. Each pick over 2 ×
	// the mean is read and focused to cost it (one analysis of its lines,
	// ranked.AnalyzeFocus; the hydration reuses it): a scan on real
	// sessions costs 20 % fewer instructions with it than it did without
	// it before; docs/matching.md, "An agent's node is its matched lines".
	FocusAgentOver float64
	// SkipLabel: rule "a label is no entity" (label.go). Intent ownership
	// takes two nodes sharing a specific term for updates of one fact; the
	// speaker or tool label a node's summary opens with ("caroline37: …",
	// "user_2: …", "tool mcp__fs__read: …") is not such a term, as every
	// message of that speaker or tool holds it. Measured (docs/matching.md,
	// "Real chat"): LoCoMo with user handles for speaker labels (`cfeval
	// locomo -undated -noisy -noisy-parts handles`) 49.7 → 62.4 %, LoCoMo
	// itself, its uneven and reworded sets and the agent sets unchanged.
	SkipLabel bool
	// Fuse: rule "rank fusion" (fuse.go), the weight of a plain BM25+stem
	// ranking of the candidates fused with the ranked scan's picks by
	// reciprocal rank (Cormack, Clarke and Büttcher 2009): a pick's fused
	// score is 1/(FuseK + its rank) + Fuse/(FuseK + its BM25 rank), ranks
	// from 1, a list it is not in adding nothing. The BM25 list is the
	// best FuseDepth candidates that hold a prompt word, intent ownership
	// applied (0: off). Exact needles (package match) stay first. Not on
	// by default: measured (docs/matching.md, "Paraphrase methods"), Fuse 1, FuseK 60, FuseDepth 5 takes LoCoMo
	// from 63.5 to 58.7 % and its uneven perturbation from 59.0 to 54.1 %.
	Fuse, FuseK float64
	FuseDepth   int
	// Typo: rule "typos" (typo.go), the weight (× idf) of a term of the
	// archive one edit from a prompt word's stem of at least typoMinLen
	// letters, held by at most max(rareDF, a quarter of) the nodes that
	// hold the word itself (0: off). 0.6 under the decision rule of
	// docs/matching.md ("Deciding a rule": 43 evidence turns won against
	// 25 lost over the chat sets, p 0.039, the noisy set's typos; no set
	// losing; the agent sets' hits unchanged at 0.5 % more corpus
	// tokens). Its variants are found through a filter of the archive's
	// terms (typofilter.go); looking each up in the term table took a
	// scan five times as long.
	Typo float64
	// TypoWords: rule "two words are no typo" (lexicon.go), a guard of
	// rule "typos": a prompt word and an archive term one edit apart that
	// are both words of an English dictionary (SCOWL to size 60) are two
	// words, and the term is no variant of the word.
	TypoWords bool
	// Related: rule "related words" (related.go), the weight (× the lower
	// of the word's idf and its own) of a word WordNet relates to a prompt
	// word (a derivationally related form, a synonym of its most frequent
	// sense), at most relatedMax per word, in the word's group (0: off).
	// Off by default: under the decision rule of docs/matching.md
	// ("Deciding a rule") 0.3 won 43 evidence turns and lost 37 over the
	// chat sets (p 0.58; the reworded set alone gains, 20 / 5), 0.5 won 66
	// and lost 70, and a chat scan ran 21 % more instructions.
	Related float64
	// ChatOwn: rule "a chat repeats, it does not update" (label.go): intent
	// ownership never supersedes a chat turn, a node whose summary opens
	// with a speaker label that is no agent role (user, assistant, tool,
	// system). In a conversation a later turn that repeats a topic's
	// words and one of its specific terms ("TikTok", "10am", "gr8") is
	// no update of the earlier turn's fact. On by default under the
	// decision rule of docs/matching.md ("Deciding a rule"): 60 evidence
	// turns won against 36 lost over the chat sets (p 0.018), none lost
	// significantly, the agent sets unchanged.
	ChatOwn bool
	// AnswerType: rule "a question is answered by its type"
	// (answertype.go). For a prompt that asks where, how many / how much
	// or who, a chat-turn candidate holding a place, a quantity or a
	// person the prompt does not name ranks with AnswerType × its own
	// score added; ordering only, agent nodes untouched (0: off). 0.3 (the
	// weight of When, set before measuring) under the decision rule of
	// docs/matching.md ("Deciding a rule"): 27 evidence turns won against
	// 9 lost over the chat sets (p 0.004), the agent sets unchanged.
	AnswerType float64
	// FirstAsks: rule "a first asks for the oldest". A prompt that asks
	// for the first or original one ("what did the first run print?",
	// "where was it defined originally?": the words first, original,
	// originally, initial, initially, not inside an identifier) supersedes
	// nothing: intent ownership keeps the newest node of an entity, the
	// opposite of what such a prompt asks. Chat turns are untouched (ChatOwn
	// already exempts them). On: of the hand-written end-of-session
	// questions (`cfeval questions`), 11 say first or originally; 5 more
	// reach the model (52 → 57 of 80), at 986 → 1217 tokens a question
	// over all 80 (the prompts that say it hydrate more); LoCoMo and its
	// noisy set byte-identical, `cfeval probes` unchanged, `cfeval corpus`
	// 1155 → 1156 tokens a probe.
	FirstAsks bool
	// OwnRole: intent ownership takes only a newer node of the same agent
	// role (RoleOf: a tool output for a tool output, an assistant's note
	// for an assistant's note) for an update of an older one; a node of no
	// role is unaffected. Off: the end-of-session questions gain (52 → 58
	// of 80 with FirstAsks off, 57 → 62 with it on, at 1217 → 1529 tokens
	// a question) but, measured before the needle changes beside it,
	// `cfeval probes` spent 467 → 533 tokens a probe and `cfeval corpus`
	// 1042 → 1177, for no hit (both are at 100 %): over the 5 % a rule
	// may cost.
	OwnRole bool
	// Rerun: rule "an output is updated by its re-run" (rerun.go). Intent
	// ownership supersedes a tool's output only by a newer output of the
	// same command run again (the command its summary names after "$ ";
	// an output whose summary names none, such as a file read, by any
	// newer tool output): not by the assistant's note restating or acting on it,
	// nor by the output of another command that shares the prompt's words
	// (a sed of the lines a grep -n found, a later grep naming the same
	// function). Other nodes are superseded as before. A pick the rule
	// frees (Pick.Freed) is hydrated only when no exact needle of the
	// prompt was (package match): a quoted token's nodes are the
	// evidence, and the broader match keeps the newest node of an
	// entity. Measured (docs/matching.md, "Intent ownership in an agent
	// session"): the hand-written end-of-session questions 57 → 74 of 80,
	// the held-out set 19 → 37 of 47; `cfeval probes` unchanged, `cfeval
	// corpus` +0.7 % tokens a probe, chat untouched.
	Rerun bool
	// OutputFirst: rule "an output answers for its exchange" (package
	// match, outputFirst). An assistant's pick (a call, or a note
	// restating what a command printed) is preceded by the tool output
	// that holds the evidence: its own output (the next step's tool node,
	// of the same command) when that matched a prompt term the call did,
	// else the first later-ranked tool output holding every prompt term
	// it matched, at any distance. It only orders the picks the scan
	// made (none is added or dropped; the per-turn budget admits them in
	// the new order). Measured (docs/matching.md, "The output, not the
	// echo"): output first 32 → 35 of the 80 end-of-session questions and
	// 13 → 14 of the held-out 47, hits unchanged; `cfeval probes` and
	// `cfeval corpus` byte-identical; chat untouched (no chat turn has an
	// agent role).
	OutputFirst bool
	// FirstRunFirst: rule "the first run first" (package match,
	// firstRunFirst). With FirstAsks on, a prompt that asks for the first
	// or original one (AsksFirst) gets its runs oldest first: the picks
	// that are tool outputs of a command (CommandOf) the picks hold two
	// outputs of or more, in the places the runs held. Ordering only, no
	// pick added or dropped; chat turns are no tool output and are never
	// moved. Measured (docs/matching.md, "The first run first"): output
	// first 35 → 36 of the 80 end-of-session questions, the held-out 47
	// checked (hits 37 → 38, output first 14 as before); probes and
	// corpus unchanged.
	FirstRunFirst bool
	// FirstOfKind: rule "the first of its kind" (package match,
	// firstOfKind). With FirstAsks on, a prompt that asks for the first
	// (AsksFirst) and names a program ("the first curl", "the first make
	// html", "the first repro run") gets the picks that run it, calls and
	// outputs alike, oldest first, in the places they held. Ordering only;
	// chat turns run no command and are never moved. Measured
	// (docs/matching.md, "The first of its kind"): 4 more answers over the
	// eight end-of-session sets read, none lost, tokens unchanged; the
	// ninth (untouched) 68 / 71 either way; probes, corpus and LoCoMo
	// unchanged.
	FirstOfKind bool
	// RerunCall: with Rerun, a tool output whose summary names no command
	// (Claude Code's Read, Grep, Edit: "tool Read: 1 services:") takes its
	// call node's tool name and arguments for its command (callOf,
	// callCommand: `Read: {"file_path":"/…/docker-compose.yml"}`), so a
	// file read is updated only by a re-read of the same file, not by any
	// newer tool output. Off: on the end-of-session questions (80, and
	// the held-out 47) it changes no hit and no output first, at 1678 →
	// 1679 tokens a question (the reads it frees); probes and corpus
	// unchanged (docs/matching.md, "Intent ownership in an agent
	// session").
	RerunCall bool
	// CallNext: with Rerun, rule "a call is not updated by the next call":
	// an assistant's call whose summary names a command ("assistant bash
	// $ curl http://host:8000: I will fetch the index page") is not
	// superseded by the assistant's node two steps on (the next call,
	// after its own output), whose note restates what that output printed
	// ("The index page lists several Perl CGI scripts. I will check
	// hello.pl") and whose own output is another command's. The older call
	// is kept, and brings its own output (rule "a call brings its
	// output"); any later node updates it as before. Off: the 80
	// end-of-session questions 77 → 78 (1452 → 1462 tokens a question),
	// but held-out 47 and fresh 67 gain nothing and cost 1.3 % and 2.7 %
	// more tokens, and the rule's shape was narrowed after a look at the
	// held-out set, which can then not vouch for it: it helps one set only
	// (docs/matching.md, "A call is not updated by the next call").
	CallNext bool
	// RerunBeside: with Rerun, rule "an older run beside its re-run"
	// (beside.go; package match admits them). A tool output of a known
	// command (its summary's, or its call's with RerunCall) that intent
	// ownership superseded, every newer node updating it being an output
	// of the same command run again, and that scores over the cut-off on
	// its own, is listed in Result.Older with the steps of the re-runs
	// that no longer show a specific term it shows (Pick.UpdatedBy: a
	// path, identifier or number, the failure a fix removed; a re-run
	// repeating all of them stands for it). When one of those re-runs is
	// admitted, the best-ranked older run it updated that is not placed
	// yet is admitted right after it if it fits what remains of the
	// per-turn budget: at most one older run a re-run, never ahead of it,
	// never instead of it, costed and focused as any pick. After an exact
	// needle only an older run holding the needle is (a needle node the
	// needle stage left over the budget). On since 2026-12-07: the fresh 67
	// end-of-session questions 61 → 63 (2264 → 2300 tokens a question),
	// where its two cases came from, and the fourth 74, written blind after
	// the rule and decided on before it was run, 65 → 66 (2050 → 2063);
	// the 80 (78, 1481 → 1505) and the held-out 47 (44, 2634 → 2647) lose
	// nothing; probes, corpus, the wire probes and chat unchanged
	// (docs/matching.md, "An older run beside its re-run").
	RerunBeside bool
	// CallOutput: rule "a call brings its output" (ownOutputs; package
	// match places each output directly before its call). A pick that is
	// an assistant's call (its summary names a command or a tool) whose
	// own output — the tool node at the next step, of the same command —
	// the scan did not pick (below the cut-off, or holding no prompt term
	// at all: a traceback answering "what did the script fail with?") is
	// listed in Result.Outputs; an output intent ownership superseded (a
	// re-run of the same command updated it) or written after the
	// prompt's past is not. The question's words are in the call (the
	// sentence the agent wrote, the script's name) and the answer in what
	// it printed. After an exact needle a ranked call's output is not
	// brought (the needle's nodes are the evidence); a needle node that
	// is a call brings its own output when the ranked stage picked that
	// output, freed by Rerun or not. Measured (docs/matching.md, "A call
	// brings its output"): the 80 end-of-session questions 74 → 77 hits,
	// the held-out 47 38 → 41, the fresh 67 60 → 61; probes unchanged,
	// corpus +0.4 % tokens; chat untouched (no agent role).
	CallOutput bool
	// Background: rule "everyday words" (background.go), a background
	// prior on rarity. A prompt word whose stem is a common English word's
	// (SCOWL size level 10, 20, 35 or 40) has its terms weigh idf × (1 −
	// Background × c), c = 1, 1/2, 1/4, 1/8 by level; names, identifiers,
	// rarer words and words of no list are untouched (0: off). Off by
	// default: under the decision rule of docs/matching.md ("Deciding a
	// rule") 0.25 won 105 evidence turns and lost 123 over the chat sets
	// (p 0.26); half the content words of LoCoMo's questions are of size
	// 10, and they are what tells a conversation's turns apart.
	Background float64
	// BackgroundDF: rule "everyday words" as a pseudo-count. Such a word's
	// terms weigh by the idf of df + BackgroundDF × c × the live nodes, as
	// if a share BackgroundDF × c of any collection's documents held it (0:
	// off). Off by default: 0.002 (Zipf's estimate for a size-10 word in a
	// turn) won 46 evidence turns and lost 49 over the chat sets (p 0.84),
	// the noisy set 7 / 18 (p 0.043).
	BackgroundDF float64
	// BackgroundAgent: rule "everyday words in an agent session"
	// (background.go): rule "everyday words" at this weight (as
	// Background) when the store is an agent session, that is when at
	// most half of its live nodes are chat turns (a speaker's label, not
	// an agent role: Index.agentStore); a chat is untouched, and Background,
	// when set, applies to every store instead (0: off). An agent prompt's
	// English words ("what did the test print") weigh less against its
	// identifiers, paths and rarer words. Off (0.25 measured): the
	// held-out 47 end-of-session questions 44 → 45 and the fourth 74 (written
	// blind) 66 → 67 at 1–2 % fewer tokens a question, the 80 and fresh 67
	// unchanged in hits, chat byte-identical; but a weak match of an
	// everyday word (a fuzzy prefix, a typo's variant) then falls under the
	// Floor ("what about the serializer?" no longer finds the node that
	// writes "serializr", TestTypoTwoWordsAreNoTypo), and damping the
	// prompt's own words only keeps no gain (fresh 63 → 62, fourth 66)
	// (docs/matching.md, "Everyday words").
	BackgroundAgent float64
	// Fill: rule "a budget left is filled from below the cut-off"
	// (package match admits them). The candidates that intent ownership
	// left and the cut-off (Ratio × the best own score) kept out, scoring
	// at least Fill × the best own score, are listed in Result.Below,
	// best own score first (at most maxBelow); after every pick, they are
	// admitted in that order while they fit what remains of the per-turn
	// budget, never as the first pick, never after an exact needle
	// (0: off; Fill ≥ Ratio lists nothing). Off: at 0.2 (chosen on the 80
	// and the fourth 74 end-of-session questions, where five of the eight
	// misses were under the cut-off) the fourth 66 → 70 and the fresh 67
	// 63 → 64 at 7–10 % more tokens a question, the 80 and held-out 47
	// unchanged, chat +5 evidence turns / −0 (p 0.06); but the fifth 71,
	// written blind and decided on before it was run, 64 → 64 at 1,969 →
	// 2,142 tokens (docs/matching.md, "A budget left is filled from below
	// the cut-off").
	Fill float64
}

// maxBelow bounds Result.Below (rule "a budget left is filled from below
// the cut-off").
const maxBelow = 8

// DefaultParams are the constants the ranked mode uses.
func DefaultParams() Params {
	return Params{Answer: 0.8, Asker: 0.6, K1: 1.2, B: 0.5, MaxLenRatio: 6, Neighbour: 0.3, Covered: 0.5, Ratio: 0.3, Floor: 1.2, MinShare: 0.3, UnknownWord: 0.3,
		Supersede: true, MaxTerms: 64, Candidates: 64, Common: 0.3, FindCommon: 0.1, Context1: 0.3, Context2: 0.3, CoverShare: 0.6, When: 0.3, Speaker: 0.2, Near: 0.7, Delta: 0.5, FocusOver: 4, FocusAgentOver: 2, SkipLabel: true,
		ChatOwn: true, AnswerType: 0.3, Typo: 0.6, FirstAsks: true, TypoWords: true, Rerun: true, OutputFirst: true, FirstRunFirst: true, FirstOfKind: true,
		CallOutput: true, RerunBeside: true}
}

// commonMinNodes is the store size from which Params.FindCommon applies.
const commonMinNodes = 2000

// qterm is one distinct term of a prompt.
type qterm struct {
	id      int32
	text    string
	src     string
	kind    Kind
	weight  float64 // kindWeight × idf
	primary bool    // counts for coverage and intent ownership
	group   int     // terms derived from one word of the prompt share a group
	special bool    // a specific term: a compound or an identifier-like word
	df      int     // live nodes holding it
}

// Query is an analysed prompt against one index.
type Query struct {
	terms  []qterm
	groups int
	// info is the prompt's information: the weights of its known terms plus
	// the highest idf for each unknown word.
	info float64
	all  []string // every distinct term text of the prompt, for display
	// words is the number of the prompt's content words (distinct sources
	// of its primary terms), unknown those of them no node holds in any
	// form (rule "news to the archive").
	words, unknown int
	// instruction: the prompt asks for new work (rule "instructions").
	instruction bool
	// when: the prompt asks for a time (rule "a when-question is answered
	// by a time", when.go).
	when bool
	// first: the prompt asks for the first or original one (FirstAsks).
	first bool
	// names and whys: each term's name and reason in Pick.Why, made at
	// the first pick holding it (termWhy).
	names, whys []string
}

// newWork are the imperative verbs that open a request for new work
// (English, Spanish, Turkish): "write the README", "crea un test", "yaz".
var newWork = map[string]bool{}

// leadFiller are the words that may come before such a verb ("now write",
// "ok, please add", "ahora escribe").
var leadFiller = map[string]bool{}

func init() {
	for _, w := range strings.Fields("write add create implement generate draft compose make design scaffold build produce escribe escribir crea crear añade añadir agrega genera implementa redacta yaz oluştur ekle üret") {
		newWork[w] = true
	}
	for _, w := range strings.Fields("now please pls ok okay so then and next also great thanks cool alright right fine let's lets just can could you ahora por favor vale bueno şimdi lütfen tamam") {
		leadFiller[w] = true
	}
}

// isInstruction reports whether the prompt opens, after filler, with a
// verb of new work.
func isInstruction(prompt string) bool {
	n := 0
	for _, f := range strings.FieldsFunc(prompt, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		if n++; n > 8 {
			return false
		}
		w := strings.ToLower(f)
		if leadFiller[w] {
			continue
		}
		return newWork[w]
	}
	return false
}

// smallStore is the store size below which the Floor shrinks (rule "small
// stores"): in a store of N < smallStore nodes the highest idf is
// idf_N(0) < idf_smallStore(0), and every weight shrinks with it (a term of
// the only node of a one-node store weighs log(1 + 0.5/1.5) ≈ 0.29), so
// the Floor is scaled by idf_N(0) / idf_smallStore(0): a store of one node
// is judged in the units it has. The ranking itself keeps the plain idf.
const smallStore = 20

// floor is p.Floor in the store's idf units (see smallStore).
func (ix *Index) floor(p Params) float64 {
	if ix.live >= smallStore {
		return p.Floor
	}
	return p.Floor * ix.idf(0) / math.Log(1+(smallStore+0.5)/0.5)
}

func (ix *Index) idf(df int) float64 {
	n := float64(ix.live)
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// query analyses a prompt. Callers hold ix.mu.
func (ix *Index) query(prompt string, p Params) *Query {
	if p.BackgroundAgent > 0 && p.Background <= 0 && p.BackgroundDF <= 0 && ix.agentStore() {
		p.Background = p.BackgroundAgent // rule "everyday words in an agent session"
	}
	q := &Query{}
	prompt = stripAgentMarkup(prompt)
	best := map[string]Term{}
	var order []string
	analyzeQuery(prompt, func(t Term) {
		old, ok := best[t.Text]
		if !ok {
			order = append(order, t.Text)
			best[t.Text] = t
			return
		}
		if kindWeight[t.Kind] > kindWeight[old.Kind] {
			best[t.Text] = t
		}
	})
	// Rule "tool and failure names": the aliases of the prompt's words
	// (aliases.go), unless the prompt holds that term itself.
	for _, text := range order[:len(order):len(order)] {
		if t := best[text]; t.Kind == KindWord {
			for _, a := range aliases[text] {
				if _, ok := best[a]; !ok {
					order = append(order, a)
					best[a] = Term{a, KindAlias, t.Src}
				}
			}
		}
	}
	// The best known alias of each prompt word: it stands for the word in
	// the prompt's information when the archive knows the word under no
	// other form ("linker" is news, "ld" is not).
	aliasWeight := map[string]float64{}
	for _, text := range order {
		if t := best[text]; t.Kind == KindAlias {
			if id, ok := ix.termID(text); ok {
				if df := ix.liveDF(id); df > 0 {
					aliasWeight[t.Src] = max(aliasWeight[t.Src], kindWeight[KindAlias]*ix.idf(df))
				}
			}
		}
	}
	primaryKnown := map[string]bool{}
	maxIdf := ix.idf(0)
	// Rule "everyday words" (background.go): the share of each prompt
	// word whose stem English uses every day (nil when the rule is off).
	bg := backgroundShares(best, order, p)
	for _, text := range order {
		t := best[text]
		id, ok := ix.termID(text)
		df := 0
		if ok {
			df = ix.liveDF(id)
		}
		if df == 0 && aliasWeight[t.Src] > 0 {
			continue // the word is known through its alias
		}
		if df == 0 {
			// An unknown specific term (a path, a version, an identifier with
			// digits, underscores or inner capitals) is information the
			// archive lacks.
			// An unknown ordinary word counts half: a prompt about a haiku
			// on autumn leaves is not about the one node that says "leaves".
			switch {
			case t.Kind == KindCompound || (t.Kind == KindWord && specific(t.Src)):
				q.info += kindWeight[t.Kind] * maxIdf
			case t.Kind == KindWord || t.Kind == KindCJK || t.Kind == KindNumber:
				q.info += kindWeight[t.Kind] * maxIdf * p.UnknownWord
			}
			continue
		}
		w := kindWeight[t.Kind] * ix.idf(df)
		if bg != nil && t.Kind != KindCompound {
			if c, ok := bg[t.Src]; ok {
				w = ix.backgroundWeight(w, df, c, p)
			}
		}
		q.terms = append(q.terms, qterm{id: id, text: text, src: t.Src, kind: t.Kind, weight: w, primary: !secondary(t.Kind),
			special: t.Kind == KindCompound || (t.Kind == KindWord && specific(t.Src)), df: df})
		if !secondary(t.Kind) {
			q.info += w
			primaryKnown[t.Src] = true
		}
	}
	derived := len(q.terms)
	if p.Typo > 0 {
		q.terms = ix.typoTerms(q.terms, best, order, p)
	}
	if p.Related > 0 {
		q.terms = ix.relatedTerms(q.terms, best, order, p)
	}
	for i := derived; i < len(q.terms) && bg != nil; i++ {
		if c, ok := bg[q.terms[i].src]; ok && p.Background > 0 {
			q.terms[i].weight *= max(0, 1-p.Background*c)
		}
	}
	for _, text := range order {
		if t := best[text]; t.Kind == KindAlias && !primaryKnown[t.Src] && aliasWeight[t.Src] > 0 {
			q.info += aliasWeight[t.Src]
			primaryKnown[t.Src] = true
		}
	}
	q.all = order
	// Content words, known or not.
	known := map[string]bool{}
	for _, t := range q.terms {
		known[t.src] = true
	}
	counted := map[string]bool{}
	for _, text := range order {
		t := best[text]
		if secondary(t.Kind) || counted[t.Src] {
			continue
		}
		counted[t.Src] = true
		q.words++
		if !known[t.Src] {
			q.unknown++
		}
	}
	q.instruction = isInstruction(prompt)
	q.when = asksWhen(prompt)
	q.first = asksFirst(prompt)
	// The rarest terms first; ties by text (deterministic).
	sort.Slice(q.terms, func(a, b int) bool {
		if q.terms[a].weight != q.terms[b].weight {
			return q.terms[a].weight > q.terms[b].weight
		}
		return q.terms[a].text < q.terms[b].text
	})
	if len(q.terms) > p.MaxTerms {
		q.terms = q.terms[:p.MaxTerms]
	}
	// A prompt word counts once: its stem, its fuzzy prefix and its parts
	// form a group scored by the best of them.
	gid := map[string]int{}
	for i := range q.terms {
		g, ok := gid[q.terms[i].src]
		if !ok {
			g = len(gid)
			gid[q.terms[i].src] = g
		}
		q.terms[i].group = g
	}
	q.groups = len(gid)
	return q
}

// liveDF is the number of live docs holding term id (a long list is
// counted, not decoded: Index.count).
func (ix *Index) liveDF(id int32) int {
	return ix.count(id)
}

// sat is the BM25+ saturation of a term held tf times by doc d, the term
// being held by df live docs: BM25's, plus Params.Delta. Rule "rare terms in long nodes": in a long
// node (over longNode × the mean length, in analysed words: a build log, a
// listing, a file read — output, not a turn of conversation) a term held
// by at most rareDF nodes is scored as in a node of average length: length
// normalisation keeps a long node from winning on a common word it holds
// by chance, while a word that only a 400-line build log or a 250-entry
// listing holds is found there as surely as in a short turn. Nodes up to
// longNode × the mean keep the plain normalisation (conversational turns,
// whose lengths do say how much of a turn a word is).
func (ix *Index) sat(tf uint16, d int32, p *Params, df int) float64 {
	return ix.docSat(d, p).sat(tf, p, df)
}

// docSat is Index.sat's part that depends on the doc alone, computed once
// for every prompt term of a candidate (Index.detailFrom): the doc's
// length normalisation, and whether it is a long node (rule "rare terms
// in long nodes": a rare term is scored there with rareNorm, the
// normalisation of a node of average length).
type docSat struct {
	norm, rareNorm float64
	long           bool
}

// docSat returns doc d's docSat under p.
func (ix *Index) docSat(d int32, p *Params) docSat {
	avg := ix.total / float64(max(ix.live, 1))
	r := ix.hot[d].length / avg
	if r > p.MaxLenRatio {
		r = p.MaxLenRatio
	}
	ds := docSat{norm: lengthNorm(r, *p)}
	if r > longNode && ix.live > rareDF {
		ds.long, ds.rareNorm = true, lengthNorm(1, *p)
	}
	return ds
}

// sat is Index.sat of the doc ds was computed for: the same operations in
// the same order, so the same bits.
func (ds docSat) sat(tf uint16, p *Params, df int) float64 {
	n := ds.norm
	if df <= rareDF && ds.long {
		n = ds.rareNorm
	}
	f := float64(tf)
	return f*(p.K1+1)/(f+n) + p.Delta
}

// match is how one candidate holds each prompt term.
type match struct {
	doc   int32
	score float64   // total score (no coverage discount)
	own   []float64 // per query term: saturation in the node itself
	nb    []float64 // per query term: weighted saturation in a neighbour
	nbDoc []int32   // the neighbour that lent it
	mask  uint64    // primary terms held by the node itself
	ctx   float64   // rule "topic context": the weighted scores of the nodes around it
	// lift: the ordering rules that raised ctx (liftWhen, liftSpeaker),
	// shown in Pick.Why.
	lift uint8
	// lifted: the part of ctx the ordering rules added (ctx - lifted is
	// the topic context).
	lifted float64
}

// raise adds an ordering rule's bonus b to m's rank (ctx), records it as
// lifted, and marks the rule (one of the lift bits) for Pick.Why.
func (m *match) raise(b float64, rule uint8) {
	m.ctx += b
	m.lifted += b
	m.lift |= rule
}

// Bits of match.lift.
const (
	liftWhen    uint8 = 1 << iota // rule "a when-question is answered by a time"
	liftSpeaker                   // rule "the person named speaks"
	liftTopic                     // rule "a chat's topic admits"
	liftNear                      // rule "the prompt's words together"
	liftType                      // rule "a question is answered by its type"
)

// longNode: a node over this many times the store's mean token estimate
// is long (Pick.Long).
const longNode = 4

// rareDF is the document frequency up to which a matched prompt word makes
// a long pick Rare (rule "cost" in package match).
const rareDF = 2

// Pick is one node chosen by a ranked scan, or left out by it.
type Pick struct {
	Step    int
	Score   float64  // marginal score when picked (idf units)
	Terms   []string // prompt terms it matched, sorted
	Why     []string // how each matched (see the rules on Params)
	Tokens  int      // the node's token_estimate
	Summary string
	// Share is the share of the prompt's information (Query.info) that the
	// node holds itself, 0 to 1; Special: it holds a specific term of the
	// prompt itself (a path, an identifier, a number of 3+ digits). The
	// caller weighs them against the pick's cost (rule "cost").
	Share   float64
	Special bool
	// Rare: it holds a word of the prompt (not a secondary form) that at
	// most rareDF nodes of the store hold: rarity is the signal a long
	// build log or file read is found by ("what did the linker say?").
	Rare bool
	// Named: it holds a specific term of the prompt (Special) that at most
	// rareDF nodes hold: the identifier, path or number the human named is
	// in it (rule "the named thing first" in package match).
	Named bool
	// Long: the node's token_estimate is over longNode × the mean of the
	// store's nodes (a file read, a build log).
	Long bool
	// IsCompanion: chosen as the companion of the pick at step CompanionOf
	// (its neighbour; conversation structure), not on its own merits.
	CompanionOf int
	IsCompanion bool
	// Freed: intent ownership would have superseded it but for rule "an
	// output is updated by its re-run" (Params.Rerun): a tool's output
	// whose newer nodes holding its prompt terms are no re-run of its
	// command. Package match hydrates it only when no exact needle of the
	// prompt was.
	Freed bool
	// IsOutput: brought by its call at step OutputOf (rule "a call brings
	// its output", Params.CallOutput), not on its own merits.
	IsOutput bool
	OutputOf int
	// UpdatedBy: for an older run listed in Result.Older (rule "an older
	// run beside its re-run", Params.RerunBeside), the steps of the newer
	// outputs of its command that superseded it and no longer show a
	// specific term it shows, in the scan's rank order; nil for any other
	// pick.
	UpdatedBy []int
}

// Result is a ranked scan's outcome before the budget: the picks in order,
// and the candidates the cut-off or intent ownership left out.
type Result struct {
	Terms      []string // the prompt's matchable terms, sorted
	Picks      []Pick
	CutOff     []Pick // scored but below the cut-off (at most 10)
	Superseded []Pick // held only terms a newer node holds (CONF-13; at most 10)
	// Outputs: rule "a call brings its output" (Params.CallOutput), the
	// own output of each pick that is an assistant's call, when the scan
	// did not pick it, in the order of their calls; each with IsOutput
	// and OutputOf set. CallOutputs maps each such call's step to its
	// own output's, picked or not (nil when none).
	Outputs     []Pick
	CallOutputs map[int]int
	// Older: rule "an older run beside its re-run" (Params.RerunBeside),
	// the superseded tool outputs that only re-runs of their command
	// updated, that pass the cut-off and show a specific term one of
	// those re-runs does not, best-ranked first, each with
	// UpdatedBy set; nil when the rule is off. They are no picks: package
	// match admits one beside a re-run it admitted.
	Older []Pick
	// Below: rule "a budget left is filled from below the cut-off"
	// (Params.Fill), the candidates under the cut-off and at least Fill ×
	// the best own score, that no pick or companion took, best own score
	// first (ties by newest step), at most maxBelow; nil when the rule is
	// off.
	Below []Pick
}

// score computes every candidate's total score, among the docs of steps
// below before (every doc when before < 0). Callers hold ix.mu.
func (ix *Index) score(q *Query, p Params, before int) []*match {
	if len(q.terms) == 0 || ix.live == 0 {
		return nil
	}
	n := len(ix.docs)
	ix.cells = scratch(ix.cells, n)
	cells := ix.cells
	// A doc's sum is in touched, at the doc's slot (scoreCell.slot) when
	// its cell's gen is this scan's: the docs in the order they were first
	// touched, so that the candidates' pass reads them in sequence, and no
	// pass sets the cells back after the scan.
	ix.scoreGen++
	if ix.scoreGen == 0 {
		clear(cells[:cap(cells)])
		ix.scoreGen = 1
	}
	gen := ix.scoreGen
	touched := ix.touched[:0]
	groupTouched := ix.groupTouched[:0]
	// Params.FindCommon: the prompt's common terms find no candidates when
	// it has a rarer term that does (else they are walked: a prompt of
	// common terms only is judged by Index.passes, not dropped here).
	common := func(t qterm) bool {
		return ix.live >= commonMinNodes && float64(ix.count(t.id)) > p.FindCommon*float64(ix.live)
	}
	skipCommon := false
	for _, t := range q.terms {
		if !common(t) {
			skipCommon = true
			break
		}
	}
	for g := 0; g < q.groups; g++ {
		groupTouched = groupTouched[:0]
		for _, t := range q.terms {
			if t.group != g || (skipCommon && common(t)) {
				continue
			}
			groupTouched = ix.walk(t, p, before, groupTouched)
		}
		touched = addGroup(cells, groupTouched, gen, touched)
	}
	ix.touched = touched[:0]
	// The closures below read the list as it now stays (a variable a
	// closure captures and the code assigns is read from memory at every
	// use).
	sumOf := touched
	// acc is doc d's sum (0: not touched).
	acc := func(d int32) float64 {
		if c := &cells[d]; c.gen == gen {
			return sumOf[c.slot].sum
		}
		return 0
	}
	// The best candidates, by score then newest step: a bounded min-heap
	// over the touched nodes (O(n log K), no full sort), of their slots.
	better := func(a, b int32) bool {
		if sumOf[a].sum != sumOf[b].sum {
			return sumOf[a].sum > sumOf[b].sum
		}
		return ix.docs[sumOf[a].doc].step > ix.docs[sumOf[b].doc].step
	}
	k := p.Candidates
	h := make([]int32, 0, k)
	down := func(h []int32, i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && better(h[m], h[l]) {
				m = l
			}
			if r := l + 1; r < len(h) && better(h[m], h[r]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	// Once the heap is full, worst is its root's score: most touched docs
	// score below it and are passed over on that one comparison (better
	// decides the rest, ties by step, as before).
	worst := 0.0
	for slot := range sumOf {
		x, a := int32(slot), sumOf[slot].sum
		switch {
		case len(h) < k:
			h = append(h, x)
			for i := len(h) - 1; i > 0; {
				parent := (i - 1) / 2
				if !better(h[parent], h[i]) {
					break
				}
				h[i], h[parent] = h[parent], h[i]
				i = parent
			}
			if len(h) == k {
				worst = sumOf[h[0]].sum
			}
		case a < worst:
		case better(x, h[0]):
			h[0] = x
			down(h, 0)
			worst = sumOf[h[0]].sum
		}
	}
	sort.Slice(h, func(a, b int) bool { return better(h[a], h[b]) })
	for i, x := range h {
		h[i] = sumOf[x].doc
	}
	// Rule "topic context": the scores around a node lift it. The best
	// candidates and the nodes around them are ranked again by their own
	// score plus their context, each context summed in a fixed order (two
	// before, one before, one after, two after) so that it is the same bits
	// whatever the postings order; the best Candidates of them go on. Work:
	// O(Candidates), whatever the store size.
	if p.Context1 > 0 || p.Context2 > 0 {
		ix.ctx = scratch(ix.ctx, n)
		// around: the nodes 3, 2, 1 steps before and 1, 2, 3 after (-1:
		// none; consecutive steps only).
		aroundOf := func(d int32) [6]int32 {
			around := [6]int32{-1, -1, -1, -1, -1, -1}
			prev, next := ix.neighbours(d)
			around[2], around[3] = prev, next
			for k := 2; k > 0 && around[k] >= 0 && (k > 1 || p.Context3 > 0); k-- {
				around[k-1], _ = ix.neighbours(around[k])
			}
			for k := 3; k < 5 && around[k] >= 0 && (k < 4 || p.Context3 > 0); k++ {
				_, around[k+1] = ix.neighbours(around[k])
			}
			return around
		}
		ix.inSet = scratch(ix.inSet, n)
		inSet := ix.inSet
		set := make([]int32, 0, 7*len(h))
		for _, d := range h {
			if !inSet[d] {
				inSet[d] = true
				set = append(set, d)
			}
			for _, o := range aroundOf(d) {
				if o >= 0 && !ix.hot[o].dead && !inSet[o] && (before < 0 || ix.docs[o].step < before) {
					inSet[o] = true
					set = append(set, o)
				}
			}
		}
		for _, d := range set {
			inSet[d] = false
		}
		w := [6]float64{p.Context3, p.Context2, p.Context1, p.Context1, p.Context2, p.Context3}
		for _, d := range set {
			v := 0.0
			for k, o := range aroundOf(d) {
				if o >= 0 {
					v += w[k] * acc(o)
				}
			}
			ix.ctx[d] = v
		}
		// By ranking score, then newest step (a total order: live docs
		// have distinct steps), each key read once.
		type keyed struct {
			rk   float64
			step int
			d    int32
		}
		ks := make([]keyed, len(set))
		for i, d := range set {
			ks[i] = keyed{acc(d) + ix.ctx[d], ix.docs[d].step, d}
		}
		slices.SortFunc(ks, func(a, b keyed) int {
			if a.rk != b.rk {
				if a.rk > b.rk {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.step, a.step)
		})
		for i := range ks {
			set[i] = ks[i].d
		}
		if len(set) > k {
			for _, d := range set[k:] {
				ix.ctx[d] = 0
			}
			set = set[:k]
		}
		h = set
	}
	// The candidates' full scores (common terms included), best first.
	out := ix.detailAll(q, h, p)
	for _, m := range out {
		if ix.ctx != nil {
			m.ctx, ix.ctx[m.doc] = ix.ctx[m.doc], 0
		}
	}
	ix.groupTouched = groupTouched[:0]
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].rank() != out[b].rank() {
			return out[a].rank() > out[b].rank()
		}
		return ix.docs[out[a].doc].step > ix.docs[out[b].doc].step
	})
	return out
}

// touchedDoc is a doc the scan touched and its sum so far (Index.score),
// at its slot.
type touchedDoc struct {
	sum float64
	doc int32
}

// addGroup adds the scores of a prompt word's group (the tmp of the cells
// of groupTouched, set back to zero) to the sums of scan gen, giving a doc
// touched for the first time the next slot, and returns the touched docs.
// A function of its own: in score's body, among its closures, the loop's
// variables were spilled to memory at every doc (hence noinline).
//
//go:noinline
func addGroup(cells []scoreCell, groupTouched []int32, gen uint32, touched []touchedDoc) []touchedDoc {
	for _, d := range groupTouched {
		c := &cells[d]
		v := float64(c.tmp) // +0 or above: walk keeps only a score above tmp
		c.tmp = 0
		if c.gen == gen {
			touched[c.slot].sum += v
			continue
		}
		// The doc's first group: its sum is v (0 + v, the same bits).
		c.gen, c.slot = gen, int32(len(touched))
		touched = append(touched, touchedDoc{v, d})
	}
	return touched
}

// eagerCover makes the ranked set cover score every kept candidate every
// round (tests compare both ways).
var eagerCover = false

// scoreCell is the posting walk's state of one doc (Index.score): tmp,
// the best score of the word being walked (zero between words and scans);
// gen, the scan (Index.scoreGen) that last touched the doc, and slot, the
// doc's place in that scan's touched list (Index.touched): a cell of an
// older scan is a doc not touched, so nothing sets the cells back between
// scans. One struct a doc, so that a posting's doc is one cache line.
type scoreCell struct {
	tmp  float32
	gen  uint32
	slot int32
}

// scratch returns a per-doc scratch slice of at least n elements, s
// itself when it has the room. Every element of a scratch slice, within
// its capacity, is zero between scans (score sets back to zero what it
// sets), so a slice grown within its capacity needs no clearing, and one
// made anew has an eighth more room: a fold adds a doc, and the next scan
// does not allocate (and zero) every table again.
func scratch[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n, n+n/8)
	}
	if len(s) < n {
		return s[:n]
	}
	return s
}

// tf is the frequency of term id in doc d (binary search: postings ascend
// by doc; a long list is looked up in place, Index.longTF).
func (ix *Index) tf(id int32, d int32) uint16 {
	ps, l := ix.list(id)
	if l != nil {
		tf, _ := ix.longTF(id, l, d)
		return tf
	}
	lo, hi := 0, len(ps)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ps[m].doc < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ps) && ps[lo].doc == d {
		return ps[lo].tf
	}
	return 0
}

// rank is the candidate's ranking score: its own score plus its topic
// context (rule "topic context").
func (m *match) rank() float64 { return m.score + m.ctx }

// strength is how strongly m holds query term i (its own saturation, or its
// neighbour's, whichever is larger).
func (m *match) strength(i int) float64 { return max(m.own[i], m.nb[i]) }

// scanLocked is ScanBefore under ix.mu; without explain, ScanPicksBefore
// (the nodes left out are not described).
func (ix *Index) scanLocked(prompt string, p Params, before int, explain bool) *Result {
	q := ix.query(prompt, p)
	res := &Result{Terms: displayTerms(q)}
	cands := ix.score(q, p, before)
	if len(cands) == 0 {
		return res
	}
	ix.whenRank(q, cands, p)
	ix.speakerRank(prompt, cands, p)
	ix.typeRank(prompt, cands, p)
	ix.proximityRank(q, cands, p)
	// The cut-off judges the node that scores best on its own.
	first := cands[0]
	for _, c := range cands {
		if c.score > first.score {
			first = c
		}
	}
	top := first.score
	if !ix.passes(q, first, p) {
		for i, c := range cands {
			if i == 10 || !explain {
				break
			}
			res.CutOff = append(res.CutOff, ix.pick(q, c, c.score, nil))
		}
		return res
	}
	// Intent ownership: a candidate whose primary terms a newer candidate
	// all holds is superseded (the newest node owns that intent).
	alive := make([]*match, 0, len(cands))
	var older []*match // rule "an older run beside its re-run": superseded, in rank order
	superseded := map[int32]bool{}
	freed := map[int32]bool{} // rule "an output is updated by its re-run"
	labels := labelTerms{}
	for _, c := range cands {
		own, without := false, false
		if p.Supersede && !(p.FirstAsks && q.first) && c.mask != 0 && !(p.ChatOwn && ix.chatTurn(c.doc)) {
			own, without = ix.superseded(c, cands, p, labels)
		}
		if without && !own {
			freed[c.doc] = true
		}
		if own {
			superseded[c.doc] = true
			if p.RerunBeside && p.Rerun {
				older = append(older, c)
			}
			if len(res.Superseded) < 10 {
				if explain {
					res.Superseded = append(res.Superseded, ix.pick(q, c, c.score, nil))
				} else {
					res.Superseded = append(res.Superseded, Pick{Step: ix.docs[c.doc].step})
				}
			}
			continue
		}
		alive = append(alive, c)
	}
	// Ranked set cover: the next pick is the candidate of largest marginal
	// score, a prompt word already covered by an earlier pick counting only
	// Covered; a candidate is admitted only if its own total score is at
	// least Ratio × the best (cut-off).
	//
	// Rule "cover, then rank": the discount holds while the picks leave a
	// share of the prompt's words (by weight) uncovered; once they cover
	// CoverShare of it, the prompt's aspects are all answered and the rest
	// of the picks go by full score (in a conversation the same words come
	// back in new events: a second turn about the painting is no
	// repetition of the first).
	covered := make([]bool, q.groups)
	threshold := p.Ratio * top
	if len(older) > 0 {
		res.Older = ix.olderRuns(q, p, older, cands, threshold, labels)
	}
	best := make([]float64, q.groups)
	groupW := make([]float64, q.groups)
	mass := 0.0
	for _, t := range q.terms {
		groupW[t.group] = max(groupW[t.group], t.weight)
	}
	for _, w := range groupW {
		mass += w
	}
	discount := p.Covered
	// coveredW: the heaviest term of each prompt word an earlier pick
	// holds itself. A term is discounted as covered only up to that
	// weight: a node holding the identifier HandleFunc is not "already
	// covered" by one that held only its part "handle".
	coveredW := make([]float64, q.groups)
	marginal := func(c *match) float64 {
		clear(best)
		for i, t := range q.terms {
			v := c.strength(i) * t.weight
			if covered[t.group] && t.weight <= coveredW[t.group] && discount < 1 {
				// A covered term lends no presence credit (Delta): holding
				// it again is no news; its frequency still counts Covered.
				v = max(0, c.strength(i)-p.Delta) * t.weight * discount
			}
			best[t.group] = max(best[t.group], v)
		}
		s := c.ctx
		for _, v := range best {
			s += v
		}
		return s
	}
	var kept, order []*match
	picked := map[int32]bool{}
	for _, c := range alive {
		// The cut-off is on the node's own score: topic context orders
		// the nodes that pass; it lets one pass only at the lower bar of
		// rule "a chat's topic admits" (chat.go), and only a node holding
		// prompt terms of its own.
		if c.score >= threshold || ix.topicAdmits(c, threshold, p) {
			kept = append(kept, c)
		} else if explain && len(res.CutOff) < 10 {
			res.CutOff = append(res.CutOff, ix.pick(q, c, c.score, nil))
		}
	}
	// The next pick is the candidate of largest marginal score, ties by
	// newest step. A marginal score only falls from one pick to the next
	// while the discount holds (covered and coveredW only grow, a
	// discounted term scores at most what it did), and is the first
	// round's again once it is lifted; so a candidate's last score bounds
	// it (ub), and only the candidate with the largest bound is scored
	// again, until the best bound is one of this round's scores: the same
	// picks, in the same order, with the same scores, as scoring every
	// candidate every round (O(kept² × terms)). That holds for
	// non-negative strengths, weights, Delta and Covered and finite
	// scores, checked first; otherwise every candidate is scored every
	// round.
	round0 := make([]float64, len(kept)) // the first round's scores
	lazy := p.Delta >= 0 && p.Covered >= 0 && !eagerCover
	for i, c := range kept {
		round0[i] = marginal(c)
		lazy = lazy && !math.IsNaN(round0[i]) && !math.IsInf(round0[i], 0)
		for j := range q.terms {
			lazy = lazy && c.strength(j) >= 0 && q.terms[j].weight >= 0
		}
	}
	ub := slices.Clone(round0)
	at := make([]int, len(kept)) // the round ub[i] was scored in
	for round := 0; len(kept) > 0; round++ {
		bi, bs := -1, 0.0
		if !lazy {
			for i, c := range kept {
				s := marginal(c)
				if bi < 0 || s > bs || (s == bs && ix.docs[c.doc].step > ix.docs[kept[bi].doc].step) {
					bi, bs = i, s
				}
			}
		}
		for lazy {
			bi = -1
			for i, c := range kept {
				if bi < 0 || ub[i] > bs || (ub[i] == bs && ix.docs[c.doc].step > ix.docs[kept[bi].doc].step) {
					bi, bs = i, ub[i]
				}
			}
			if at[bi] == round || discount >= 1 {
				break
			}
			ub[bi], at[bi] = marginal(kept[bi]), round
		}
		c := kept[bi]
		kept = append(kept[:bi], kept[bi+1:]...)
		round0 = append(round0[:bi], round0[bi+1:]...)
		ub = append(ub[:bi], ub[bi+1:]...)
		at = append(at[:bi], at[bi+1:]...)
		res.Picks = append(res.Picks, ix.pick(q, c, bs, covered))
		res.Picks[len(res.Picks)-1].Freed = freed[c.doc]
		for i, t := range q.terms {
			if c.own[i] > 0 {
				covered[t.group] = true
				coveredW[t.group] = max(coveredW[t.group], t.weight)
			}
		}
		if p.CoverShare > 0 {
			done := 0.0
			for g, w := range groupW {
				if covered[g] {
					done += w
				}
			}
			if done >= p.CoverShare*mass && discount < 1 {
				discount = 1
				copy(ub, round0) // no discount: the first round's scores
			}
		}
		picked[c.doc] = true
		order = append(order, c)
	}
	// Conversation structure: the node just before or after a pick (the
	// answer after a question, the result after its call, the call before
	// its result) is a companion when the words the pick holds and it lacks,
	// weighted by Neighbour, lift it over the cut-off. Companions come after
	// every pick made on its own merits, so they only use what budget is
	// left.
	out := res.Picks
	var near []int32
	for _, c := range order {
		prev, next := ix.neighbours(c.doc)
		for _, nd := range [2]int32{prev, next} {
			if nd >= 0 && !picked[nd] && !superseded[nd] && (before < 0 || ix.docs[nd].step < before) {
				near = append(near, nd)
			}
		}
	}
	detail := ix.detailer(q, p, near)
	for _, c := range order {
		prev, next := ix.neighbours(c.doc)
		for _, nd := range [2]int32{prev, next} {
			if nd < 0 || picked[nd] || superseded[nd] || (before >= 0 && ix.docs[nd].step >= before) {
				continue
			}
			m := detail(nd)
			lent := 0.0
			clear(best)
			holds := make([]bool, q.groups)
			for i, t := range q.terms {
				if m.own[i] > 0 {
					holds[t.group] = true
				}
			}
			for i, t := range q.terms {
				if holds[t.group] || c.own[i] == 0 {
					continue
				}
				m.nb[i], m.nbDoc[i] = p.Neighbour*c.own[i], c.doc
				best[t.group] = max(best[t.group], m.nb[i]*t.weight)
			}
			for _, v := range best {
				lent += v
			}
			// lent is at most Neighbour × the pick's own score, and the
			// cut-off is Ratio × the best own score: with Neighbour ≤
			// Ratio only a neighbour of the best pick holding none of its
			// words reaches the cut-off, and then exactly, where the
			// rounding of two sums of the same products decided (the
			// agent probes: 70 neighbours at exactly the cut-off, 28 one
			// ulp over, an unknown number one ulp under). "Over the
			// cut-off" is strict, by more than rounding.
			if lent > threshold*(1+1e-9) {
				picked[nd] = true
				pk := ix.pick(q, m, lent, nil)
				pk.CompanionOf, pk.IsCompanion = ix.docs[c.doc].step, true
				out = append(out, pk)
			}
		}
	}
	res.Picks = out
	if p.Fill > 0 && p.Fill < p.Ratio {
		res.Below = ix.below(q, alive, picked, top*p.Fill, threshold)
	}
	if p.Fuse > 0 {
		res.Picks = ix.fuse(q, res.Picks, alive, p)
	}
	if p.CallOutput {
		res.Outputs, res.CallOutputs = ix.ownOutputs(q, p, order, picked, superseded, freed, before)
	}
	return res
}

// detail computes how doc d holds each prompt term itself.
func (ix *Index) detail(q *Query, d int32, p Params) *match {
	// The frequencies in a table of two docs: d (column 0) and the
	// question turn before it (column 1).
	tfs := make([]uint16, 2*len(q.terms))
	prev, _ := ix.neighbours(d)
	asker := prev >= 0 && ix.docs[prev].question
	for i := range q.terms {
		tfs[2*i] = ix.tf(q.terms[i].id, d)
		if asker {
			tfs[2*i+1] = ix.tf(q.terms[i].id, prev)
		}
	}
	return ix.detailFrom(q, d, &p, tfs, 2, 0, 1, newMatches(1, len(q.terms), q.groups))
}

// matchBlock holds the matches of a batch of docs and their per-term
// arrays, allocated together (detailAll's 64-odd candidates took three
// allocations each), and detailFrom's scratch for the groups' best
// scores.
type matchBlock struct {
	ms    []match
	fl    []float64
	nbDoc []int32
	best  []float64
}

// newMatches returns the room for n matches of nt query terms in ng
// groups each.
func newMatches(n, nt, ng int) *matchBlock {
	return &matchBlock{ms: make([]match, n), fl: make([]float64, 2*n*nt), nbDoc: make([]int32, n*nt), best: make([]float64, ng)}
}

// next returns the block's next zero match, its own, nb and nbDoc of nt
// terms each (full slices: an append to one never reaches another's).
func (b *matchBlock) next(nt int) *match {
	m := &b.ms[0]
	m.own, m.nb, m.nbDoc = b.fl[:nt:nt], b.fl[nt:2*nt:2*nt], b.nbDoc[:nt:nt]
	b.ms, b.fl, b.nbDoc = b.ms[1:], b.fl[2*nt:], b.nbDoc[nt:]
	return m
}

// detailFrom is detail with tfs[i*nl+jd] the frequency of query term i in
// doc d and, when the node before d is a question turn, tfs[i*nl+jp] its
// frequency there (a table of nl docs by term, see detailAll); the match
// is taken from block. Each term's saturation is Index.sat's (docSat: the
// doc's part once a doc).
func (ix *Index) detailFrom(q *Query, d int32, p *Params, tfs []uint16, nl, jd, jp int, block *matchBlock) *match {
	m := block.next(len(q.terms))
	m.doc = d
	prev, _ := ix.neighbours(d)
	asker := prev >= 0 && ix.docs[prev].question
	question := ix.docs[d].question
	ds := ix.docSat(d, p)
	var dp docSat
	if asker {
		dp = ix.docSat(prev, p)
	}
	own := m.own
	nb, nbDoc := m.nb[:len(own)], m.nbDoc[:len(own)]
	for i := range q.terms {
		t := &q.terms[i]
		nbDoc[i] = -1
		if tf := tfs[i*nl+jd]; tf > 0 {
			own[i] = ds.sat(tf, p, t.df)
			if question {
				own[i] *= p.Asker
			}
			if t.primary && i < 64 {
				m.mask |= 1 << i
			}
		}
		if asker {
			if tf := tfs[i*nl+jp]; tf > 0 {
				if v := p.Answer * dp.sat(tf, p, t.df); v > own[i] {
					nb[i], nbDoc[i] = v, prev
				}
			}
		}
	}
	best := block.best[:q.groups]
	clear(best)
	for i := range q.terms {
		t := &q.terms[i]
		best[t.group] = max(best[t.group], m.strength(i)*t.weight)
	}
	for _, v := range best {
		m.score += v
	}
	return m
}

// passes reports whether the best candidate scores clearly enough to
// hydrate anything (rule "cut-off"): it holds a specific term of the prompt
// (an identifier is evidence, even in a store so small that no term is
// rare), or it scores at least Floor and holds at least MinShare of the
// prompt's information.
//
// A match on one content word alone is weak: it passes neither when the
// prompt is an instruction about new work ("now write the README": the
// word exists in the archive, the prompt asks for something new; rule
// "instructions"), nor when most of the prompt's content words
// are news to the archive ("write a haiku about autumn leaves": the
// archive never saw haiku or autumn; rule "news to the archive"). A
// related word (rule "related words") is not one of the prompt's words
// here: a node saying "write" and "fall" does not hold two words of the
// haiku prompt through autumn's synonym.
func (ix *Index) passes(q *Query, m *match, p Params) bool {
	groups := map[int]bool{}
	uncommon := false
	for i, t := range q.terms {
		if m.own[i] > 0 || m.nb[i] > 0 {
			if t.special && m.own[i] > 0 {
				return true
			}
			if t.kind != KindRelated { // rule "related words": the prompt's own words
				groups[t.group] = true
			}
			uncommon = uncommon || float64(t.df) <= p.Common*float64(ix.live)
		}
	}
	if len(groups) <= 1 && (q.instruction || (q.words >= 2 && 2*q.unknown > q.words)) {
		return false
	}
	// Rule "only common words": in a store of at least smallStore nodes,
	// a node that holds only words most of the session holds (each in
	// more than Common of the nodes: "run", "build", "step", "session" in
	// a build session) is not evidence of what the prompt asks about, however
	// many of them it holds ("run the build session, one shell step at a
	// time" asks for new work in the vocabulary of the old).
	if !uncommon && ix.live >= smallStore {
		return false
	}
	return m.score >= ix.floor(p) && m.score >= p.MinShare*q.info
}

// superseded reports whether a newer candidate holds every primary term c
// holds (own), and whether one would without rule "an output is updated by
// its re-run" (without; equal to own when Params.Rerun is off).
func (ix *Index) superseded(c *match, cands []*match, p Params, labels labelTerms) (own, without bool) {
	step := ix.docs[c.doc].step
	role := ""
	if p.OwnRole {
		role = RoleOf(ix.summaryOf(c.doc))
	}
	var rerun *rerunOf // c's kind and command, read at its first newer candidate
	for _, o := range cands {
		if o == c || ix.docs[o.doc].step <= step || o.mask&c.mask != c.mask || (role != "" && RoleOf(ix.summaryOf(o.doc)) != role) {
			continue
		}
		if !p.Rerun {
			if ix.sameEntity(c, o, p, labels) {
				return true, true
			}
			continue
		}
		if rerun == nil {
			call, s := "", ix.summaryOf(c.doc)
			if p.RerunCall && RoleOf(s) == "tool" && commandOf(s) == "" {
				call = ix.callOf(c.doc)
			}
			rerun = newRerunOf(s, call)
			rerun.call = p.CallNext && RoleOf(s) == "assistant" && rerun.command != ""
		}
		// The rule's check first (two summaries), the shared entity (a
		// merge of two term lists) only when it decides something.
		call, s := "", ix.summaryOf(o.doc)
		if rerun.called && RoleOf(s) == "tool" && commandOf(s) == "" {
			call = ix.callOf(o.doc)
		}
		if rerun.updatedBy(s, call) && !(rerun.call && ix.docs[o.doc].step <= step+2 && RoleOf(s) == "assistant") {
			if ix.sameEntity(c, o, p, labels) {
				return true, true
			}
		} else if !without && ix.sameEntity(c, o, p, labels) {
			without = true
		}
	}
	return false, without
}

// sameEntity reports whether candidates c and o are about one entity for
// intent ownership: they share a specific term that is not the speaker or
// tool label of either (Params.SkipLabel, label.go).
func (ix *Index) sameEntity(c, o *match, p Params, labels labelTerms) bool {
	if !p.SkipLabel {
		return ix.shareSpecific(c.doc, o.doc)
	}
	x, y := ix.specificOf(c.doc), ix.specificOf(o.doc)
	for i, j := 0, 0; i < len(x) && j < len(y); {
		switch {
		case x[i] == y[j]:
			if !ix.labelHolds(labels, c.doc, x[i]) && !ix.labelHolds(labels, o.doc, x[i]) {
				return true
			}
			i++
			j++
		case x[i] < y[j]:
			i++
		default:
			j++
		}
	}
	return false
}

func (ix *Index) pick(q *Query, m *match, score float64, covered []bool) Pick {
	d := ix.docs[m.doc]
	pk := Pick{Step: d.step, Score: math.Round(score*1000) / 1000, Tokens: d.tokens, Summary: ix.summaryOf(m.doc)}
	pk.Long = float64(d.tokens) > longNode*ix.tokensTotal/float64(max(ix.live, 1))
	held := make([]float64, q.groups) // by group: a deterministic sum order
	for i, t := range q.terms {
		if m.own[i] > 0 && (!secondary(t.kind) || t.kind == KindAlias || t.kind == KindTypo || t.kind == KindRelated) {
			held[t.group] = max(held[t.group], t.weight)
			pk.Special = pk.Special || t.special
			pk.Rare = pk.Rare || (ix.live > rareDF && t.df <= rareDF)
			pk.Named = pk.Named || (t.special && ix.live > rareDF && t.df <= rareDF)
		}
	}
	for _, w := range held {
		pk.Share += w
	}
	if q.info > 0 {
		pk.Share = math.Min(1, pk.Share/q.info)
	}
	for i, t := range q.terms {
		if m.own[i] == 0 && m.nb[i] == 0 {
			continue
		}
		name, why := q.termWhy(i)
		pk.Terms = append(pk.Terms, name)
		if m.own[i] < m.nb[i] {
			why += " via neighbour step " + strconv.Itoa(ix.docs[m.nbDoc[i]].step)
		}
		if covered != nil && covered[t.group] {
			why += " [already covered]"
		}
		pk.Why = append(pk.Why, why)
	}
	if m.lift&liftWhen != 0 {
		pk.Why = append(pk.Why, `ranked up: says when (rule "a when-question is answered by a time")`)
	}
	if m.lift&liftSpeaker != 0 {
		pk.Why = append(pk.Why, "ranked up: spoken by "+speakerOf(pk.Summary)+` (rule "the person named speaks")`)
	}
	if m.lift&liftType != 0 {
		pk.Why = append(pk.Why, `ranked up: holds what the question asks for (rule "a question is answered by its type")`)
	}
	if m.lift&liftNear != 0 {
		pk.Why = append(pk.Why, `ranked up: holds the prompt's words close together (rule "the prompt's words together")`)
	}
	if m.lift&liftTopic != 0 {
		pk.Why = append(pk.Why, `admitted below the cut-off by the turns around it (rule "a chat's topic admits")`)
	}
	sort.Strings(pk.Terms)
	return pk
}

func termName(t string) string {
	if strings.HasPrefix(t, fuzzyPrefix) {
		return t[len(fuzzyPrefix):] + "*"
	}
	return t
}

// termWhy returns prompt term i's name (termName) and how a node holds it,
// the start of its line in Pick.Why; made at the first pick that holds
// the term and kept in the query for the scan's other picks.
func (q *Query) termWhy(i int) (name, why string) {
	if q.whys == nil {
		q.names, q.whys = make([]string, len(q.terms)), make([]string, len(q.terms))
	}
	if q.whys[i] != "" {
		return q.names[i], q.whys[i]
	}
	t := &q.terms[i]
	name = termName(t.text)
	why = name
	switch t.kind {
	case KindPart:
		why += " (identifier part of " + strconv.Quote(t.src) + ")"
	case KindFuzzy:
		why += " (prefix of " + strconv.Quote(t.src) + ")"
	case KindCJK:
		why += " (CJK bigram)"
	case KindPlain:
		why += " (without accents, of " + strconv.Quote(t.src) + ")"
	case KindAlias:
		why += " (name in tool output for " + strconv.Quote(t.src) + ")"
	case KindTypo:
		why += " (one edit from " + strconv.Quote(t.src) + `, rule "typos")`
	case KindRelated:
		why += " (related to " + strconv.Quote(t.src) + `, rule "related words")`
	default:
		if !strings.EqualFold(t.src, t.text) && t.src != "" {
			why += " (stem of " + strconv.Quote(t.src) + ")"
		}
	}
	if why == "" {
		return name, why // an empty term: made again each time (nothing to keep)
	}
	q.names[i], q.whys[i] = name, why
	return name, why
}

func displayTerms(q *Query) []string {
	out := make([]string, 0, len(q.all))
	for _, t := range q.all {
		out = append(out, termName(t))
	}
	sort.Strings(out)
	return out
}

// weightsLocked is Weights under ix.mu.
func (ix *Index) weightsLocked(prompt string, p Params) map[string]float64 {
	q := ix.query(prompt, p)
	w := make(map[string]float64, len(q.terms))
	for _, t := range q.terms {
		w[t.text] = t.weight
	}
	return w
}

// Hit is one ranked recall candidate.
type Hit struct {
	Step  int
	Score float64 // total score (idf units)
	// Coverage is the distinct primary prompt terms the node holds itself,
	// plus each prompt word it holds only through an alias ("linker" held
	// as ld or collect2, aliases.go) or misspelt ("pottery" held as
	// "potery", rule "typos"), counted once per word.
	Coverage int
	Summary  string
	Evicted  bool
	Terms    []string
	Why      []string
}

// recallLocked is Recall under ix.mu.
func (ix *Index) recallLocked(query string, p Params) []Hit {
	q := ix.query(query, p)
	cands := ix.score(q, p, -1)
	if len(cands) == 0 || !ix.passes(q, cands[0], p) {
		return nil
	}
	ix.whenRank(q, cands, p)
	ix.speakerRank(query, cands, p)
	ix.typeRank(query, cands, p)
	var out []Hit
	for _, c := range cands {
		if c.score < 0.1*cands[0].score {
			break
		}
		d := ix.docs[c.doc]
		pk := ix.pick(q, c, c.score, nil)
		out = append(out, Hit{Step: d.step, Score: pk.Score, Coverage: ix.coverage(q, c), Summary: ix.summaryOf(c.doc), Evicted: d.evicted, Terms: pk.Terms, Why: pk.Why})
	}
	return out
}

// coverage is the reported coverage of candidate c (Hit.Coverage): the
// primary terms in c.mask, plus one for each prompt word that c holds only
// through an alias term or misspelt (a typo variant, rule "typos"). c.mask
// itself is left as it is (it drives supersede and intent ownership).
func (ix *Index) coverage(q *Query, c *match) int {
	n := bits.OnesCount64(c.mask)
	var viaPrimary, viaAlias map[string]bool
	for i, t := range q.terms {
		if t.primary && i < 64 && c.mask&(1<<i) != 0 {
			if viaPrimary == nil {
				viaPrimary = map[string]bool{}
			}
			viaPrimary[t.src] = true
		}
	}
	for _, t := range q.terms {
		if (t.kind == KindAlias || t.kind == KindTypo) && !viaPrimary[t.src] && !viaAlias[t.src] && ix.tf(t.id, c.doc) > 0 {
			if viaAlias == nil {
				viaAlias = map[string]bool{}
			}
			viaAlias[t.src] = true
			n++
		}
	}
	return n
}

// specific reports whether a word of the prompt names something specific:
// it holds a digit, an underscore, or a capital after its first letter.
func specific(w string) bool {
	inner, lower := false, false
	for i, r := range w {
		switch {
		case unicode.IsDigit(r) || r == '_':
			return true
		case i > 0 && unicode.IsUpper(r):
			inner = true
		case unicode.IsLower(r):
			lower = true
		}
	}
	return inner && lower
}

// RoleOf returns the agent role a node's summary opens with ("tool",
// "assistant", "user" or "system", as package ingest and the proxy write
// them: "tool bash $ ls: …", "assistant: …"), or "" for any other summary
// (a chat speaker's, a heading).
//
// A tool's result that reached the proxy in a user message (an Anthropic
// tool_result block, a scaffold's observation) is folded as "user Bash $
// go test ./...: …" or "user Read: …": the role of its message, then the
// tool, the command or the error mark. Its role is "tool": it is a tool's
// output, as ingest writes the same turn ("tool Bash $ …"), whatever
// message carried it. A human prompt ("user: …") stays "user".
func RoleOf(summary string) string {
	f, rest, _ := strings.Cut(summary, " ")
	colon := strings.HasSuffix(f, ":")
	f = strings.ToLower(strings.TrimSuffix(f, ":"))
	if !roles[f] {
		return ""
	}
	if f == "user" && !colon && namesTool(rest) {
		return "tool"
	}
	return f
}

// namesTool reports whether rest, what follows a summary's role, is the
// head Summarize writes for a tool's result before its ": " — a tool's
// name, " $ " and a command, an error mark, in that order, each optional
// but one (package harness, Summarize).
func namesTool(rest string) bool {
	head, _, _ := strings.Cut(rest, ": ")
	head, failed := strings.CutSuffix(head, "[error]")
	head = strings.TrimSuffix(head, " ")
	if tool, cmd, ok := strings.Cut(head, "$ "); ok {
		return !strings.Contains(strings.TrimSuffix(tool, " "), " ") && strings.TrimSpace(cmd) != ""
	}
	if head == "" {
		return failed
	}
	return !strings.ContainsAny(head, " \t")
}

// firstWords ask for the oldest of several (rule "a first asks for the
// oldest", Params.FirstAsks).
var firstWords = map[string]bool{"first": true, "original": true, "originally": true, "initial": true, "initially": true}

// asksFirst reports whether the prompt asks for the first or original one:
// it holds one of firstWords as a word of its own, not as a part of an
// identifier or a path (first_name, test-first, docs/first.md).
func asksFirst(prompt string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(prompt), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-./'`", r)
	}) {
		if firstWords[strings.TrimRight(w, ".'")] {
			return true
		}
	}
	return false
}
