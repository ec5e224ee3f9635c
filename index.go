package contextfold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/extract"
)

// Entry is one recall-index entry, the page-table row of a folded turn
// (spec §5). Doc keeps every stored key, including unknown ones, so that an
// index written by another implementation is rewritten without loss.
type Entry struct {
	StepID           int
	Summary          string
	PayloadSHA256    string
	ProjectionSHA256 string
	ArtifactSHA256   string
	FilePath         string // relative to the directory holding the store, '/' separated
	TokenEstimate    int    // tokens
	FoldedAt         string
	Identifiers      []string
	Files            []string
	Commands         []string
	Errors           []string
	Evicted          bool
	Doc              map[string]any

	pretty       []byte   // cached pretty encoding at depth 2
	terms        []string // identifiers ∪ folded files ∪ folded errors, sorted unique
	summaryTerms []string // identifiers of the summary alone
}

// Terms returns the node's matchable terms: its identifiers, and its files and
// errors folded (spec §4 "Matching"). Sorted, unique. Do not modify.
func (e *Entry) Terms() []string {
	if e.terms == nil {
		all := append([]string{}, e.Identifiers...)
		for _, f := range e.Files {
			all = append(all, extract.FoldTerm(f))
		}
		for _, f := range e.Errors {
			all = append(all, extract.FoldTerm(f))
		}
		e.terms = extract.SortUnique(all)
	}
	return e.terms
}

// SummaryTerms returns the identifiers of the summary alone (recall scoring).
func (e *Entry) SummaryTerms() []string {
	if e.summaryTerms == nil {
		e.summaryTerms = extract.Identifiers(extract.NFC(e.Summary))
	}
	return e.summaryTerms
}

func newEntry(n *ColdNode, filePath string, extra map[string]any) *Entry {
	e := &Entry{
		StepID:           n.StepID,
		Summary:          n.Summary,
		PayloadSHA256:    n.PayloadSHA256,
		ProjectionSHA256: n.ProjectionSHA256,
		ArtifactSHA256:   n.ArtifactSHA256,
		FilePath:         filePath,
		TokenEstimate:    n.TokenEstimate,
		FoldedAt:         n.FoldedAt,
		Identifiers:      n.Identifiers,
		Files:            n.Files,
		Commands:         n.Commands,
		Errors:           n.Errors,
	}
	e.Doc = map[string]any{
		"step_id":            e.StepID,
		"projection_version": ProjectionVersion,
		"summary":            e.Summary,
		"payload_sha256":     e.PayloadSHA256,
		"projection_sha256":  e.ProjectionSHA256,
		"artifact_sha256":    e.ArtifactSHA256,
		"file_path":          e.FilePath,
		"token_estimate":     e.TokenEstimate,
		"folded_at":          e.FoldedAt,
		"identifiers":        e.Identifiers,
		"files":              e.Files,
		"commands":           e.Commands,
		"errors":             e.Errors,
		"evicted":            false,
	}
	for k, v := range extra {
		e.Doc[k] = v
	}
	return e
}

func intField(doc map[string]any, key string) (int, error) {
	v, ok := doc[key]
	if !ok {
		return 0, fmt.Errorf("key %q is missing", key)
	}
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.Atoi(string(x))
		if err != nil {
			return 0, fmt.Errorf("key %q is not an integer: %s", key, x)
		}
		return n, nil
	case int:
		return x, nil
	}
	return 0, fmt.Errorf("key %q is not an integer", key)
}

func stringsField(doc map[string]any, key string) ([]string, error) {
	v, ok := doc[key]
	if !ok || v == nil {
		return []string{}, nil
	}
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, s := range x {
			str, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("key %q holds a non-string item", key)
			}
			out[i] = str
		}
		return out, nil
	}
	return nil, fmt.Errorf("key %q is not a list of strings", key)
}

