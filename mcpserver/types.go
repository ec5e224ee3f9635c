package mcpserver

// Tool names, as a model sees them.
const (
	ToolRecall   = "recall_archived_nodes"
	ToolFetch    = "fetch_archived_node"
	ToolScan     = "scan_prompt"
	ToolFold     = "fold_turn"
	ToolEvict    = "evict_node"
	ToolStatus   = "store_status"
	ToolValidate = "validate_store"
)

// Resource addresses.
const (
	// StepURIPrefix starts the address of a cold node: contextfold://steps/137.
	StepURIPrefix = "contextfold://steps/"
	// StepURITemplate is the RFC 6570 template of the cold node resources.
	StepURITemplate = "contextfold://steps/{step_id}"
	// IndexURI is the address of the recall index resource.
	IndexURI = "contextfold://recall_index"
)

// RecallArgs are the arguments of recall_archived_nodes.
type RecallArgs struct {
	Query string `json:"query" jsonschema:"words, identifiers, file names or error names to look for in the archive, e.g. 'PostgreSQL port'"`
	Limit int    `json:"limit,omitempty" jsonschema:"return at most this many candidates (0 or absent: all)"`
	Match string `json:"match,omitempty" jsonschema:"matching mode: ranked (default: terms weighed by rarity, stems, neighbouring turns) or exact (the IPCF reference's exact-term matching)"`
}

// RecallCandidate is one ranked recall hit.
type RecallCandidate struct {
	StepID   int    `json:"step_id" jsonschema:"the step id; pass it to fetch_archived_node"`
	Status   string `json:"status" jsonschema:"latest_chronological (the newest node of the best coverage: trust it first), superseded, historical (older versions of the same facts), or related (partial match)"`
	Coverage int    `json:"coverage" jsonschema:"distinct query terms the node holds"`
	Score    int    `json:"score" jsonschema:"exact: +2 per term in the node's summary, +1 per term in its indexed terms; ranked: the ranked score x 100"`
	Summary  string `json:"summary" jsonschema:"the one-line summary of the archived turn"`
	Evicted  bool   `json:"evicted" jsonschema:"true when the node was hydrated earlier and evicted after that response"`
}

// RecallResult is the result of recall_archived_nodes.
type RecallResult struct {
	Query      string            `json:"query"`
	Terms      []string          `json:"terms" jsonschema:"the query terms that were matched against the index"`
	Candidates []RecallCandidate `json:"candidates" jsonschema:"ranked: primary tier first (newest first), then related nodes"`
	Omitted    int               `json:"omitted,omitempty" jsonschema:"candidates left out by limit"`
}

// FetchArgs are the arguments of fetch_archived_node. Exactly one of
// StepID and Hash names the node.
type FetchArgs struct {
	StepID *int   `json:"step_id,omitempty" jsonschema:"the step id of the archived node (from recall_archived_nodes or scan_prompt)"`
	Hash   string `json:"hash,omitempty" jsonschema:"alternatively, the node's artifact_sha256 or payload_sha256 (64 hex digits, optionally prefixed sha256:)"`
	Offset int    `json:"offset,omitempty" jsonschema:"start at this character (code point) of the content, to read past the per-call cap; use next_offset of the previous call"`
}

// FetchResult is the result of fetch_archived_node: verified content, capped
// per call.
type FetchResult struct {
	StepID           int    `json:"step_id"`
	Summary          string `json:"summary"`
	Content          string `json:"content" jsonschema:"the archived content, verified against its SHA-256 hashes, at most the per-call cap"`
	Offset           int    `json:"offset" jsonschema:"the character offset of content within the whole archived content"`
	TotalChars       int    `json:"total_chars" jsonschema:"characters (code points) of the whole archived content"`
	Truncated        bool   `json:"truncated" jsonschema:"true when content stops before the end; fetch again with offset = next_offset"`
	NextOffset       int    `json:"next_offset,omitempty" jsonschema:"where the next page starts, when truncated"`
	TokenEstimate    int    `json:"token_estimate" jsonschema:"tokens of content"`
	Verified         bool   `json:"verified" jsonschema:"true when the artifact hash was recomputed and matched (policy integrity_verification)"`
	ArtifactSHA256   string `json:"artifact_sha256"`
	PayloadSHA256    string `json:"payload_sha256"`
	ProjectionSHA256 string `json:"projection_sha256"`
}

// ScanArgs are the arguments of scan_prompt.
type ScanArgs struct {
	Prompt string `json:"prompt" jsonschema:"the user's prompt (or any text) to match against the archive"`
	Match  string `json:"match,omitempty" jsonschema:"matching mode: ranked (default: terms weighed by rarity, stems, neighbouring turns, a score cut-off) or exact (the IPCF reference's residual set cover)"`
}

