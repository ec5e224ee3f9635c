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
// (spec §5). Entries returned by a Store are copies: changing one changes
// nothing in the store.
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
	// Doc is the entry as stored, with every key (unknown ones included).
	Doc map[string]any

	terms        []string
	summaryTerms []string
}

// Terms returns the node's matchable terms: its identifiers, and its files and
// errors folded (spec §4 "Matching"). Sorted, unique. Do not modify.
func (e *Entry) Terms() []string {
	if e.terms == nil {
		e.terms = matchTerms(e.Identifiers, e.Files, e.Errors)
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

func matchTerms(identifiers, files, errs []string) []string {
	all := append([]string{}, identifiers...)
	for _, f := range files {
		all = append(all, extract.FoldTerm(f))
	}
	for _, f := range errs {
		all = append(all, extract.FoldTerm(f))
	}
	return extract.SortUnique(all)
}

// dict interns terms as dense ids. Not safe for concurrent mutation; an
// index owns one and mutates it under the store's mutex.
type dict struct {
	ids   map[string]uint32
	terms []string
}

func newDict() *dict { return &dict{ids: map[string]uint32{}} }

func (d *dict) id(t string) uint32 {
	if id, ok := d.ids[t]; ok {
		return id
	}
	id := uint32(len(d.terms))
	d.ids[t] = id
	d.terms = append(d.terms, t)
	return id
}

func (d *dict) lookup(t string) (uint32, bool) {
	id, ok := d.ids[t]
	return id, ok
}

func (d *dict) ids2(ss []string) []uint32 {
	out := make([]uint32, len(ss))
	for i, s := range ss {
		out[i] = d.id(s)
	}
	return out
}

func (d *dict) strs(ids []uint32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = d.terms[id]
	}
	return out
}

// record is the compact in-memory form of an index entry: identifiers and
// matchable terms as dictionary ids, so 100k entries fit in tens of MB.
type record struct {
	step          int
	summary       string
	payload       string // payload_sha256
	projection    string
	artifact      string
	filePath      string
	tokenEstimate int
	foldedAt      string
	idents        []uint32 // identifiers as stored (order and duplicates kept)
	files         []string
	commands      []string
	errors        []string
	evicted       bool
	// extra holds the whole entry document when it has keys or value types
	// beyond the standard ones; nil for the standard form.
	extra map[string]any

	terms        []uint32 // matchable terms, sorted by id
	summaryTerms []uint32 // identifiers of the summary, sorted by id

	// cold holds the still-encoded fields of a record loaded from the
	// index cache (see full); nil once decoded.
	cold []byte
}

// standardKeys are the keys of an index entry (spec §5).
var standardKeys = map[string]bool{
	"artifact_sha256": true, "commands": true, "errors": true, "evicted": true, "file_path": true,
	"files": true, "folded_at": true, "identifiers": true, "payload_sha256": true, "projection_sha256": true,
	"projection_version": true, "step_id": true, "summary": true, "token_estimate": true,
}

// index is the in-memory recall index: the header of recall_index.json, a
// record per step, and an inverted index from term id to node positions.
type index struct {
	header map[string]any // every top-level key but "nodes"
	dict   *dict
	recs   []*record          // node positions; a position never changes
	byStep map[int]int32      // step id → position
	post   map[uint32][]int32 // matchable term → positions
	// spost lists summary terms a node holds but not among its matchable
	// terms (only possible in an index written elsewhere), for recall.
	spost map[uint32][]int32
}

func newIndex(createdAt string) *index {
	ix := &index{
		header: map[string]any{"ipcf_version": IPCFVersion, "projection_version": ProjectionVersion},
		dict:   newDict(),
		byStep: map[int]int32{},
		post:   map[uint32][]int32{},
		spost:  map[uint32][]int32{},
	}
	if createdAt != "" {
		ix.header["created_at"] = createdAt
	}
	return ix
}

func (ix *index) len() int { return len(ix.recs) }

func (ix *index) get(step int) (*record, bool) {
	p, ok := ix.byStep[step]
	if !ok {
		return nil, false
	}
	return ix.recs[p], true
}

// add inserts a record whose step is not indexed yet.
func (ix *index) add(r *record) {
	pos := int32(len(ix.recs))
	ix.recs = append(ix.recs, r)
	ix.byStep[r.step] = pos
	for _, t := range r.terms {
		ix.post[t] = append(ix.post[t], pos)
	}
	for _, t := range r.summaryTerms {
		if !hasID(r.terms, t) {
			ix.spost[t] = append(ix.spost[t], pos)
		}
	}
}

// derive fills the matchable and summary terms of r.
func (ix *index) derive(r *record, identifiers []string) {
	ts := matchTerms(identifiers, r.files, r.errors)
	r.terms = sortedIDs(ix.dict.ids2(ts))
	r.summaryTerms = sortedIDs(ix.dict.ids2(extract.Identifiers(extract.NFC(r.summary))))
}

func sortedIDs(ids []uint32) []uint32 {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func hasID(sorted []uint32, id uint32) bool {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= id })
	return i < len(sorted) && sorted[i] == id
}

