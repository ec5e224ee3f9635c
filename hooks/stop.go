package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
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
//
// It reads only what was appended to the transcript since the last call
// on the same store (StateFile keeps where it stopped): the same turns and
// stored bytes as a read of the whole file, for any split of the appends.
// A transcript truncated, rewritten or replaced since (shorter, or any of
// its bytes before that point changed: their digest, read again unless
// the file's fstat is the same as at the last call), a missing or damaged
// state, or lines it points to that changed, are read whole as before.
func FoldTranscript(in *Input, opts Options) (*FoldReport, error) {
	if in.TranscriptPath == "" {
		return nil, errors.New("hooks: the payload has no transcript_path")
	}
	dir, err := StoreDir(in, opts.Dir)
	if err != nil {
		return nil, err
	}
	// Never a FIFO or /dev/zero: bounded, never blocking.
	src, closeFn, err := ingest.OpenClaudeCode(in.TranscriptPath)
	if err != nil {
		return nil, fmt.Errorf("hooks: reading the transcript: %w", err)
	}
	defer closeFn()
	now := transcriptStamp(src) // before any read: a write after it changes it
	if st := loadState(dir, in.TranscriptPath, src, now); st != nil {
		rep, err := foldFrom(in, opts, dir, src, now, st)
		if !errors.Is(err, errStale) {
			return rep, err
		}
		opts.diagf("the transcript changed before the point the last Stop read to: read whole")
	}
	return foldFrom(in, opts, dir, src, now, nil)
}

// foldFrom folds the turns of the transcript src (its stamp now) from
// where st says the last call stopped (nil: from the start), then saves
// where this one stopped. errStale: st points to lines that changed.
func foldFrom(in *Input, opts Options, dir string, src *io.SectionReader, now fileStamp, st *transcriptState) (*FoldReport, error) {
	rep := &FoldReport{Dir: dir}
	stale := false
	from := ingest.ClaudeCodeCursor{}
	var raw []byte // the state's records: those of the lines read before, then this read's
	if st != nil {
		from = st.cursor(src, &stale)
		raw = slices.Clip(st.raw)
		// The turns read before: in the store, but those too large,
		// which every Stop names again.
		rep.Existing = st.Step - len(st.tooLarge)
		for _, t := range st.tooLarge {
			rep.TooLarge = append(rep.TooLarge, t.step)
			opts.diagf("%v: not folded", &contextfold.PayloadTooLargeError{StepID: t.step, Size: int(t.size)})
		}
	}
	var store *contextfold.Store
	open := func() error {
		var err error
		if store == nil {
			store, err = contextfold.Open(dir, contextfold.Options{SessionID: in.SessionID})
		}
		return err
	}
	// have reports whether the store holds a step: a read of the whole
	// transcript loads every entry once, a read of what was appended
	// asks for its few steps.
	var haveAll map[int]bool
	have := func(step int) (bool, error) {
		if err := open(); err != nil || !storeExists(dir) {
			return false, err
		}
		if st != nil {
			_, err := store.Entry(step)
			var nf *contextfold.NodeNotFoundError
			if errors.As(err, &nf) {
				return false, nil
			}
			return err == nil, err
		}
		if haveAll == nil {
			entries, err := store.Entries()
			if err != nil {
				return false, err
			}
			haveAll = make(map[int]bool, len(entries))
			for _, e := range entries {
				haveAll[e.StepID] = true
			}
		}
		return haveAll[step], nil
	}
	// Secrets are redacted by the store itself before anything reaches disk
	// (on by default), and counted per node. folded: the stored turns the
	// store learns secrets from; revealing: the new turns that reveal one.
	var turns, folded, revealing []contextfold.Turn
	// A whole read (no state: lost, or the transcript rewritten) learns
	// from the stored turns before the first new one the private key they
	// left open, which the state would have kept (OpenKeyAfter).
	var storedOpen *contextfold.OpenKey
	callAt := map[string]lineRange{} // tool_use id → the line of this read that made the call
	var storeErr error               // the store's error that stopped the read
	res, at, err := ingest.ReadClaudeCode(src, from, func(r *ingest.ClaudeCodeRecord) (err error) {
		defer func() { storeErr = err }()
		call := noLine
		if r.Result != "" {
			if c, ok := callAt[r.Result]; ok {
				call = c
			} else if st != nil {
				call = st.calls[digest16(r.Result)]
			}
		}
		for _, id := range r.Calls {
			callAt[id] = lineRange{r.Start, r.End}
		}
		if r.Complete {
			// An unfinished last line is read again by the next call.
			if r.UUID != "" {
				raw = appendRecord(raw, recUUID, digest16(r.UUID), 0, 0)
			}
			for _, id := range r.Calls {
				raw = appendRecord(raw, recCall, digest16(id), r.Start, r.End)
			}
		}
		if r.Turn == nil {
			return nil
		}
		t := r.Turn
		rep.Turns++
		session := t.SessionID
		if session == "" {
			session = in.SessionID
		}
		ct := contextfold.Turn{StepID: t.StepID, Summary: t.Summary, RawContent: t.Payload, SessionID: session}
		stored, err := have(t.StepID)
		if err != nil {
			return err
		}
		if st == nil && stored && len(turns) == 0 {
			storedOpen = contextfold.OpenKeyAfter(storedOpen, ct)
		}
		switch {
		case stored:
			rep.Existing++
		case len(ct.Payload()) > contextfold.MaxPayloadBytes:
			// One turn the store refuses (a 100 MB tool output) must not
			// keep the session's other turns, this Stop's and every
			// later one's, from being folded.
			rep.TooLarge = append(rep.TooLarge, t.StepID)
			opts.diagf("%v: not folded", &contextfold.PayloadTooLargeError{StepID: t.StepID, Size: len(ct.Payload())})
			if r.Complete {
				raw = appendRecord(raw, recTooLarge, [16]byte{}, int64(t.StepID), int64(len(ct.Payload())))
			}
			return nil
		}
		// A stored turn whose context reveals a secret (API_KEY=… in a
		// tool output) is read again by later calls, which show it to
		// the store: a value it revealed is redacted where a new turn
		// shows it bare.
		if err := open(); err != nil {
			return err
		}
		reveals, err := store.RevealsSecrets(ct)
		if err != nil {
			return err
		}
		if reveals && r.Complete {
			raw = appendRecord(raw, recSecret, rangeKey(call), r.Start, r.End)
		}
		switch {
		case stored && reveals:
			folded = append(folded, ct)
		case !stored:
			turns = append(turns, ct)
			if reveals {
				revealing = append(revealing, ct)
			}
		}
		return nil
	})
	if storeErr != nil {
		return nil, storeErr
	}
	if err != nil {
		return nil, fmt.Errorf("hooks: reading the transcript: %w", err)
	}
	if stale {
		return nil, errStale
	}
	rep.Turns += from.Step
	rep.Problems = len(res.Problems) + res.ProblemsOmitted
	for _, p := range res.Problems {
		opts.diagf("transcript line %d skipped: %s", p.Line, p.Message)
	}
	if res.ProblemsOmitted > 0 {
		opts.diagf("%d more transcript lines skipped", res.ProblemsOmitted)
	}
	// The key left open before at.Offset: the state's, or, read whole,
	// the stored turns' (a Stop with nothing new saves it for the next).
	openKey := storedOpen
	if st != nil {
		openKey = st.OpenKey
	}
	if len(turns) > 0 {
		// A value an earlier Stop's turns revealed as a secret is
		// redacted where a new turn shows it bare.
		if st != nil {
			old, err := secretTurns(in, src, st)
			if err != nil {
				return nil, err
			}
			folded = append(old, folded...)
		}
		// A private key an earlier Stop's turns left open: its rest,
		// in the new turns, is redacted.
		if st != nil && st.OpenKey != nil {
			store.ResumeOpenKey(*st.OpenKey)
		} else if st == nil && storedOpen != nil {
			store.ResumeOpenKey(*storedOpen)
		}
		if err := foldNew(store, rep, turns, folded, revealing); err != nil {
			return rep, err
		}
		openKey = nil
		if k, ok := store.OpenKey(); ok {
			openKey = &k
		}
	}
	if at.Offset != from.Offset && exists(dir) {
		var h hash.Hash
		if st != nil {
			h = st.prefix
		}
		if err := saveState(dir, in.TranscriptPath, src, now, h, from.Offset, at, raw, openKey); err != nil {
			return rep, fmt.Errorf("hooks: saving where the transcript was read to: %w", err)
		}
	}
	return rep, nil
}

