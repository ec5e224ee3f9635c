package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/canonjson"
)

// Verification states of a step, at a glance.
const (
	StateVerified = "verified" // every check passed
	StateTampered = "tampered" // a hash, the projection, the entry or the path does not check out
	StateBroken   = "broken"   // the index lists it, the file is missing
	StateOrphan   = "orphan"   // the file exists, the index does not list it
)

// stateOfKind maps a Validate finding kind to the state it puts a step in.
func stateOfKind(kind string) string {
	switch kind {
	case contextfold.KindBrokenReference:
		return StateBroken
	case contextfold.KindOrphan:
		return StateOrphan
	}
	return StateTampered
}

// maxNodeFileBytes bounds the cold node files the inspector reads itself
// (unverified views of tampered or orphan nodes).
const maxNodeFileBytes = 256 << 20

// findingView is one Validate finding with its repair suggestion.
type findingView struct {
	StepID     *int   `json:"step_id,omitempty"`
	Kind       string `json:"kind"`
	State      string `json:"state"`
	File       string `json:"file"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion"`
}

func viewFinding(f contextfold.Finding) findingView {
	return findingView{StepID: f.StepID, Kind: f.Kind, State: stateOfKind(f.Kind), File: f.File, Message: f.Message, Suggestion: contextfold.Remedy(f.Kind)}
}

// stepRow is one line of the timeline.
type stepRow struct {
	StepID       int                `json:"step_id"`
	Summary      string             `json:"summary"`
	ActionType   string             `json:"action_type"`
	Tokens       int                `json:"token_estimate"` // cold: the archived payload
	HotTokens    int                `json:"hot_tokens"`     // what stays in the prompt: the summary
	Evicted      bool               `json:"evicted"`
	Indexed      bool               `json:"indexed"`
	State        string             `json:"state"`
	FindingKinds []string           `json:"finding_kinds"`
	FoldedAt     string             `json:"folded_at"`
	Files        []string           `json:"files"`
	Commands     []string           `json:"commands"`
	Errors       []string           `json:"errors"`
	Hydrations   int                `json:"hydrations"` // eviction events: each closes one hydration
	FileBytes    int64              `json:"file_bytes"` // size of the cold node file on disk
	entry        *contextfold.Entry // nil for an orphan
	filled       bool               // ActionType and FileBytes are set (fill)
}

// terms returns the step's matchable terms (the term filter); an orphan has
// none.
func (r *stepRow) terms() []string {
	if r.entry == nil {
		return nil
	}
	return r.entry.Terms()
}

// snapshot is everything the store says, read once for one request.
type snapshot struct {
	rows     []stepRow // ascending step order, orphans included
	byStep   map[int]*stepRow
	entries  map[int]*contextfold.Entry
	report   *contextfold.Report
	log      []contextfold.Eviction
	policy   *contextfold.Policy
	warnings []string
}