// recordFromNode builds the record of a freshly folded node.
func (ix *index) recordFromNode(n *ColdNode, filePath string) *record {
	r := &record{
		step: n.StepID, summary: n.Summary, payload: n.PayloadSHA256, projection: n.ProjectionSHA256,
		artifact: n.ArtifactSHA256, filePath: filePath, tokenEstimate: n.TokenEstimate, foldedAt: n.FoldedAt,
		idents: ix.dict.ids2(n.Identifiers), files: n.Files, commands: n.Commands, errors: n.Errors,
	}
	ix.derive(r, n.Identifiers)
	if red, ok := n.Doc["redactions"]; ok {
		// A scrubbed node's entry records its redaction count: a
		// non-standard entry, kept whole.
		r.extra = ix.entry(r).Doc
		r.extra["redactions"] = red
	}
	return r
}

// recordFromDoc reads an index entry document keyed by key.
func (ix *index) recordFromDoc(key string, v any) (*record, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("entry %q is not an object", key)
	}
	step, err := intField(doc, "step_id")
	if err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	if key != "" && strconv.Itoa(step) != key {
		return nil, fmt.Errorf("entry %q holds step_id %d", key, step)
	}
	r := &record{step: step}
	standard := true
	str := func(k string) string {
		s, ok := doc[k].(string)
		if !ok {
			standard = false
		}
		return s
	}
	r.summary = str("summary")
	r.payload = str("payload_sha256")
	r.projection = str("projection_sha256")
	r.artifact = str("artifact_sha256")
	r.filePath = str("file_path")
	r.foldedAt = str("folded_at")
	if pv, _ := doc["projection_version"].(string); pv != ProjectionVersion {
		standard = false
	}
	if r.tokenEstimate, err = intField(doc, "token_estimate"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	if _, isNum := doc["token_estimate"].(json.Number); !isNum {
		standard = false
	}
	var idents []string
	if idents, err = stringsField(doc, "identifiers"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	if r.files, err = stringsField(doc, "files"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	if r.commands, err = stringsField(doc, "commands"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	if r.errors, err = stringsField(doc, "errors"); err != nil {
		return nil, fmt.Errorf("entry %q: %w", key, err)
	}
	ev, isBool := doc["evicted"].(bool)
	r.evicted = ev
	if !isBool {
		standard = false
	}
	for k := range doc {
		if !standardKeys[k] {
			standard = false
		}
	}
	for _, k := range []string{"identifiers", "files", "commands", "errors"} {
		if _, ok := doc[k].([]any); !ok {
			standard = false
		}
	}
	if !standard {
		r.extra = doc
	}
	r.idents = ix.dict.ids2(idents)
	ix.derive(r, idents)
	return r, nil
}

// entry materialises the public Entry of a record.
func (ix *index) entry(r *record) *Entry {
	ix.full(r)
	e := &Entry{
		StepID: r.step, Summary: r.summary, PayloadSHA256: r.payload, ProjectionSHA256: r.projection,
		ArtifactSHA256: r.artifact, FilePath: r.filePath, TokenEstimate: r.tokenEstimate, FoldedAt: r.foldedAt,
		Identifiers: ix.dict.strs(r.idents), Files: copyStrings(r.files), Commands: copyStrings(r.commands),
		Errors: copyStrings(r.errors), Evicted: r.evicted,
	}
	e.terms = extract.SortUnique(ix.dict.strs(r.terms))
	e.summaryTerms = extract.SortUnique(ix.dict.strs(r.summaryTerms))
	if r.extra != nil {
		e.Doc = make(map[string]any, len(r.extra))
		for k, v := range r.extra {
			e.Doc[k] = v
		}
		if _, had := r.extra["evicted"]; had || r.evicted {
			e.Doc["evicted"] = r.evicted
		}
	} else {
		e.Doc = map[string]any{
			"step_id": e.StepID, "projection_version": ProjectionVersion, "summary": e.Summary,
			"payload_sha256": e.PayloadSHA256, "projection_sha256": e.ProjectionSHA256, "artifact_sha256": e.ArtifactSHA256,
			"file_path": e.FilePath, "token_estimate": e.TokenEstimate, "folded_at": e.FoldedAt,
			"identifiers": e.Identifiers, "files": e.Files, "commands": e.Commands, "errors": e.Errors, "evicted": e.Evicted,
		}
	}
	return e
}

// sortedPositions returns node positions in ascending step order.
func (ix *index) sortedPositions() []int32 {
	pos := make([]int32, len(ix.recs))
	for i := range pos {
		pos[i] = int32(i)
	}
	sort.Slice(pos, func(i, j int) bool { return ix.recs[pos[i]].step < ix.recs[pos[j]].step })
	return pos
}

// parseIndex reads recall_index.json (the slow path: every entry decoded).
func parseIndex(data []byte) (*index, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the recall index must be a JSON object")
	}
	ix := newIndex("")
	ix.header = map[string]any{}
	for k, v := range doc {
		if k != "nodes" {
			ix.header[k] = v
		}
	}
	nodes, ok := doc["nodes"].(map[string]any)
	if !ok && doc["nodes"] != nil {
		return nil, fmt.Errorf(`"nodes" must be an object`)
	}
	keys := make([]string, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic dictionary ids and positions
	for _, k := range keys {
		r, err := ix.recordFromDoc(k, nodes[k])
		if err != nil {
			return nil, err
		}
		ix.add(r)
	}
	return ix, nil
}

// encode writes the index in the pretty form of spec §1.
func (ix *index) encode() ([]byte, error) {
	var nodes bytes.Buffer
	keys := make([]string, len(ix.recs))
	byKey := make(map[string]*record, len(ix.recs))
	for i, r := range ix.recs {
		keys[i] = strconv.Itoa(r.step)
		byKey[keys[i]] = r
	}
	sort.Strings(keys)
	nodes.Grow(len(ix.recs) * 1024)
	if len(keys) == 0 {
		nodes.WriteString("{}")
	} else {
		nodes.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				nodes.WriteByte(',')
			}
			nodes.WriteString("\n    ")
			canonjson.WriteString(&nodes, k)
			nodes.WriteString(": ")
			if err := ix.writeEntry(&nodes, byKey[k]); err != nil {
				return nil, err
			}
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

// writeEntry writes one entry in pretty form at depth 2. The standard form is
// written directly in sorted key order; anything else through the generic
// encoder.
func (ix *index) writeEntry(b *bytes.Buffer, r *record) error {
	ix.full(r)
	if r.extra != nil {
		doc := make(map[string]any, len(r.extra))
		for k, v := range r.extra {
			doc[k] = v
		}
		if _, had := r.extra["evicted"]; had || r.evicted {
			doc["evicted"] = r.evicted
		}
		p, err := canonjson.PrettyAt(doc, 2)
		if err != nil {
			return err
		}
		b.Write(p)
		return nil
	}
	const ind = "\n      "
	key := func(k string, first bool) {
		if !first {
			b.WriteByte(',')
		}
		b.WriteString(ind)
		b.WriteByte('"')
		b.WriteString(k)
		b.WriteString(`": `)
	}
	list := func(ss []string) {
		if len(ss) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, s := range ss {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ind + "  ")
			canonjson.WriteString(b, s)
		}
		b.WriteString(ind + "]")
	}
	b.WriteByte('{')
	key("artifact_sha256", true)
	canonjson.WriteString(b, r.artifact)
	key("commands", false)
	list(r.commands)
	key("errors", false)
	list(r.errors)
	key("evicted", false)
	if r.evicted {
		b.WriteString("true")
	} else {
		b.WriteString("false")
	}
	key("file_path", false)
	canonjson.WriteString(b, r.filePath)
	key("files", false)
	list(r.files)
	key("folded_at", false)
	canonjson.WriteString(b, r.foldedAt)
	key("identifiers", false)
	list(ix.dict.strs(r.idents))
	key("payload_sha256", false)
	canonjson.WriteString(b, r.payload)
	key("projection_sha256", false)
	canonjson.WriteString(b, r.projection)
	key("projection_version", false)
	canonjson.WriteString(b, ProjectionVersion)
	key("step_id", false)
	b.WriteString(strconv.Itoa(r.step))
	key("summary", false)
	canonjson.WriteString(b, r.summary)
	key("token_estimate", false)
	b.WriteString(strconv.Itoa(r.tokenEstimate))
	b.WriteString("\n    }")
	return nil
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
