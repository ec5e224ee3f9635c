package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/scrub"
)

// ToolSessions is the tool that lists the sessions of a directory of
// session stores (NewSessions).
const ToolSessions = "list_sessions"

// sessionsInstructions tell the model how to use the tools over a directory
// of session stores.
const sessionsInstructions = `contextfold keeps verbose earlier turns of past sessions (tool output, logs, diffs) in verified archives (IPCF-1.1), one store per session; this server reads all of them and writes nothing.
To find what an earlier session found, call recall_archived_nodes with keywords or scan_prompt with the question: without session they search every session, and each result names its session. Then call fetch_archived_node with that session and step_id to read the verified content. list_sessions shows the sessions with their first and last fold times and node counts.
Content is capped per call; when truncated is true, call fetch_archived_node again with offset = next_offset.
Errors start with their name: NodeNotFoundError (unknown step), IntegrityCheckError (the stored bytes do not match their hash: the content was refused; do not rely on it), BadArgument (an unknown session: list_sessions names them).`

// sessionsServer serves a directory of session stores, read-only.
type sessionsServer struct {
	set *sessiondir.Set
	mcp *mcp.Server
	// sc redacts the secrets a query or prompt holds from the replies that
	// echo it (a token pasted by mistake); nil: echoes are withheld.
	sc *scrub.Scrubber
}

// NewSessions returns an MCP server over a directory of session stores (the
// proxy's --dir, the Claude Code hooks' .contextfold or its sessions/; see
// package sessiondir), opened with sessiondir.Open. Its tools are read-only:
// list_sessions, and recall_archived_nodes, scan_prompt and
// fetch_archived_node with an optional session argument (recall and scan
// search every session when it is absent; fetch needs it when there is more
// than one session). It has no fold_turn, evict_node or resources: it never
// writes into a store a proxy or a hook may be writing. A session whose
// store cannot be read is named in each result's failed_sessions, the
// others are served. opts are New's (name, version, request logger).
// Connect it like New's server.
func NewSessions(set *sessiondir.Set, opts Options) *mcp.Server {
	ms := newMCPServer(opts, "contextfold (IPCF-1.1 archives of past sessions)", sessionsInstructions)
	addSessionTools(ms, set)
	ms.AddReceivingMiddleware((&server{}).middleware(opts.Logger))
	return ms
}

// addSessionTools adds the read-only tools over set to ms: list_sessions,
// and recall_archived_nodes, scan_prompt and fetch_archived_node with an
// optional session (NewSessions, and a server New made with
// Options.Sessions once its directory became a directory of session
// stores).
func addSessionTools(ms *mcp.Server, set *sessiondir.Set) {
	s := &sessionsServer{set: set, mcp: ms}
	s.sc, _ = scrub.New() // nil only if gitleaks' built-in rules fail to load: echoes are then withheld
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	served := sessionsServed
	if p, ok := set.Pinned(); ok {
		served = fmt.Sprintf(pinnedServed, p.ID, p.Source)
	}
	addTool(ms, &mcp.Tool{
		Name:        ToolSessions,
		Title:       "List the archived sessions",
		Annotations: readOnly,
		Description: `List the sessions whose archives this server reads, newest first: each session's id (pass it as session to the other tools; they also take the first characters of one id alone, or a proxy session's name alone), where it comes from (source: hooks for the Claude Code hooks, proxy for the contextfold proxy, store for any other store in the directory), its store directory, how many turns it archived, and when its first and last turns were archived. A session whose store cannot be read is listed last with its error.`,
	}, s.list)
	addTool(ms, &mcp.Tool{
		Name:        ToolRecall,
		Title:       "Recall archived turns (one session or all)",
		Annotations: readOnly,
		Description: `Search the archives of earlier sessions (folded tool output, logs, diffs) for a keyword query and return ranked candidates, each with the session it comes from and a status label within that session ("latest_chronological" is the session's current fact, "superseded" and "historical" older versions of it, "related" a partial match).
Without session every session is searched: candidates by score, then the newest session first (at most 20 unless limit says otherwise). ` + sessionAccepted + ` Use the session and step_id with fetch_archived_node to read the content.` + served,
	}, s.recall)
	addTool(ms, &mcp.Tool{
		Name:        ToolScan,
		Title:       "Scan a prompt against the archives",
		Annotations: readOnly,
		Description: `Match a prompt against the archives the way contextfold does before each turn (the ranked matcher by default, match "exact" for the IPCF reference's set cover), and say what would be hydrated and why (matched terms, token cost) within one turn's token budget.
Without session every session is scanned: the picks of all sessions by score, then the newest session first, admitted within the smallest per-turn budget of the sessions. ` + sessionAccepted + ` Each pick names its session; fetch it with fetch_archived_node.` + served,
	}, s.scan)
	addTool(ms, &mcp.Tool{
		Name:        ToolFetch,
		Title:       "Fetch an archived turn (verified)",
		Annotations: readOnly,
		Description: `Read the content of one archived turn of a session by step_id (or by its sha256 hash). The stored bytes are verified against their SHA-256 hashes before anything is returned; a node that fails verification is refused with IntegrityCheckError and no content.
session is required when there is more than one session. ` + sessionAccepted + ` Content is capped per call (the session store's per-call token cap); when truncated is true, call again with offset = next_offset to read on.` + served,
	}, s.fetch)
}

