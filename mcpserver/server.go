// Package mcpserver serves an IPCF-1.1 store over the Model Context Protocol:
// tools to recall, fetch (verified, capped), scan, fold, evict, and audit
// archived turns, and read-only resources for each cold node and the recall
// index. It is built on the official MCP Go SDK.
//
// The adapters here are thin: each tool decodes typed arguments, calls one
// operation of the core Store, and encodes a typed result. Protocol failures
// (unknown step, tampered node, orphan, broken reference, path containment)
// come back as tool results with isError set and a message that starts with
// the error's name, so a model can read it and act; they never end the
// session. An unknown tool name is a JSON-RPC error, as MCP requires.
//
// The Store reloads its recall index when the file changes on disk, so one
// server may serve while other processes fold into the same store.
//
// NewSessions serves a directory of session stores instead (the Claude Code
// hooks' .contextfold, the proxy's --dir), read-only: list_sessions, and
// recall, scan and fetch in one session or across all of them.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/sessiondir"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/scrub"
)

// Options configure New. The zero value is valid.
type Options struct {
	// Name and Version identify the server to clients ("contextfold", "dev").
	Name, Version string
	// Logger receives one line per request. nil: no logging. It must never
	// write to the stdout of a stdio server.
	Logger *slog.Logger
	// Sessions, when set, is asked by a server New made before each
	// request that lists or calls tools or reads resources, until it
	// returns a directory of session stores: the store's directory, which
	// held nothing when the server started, has since become one (a proxy
	// started on it). The server then serves that directory as NewSessions
	// does, for good: its one-store tools and resources are removed
	// (fold_turn, evict_node, store_status, validate_store, the steps and
	// the recall index), list_sessions is added, and recall_archived_nodes,
	// scan_prompt and fetch_archived_node read the sessions (same names,
	// with an optional session); clients are notified that the tool list
	// changed. Once the store holds a fold of its own, Sessions must return
	// nil. nil: the server serves its store only (NewSessions ignores it).
	// Calls are serialised.
	Sessions func() *sessiondir.Set
}

// instructions tell the model how to use the tools.
const instructions = `contextfold keeps verbose earlier turns of this work (tool output, logs, diffs) in a verified archive (IPCF-1.1).
When you need a detail that is no longer in the conversation, call scan_prompt with the question (it says which archived steps match and why) or recall_archived_nodes with keywords, then fetch_archived_node with a step_id to read the verified content. Prefer status latest_chronological over superseded or historical.
Content is capped per call; when truncated is true, call fetch_archived_node again with offset = next_offset.
Errors start with their name: NodeNotFoundError (unknown step), IntegrityCheckError (the stored bytes do not match their hash: the content was refused; do not rely on it), OrphanedNodeError, BrokenReferenceError, PathContainmentError.`

// switchInstructions are the instructions of a server New made with
// Options.Sessions. A client reads instructions once, at initialize, so
// they hold both before the switch to a proxy's directory of session stores
// and after it; the tool descriptions say which of the two is served.
const switchInstructions = `contextfold keeps verbose earlier turns of this work (tool output, logs, diffs) in verified archives (IPCF-1.1). This server reads one archive until a contextfold proxy starts on its directory; from then on it reads the proxy's sessions instead, one archive per session, and writes nothing. The tool list then changes (the client is notified: list the tools again): list_sessions appears; fold_turn, evict_node, store_status and validate_store go; recall_archived_nodes, scan_prompt and fetch_archived_node take an optional session. Their descriptions say which of the two is served.
When you need a detail that is no longer in the conversation, call scan_prompt with the question (it says which archived steps match and why) or recall_archived_nodes with keywords, then fetch_archived_node with the step_id, and with the session the result names when it names one (over sessions, recall and scan without session search every session). Prefer status latest_chronological over superseded or historical.
Content is capped per call; when truncated is true, call fetch_archived_node again with offset = next_offset.
Errors start with their name: NodeNotFoundError (unknown step), IntegrityCheckError (the stored bytes do not match their hash: the content was refused; do not rely on it), OrphanedNodeError, BrokenReferenceError, PathContainmentError, BadArgument (over sessions, an unknown session: list_sessions names them).`