// snapshot reads the index, the validate report, the eviction log and the
// policy. A store file that cannot be read becomes a warning; the rest is
// still shown.
func (in *Inspector) snapshot(fresh bool) *snapshot {
	s := in.store
	sn := &snapshot{byStep: map[int]*stepRow{}, entries: map[int]*contextfold.Entry{}}
	entries, err := s.Entries()
	if err != nil {
		sn.warnings = append(sn.warnings, err.Error())
	}
	rep, err := in.report(fresh)
	if err != nil {
		sn.warnings = append(sn.warnings, "validate: "+err.Error())
		rep = &contextfold.Report{}
	}
	sn.report = rep
	log, err := s.EvictionLog()
	if err != nil {
		sn.warnings = append(sn.warnings, err.Error())
	}
	sn.log = log
	pol, err := s.Policy()
	if err != nil {
		sn.warnings = append(sn.warnings, err.Error())
		pol = contextfold.DefaultPolicy()
	}
	sn.policy = pol
	hydrations := map[int]int{}
	for _, ev := range log {
		hydrations[ev.StepID]++
	}
	kinds := map[int][]string{}
	for _, f := range rep.Findings {
		if f.StepID != nil {
			kinds[*f.StepID] = append(kinds[*f.StepID], f.Kind)
		}
	}
	for _, e := range entries {
		sn.entries[e.StepID] = e
		row := stepRow{
			StepID: e.StepID, Summary: e.Summary, Tokens: e.TokenEstimate, HotTokens: contextfold.TokenEstimate(e.Summary),
			Evicted: e.Evicted, Indexed: true, State: StateVerified, FindingKinds: []string{}, FoldedAt: e.FoldedAt,
			Files: nonNil(e.Files), Commands: nonNil(e.Commands), Errors: nonNil(e.Errors),
			Hydrations: hydrations[e.StepID], entry: e,
		}
		if k := kinds[e.StepID]; len(k) > 0 {
			row.FindingKinds = k
			row.State = stateOfKind(k[0])
		}
		sn.rows = append(sn.rows, row)
	}
	for _, f := range rep.Findings {
		if f.Kind != contextfold.KindOrphan || f.StepID == nil {
			continue
		}
		if _, indexed := sn.entries[*f.StepID]; indexed {
			continue
		}
		row := stepRow{StepID: *f.StepID, Summary: "(orphan: the file exists, the recall index does not list it)", State: StateOrphan,
			FindingKinds: []string{f.Kind}, Files: []string{}, Commands: []string{}, Errors: []string{}, ActionType: harness.ActionOther}
		if doc, err := in.nodeDoc(*f.StepID); err == nil {
			t := turnFromDoc(doc)
			row.Summary = t.Summary
			row.Files, row.Commands, row.Errors = nonNil(t.Files), nonNil(t.Commands), nonNil(t.Errors)
			row.ActionType = harness.ProjectEntry(&contextfold.Entry{StepID: t.StepID, Summary: t.Summary,
				Files: t.Files, Commands: t.Commands, Errors: t.Errors}, t.RawContent).ActionType
			row.Tokens = contextfold.TokenEstimate(t.Payload())
			row.HotTokens = contextfold.TokenEstimate(t.Summary)
			row.FoldedAt, _ = doc["folded_at"].(string)
		}
		if n, ok := in.nodeSize(*f.StepID, ""); ok {
			row.FileBytes = n
		}
		row.filled = true
		sn.rows = append(sn.rows, row)
	}
	sort.SliceStable(sn.rows, func(i, j int) bool { return sn.rows[i].StepID < sn.rows[j].StepID })
	for i := range sn.rows {
		if _, dup := sn.byStep[sn.rows[i].StepID]; !dup {
			sn.byStep[sn.rows[i].StepID] = &sn.rows[i]
		}
	}
	return sn
}

// fill sets the fields of a row that cost a read of its cold node: the
// action type (the node hydrated, so verified, the first time its content is
// seen; cached by artifact) and the file's size. Only the rows a page shows
// are filled, so a page of a long session reads its own nodes, not all.
func (in *Inspector) fill(r *stepRow) {
	if r.filled || r.entry == nil {
		return
	}
	r.ActionType = in.actionType(r.entry)
	if n, ok := in.nodeSize(r.StepID, r.entry.ArtifactSHA256); ok {
		r.FileBytes = n
	}
	r.filled = true
}