// entryFromDoc reads an index entry keyed by key.
func entryFromDoc(key string, v any) (*Entry, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("entry %q is not an object", key)
	}
	e := &Entry{Doc: doc}
	var err error
	if e.StepID, err = intField(doc, "step_id"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	if strconv.Itoa(e.StepID) != key {
		return nil, fmt.Errorf("entry %q holds step_id %d", key, e.StepID)
	}
	str := func(k string) string { s, _ := doc[k].(string); return s }
	e.Summary = str("summary")
	e.PayloadSHA256 = str("payload_sha256")
	e.ProjectionSHA256 = str("projection_sha256")
	e.ArtifactSHA256 = str("artifact_sha256")
	e.FilePath = str("file_path")
	e.FoldedAt = str("folded_at")
	if e.TokenEstimate, err = intField(doc, "token_estimate"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	for k, dst := range map[string]*[]string{"identifiers": &e.Identifiers, "files": &e.Files, "commands": &e.Commands, "errors": &e.Errors} {
		if *dst, err = stringsField(doc, k); err != nil {
			return nil, fmt.Errorf("entry %q: %w", key, err)
		}
	}
	e.Evicted, _ = doc["evicted"].(bool)
	return e, nil
}

// index is the in-memory recall index: the decoded recall_index.json plus
// derived structures (an inverted index from term to steps).
type index struct {
	header  map[string]any // every top-level key but "nodes"
	entries map[int]*Entry
	// postings maps a matchable term to the steps holding it (unsorted).
	postings map[string][]int
}

func newIndex(createdAt string) *index {
	return &index{
		header: map[string]any{
			"ipcf_version":       IPCFVersion,
			"projection_version": ProjectionVersion,
			"created_at":         createdAt,
		},
		entries:  map[int]*Entry{},
		postings: map[string][]int{},
	}
}

func parseIndex(data []byte) (*index, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the recall index must be a JSON object")
	}
	ix := &index{header: map[string]any{}, entries: map[int]*Entry{}, postings: map[string][]int{}}
	for k, v := range doc {
		if k != "nodes" {
			ix.header[k] = v
		}
	}
	nodes, ok := doc["nodes"].(map[string]any)
	if !ok && doc["nodes"] != nil {
		return nil, fmt.Errorf(`"nodes" must be an object`)
	}
	for k, v := range nodes {
		e, err := entryFromDoc(k, v)
		if err != nil {
			return nil, err
		}
		ix.add(e)
	}
	return ix, nil
}

func (ix *index) add(e *Entry) {
	ix.entries[e.StepID] = e
	for _, t := range e.Terms() {
		ix.postings[t] = append(ix.postings[t], e.StepID)
	}
}

// sortedSteps returns the step ids in ascending order.
func (ix *index) sortedSteps() []int {
	ids := make([]int, 0, len(ix.entries))
	for id := range ix.entries {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// encode writes the index in the pretty form (spec §1). Entry encodings are
// cached, so rewriting a large index costs a copy.
func (ix *index) encode() ([]byte, error) {
	keys := make([]string, 0, len(ix.entries))
	byKey := make(map[string]*Entry, len(ix.entries))
	for id, e := range ix.entries {
		k := strconv.Itoa(id)
		keys = append(keys, k)
		byKey[k] = e
	}
	sort.Strings(keys)
	var nodes bytes.Buffer
	if len(keys) == 0 {
		nodes.WriteString("{}")
	} else {
		nodes.WriteString("{")
		for i, k := range keys {
			e := byKey[k]
			if e.pretty == nil {
				p, err := canonjson.PrettyAt(e.Doc, 2)
				if err != nil {
					return nil, err
				}
				e.pretty = p
			}
			if i > 0 {
				nodes.WriteByte(',')
			}
			nodes.WriteString("\n    ")
			canonjson.WriteString(&nodes, k)
			nodes.WriteString(": ")
			nodes.Write(e.pretty)
		}
		nodes.WriteString("\n  }")
	}
	doc := make(map[string]any, len(ix.header)+1)
	for k, v := range ix.header {
		doc[k] = v
	}
	doc["nodes"] = canonjson.Raw(nodes.Bytes())
	return canonjson.Pretty(doc)
}