// storeServed and sessionsServed end the descriptions of the tools both
// kinds of server offer (recall_archived_nodes, scan_prompt,
// fetch_archived_node), so that a client can tell which is served: a server
// New made with Options.Sessions changes from one to the other.
const (
	storeServed    = "\nServed here: one archive (one store); no session argument."
	sessionsServed = "\nServed here: the archives of several sessions (a directory of session stores, read-only); list_sessions names them."
)

// server holds the store and the resources currently listed.
type server struct {
	store *contextfold.Store
	mcp   *mcp.Server
	// sc redacts the secrets a query or prompt holds from the replies
	// that echo it (recall's query and terms, scan's terms).
	sc *scrub.Scrubber

	mu     sync.Mutex
	listed map[string]bool // URIs of the step resources currently registered
	gone   bool            // the store is no longer served (switchToSessions)

	// sessions is Options.Sessions until the server switched to the
	// directory of session stores it returned (nil after); switchMu
	// serialises the checks.
	sessions func() *sessiondir.Set
	switchMu sync.Mutex
}

// newMCPServer is the MCP server New and NewSessions build on: opts' name
// ("contextfold" when empty) and version ("dev"), the title and
// instructions given, opts' request logger.
func newMCPServer(opts Options, title, instructions string) *mcp.Server {
	if opts.Name == "" {
		opts.Name = "contextfold"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	impl := &mcp.Implementation{Name: opts.Name, Title: title, Version: opts.Version}
	return mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		Capabilities: &mcp.ServerCapabilities{},
	})
}

// New returns an MCP server exposing store. Connect it with Run or Connect
// (stdio, in-memory) or serve it with mcp.NewStreamableHTTPHandler.
func New(store *contextfold.Store, opts Options) *mcp.Server {
	title, ins := "contextfold (IPCF-1.1 archive)", instructions
	if opts.Sessions != nil {
		title, ins = "contextfold (IPCF-1.1 archive, or a proxy's sessions)", switchInstructions
	}
	ms := newMCPServer(opts, title, ins)
	s := &server{store: store, mcp: ms, listed: map[string]bool{}, sessions: opts.Sessions}
	s.sc, _ = scrub.New() // nil only if gitleaks' built-in rules fail to load: echoes are then withheld
	s.addTools()
	s.addResources()
	ms.AddReceivingMiddleware(s.middleware(opts.Logger))
	return ms
}

// middleware refreshes the listed step resources before resources/list, and
// logs each request (to the logger, never to stdout).
func (s *server) middleware(log *slog.Logger) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "tools/") || strings.HasPrefix(method, "resources/") {
				s.switchToSessions(log)
			}
			if method == "resources/list" && s.store != nil && !s.switched() {
				if err := s.syncResources(); err != nil && log != nil {
					log.Warn("listing cold nodes", "err", err)
				}
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			err = wireError(err)
			if log != nil {
				attrs := []any{"method", method, "ms", time.Since(start).Milliseconds()}
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
					attrs = append(attrs, "tool", p.Name)
				}
				if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
					attrs = append(attrs, "tool_error", true)
				}
				if err != nil {
					attrs = append(attrs, "err", err)
				}
				log.Info("request", attrs...)
			}
			return res, err
		}
	}
}

// switchToSessions serves the directory of session stores Options.Sessions
// returns, once it returns one (see Options.Sessions).
func (s *server) switchToSessions(log *slog.Logger) {
	s.switchMu.Lock()
	defer s.switchMu.Unlock()
	if s.sessions == nil {
		return
	}
	set := s.sessions()
	if set == nil {
		return
	}
	s.sessions = nil
	s.mcp.RemoveTools(ToolRecall, ToolFetch, ToolScan, ToolFold, ToolEvict, ToolStatus, ToolValidate)
	s.mu.Lock()
	uris := append(sortedKeys(s.listed), IndexURI)
	s.listed = map[string]bool{}
	s.gone = true
	s.mu.Unlock()
	s.mcp.RemoveResources(uris...)
	s.mcp.RemoveResourceTemplates(StepURITemplate)
	addSessionTools(s.mcp, set)
	if log != nil {
		log.Info("the store's directory became a directory of session stores: serving them, read-only", "dir", set.Root())
	}
}