// fillSizes sets FileBytes of every row (the archive chart), without the
// action types.
func (in *Inspector) fillSizes(rows []stepRow) {
	for i := range rows {
		r := &rows[i]
		if r.filled || r.entry == nil {
			continue
		}
		if n, ok := in.nodeSize(r.StepID, r.entry.ArtifactSHA256); ok {
			r.FileBytes = n
		}
	}
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// readNodeDoc reads a cold node file without verifying it, for the views of
// nodes that failed verification. It refuses symlinks and huge files.
func readNodeDoc(path string) (map[string]any, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxNodeFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxNodeFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeNodeDoc(data)
}

// decodeNodeDoc decodes a cold node's bytes as a JSON object.
func decodeNodeDoc(data []byte) (map[string]any, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return doc, nil
}

// turnFromDoc rebuilds the turn a cold node document was folded from, with
// its stored lists.
func turnFromDoc(doc map[string]any) contextfold.Turn {
	t := contextfold.Turn{}
	switch n := doc["step_id"].(type) {
	case json.Number:
		if v, err := n.Int64(); err == nil {
			t.StepID = int(v)
		}
	case float64:
		t.StepID = int(n)
	}
	t.Summary, _ = doc["summary"].(string)
	t.RawContent, _ = doc["raw_content"].(string)
	t.SessionID, _ = doc["session_id"].(string)
	list := func(key string) []string {
		out := []string{}
		arr, _ := doc[key].([]any)
		for _, v := range arr {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	t.Files, t.Commands, t.Errors = list("files"), list("commands"), list("errors")
	return t
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// timelineData is the timeline page: one page of the steps that pass the
// filter, in ascending step order.
type timelineData struct {
	Filter   timelineFilter `json:"filter"`
	Rows     []stepRow      `json:"steps"`
	Total    int            `json:"total"` // every step of the store, orphans included
	Page     pageInfo       `json:"page"`
	Summary  storeSummary   `json:"summary"`
	Warnings []string       `json:"warnings"`
}

// Timeline paging: a page holds at most limit rows (default defaultPageSize,
// at most maxPageSize); the cursor is a step id, so a page stays put while
// the store grows: after=N is the page of steps after N, before=N the page
// of steps just before N.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageInfo says where a timeline page lies among the steps that pass the
// filter. NextAfter is the after= of the next page and PrevBefore the
// before= of the previous one; nil when there is none.
type pageInfo struct {
	Limit      int  `json:"limit"`
	Count      int  `json:"count"`   // rows on this page
	Matched    int  `json:"matched"` // steps that pass the filter, on every page
	Offset     int  `json:"offset"`  // matched steps before this page
	NextAfter  *int `json:"next_after,omitempty"`
	PrevBefore *int `json:"prev_before,omitempty"`
}

// pageQuery is a timeline request's paging parameters.
type pageQuery struct {
	Limit         int
	After, Before *int
}

type timelineFilter struct {
	Term  string `json:"term"`
	File  string `json:"file"`
	Error string `json:"error"`
	State string `json:"state"`
}

func (f timelineFilter) Active() bool {
	return f.Term != "" || f.File != "" || f.Error != "" || f.State != ""
}

// storeSummary counts the store at a glance.
type storeSummary struct {
	Dir          string         `json:"dir"`
	Steps        int            `json:"steps"`
	Evicted      int            `json:"evicted"`
	ColdTokens   int            `json:"cold_tokens"`
	HotTokens    int            `json:"hot_tokens"`
	States       map[string]int `json:"states"`
	CapTokens    float64        `json:"max_rehydration_tokens_per_call"`
	BudgetTokens float64        `json:"max_rehydration_tokens_per_turn"`
	PolicyHash   string         `json:"folding_policy_hash"`
	Evictions    int            `json:"eviction_events"`
	Findings     int            `json:"findings"`
}

func (in *Inspector) summarize(sn *snapshot) storeSummary {
	sum := storeSummary{Dir: in.store.Dir(), States: map[string]int{StateVerified: 0, StateTampered: 0, StateBroken: 0, StateOrphan: 0},
		PolicyHash: sn.policy.Hash(), Evictions: len(sn.log), Findings: len(sn.report.Findings)}
	sum.CapTokens, _ = sn.policy.MaxTokensPerCall()
	sum.BudgetTokens, _ = sn.policy.MaxTokensPerTurn()
	for _, r := range sn.rows {
		sum.States[r.State]++
		if !r.Indexed {
			continue
		}
		sum.Steps++
		sum.ColdTokens += r.Tokens
		sum.HotTokens += r.HotTokens
		if r.Evicted {
			sum.Evicted++
		}
	}
	return sum
}

// matches reports whether a row passes the timeline filter. A term matches
// when every identifier of it is among the step's terms, or when the summary
// contains it; file and error match by case-insensitive substring.
func (f timelineFilter) matches(r *stepRow) bool {
	if f.State != "" && r.State != f.State {
		return false
	}
	if f.Term != "" {
		ok := strings.Contains(strings.ToLower(r.Summary), strings.ToLower(f.Term))
		if !ok {
			if terms := contextfold.ScanTerms(f.Term); len(terms) > 0 {
				ok = true
				for _, t := range terms {
					if !containsSorted(r.terms(), t) {
						ok = false
						break
					}
				}
			}
		}
		if !ok {
			return false
		}
	}
	if f.File != "" && !anyContains(r.Files, f.File) {
		return false
	}
	if f.Error != "" && !anyContains(r.Errors, f.Error) {
		return false
	}
	return true
}

func containsSorted(sorted []string, t string) bool {
	i := sort.SearchStrings(sorted, t)
	return i < len(sorted) && sorted[i] == t
}

func anyContains(list []string, sub string) bool {
	sub = strings.ToLower(sub)
	for _, s := range list {
		if strings.Contains(strings.ToLower(s), sub) {
			return true
		}
	}
	return false
}

func (in *Inspector) timeline(f timelineFilter, pq pageQuery) *timelineData {
	sn := in.snapshot(false)
	d := &timelineData{Filter: f, Rows: []stepRow{}, Total: len(sn.rows), Summary: in.summarize(sn), Warnings: nonNil(sn.warnings)}
	var matched []int // indexes into sn.rows
	for i := range sn.rows {
		if f.matches(&sn.rows[i]) {
			matched = append(matched, i)
		}
	}
	limit := pq.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	// The page is matched[lo:hi]: the rows after the cursor, or the rows
	// just before it.
	lo, hi := 0, len(matched)
	switch {
	case pq.Before != nil:
		hi = sort.Search(len(matched), func(k int) bool { return sn.rows[matched[k]].StepID >= *pq.Before })
		lo = max(0, hi-limit)
	case pq.After != nil:
		lo = sort.Search(len(matched), func(k int) bool { return sn.rows[matched[k]].StepID > *pq.After })
		hi = min(len(matched), lo+limit)
	default:
		hi = min(len(matched), limit)
	}
	for _, i := range matched[lo:hi] {
		in.fill(&sn.rows[i])
		d.Rows = append(d.Rows, sn.rows[i])
	}
	d.Page = pageInfo{Limit: limit, Count: hi - lo, Matched: len(matched), Offset: lo}
	if hi < len(matched) && hi > lo {
		next := sn.rows[matched[hi-1]].StepID
		d.Page.NextAfter = &next
	}
	if lo > 0 && hi > lo {
		prev := sn.rows[matched[lo]].StepID
		d.Page.PrevBefore = &prev
	}
	return d
}

// PageLinks are the query strings of the timeline's first, previous and
// next pages, the filter kept ("" when there is no such page).
func (d *timelineData) PageLinks() (first, prev, next string) {
	q := url.Values{}
	if d.Filter.Term != "" {
		q.Set("term", d.Filter.Term)
	}
	if d.Filter.File != "" {
		q.Set("file", d.Filter.File)
	}
	if d.Filter.Error != "" {
		q.Set("error", d.Filter.Error)
	}
	if d.Filter.State != "" {
		q.Set("state", d.Filter.State)
	}
	if d.Page.Limit != defaultPageSize {
		q.Set("limit", strconv.Itoa(d.Page.Limit))
	}
	link := func(k string, v *int) string {
		c := url.Values{}
		for key, vs := range q {
			c[key] = vs
		}
		if v != nil {
			c.Set(k, strconv.Itoa(*v))
		}
		return "/?" + c.Encode()
	}
	if d.Page.Offset > 0 {
		first = link("", nil)
		prev = link("before", d.Page.PrevBefore)
	}
	if d.Page.NextAfter != nil {
		next = link("after", d.Page.NextAfter)
	}
	return first, prev, next
}

// The links of PageLinks one by one, for the template.
func (d *timelineData) FirstLink() string { f, _, _ := d.PageLinks(); return f }
func (d *timelineData) PrevLink() string  { _, p, _ := d.PageLinks(); return p }
func (d *timelineData) NextLink() string  { _, _, n := d.PageLinks(); return n }

// Shown are the 1-based positions of the page's first and last rows among
// the matched steps.
func (d *timelineData) ShownFrom() int { return d.Page.Offset + 1 }
func (d *timelineData) ShownTo() int   { return d.Page.Offset + d.Page.Count }

// hashRow is one of the three identities of a step: as the index records
// it, as the cold node stores it, and (after "verify now") as recomputed.
type hashRow struct {
	Name       string `json:"name"`
	Index      string `json:"index"`
	Stored     string `json:"stored"`
	Recomputed string `json:"recomputed,omitempty"`
	OK         bool   `json:"ok"`
	Note       string `json:"note,omitempty"`
}

// verifyResult is the outcome of "verify now" for one step.
type verifyResult struct {
	StepID    int           `json:"step_id"`
	State     string        `json:"state"`
	OK        bool          `json:"ok"`
	CheckedAt string        `json:"checked_at"`
	Hydrate   string        `json:"hydrate"` // "ok", or the error hydrate returns
	Hashes    []hashRow     `json:"hashes"`
	Findings  []findingView `json:"findings"`
}

// stepData is the step page.
type stepData struct {
	Row         stepRow       `json:"step"`
	Identifiers []string      `json:"identifiers"`
	FilePath    string        `json:"file_path"`
	SessionID   string        `json:"session_id"`
	Hashes      []hashRow     `json:"hashes"`
	Findings    []findingView `json:"findings"`
	Evictions   []string      `json:"evicted_at"`
	// Payload: the raw content, verbatim, one page of it.
	PayloadAvailable bool      `json:"payload_available"`
	PayloadVerified  bool      `json:"payload_verified"`
	PayloadNote      string    `json:"payload_note,omitempty"`
	PayloadBytes     int       `json:"payload_bytes"`
	PayloadRunes     int       `json:"payload_code_points"`
	PayloadLines     int       `json:"payload_lines"`
	Page             int       `json:"page"`
	Pages            int       `json:"pages"`
	PageText         string    `json:"page_text"`
	PageSegs         []segment `json:"-"`
	// Hydrated: what hydrate would page into a prompt, the per-call cap applied.
	HydrateOK        bool          `json:"hydrate_ok"`
	HydrateError     string        `json:"hydrate_error,omitempty"`
	Hydrated         string        `json:"hydrated_content"`
	HydratedSegs     []segment     `json:"-"`
	HydratedTokens   int           `json:"hydrated_tokens"`
	Truncated        bool          `json:"truncated"`
	CapTokens        float64       `json:"max_rehydration_tokens_per_call"`
	CapCodePoints    int           `json:"cap_code_points"`
	Verify           *verifyResult `json:"verify,omitempty"`
	Prev, Next       int           `json:"-"`
	HasPrev, HasNext bool          `json:"-"`
}

// errNoStep is returned for a step that is neither indexed nor an orphan file.
var errNoStep = errors.New("no such step")

// errNoPage is returned for a payload page that does not exist.
var errNoPage = errors.New("no such page")

func (in *Inspector) step(step, page int, verify bool) (*stepData, error) {
	s := in.store
	sn := in.snapshot(false)
	row, ok := sn.byStep[step]
	if !ok {
		return nil, errNoStep
	}
	in.fill(row)
	d := &stepData{Row: *row, Identifiers: []string{}, Hashes: []hashRow{}, Findings: []findingView{}, Evictions: []string{}}
	for i := range sn.rows {
		if sn.rows[i].StepID == step {
			if i > 0 {
				d.Prev, d.HasPrev = sn.rows[i-1].StepID, true
			}
			if i+1 < len(sn.rows) {
				d.Next, d.HasNext = sn.rows[i+1].StepID, true
			}
		}
	}
	for _, f := range sn.report.Findings {
		if f.StepID != nil && *f.StepID == step {
			d.Findings = append(d.Findings, viewFinding(f))
		}
	}
	for _, ev := range sn.log {
		if ev.StepID == step {
			d.Evictions = append(d.Evictions, ev.EvictedAt)
		}
	}
	d.CapTokens, _ = sn.policy.MaxTokensPerCall()
	d.CapCodePoints = int(d.CapTokens * 4)
	e := sn.entries[step]
	if e != nil {
		d.Identifiers = nonNil(e.Identifiers)
		d.FilePath = e.FilePath
	}

	var payload string
	var doc map[string]any
	h, herr := s.Hydrate(step)
	if herr == nil {
		d.HydrateOK = true
		d.Hydrated, d.HydratedTokens, d.Truncated = h.Content, h.TokenEstimate, h.Truncated
		d.HydratedSegs = segments(h.Content)
		payload, d.PayloadAvailable, d.PayloadVerified = h.RawContent, true, true
		doc = h.Node.Doc
	} else {
		d.HydrateError = herr.Error()
		if errors.Is(herr, contextfold.ErrPathContainment) {
			d.PayloadNote = "not shown: the index's file_path leaves cold_nodes/, so the inspector does not follow it"
		} else if dd, err := in.nodeDoc(step); err == nil {
			doc = dd
			t := turnFromDoc(dd)
			payload, d.PayloadAvailable = t.RawContent, true
			d.PayloadNote = "UNVERIFIED: the file failed verification; this is what it holds now, not what was folded"
			if e == nil {
				d.Identifiers = nonNil(stringsOf(dd["identifiers"]))
			}
		} else {
			d.PayloadNote = "not available: " + err.Error()
		}
	}
	if doc != nil {
		d.SessionID, _ = doc["session_id"].(string)
	}
	d.Hashes = hashRows(e, doc)
	if d.PayloadAvailable {
		d.PayloadBytes = len(payload)
		d.PayloadRunes = utf8.RuneCountInString(payload)
		d.PayloadLines = strings.Count(payload, "\n") + 1
		text, pages, ok := payloadPage(payload, page, payloadPageBytes)
		d.Pages = pages
		if !ok {
			return nil, errNoPage
		}
		d.Page, d.PageText, d.PageSegs = page, text, segments(text)
	} else if page != 1 {
		return nil, errNoPage
	}
	if verify {
		d.Verify = in.verify(step, sn, e, doc, herr)
	}
	return d, nil
}

func stringsOf(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// hashRows lists the three identities as the index and the node hold them.
func hashRows(e *contextfold.Entry, doc map[string]any) []hashRow {
	names := []string{"payload_sha256", "projection_sha256", "artifact_sha256"}
	var idx []string
	if e != nil {
		idx = []string{e.PayloadSHA256, e.ProjectionSHA256, e.ArtifactSHA256}
	} else {
		idx = []string{"", "", ""}
	}
	rows := make([]hashRow, 3)
	for i, n := range names {
		stored := ""
		if doc != nil {
			stored, _ = doc[n].(string)
		}
		rows[i] = hashRow{Name: n, Index: idx[i], Stored: stored, OK: idx[i] != "" && idx[i] == stored}
	}
	return rows
}

// verify recomputes the three hashes of a step from its file and compares
// them with the node and the index, and runs the store's own checks
// (Validate's findings and Hydrate's verdict). It writes nothing.
func (in *Inspector) verify(step int, sn *snapshot, e *contextfold.Entry, doc map[string]any, herr error) *verifyResult {
	v := &verifyResult{StepID: step, CheckedAt: in.now().UTC().Format(contextfold.TimeFormat), Findings: []findingView{}, Hydrate: "ok"}
	if herr != nil {
		v.Hydrate = herr.Error()
	}
	for _, f := range sn.report.Findings {
		if f.StepID != nil && *f.StepID == step {
			v.Findings = append(v.Findings, viewFinding(f))
		}
	}
	v.Hashes = hashRows(e, doc)
	if doc != nil {
		t := turnFromDoc(doc)
		payload, _ := doc["raw_content"].(string)
		v.Hashes[0].Recomputed = sha256Hex(payload)
		if p, err := contextfold.Project(t, sn.policy.Hash()); err == nil {
			v.Hashes[1].Recomputed = p.SHA256
		} else {
			v.Hashes[1].Note = "cannot project: " + err.Error()
		}
		if a, err := contextfold.ArtifactHash(doc); err == nil {
			v.Hashes[2].Recomputed = a
		} else {
			v.Hashes[2].Note = "cannot hash: " + err.Error()
		}
	}
	for i := range v.Hashes {
		r := &v.Hashes[i]
		r.OK = r.Recomputed != "" && r.Recomputed == r.Stored && (e == nil || r.Stored == r.Index)
		if r.Note == "" && !r.OK {
			switch {
			case doc == nil:
				r.Note = "no readable cold node file"
			case r.Recomputed != r.Stored:
				r.Note = "the recomputed hash differs from the stored one"
			case e == nil:
				r.Note = "not in the index"
			default:
				r.Note = "the index records a different hash"
			}
		}
	}
	v.State = StateVerified
	switch {
	case errors.Is(herr, contextfold.ErrBrokenReference):
		v.State = StateBroken
	case errors.Is(herr, contextfold.ErrOrphanedNode):
		v.State = StateOrphan
	case herr != nil:
		v.State = StateTampered
	case len(v.Findings) > 0:
		v.State = v.Findings[0].State
	}
	v.OK = v.State == StateVerified && herr == nil
	for _, r := range v.Hashes {
		v.OK = v.OK && r.OK
	}
	if !v.OK && v.State == StateVerified {
		v.State = StateTampered
	}
	return v
}
