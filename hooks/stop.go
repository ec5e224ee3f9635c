package hooks

import (
	"errors"
	"fmt"
	"strings"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/ingest"
)

// FoldReport says what a Stop (or PreCompact) hook folded.
type FoldReport struct {
	Dir      string
	Turns    int // turns in the transcript
	Folded   int // newly folded
	Existing int // already in the store (skipped)
	Redacted int // secrets redacted before folding
	Problems int // unreadable transcript lines skipped
	// TooLarge lists the steps not folded because their payload is past
	// contextfold.MaxPayloadBytes (in transcript order): the other new
	// turns are folded, and every later Stop skips these again.
	TooLarge []int
}

// FoldTranscript folds the turns of the session's transcript that the store
// does not hold yet (Stop, SubagentStop, PreCompact). Re-running it on the
// same transcript folds nothing: step ids are positions in the transcript,
// and indexed steps are skipped. Secrets are redacted before anything is
// stored. It never blocks the agent: the caller prints nothing on stdout.
func FoldTranscript(in *Input, opts Options) (*FoldReport, error) {
	if in.TranscriptPath == "" {
		return nil, errors.New("hooks: the payload has no transcript_path")
	}
	dir, err := StoreDir(in, opts.Dir)
	if err != nil {
		return nil, err
	}
	res, err := ingest.ParseRegularFile(in.TranscriptPath, ingest.FormatClaudeCode) // never a FIFO or /dev/zero: bounded, never blocking
	if err != nil {
		return nil, fmt.Errorf("hooks: reading the transcript: %w", err)
	}
	rep := &FoldReport{Dir: dir, Turns: len(res.Turns), Problems: len(res.Problems) + res.ProblemsOmitted}
	for _, p := range res.Problems {
		opts.diagf("transcript line %d skipped: %s", p.Line, p.Message)
	}
	if res.ProblemsOmitted > 0 {
		opts.diagf("%d more transcript lines skipped", res.ProblemsOmitted)
	}
	store, err := contextfold.Open(dir, contextfold.Options{SessionID: in.SessionID})
	if err != nil {
		return nil, err
	}
	have := map[int]bool{}
	if storeExists(dir) {
		entries, err := store.Entries()
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			have[e.StepID] = true
		}
	}
	// Secrets are redacted by the store itself before anything reaches disk
	// (on by default), and counted per node.
	var turns, folded []contextfold.Turn
	for _, t := range res.Turns {
		session := t.SessionID
		if session == "" {
			session = in.SessionID
		}
		ct := contextfold.Turn{StepID: t.StepID, Summary: t.Summary, RawContent: t.Payload, SessionID: session}
		if have[t.StepID] {
			rep.Existing++
			folded = append(folded, ct)
			continue
		}
		if len(ct.Payload()) > contextfold.MaxPayloadBytes {
			// One turn the store refuses (a 100 MB tool output) must not
			// keep the session's other turns, this Stop's and every
			// later one's, from being folded.
			rep.TooLarge = append(rep.TooLarge, t.StepID)
			opts.diagf("%v: not folded", &contextfold.PayloadTooLargeError{StepID: t.StepID, Size: len(ct.Payload())})
			continue
		}
		turns = append(turns, ct)
	}
	if len(turns) == 0 {
		return rep, nil
	}
	// A value an earlier Stop's turns revealed as a secret (API_KEY=… in a
	// tool output) is redacted where a new turn shows it bare.
	if err := store.LearnSecrets(folded); err != nil {
		return nil, err
	}
	if len(turns) > StopBatchTurns {
		// Folded in batches, so that the memory a batch holds per turn
		// is bounded; the values any new turn reveals are learnt first, as
		// one fold event of them all would share them.
		if err := store.LearnSecrets(turns); err != nil {
			return nil, err
		}
	}
	for len(turns) > 0 {
		n := min(len(turns), StopBatchTurns)
		results, err := store.FoldBatch(turns[:n])
		if err != nil {
			return rep, err
		}
		for _, r := range results {
			if r.AlreadyIndexed {
				rep.Existing++ // folded meanwhile by a concurrent hook
			} else {
				rep.Folded++
				if n, ok := r.Node.Doc["redactions"].(int); ok {
					rep.Redacted += n
				}
			}
		}
		turns = turns[n:]
	}
	return rep, nil
}

// StopBatchTurns is the most new turns FoldTranscript folds in one batch
// (one durable fold of the store): a first Stop on a long transcript folds
// it in batches of this many turns, each holding its turns' nodes in
// memory until written (about 9 KiB a turn however short it is).
const StopBatchTurns = 4096

// SessionStart returns the session's folded-step records (IPCF §8) as a
// compact page table, newest steps kept when the table exceeds
// opts.MaxChars. It returns nil when the store holds nothing.
func SessionStart(in *Input, opts Options) (*Output, error) {
	dir, err := StoreDir(in, opts.Dir)
	if err != nil {
		return nil, err
	}
	if !storeExists(dir) {
		return nil, nil
	}
	store, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		return nil, err
	}
	entries, err := store.Entries()
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	text := pageTable(entries, dir, opts.maxChars())
	return &Output{HookSpecificOutput: SpecificOutput{HookEventName: EventSessionStart, AdditionalContext: text}}, nil
}

// StepRecord is the folded-step record of an indexed turn (IPCF §8): the hot
// projection of package harness, so the proxy, the inspector and the hooks
// classify a turn the same way.
type StepRecord = harness.FoldedStep

// Record derives the folded-step record of an index entry (from the entry
// alone: the page table must not read every cold node).
func Record(e *contextfold.Entry) StepRecord { return harness.ProjectEntry(e, "") }

// pageTable renders the records, one line each, newest kept within max.
func pageTable(entries []*contextfold.Entry, dir string, max int) string {
	tokens := 0
	for _, e := range entries {
		tokens += e.TokenEstimate
	}
	head := fmt.Sprintf("[contextfold] Folded turns of this session (IPCF-1.1 page table: %d steps, %s tokens archived in %s). Read one, verified, with the MCP tool %s {\"step_id\": N} or: contextfold hydrate N --dir %q\n",
		len(entries), group(tokens), dir, "fetch_archived_node", dir)
	recs := make([]harness.FoldedStep, len(entries))
	for i, e := range entries {
		recs[i] = Record(e)
	}
	// The same budgeted block as the proxy's working set: one line per step,
	// the oldest leave first; here the budget is in UTF-16 code units.
	room := max - len16(head) - len16(omittedNote(len(entries))) - 1
	s, _ := harness.PageTable(strings.TrimRight(head, "\n"), recs, room, 0, len16,
		func(n, first, last int) string { return strings.TrimRight(omittedNote(n), "\n") })
	if len16(s) > max {
		s, _ = cutTo(s, max)
	}
	return strings.TrimRight(s, "\n")
}

func omittedNote(n int) string {
	return fmt.Sprintf("[contextfold: %d older steps left out to fit; list them with the MCP tool recall_archived_nodes or: contextfold status]\n", n)
}
