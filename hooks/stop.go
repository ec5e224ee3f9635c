package hooks

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
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
	res, err := ingest.ParseFile(in.TranscriptPath, ingest.FormatClaudeCode)
	if err != nil {
		return nil, fmt.Errorf("hooks: reading the transcript: %w", err)
	}
	rep := &FoldReport{Dir: dir, Turns: len(res.Turns), Problems: len(res.Problems)}
	for _, p := range res.Problems {
		opts.diagf("transcript line %d skipped: %s", p.Line, p.Message)
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
	var turns []contextfold.Turn
	for _, t := range res.Turns {
		if have[t.StepID] {
			rep.Existing++
			continue
		}
		session := t.SessionID
		if session == "" {
			session = in.SessionID
		}
		turns = append(turns, contextfold.Turn{StepID: t.StepID, Summary: t.Summary, RawContent: t.Payload, SessionID: session})
	}
	if len(turns) == 0 {
		return rep, nil
	}
	results, err := store.FoldBatch(turns)
	if err != nil {
		return nil, err
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
	return rep, nil
}

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

// StepRecord is the folded-step record of an indexed turn (IPCF §8), derived
// from its index entry. ActionType and Status are heuristics: COMMAND_EXECUTION
// when the turn ran commands, CODE_MODIFICATION when it names files and
// reads like an edit, EXPLORATION when it names files, else OTHER; FAILED
// when errors were extracted or the summary is marked [error], else SUCCESS.
type StepRecord struct {
	StepID      int      `json:"step_id"`
	Timestamp   string   `json:"timestamp"`
	TargetFiles []string `json:"target_files"`
	ActionType  string   `json:"action_type"`
	Summary     string   `json:"summary"`
	Status      string   `json:"status"`
	Artifacts   struct {
		ColdNodeRef string `json:"cold_node_ref"`
	} `json:"artifacts"`
}

// Record derives the folded-step record of an index entry.
func Record(e *contextfold.Entry) StepRecord {
	r := StepRecord{StepID: e.StepID, Timestamp: e.FoldedAt, TargetFiles: e.Files, Summary: e.Summary, Status: "SUCCESS"}
	if r.TargetFiles == nil {
		r.TargetFiles = []string{}
	}
	if utf8.RuneCountInString(r.Summary) > 280 {
		r.Summary = string([]rune(r.Summary)[:279]) + "…"
	}
	lower := strings.ToLower(e.Summary)
	switch {
	case len(e.Commands) > 0 || strings.Contains(lower, "bash"):
		r.ActionType = "COMMAND_EXECUTION"
	case len(e.Files) > 0 && containsAny(lower, "edit", "write", "patch", "replace", "diff"):
		r.ActionType = "CODE_MODIFICATION"
	case len(e.Files) > 0 || containsAny(lower, "read", "grep", "glob", "search"):
		r.ActionType = "EXPLORATION"
	default:
		r.ActionType = "OTHER"
	}
	if len(e.Errors) > 0 || strings.Contains(lower, "[error]") {
		r.Status = "FAILED"
	}
	r.Artifacts.ColdNodeRef = e.FilePath
	return r
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// pageTable renders the records, one line each, newest kept within max.
func pageTable(entries []*contextfold.Entry, dir string, max int) string {
	tokens := 0
	for _, e := range entries {
		tokens += e.TokenEstimate
	}
	head := fmt.Sprintf("[contextfold] Folded turns of this session (IPCF-1.1 page table: %d steps, %s tokens archived in %s). Read one, verified, with the MCP tool %s {\"step_id\": N} or: contextfold hydrate N --dir %q\nstep | folded_at | action | status | files | summary\n",
		len(entries), group(tokens), dir, "fetch_archived_node", dir)
	lines := make([]string, len(entries))
	for i, e := range entries {
		r := Record(e)
		files := "-"
		if len(r.TargetFiles) > 0 {
			files = strings.Join(r.TargetFiles, " ")
			if utf8.RuneCountInString(files) > 60 {
				files = string([]rune(files)[:59]) + "…"
			}
		}
		sum := oneLine(r.Summary)
		if utf8.RuneCountInString(sum) > 120 {
			sum = string([]rune(sum)[:119]) + "…"
		}
		lines[i] = fmt.Sprintf("%d | %s | %s | %s | %s | %s\n", r.StepID, r.Timestamp, r.ActionType, r.Status, files, sum)
	}
	// Keep the newest lines that fit, oldest first in the output.
	used := len16(head)
	first := len(lines)
	for first > 0 {
		n := len16(lines[first-1])
		omitted := first - 1
		reserve := 0
		if omitted > 0 {
			reserve = len16(omittedNote(omitted))
		}
		if used+n+reserve > max {
			break
		}
		used += n
		first--
	}
	var b strings.Builder
	b.WriteString(head)
	if first > 0 {
		b.WriteString(omittedNote(first))
	}
	for _, l := range lines[first:] {
		b.WriteString(l)
	}
	s := b.String()
	if len16(s) > max {
		s, _ = cutTo(s, max)
	}
	return strings.TrimRight(s, "\n")
}

func omittedNote(n int) string {
	return fmt.Sprintf("[contextfold: %d older steps left out to fit; list them with the MCP tool recall_archived_nodes or: contextfold status]\n", n)
}
