package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
)

// PageOf is one window of a verified hydration's content.
type PageOf struct {
	Content string // at most the per-call cap
	Offset  int    // code point offset of Content in the whole content
	Total   int    // code points of the whole content
	Next    int    // offset of the next window; 0 when Content reaches the end
}

// Page returns the window of h's verified content that starts at offset code
// points, no longer than the per-call cap that Hydrate applied (the whole
// content when Hydrate did not cut it). Offset 0 is h.Content itself.
func Page(h *contextfold.Hydration, offset int) (PageOf, error) {
	total := utf8.RuneCountInString(h.RawContent)
	if offset < 0 || offset > total {
		return PageOf{}, fmt.Errorf("BadArgument: offset %d is outside the content of step %d (0 to %d characters)", offset, h.StepID, total)
	}
	if !h.Truncated {
		if offset == 0 {
			return PageOf{Content: h.Content, Total: total}, nil
		}
		return PageOf{Content: sliceRunes(h.RawContent, offset, total), Offset: offset, Total: total}, nil
	}
	window := utf8.RuneCountInString(h.Content)
	if window == 0 {
		return PageOf{}, fmt.Errorf("BadArgument: the hydration policy's per-call cap allows no content for step %d", h.StepID)
	}
	end := min(offset+window, total)
	p := PageOf{Content: sliceRunes(h.RawContent, offset, end), Offset: offset, Total: total}
	if end < total {
		p.Next = end
	}
	return p, nil
}

// sliceRunes returns s[from:to] counted in code points.
func sliceRunes(s string, from, to int) string {
	i, start, end := 0, len(s), len(s)
	for pos := range s {
		if i == from {
			start = pos
		}
		if i == to {
			end = pos
			break
		}
		i++
	}
	if start > end {
		return ""
	}
	return s[start:end]
}

// StepURI returns the resource address of a step's cold node.
func StepURI(step int) string { return StepURIPrefix + strconv.Itoa(step) }

func (s *server) addResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "cold-node",
		Title:       "Archived turn (verified)",
		URITemplate: StepURITemplate,
		MIMEType:    "text/plain",
		Description: "The verified content of one archived turn, capped like fetch_archived_node. A node that fails verification cannot be read.",
	}, s.readStep)
	s.mcp.AddResource(&mcp.Resource{
		Name:        "recall-index",
		Title:       "Recall index (page table)",
		URI:         IndexURI,
		MIMEType:    "application/json",
		Description: "The recall index of the archive: one entry per archived turn with its summary, hashes, token estimate, terms and eviction state. Read-only.",
	}, s.readIndex)
}

// syncResources makes resources/list show one resource per indexed step.
func (s *server) syncResources() error {
	entries, err := s.store.Entries()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]*contextfold.Entry, len(entries))
	for _, e := range entries {
		want[StepURI(e.StepID)] = e
	}
	var gone []string
	for _, uri := range sortedKeys(s.listed) {
		if want[uri] == nil {
			gone = append(gone, uri)
			delete(s.listed, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	for _, e := range entries {
		uri := StepURI(e.StepID)
		if s.listed[uri] {
			continue
		}
		s.listed[uri] = true
		s.mcp.AddResource(&mcp.Resource{
			Name:        "step-" + strconv.Itoa(e.StepID),
			Title:       fmt.Sprintf("step %d: %s", e.StepID, e.Summary),
			URI:         uri,
			MIMEType:    "text/plain",
			Description: e.Summary,
		}, s.readStep)
	}
	return nil
}

func (s *server) readStep(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, StepURIPrefix)
	step, err := strconv.Atoi(rest)
	if !ok || err != nil || strconv.Itoa(step) != rest {
		// Not a step id in its one decimal form ("%2e%2e", "+5", "007",
		// a number past int64): invalid params, not a missing node.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"BadArgument: %q is not a step address; use %s<step_id> with the step id as a decimal integer, e.g. %s", truncateForMessage(uri), StepURIPrefix, StepURI(137))}
	}
	h, err := s.store.Hydrate(step)
	if errors.Is(err, contextfold.ErrNodeNotFound) {
		return nil, stepNotFound(req, step, uri)
	}
	if err != nil {
		return nil, toolError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: uri, MIMEType: "text/plain", Text: h.Content,
		Meta: mcp.Meta{
			"step_id": h.StepID, "summary": h.Summary, "truncated": h.Truncated,
			"token_estimate": h.TokenEstimate, "artifact_sha256": h.ArtifactSHA256,
			"payload_sha256": h.PayloadSHA256,
		},
	}}}, nil
}

func (s *server) readIndex(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	data, err := s.store.IndexJSON()
	if errors.Is(err, os.ErrNotExist) {
		// An empty store: the same shape, no nodes.
		data, err = json.Marshal(map[string]any{
			"ipcf_version": contextfold.IPCFVersion, "projection_version": contextfold.ProjectionVersion,
			"nodes": map[string]any{},
		})
	}
	if err != nil {
		return nil, fmt.Errorf("StoreFileError: reading the recall index: %w", err)
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("StoreFileError: %s is not valid JSON (run 'contextfold validate')", contextfold.IndexFile)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "application/json", Text: string(data),
	}}}, nil
}

// codeResourceNotFoundLegacy is the resource-not-found code of the MCP
// specification up to 2025-11-25 (server/resources, "Error Handling"): -32002.
const codeResourceNotFoundLegacy = -32002

// firstInvalidParamsRevision is the first MCP revision (2026-07-28, SEP-2164)
// in which resource-not-found is -32602 Invalid params instead of -32002.
const firstInvalidParamsRevision = "2026-07-28"

// stepNotFound is the resources/read answer for a step address with no cold
// node: code -32002 for a session that negotiated a revision before
// 2026-07-28 (the code those revisions specify), the SDK's
// mcp.CodeResourceNotFound (-32602 per SEP-2164) for later ones; the message
// starts with NodeNotFoundError, names the step and the remedy, and data
// carries {"uri": uri} as the specification's example does.
func stepNotFound(req *mcp.ReadResourceRequest, step int, uri string) error {
	code := mcp.CodeResourceNotFound
	if v := negotiatedVersion(req); v != "" && v < firstInvalidParamsRevision {
		code = codeResourceNotFoundLegacy
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: code, Data: data, Message: fmt.Sprintf(
		"NodeNotFoundError: no cold node at step %d (%s); list the archived steps with resources/list or find one with recall_archived_nodes", step, truncateForMessage(uri))}
}

// negotiatedVersion is the protocol revision the client asked for in
// initialize ("" when unknown).
func negotiatedVersion(req *mcp.ReadResourceRequest) string {
	if req == nil || req.Session == nil {
		return ""
	}
	if p := req.Session.InitializeParams(); p != nil {
		return p.ProtocolVersion
	}
	return ""
}