// switched reports whether the server serves a directory of session stores
// now (switchToSessions).
func (s *server) switched() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

func (s *server) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	addTool(s.mcp, &mcp.Tool{
		Name:        ToolRecall,
		Title:       "Recall archived turns",
		Annotations: readOnly,
		Description: `Search the archive of earlier turns (folded tool output, logs, diffs) for a keyword query and return ranked candidates with a status label.
Candidates with the best coverage come first, newest first: "latest_chronological" is the current fact, "superseded" and "historical" are older versions of it (e.g. a port that changed), "related" matches only part of the query.
Use the step_id with fetch_archived_node to read the content.` + storeServed,
	}, s.recall)
	addTool(s.mcp, &mcp.Tool{
		Name:        ToolFetch,
		Title:       "Fetch an archived turn (verified)",
		Annotations: readOnly,
		Description: `Read the content of one archived turn by step_id (or by its sha256 hash). The stored bytes are verified against their SHA-256 hashes before anything is returned; a node that fails verification is refused with IntegrityCheckError and no content.
Content is capped per call (the store's per-call token cap); when truncated is true, call again with offset = next_offset to read on.` + storeServed,
	}, s.fetch)
	addTool(s.mcp, &mcp.Tool{
		Name:        ToolScan,
		Title:       "Scan a prompt against the archive",
		Annotations: readOnly,
		Description: `Match a prompt against the archive the way contextfold does before each turn: it takes the prompt's terms (identifiers, file names, error names), picks the archived turns that cover them (newest first, one per intent), and keeps within the per-turn token budget.
By default it ranks (match "ranked"): rare terms weigh more than common ones, inflections and identifier parts match, a question lends its terms to the answer after it, an older node is never picked over a newer one about the same entity, and nothing is picked when nothing scores clearly; match "exact" uses the IPCF reference's residual set cover instead.
Returns what would be hydrated and why (matched terms, token cost), and what was dropped for the budget. Nothing is read or changed; fetch the selected steps with fetch_archived_node.` + storeServed,
	}, s.scan)
	addTool(s.mcp, &mcp.Tool{
		Name:  ToolFold,
		Title: "Fold (archive) a turn",
		Annotations: &mcp.ToolAnnotations{
			IdempotentHint: true, DestructiveHint: boolPtr(false),
		},
		Description: `Archive a verbose turn: its content is stored losslessly as a cold node with SHA-256 hashes, and indexed by the identifiers, files, commands and errors it mentions, so that recall and scan find it later.
step_id is the turn's position in the conversation; folding a step that is already archived changes nothing (already_indexed: true).`,
	}, s.fold)
	addTool(s.mcp, &mcp.Tool{
		Name:  ToolEvict,
		Title: "Evict a hydrated turn",
		Annotations: &mcp.ToolAnnotations{
			IdempotentHint: false, DestructiveHint: boolPtr(false),
		},
		Description: `Record that an archived turn that was brought into the context has left it again after the response (IPCF eviction). The archived content is never deleted; an event is appended to the eviction log.`,
	}, s.evict)
	addTool(s.mcp, &mcp.Tool{
		Name:        ToolStatus,
		Title:       "Archive status",
		Annotations: readOnly,
		Description: `Count the archived turns (total, active, evicted), the archived tokens, and show the hydration policy in force (per-call cap, per-turn budget, integrity verification).`,
	}, s.status)
	addTool(s.mcp, &mcp.Tool{
		Name:        ToolValidate,
		Title:       "Validate the archive",
		Annotations: readOnly,
		Description: `Audit every archived turn: path containment, missing files (broken references), hash integrity (tampering, torn writes), and orphan files the index does not list. Returns ok and one finding per problem; nothing is changed.`,
	}, s.validate)
}

func boolPtr(b bool) *bool { return &b }

// echoQuery is the query a reply echoes: scrubbed (a token the user pasted
// into a prompt is not sent back), empty when no scrubber could be built.
func (s *server) echoQuery(q string) string { return echoQuery(s.sc, q) }

// echoQuery is q as a reply may echo it: scrubbed by sc; "" when sc is nil.
func echoQuery(sc *scrub.Scrubber, q string) string {
	if sc == nil {
		return ""
	}
	return sc.Scrub(q).Text
}