// sessionAccepted says, in the descriptions of the tools that take a
// session, what the argument accepts: what sessiondir.Resolve resolves,
// as the command line's --session does.
const sessionAccepted = `session takes a session's id as list_sessions or a recall or scan result gives it, the first characters of one id alone (e.g. "0d7c9" for a UUID "0d7c9e55-…"; a start several ids share is refused with BadArgument naming them), or a proxy session's name alone ("s-4e1f0c3a9b", as its log prints it, for its only store "s-4e1f0c3a9b/g1"); the result names the session by its whole id.`

// pinnedServed ends the descriptions of recall_archived_nodes, scan_prompt
// and fetch_archived_node over a set restricted to one session (mcp
// --session): its id and source.
const pinnedServed = "\nServed here: one session, %s (%s), of a directory of session stores, read-only; no session argument is needed."

// SessionArg names the session of a tool call over a directory of session
// stores.
type SessionArg struct {
	Session string `json:"session,omitempty" jsonschema:"which session: its id from list_sessions (or from a recall or scan result), the first characters of one id alone (a start several ids share is refused, naming them), or a proxy session's name alone (s-…, without /g<N>, for its only store); absent: every session (recall, scan) or the only one (fetch)"`
}

// SessionRecallArgs are the arguments of recall_archived_nodes over a
// directory of session stores.
type SessionRecallArgs struct {
	SessionArg
	RecallArgs
}

// SessionScanArgs are the arguments of scan_prompt over a directory of
// session stores.
type SessionScanArgs struct {
	SessionArg
	ScanArgs
}

// SessionFetchArgs are the arguments of fetch_archived_node over a
// directory of session stores.
type SessionFetchArgs struct {
	SessionArg
	FetchArgs
}

// SessionInfo is one session of list_sessions.
type SessionInfo struct {
	Session       string `json:"session" jsonschema:"the session id: pass it as session to the other tools"`
	Source        string `json:"source" jsonschema:"where the session comes from: hooks (the Claude Code hooks), proxy (the contextfold proxy: one store per history the client sent) or store (any other store in the directory)"`
	Store         string `json:"store" jsonschema:"the session's store directory (contextfold --dir STORE reads it on the command line)"`
	Nodes         int    `json:"nodes" jsonschema:"archived turns"`
	TotalTokens   int    `json:"total_tokens" jsonschema:"archived tokens (sum of token estimates)"`
	FirstFoldedAt string `json:"first_folded_at,omitempty" jsonschema:"when its first turn was archived (RFC 3339, UTC)"`
	LastFoldedAt  string `json:"last_folded_at,omitempty" jsonschema:"when its last turn was archived (RFC 3339, UTC)"`
	Error         string `json:"error,omitempty" jsonschema:"why the store cannot be read (its error's name first); the session is not searched"`
}

// ListSessionsArgs are the arguments of list_sessions.
type ListSessionsArgs struct {
	Limit int `json:"limit,omitempty" jsonschema:"list at most this many sessions, newest first (0 or absent: 100)"`
}

// ListSessionsResult is the result of list_sessions.
type ListSessionsResult struct {
	Root     string        `json:"root" jsonschema:"the directory of session stores"`
	Sessions []SessionInfo `json:"sessions" jsonschema:"newest first (by last_folded_at); unreadable stores last"`
	Omitted  int           `json:"omitted,omitempty" jsonschema:"sessions left out by limit"`
}

// FailedSession is a session a search across sessions could not read.
type FailedSession struct {
	Session string `json:"session"`
	Source  string `json:"source" jsonschema:"hooks, proxy or store (list_sessions)"`
	Store   string `json:"store"`
	Error   string `json:"error" jsonschema:"the error, its name first"`
}