// ScanPick is one node the scan chose or dropped, with the reason.
type ScanPick struct {
	StepID       int      `json:"step_id"`
	Summary      string   `json:"summary"`
	MatchedTerms []string `json:"matched_terms" jsonschema:"the prompt terms this node covered when it was picked"`
	TokenCost    float64  `json:"token_cost" jsonschema:"tokens it costs: min(token_estimate, per-call cap, per-turn budget)"`
	Reason       string   `json:"reason" jsonschema:"why it was selected or dropped"`
	Score        float64  `json:"score,omitempty" jsonschema:"ranked mode: the node's marginal score when picked"`
}

// ScanResult is the result of scan_prompt: what would be hydrated and why.
type ScanResult struct {
	QueryTerms   []string   `json:"query_terms" jsonschema:"terms taken from the prompt (identifiers, file names, error names)"`
	Selected     []ScanPick `json:"selected" jsonschema:"nodes that would be hydrated, in pick order; fetch each with fetch_archived_node"`
	Dropped      []ScanPick `json:"dropped" jsonschema:"matching nodes that did not fit the per-turn budget"`
	BudgetTokens float64    `json:"budget_tokens" jsonschema:"per-turn hydration budget"`
	UsedTokens   float64    `json:"used_tokens" jsonschema:"tokens the selected nodes cost"`
}

// FoldArgs are the arguments of fold_turn.
type FoldArgs struct {
	StepID    int      `json:"step_id" jsonschema:"the turn's position in the conversation history (its step id)"`
	Summary   string   `json:"summary" jsonschema:"a short description that stays in the prompt"`
	Content   string   `json:"content,omitempty" jsonschema:"the verbose content to archive (tool output, log, diff); empty: the summary is the content"`
	SessionID string   `json:"session_id,omitempty" jsonschema:"session the turn belongs to (default: default-session)"`
	Files     []string `json:"files,omitempty" jsonschema:"files the turn touched (absent: extracted from the text)"`
	Commands  []string `json:"commands,omitempty" jsonschema:"commands the turn ran (absent: extracted from the text)"`
	Errors    []string `json:"errors,omitempty" jsonschema:"error names the turn saw (absent: extracted from the text)"`
}

// FoldResult is the result of fold_turn.
type FoldResult struct {
	StepID           int      `json:"step_id"`
	AlreadyIndexed   bool     `json:"already_indexed" jsonschema:"true when the step was archived before: nothing was written"`
	FilePath         string   `json:"file_path" jsonschema:"the cold node file, relative to the store's parent directory"`
	TokenEstimate    int      `json:"token_estimate"`
	ArtifactSHA256   string   `json:"artifact_sha256"`
	PayloadSHA256    string   `json:"payload_sha256"`
	ProjectionSHA256 string   `json:"projection_sha256"`
	Identifiers      []string `json:"identifiers" jsonschema:"the terms recall and scan will match"`
	// Warning says, when the step was archived with another turn, that the
	// offered turn was not stored, and, when the turn was folded with an
	// empty summary (as the reference folds it, IPCF §3), that it was;
	// empty otherwise.
	Warning string `json:"warning,omitempty" jsonschema:"set when the step holds another turn (the offered one was not stored) or when the turn was folded with an empty summary"`
}

// StepArgs name one step, for evict_node.
type StepArgs struct {
	StepID int `json:"step_id" jsonschema:"the step id of the archived node"`
}

// EvictResult is the result of evict_node.
type EvictResult struct {
	StepID    int    `json:"step_id"`
	EvictedAt string `json:"evicted_at" jsonschema:"UTC timestamp of the eviction event appended to the log"`
}

// NoArgs is the empty argument object of store_status and validate_store.
type NoArgs struct{}

// StatusResult is the result of store_status.
type StatusResult struct {
	Dir         string         `json:"dir" jsonschema:"the store directory"`
	Total       int            `json:"total" jsonschema:"archived nodes"`
	Active      int            `json:"active" jsonschema:"nodes not evicted"`
	Evicted     int            `json:"evicted"`
	TotalTokens int            `json:"total_tokens" jsonschema:"archived tokens (sum of token estimates)"`
	PolicyHash  string         `json:"policy_hash" jsonschema:"folding_policy_hash of the hydration policy in force"`
	Policy      map[string]any `json:"policy" jsonschema:"the hydration policy in force"`
}

// Finding is one problem validate_store found.
type Finding struct {
	StepID  *int   `json:"step_id,omitempty"`
	File    string `json:"file"`
	Kind    string `json:"kind" jsonschema:"path_containment, broken_reference, integrity, orphan, payload, projection, index_mismatch or store_file"`
	Message string `json:"message"`
}

// ValidateResult is the result of validate_store.
type ValidateResult struct {
	OK       bool      `json:"ok" jsonschema:"true when every node passed"`
	Passed   int       `json:"passed" jsonschema:"nodes that passed every check"`
	Findings []Finding `json:"findings"`
}