// echoTerms are the search terms of text a reply echoes: those that are
// part of a secret in text replaced by its marker (scrub.RedactTerms);
// none when no scrubber could be built.
func (s *server) echoTerms(text string, terms []string) []string { return echoTerms(s.sc, text, terms) }

// echoTerms is (*server).echoTerms with the scrubber given.
func echoTerms(sc *scrub.Scrubber, text string, terms []string) []string {
	if sc == nil {
		return nil
	}
	return sc.RedactTerms(text, terms)
}

func (s *server) recall(_ context.Context, _ *mcp.CallToolRequest, a RecallArgs) (*mcp.CallToolResult, RecallResult, error) {
	mode, err := recallMode(a.Query, a.Limit, a.Match)
	if err != nil {
		return nil, RecallResult{}, err
	}
	if err := s.store.CheckMoved(); err != nil {
		return nil, RecallResult{}, toolError(err) // never a candidate that cannot be fetched
	}
	hits, err := match.Recall(s.store, a.Query, mode)
	if err != nil {
		return nil, RecallResult{}, toolError(err)
	}
	res := RecallResult{Query: s.echoQuery(a.Query), Terms: nonNil(s.echoTerms(a.Query, contextfold.RecallTerms(a.Query))), Candidates: []RecallCandidate{}}
	for _, h := range hits {
		if a.Limit > 0 && len(res.Candidates) == a.Limit {
			res.Omitted++
			continue
		}
		res.Candidates = append(res.Candidates, RecallCandidate{
			StepID: h.StepID, Status: h.Status, Coverage: h.Coverage, Score: h.Score,
			Summary: h.Summary, Evicted: h.Evicted,
		})
	}
	return nil, res, nil
}

func (s *server) fetch(_ context.Context, _ *mcp.CallToolRequest, a FetchArgs) (*mcp.CallToolResult, FetchResult, error) {
	step, err := s.resolveStep(a.StepID, a.Hash)
	if err != nil {
		return nil, FetchResult{}, err
	}
	if a.Offset < 0 {
		return nil, FetchResult{}, fmt.Errorf("BadArgument: offset %d is negative", a.Offset)
	}
	h, err := s.store.Hydrate(step)
	if err != nil {
		if errors.Is(err, contextfold.ErrPathContainment) {
			if merr := s.store.CheckMoved(); merr != nil {
				err = merr // a copied store: the same words as every tool
			}
		}
		return nil, FetchResult{}, toolError(err)
	}
	page, err := Page(h, a.Offset)
	if err != nil {
		return nil, FetchResult{}, err
	}
	verified := true
	if p, err := s.store.Policy(); err == nil {
		verified = p.IntegrityVerification()
	}
	return nil, FetchResult{
		StepID: h.StepID, Summary: h.Summary,
		Content: page.Content, Offset: page.Offset, TotalChars: page.Total,
		Truncated: page.Next > 0, NextOffset: page.Next,
		TokenEstimate: contextfold.TokenEstimate(page.Content), Verified: verified,
		ArtifactSHA256: h.ArtifactSHA256, PayloadSHA256: h.PayloadSHA256, ProjectionSHA256: h.ProjectionSHA256,
	}, nil
}

// resolveStep turns a step id or a hash into a step id, with readable errors
// for a missing or malformed reference.
func (s *server) resolveStep(stepID *int, hash string) (int, error) {
	hash = strings.TrimSpace(hash)
	switch {
	case stepID != nil && hash != "":
		return 0, errors.New("BadArgument: give either step_id or hash, not both")
	case stepID != nil:
		return *stepID, nil
	case hash == "":
		return 0, errors.New(`BadArgument: no step reference: give step_id (an integer from recall_archived_nodes or scan_prompt), e.g. {"step_id": 137}`)
	}
	hex := strings.ToLower(strings.TrimPrefix(hash, "sha256:"))
	if len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return 0, fmt.Errorf("BadArgument: hash %q is not a SHA-256 digest (64 hex digits, optionally prefixed sha256:); give step_id instead", truncateForMessage(hash))
	}
	entries, err := s.store.Entries()
	if err != nil {
		return 0, toolError(err)
	}
	for _, e := range entries {
		if e.ArtifactSHA256 == hex || e.PayloadSHA256 == hex {
			return e.StepID, nil
		}
	}
	return 0, fmt.Errorf("NodeNotFoundError: no archived node has artifact or payload hash %s; use recall_archived_nodes to find step ids", hex)
}