// SessionRecallCandidate is a recall candidate with its session.
type SessionRecallCandidate struct {
	Session string `json:"session" jsonschema:"the session the candidate comes from: pass it to fetch_archived_node"`
	Source  string `json:"source" jsonschema:"hooks, proxy or store (list_sessions)"`
	RecallCandidate
}

// SessionRecallResult is the result of recall_archived_nodes over a
// directory of session stores.
type SessionRecallResult struct {
	Query          string                   `json:"query"`
	Terms          []string                 `json:"terms" jsonschema:"the query terms that were matched against the index"`
	Candidates     []SessionRecallCandidate `json:"candidates" jsonschema:"by score, then the newest session first"`
	Omitted        int                      `json:"omitted,omitempty" jsonschema:"candidates left out by limit"`
	Sessions       int                      `json:"sessions_searched" jsonschema:"sessions searched"`
	FailedSessions []FailedSession          `json:"failed_sessions,omitempty" jsonschema:"sessions whose store could not be read (not searched)"`
	Read
}

// Read names the one session a recall or scan read, when its session
// argument named one: whatever start of an id or proxy session's name
// was given, the session's whole id, source and store.
type Read struct {
	Session string `json:"session,omitempty" jsonschema:"the session read, by its whole id, when session named one (absent when every session was searched)"`
	Source  string `json:"source,omitempty" jsonschema:"hooks, proxy or store (list_sessions), when session named one"`
	Store   string `json:"store,omitempty" jsonschema:"the session's store directory, when session named one"`
}

// read is the Read of a search: the session its session argument named
// (sessiondir.Searched.Named), none for a search of every session.
func read(sr sessiondir.Searched) Read {
	if sr.Named.Dir == "" {
		return Read{}
	}
	return Read{Session: sr.Named.ID, Source: sr.Named.Source, Store: sr.Named.Dir}
}

// SessionScanPick is a scan pick with its session.
type SessionScanPick struct {
	Session string `json:"session" jsonschema:"the session the node comes from: pass it to fetch_archived_node"`
	Source  string `json:"source" jsonschema:"hooks, proxy or store (list_sessions)"`
	ScanPick
}

// SessionScanResult is the result of scan_prompt over a directory of
// session stores.
type SessionScanResult struct {
	QueryTerms     []string          `json:"query_terms"`
	Selected       []SessionScanPick `json:"selected" jsonschema:"nodes that would be hydrated, in admission order; fetch each with fetch_archived_node and its session"`
	Dropped        []SessionScanPick `json:"dropped" jsonschema:"matching nodes that did not fit the per-turn budget"`
	BudgetTokens   float64           `json:"budget_tokens" jsonschema:"per-turn hydration budget (across sessions: the smallest of theirs)"`
	UsedTokens     float64           `json:"used_tokens"`
	Sessions       int               `json:"sessions_searched"`
	FailedSessions []FailedSession   `json:"failed_sessions,omitempty"`
	Read
}

// SessionFetchResult is the result of fetch_archived_node over a directory
// of session stores.
type SessionFetchResult struct {
	Session string `json:"session"`
	Source  string `json:"source" jsonschema:"hooks, proxy or store (list_sessions)"`
	FetchResult
}

func failed(fs []sessiondir.Failure) []FailedSession {
	var out []FailedSession
	for _, f := range fs {
		out = append(out, FailedSession{Session: f.ID, Source: f.Source, Store: f.Dir, Error: toolError(f.Err).Error()})
	}
	return out
}

// setError is the tool error of a failure of the set itself (an unknown
// session is a BadArgument).
func setError(err error) error {
	var amb *sessiondir.AmbiguousError
	if strings.HasPrefix(err.Error(), "no session ") || errors.As(err, &amb) {
		return fmt.Errorf("BadArgument: %w", err)
	}
	return toolError(err)
}

func (s *sessionsServer) list(_ context.Context, _ *mcp.CallToolRequest, a ListSessionsArgs) (*mcp.CallToolResult, ListSessionsResult, error) {
	if a.Limit < 0 {
		return nil, ListSessionsResult{}, fmt.Errorf("BadArgument: limit %d is negative", a.Limit)
	}
	limit := a.Limit
	if limit == 0 {
		limit = 100
	}
	ins, err := s.set.Sessions()
	if err != nil {
		return nil, ListSessionsResult{}, toolError(err)
	}
	res := ListSessionsResult{Root: s.set.Root(), Sessions: []SessionInfo{}}
	for _, in := range ins {
		if len(res.Sessions) == limit {
			res.Omitted++
			continue
		}
		si := SessionInfo{Session: in.ID, Source: in.Source, Store: in.Dir, Nodes: in.Nodes, TotalTokens: in.TotalTokens,
			FirstFoldedAt: in.FirstFoldedAt, LastFoldedAt: in.LastFoldedAt}
		if in.Err != nil {
			si.Error = toolError(in.Err).Error()
		}
		res.Sessions = append(res.Sessions, si)
	}
	return nil, res, nil
}