// secretTurns reads again the turns before st's offset whose context
// reveals a secret, in transcript order. errStale: one is not there.
func secretTurns(in *Input, src io.ReaderAt, st *transcriptState) ([]contextfold.Turn, error) {
	var out []contextfold.Turn
	for _, s := range st.secrets {
		line, err := readLine(src, s.line)
		if err != nil {
			return nil, err
		}
		tool := func(id string) (string, string, bool) {
			if s.call == noLine {
				return "", "", false
			}
			return toolCallAt(src, s.call, id)
		}
		var turn *ingest.Turn
		_, _, err = ingest.ReadClaudeCode(io.NewSectionReader(bytes.NewReader(line), 0, int64(len(line))), ingest.ClaudeCodeCursor{Tool: tool},
			func(r *ingest.ClaudeCodeRecord) error {
				turn = r.Turn
				return nil
			})
		if err != nil || turn == nil {
			return nil, errStale
		}
		session := turn.SessionID
		if session == "" {
			session = in.SessionID
		}
		out = append(out, contextfold.Turn{StepID: turn.StepID, Summary: turn.Summary, RawContent: turn.Payload, SessionID: session, OutputOf: turn.Command})
	}
	return out, nil
}

// foldNew folds turns, the store first shown folded (the stored turns
// revealing secrets) and, when turns take more than one batch, revealing
// (those of turns that reveal one).
func foldNew(store *contextfold.Store, rep *FoldReport, turns, folded, revealing []contextfold.Turn) error {
	if err := store.LearnSecrets(folded); err != nil {
		return err
	}
	if len(turns) > StopBatchTurns {
		// Folded in batches, so that the memory a batch holds per turn
		// is bounded; the values any new turn reveals are learnt first, as
		// one fold event of them all would share them.
		if err := store.LearnSecrets(revealing); err != nil {
			return err
		}
	}
	for len(turns) > 0 {
		n := min(len(turns), StopBatchTurns)
		results, err := store.FoldBatch(turns[:n])
		if err != nil {
			return err
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
	return nil
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