func (s *server) scan(_ context.Context, _ *mcp.CallToolRequest, a ScanArgs) (*mcp.CallToolResult, ScanResult, error) {
	if strings.TrimSpace(a.Prompt) == "" {
		return nil, ScanResult{}, errors.New("BadArgument: prompt is empty")
	}
	mode, err := toolMode(a.Match)
	if err != nil {
		return nil, ScanResult{}, err
	}
	if err := s.store.CheckMoved(); err != nil {
		return nil, ScanResult{}, toolError(err) // never a step that cannot be fetched
	}
	r, err := match.Scan(s.store, a.Prompt, mode)
	if err != nil {
		return nil, ScanResult{}, toolError(err)
	}
	res := ScanResult{
		QueryTerms: nonNil(s.echoTerms(a.Prompt, r.QueryTerms)), Selected: []ScanPick{}, Dropped: []ScanPick{},
		BudgetTokens: r.BudgetTokens, UsedTokens: r.UsedTokens,
	}
	for i, p := range r.Selected {
		res.Selected = append(res.Selected, pick(p, selectedWhy(i, p)))
	}
	for _, p := range r.Dropped {
		res.Dropped = append(res.Dropped, pick(p, droppedWhy(p)))
	}
	return nil, res, nil
}

// recallMode checks a recall tool call's arguments (a query with a word,
// a limit not negative) and returns its matching mode (toolMode).
func recallMode(query string, limit int, name string) (match.Mode, error) {
	if strings.TrimSpace(query) == "" {
		return "", errors.New("BadArgument: query is empty; give keywords such as a port, a file name or an error name")
	}
	if limit < 0 {
		return "", fmt.Errorf("BadArgument: limit %d is negative", limit)
	}
	return toolMode(name)
}

// selectedWhy is the reason a scan reply gives for its i-th selected pick p.
func selectedWhy(i int, p contextfold.ScanPick) string {
	why := "covers " + quoteTerms(p.MatchedTerms)
	if len(p.Why) > 0 {
		why = "matched " + strings.Join(p.Why, "; ")
	}
	if i == 0 {
		return why + "; the best match is always admitted"
	}
	return why + "; fits the remaining per-turn budget"
}

// droppedWhy is the reason a scan reply gives for a pick p the per-turn
// budget left out.
func droppedWhy(p contextfold.ScanPick) string {
	return fmt.Sprintf("covers %s but its cost (%s tokens) exceeds the remaining per-turn budget; fetch it explicitly if needed", quoteTerms(p.MatchedTerms), formatTokens(p.TokenCost))
}

func pick(p contextfold.ScanPick, why string) ScanPick {
	return ScanPick{StepID: p.StepID, Summary: p.Summary, MatchedTerms: nonNil(p.MatchedTerms), TokenCost: p.TokenCost, Reason: why, Score: p.Score}
}

// toolMode is the matching mode of a tool call: ranked unless the match
// argument says exact.
func toolMode(name string) (match.Mode, error) {
	if strings.TrimSpace(name) == "" {
		return match.Ranked, nil
	}
	m, err := match.ParseMode(name)
	if err != nil {
		return "", fmt.Errorf("BadArgument: match: %v", err)
	}
	return m, nil
}