func (s *sessionsServer) recall(_ context.Context, _ *mcp.CallToolRequest, a SessionRecallArgs) (*mcp.CallToolResult, SessionRecallResult, error) {
	mode, err := recallMode(a.Query, a.Limit, a.Match)
	if err != nil {
		return nil, SessionRecallResult{}, err
	}
	limit := a.Limit
	if limit == 0 && a.Session == "" {
		limit = sessiondir.DefaultRecallLimit
	}
	hits, sr, err := s.set.Recall(a.Session, a.Query, mode)
	if err != nil {
		return nil, SessionRecallResult{}, setError(err)
	}
	res := SessionRecallResult{Query: echoQuery(s.sc, a.Query), Terms: nonNil(echoTerms(s.sc, a.Query, contextfold.RecallTerms(a.Query))),
		Candidates: []SessionRecallCandidate{}, Sessions: sr.Sessions, FailedSessions: failed(sr.Failures), Read: read(sr)}
	for _, h := range hits {
		if limit > 0 && len(res.Candidates) == limit {
			res.Omitted++
			continue
		}
		res.Candidates = append(res.Candidates, SessionRecallCandidate{Session: h.ID, Source: h.Source, RecallCandidate: RecallCandidate{
			StepID: h.StepID, Status: h.Status, Coverage: h.Coverage, Score: h.Score, Summary: h.Summary, Evicted: h.Evicted,
		}})
	}
	return nil, res, nil
}

func (s *sessionsServer) scan(ctx context.Context, req *mcp.CallToolRequest, a SessionScanArgs) (*mcp.CallToolResult, SessionScanResult, error) {
	if strings.TrimSpace(a.Prompt) == "" {
		return nil, SessionScanResult{}, errors.New("BadArgument: prompt is empty")
	}
	mode, err := toolMode(a.Match)
	if err != nil {
		return nil, SessionScanResult{}, err
	}
	r, sr, err := s.set.Scan(a.Session, a.Prompt, mode)
	if err != nil {
		return nil, SessionScanResult{}, setError(err)
	}
	res := SessionScanResult{QueryTerms: nonNil(echoTerms(s.sc, a.Prompt, r.QueryTerms)), Selected: []SessionScanPick{}, Dropped: []SessionScanPick{},
		BudgetTokens: r.BudgetTokens, UsedTokens: r.UsedTokens, Sessions: sr.Sessions, FailedSessions: failed(sr.Failures), Read: read(sr)}
	for i, p := range r.Selected {
		res.Selected = append(res.Selected, SessionScanPick{p.ID, p.Source, pick(p.ScanPick, selectedWhy(i, p.ScanPick))})
	}
	for _, p := range r.Dropped {
		res.Dropped = append(res.Dropped, SessionScanPick{p.ID, p.Source, pick(p.ScanPick, droppedWhy(p.ScanPick))})
	}
	return nil, res, nil
}

func (s *sessionsServer) fetch(ctx context.Context, req *mcp.CallToolRequest, a SessionFetchArgs) (*mcp.CallToolResult, SessionFetchResult, error) {
	id := a.Session
	if id == "" {
		ss, err := s.set.Find()
		if err != nil {
			return nil, SessionFetchResult{}, toolError(err)
		}
		if len(ss) != 1 {
			return nil, SessionFetchResult{}, fmt.Errorf(`BadArgument: no session given and %s holds %d sessions: give the session of the recall or scan result, e.g. {"session": %q, "step_id": 12}`, s.set.Root(), len(ss), firstID(ss))
		}
		id = ss[0].ID
	}
	st, x, err := s.set.Store(id)
	if err != nil {
		return nil, SessionFetchResult{}, setError(err)
	}
	if err := st.CheckMoved(); err != nil {
		return nil, SessionFetchResult{}, toolError(err)
	}
	_, r, err := (&server{store: st}).fetch(ctx, req, a.FetchArgs)
	if err != nil {
		return nil, SessionFetchResult{}, err
	}
	// x.ID, not id: a proxy session's id alone ("s-…") names its store "s-…/g1".
	return nil, SessionFetchResult{Session: x.ID, Source: x.Source, FetchResult: r}, nil
}

func firstID(ss []sessiondir.Session) string {
	if len(ss) == 0 {
		return "ID"
	}
	return ss[0].ID
}