func (s *server) fold(_ context.Context, _ *mcp.CallToolRequest, a FoldArgs) (*mcp.CallToolResult, FoldResult, error) {
	t := contextfold.Turn{
		StepID: a.StepID, Summary: a.Summary, RawContent: a.Content, SessionID: a.SessionID,
		Files: a.Files, Commands: a.Commands, Errors: a.Errors,
	}
	r, err := s.store.Fold(t)
	if err != nil {
		return nil, FoldResult{}, toolError(err)
	}
	e := r.Entry
	res := FoldResult{
		StepID: e.StepID, AlreadyIndexed: r.AlreadyIndexed, FilePath: e.FilePath, TokenEstimate: e.TokenEstimate,
		ArtifactSHA256: e.ArtifactSHA256, PayloadSHA256: e.PayloadSHA256, ProjectionSHA256: e.ProjectionSHA256,
		Identifiers: nonNil(e.Identifiers),
	}
	if r.AlreadyIndexed {
		// A step id is folded once: another turn offered at it is dropped.
		if c, err := s.store.Conflicts([]contextfold.Turn{t}); err == nil && len(c) > 0 {
			res.Warning = fmt.Sprintf("step %d already holds another turn (session %q); this turn was NOT stored: use a step id not archived yet", t.StepID, c[0].StoredSession)
		}
	} else if w := emptyTurnWarning(t); w != "" {
		res.Warning = w
	}
	return nil, res, nil
}

func (s *server) evict(_ context.Context, _ *mcp.CallToolRequest, a StepArgs) (*mcp.CallToolResult, EvictResult, error) {
	ev, err := s.store.Evict(a.StepID)
	if err != nil {
		return nil, EvictResult{}, toolError(err)
	}
	return nil, EvictResult{StepID: ev.StepID, EvictedAt: ev.EvictedAt}, nil
}

func (s *server) status(_ context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, StatusResult, error) {
	if err := s.store.CheckMoved(); err != nil {
		return nil, StatusResult{}, toolError(err) // a copied store is not healthy
	}
	st, err := s.store.Status()
	if err != nil {
		return nil, StatusResult{}, toolError(err)
	}
	return nil, StatusResult{
		Dir: s.store.Dir(), Total: st.Total, Active: st.Active, Evicted: st.Evicted, TotalTokens: st.TotalTokens,
		PolicyHash: st.Policy.Hash(), Policy: st.Policy.Doc(),
	}, nil
}

func (s *server) validate(_ context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, ValidateResult, error) {
	rep, err := s.store.Validate()
	if err != nil {
		return nil, ValidateResult{}, toolError(err)
	}
	res := ValidateResult{OK: rep.OK(), Passed: rep.Passed, Findings: []Finding{}}
	for _, f := range rep.Findings {
		res.Findings = append(res.Findings, Finding{StepID: f.StepID, File: f.File, Kind: f.Kind, Message: f.Message})
	}
	return nil, res, nil
}

// ErrorName is contextfold.ErrorName, the protocol name of a core error
// (kept here for callers of this package).
func ErrorName(err error) string { return contextfold.ErrorName(err) }

// toolError turns a core error into the message of a tool error: its
// protocol name first, then what happened and what to do.
func toolError(err error) error {
	name := ErrorName(err)
	var hint string
	switch name {
	case "NodeNotFoundError":
		hint = "; use recall_archived_nodes or scan_prompt to find step ids"
	case "IntegrityCheckError", "PathContainmentError":
		hint = "; the node was refused and no content was returned: do not rely on it (run 'contextfold validate' to audit the store)"
	case "OrphanedNodeError", "BrokenReferenceError":
		hint = "; no content was returned"
	case "":
		name = "Error"
	}
	return fmt.Errorf("%s: %w%s", name, err, hint)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func quoteTerms(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, ", ")
}

func formatTokens(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// truncateForMessage shortens user input quoted back in an error.
func truncateForMessage(s string) string {
	r := []rune(s)
	if len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]bool) []string {
	k := make([]string, 0, len(m))
	for u := range m {
		k = append(k, u)
	}
	sort.Strings(k)
	return k
}

// emptyTurnWarning is fold_turn's warning for a turn folded with an empty
// summary, as the reference folds it (IPCF §3; the CLI 'fold' does the same
// and warns on stderr): "" when the summary has text.
func emptyTurnWarning(t contextfold.Turn) string {
	if t.Summary != "" {
		return ""
	}
	if t.RawContent == "" {
		return fmt.Sprintf("step %d has an empty summary and an empty content; it was folded as an empty turn (IPCF §3), which no prompt will match: fold the turn's text at a new step id", t.StepID)
	}
	return fmt.Sprintf("step %d has an empty summary; it was folded with an empty summary (IPCF §3), so recall and scan show no description of it: give a one-line summary when you fold", t.StepID)
}
