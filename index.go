package contextfold

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

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

// record is the in-memory form of an index entry. A record holds no term
// lists: matching goes through the index's postings, and Entry.Terms /
// SummaryTerms are recomputed when an entry is materialised.
type record struct {
	step          int
	summary       string
	payload       string // payload_sha256
	projection    string
	artifact      string
	filePath      string
	tokenEstimate int // tokens
	foldedAt      string
	idents        []string // identifiers as stored (order and duplicates kept)
	files         []string
	commands      []string
	errors        []string
	evicted       bool
	// extra holds the whole entry document when it has keys or value types
	// beyond the standard ones; nil for the standard form.
	extra map[string]any
	// enc is the entry as recall_index.json holds it (encodeEntry), kept
	// once written (writeEntry) so that the next rewrite of the index
	// copies it rather than encoding it again; valid while evicted is
	// enc's evicted (the only field of a record that changes after it is
	// built). nil: not kept.
	enc atomic.Pointer[encodedEntry]
}

// encodedEntry is a record's entry encoding (record.enc).
type encodedEntry struct {
	b       []byte
	evicted bool // the record's evicted flag when b was encoded
}

// standardKeys are the keys of an index entry (spec §5).
var standardKeys = map[string]bool{
	"artifact_sha256": true, "commands": true, "errors": true, "evicted": true, "file_path": true,
	"files": true, "folded_at": true, "identifiers": true, "payload_sha256": true, "projection_sha256": true,
	"projection_version": true, "step_id": true, "summary": true, "token_estimate": true,
}

// index is the in-memory recall index: the header of recall_index.json and a
// record per step, at positions 0..len()-1 that never change. Positions
// 0..nb-1 are the records of base, the read-only snapshot of
// recall_index.cache (ascending step order); later positions are heap
// records (folded, journaled or parsed from JSON since), indexed by byStep,
// post and spost. Invariant: recs[p] is nil only for a base record not
// materialised yet (see rec); once materialised, the record is the truth
// (an eviction marks it).
type index struct {
	header map[string]any // every top-level key but "nodes"
	base   *baseIndex     // nil: no snapshot, every record is on the heap
	nb     int            // records in base
	recs   []*record      // by position; see the invariant above
	byStep map[int]int32  // step id → position, heap records only
	post   postings       // matchable term → heap positions, ascending
	spost  postings       // summary identifier → heap positions, ascending
	posted int            // positions below it are posted (see postPending)

	scratch []uint64 // per-position work array of Scan and Recall (len()*words)
	// postBuf and visitBuf are scan buffers reused across scans, so that a
	// scan over 100k nodes allocates little (guarded by the store's mutex).
	postBuf, visitBuf []int32
	// encBytes counts the bytes of entry encodings writeEntry kept in
	// this index's records (record.enc), at most maxEncodedBytes.
	encBytes atomic.Int64
}

// maxEncodedBytes bounds the bytes of entry encodings an index keeps
// (record.enc; a variable for tests, 0: none), maxEncodedEntry those of
// one entry kept: a rewrite of the index copies the kept ones (a fold
// event's index rewrite encodes its new entries alone), the others are
// encoded again each time.
var maxEncodedBytes int64 = 16 << 20

const maxEncodedEntry = 16 << 10

func newIndex(createdAt string) *index {
	ix := &index{
		header: map[string]any{"ipcf_version": IPCFVersion, "projection_version": ProjectionVersion},
		byStep: map[int]int32{},
		post:   newPostings(),
		spost:  newPostings(),
	}
	if createdAt != "" {
		ix.header["created_at"] = createdAt
	}
	return ix
}

func (ix *index) len() int { return len(ix.recs) }

// get returns the record of a step (materialising a base record).
func (ix *index) get(step int) (*record, bool) {
	if p, ok := ix.byStep[step]; ok {
		return ix.recs[p], true
	}
	if p, ok := ix.base.find(step); ok {
		return ix.rec(p), true
	}
	return nil, false
}

// rec returns the record at position p, materialising a base record from
// its entry in recall_index.json.
func (ix *index) rec(p int32) *record {
	if r := ix.recs[p]; r != nil {
		return r
	}
	r := ix.base.record(ix, p)
	ix.recs[p] = r
	return r
}

// stepAt, summaryAt, tokensAt and evictedAt read a position's hot fields
// without materialising a base record.
func (ix *index) stepAt(p int32) int {
	if r := ix.recs[p]; r != nil {
		return r.step
	}
	return ix.base.step(p)
}

func (ix *index) summaryAt(p int32) string {
	if r := ix.recs[p]; r != nil {
		return r.summary
	}
	return ix.base.summary(p)
}

func (ix *index) tokensAt(p int32) int {
	if r := ix.recs[p]; r != nil {
		return r.tokenEstimate
	}
	return ix.base.tokens(p)
}

func (ix *index) evictedAt(p int32) bool {
	if r := ix.recs[p]; r != nil {
		return r.evicted
	}
	return ix.base.evicted(p)
}

// add inserts a record whose step is not indexed yet, as a heap record.
// Its terms are posted when a query first needs them (postPending): a fold
// that only writes the index and its cache builds no postings.
func (ix *index) add(r *record) {
	pos := int32(len(ix.recs))
	ix.recs = append(ix.recs, r)
	ix.byStep[r.step] = pos
}

// postPending posts the heap records added since the last call: their
// matchable terms (matchTerms' set, without building the list: a term
// already posted for a position, such as a file name that is an identifier
// too, is skipped by postings.add) and their summary identifiers.
func (ix *index) postPending() {
	for p := max(ix.posted, ix.nb); p < len(ix.recs); p++ {
		r, pos := ix.recs[p], int32(p)
		for _, t := range r.idents {
			ix.post.add(t, pos)
		}
		for _, f := range r.files {
			ix.post.add(extract.FoldTerm(f), pos)
		}
		for _, f := range r.errors {
			ix.post.add(extract.FoldTerm(f), pos)
		}
		for _, t := range extract.Identifiers(extract.NFC(r.summary)) {
			ix.spost.add(t, pos)
		}
	}
	ix.posted = len(ix.recs)
}

// appendPostings appends to dst the positions whose matchable terms
// (summary=false) or summary identifiers (summary=true) hold t: base
// positions ascending, then heap positions ascending.
func (ix *index) appendPostings(dst []int32, t string, summary bool) []int32 {
	ix.postPending()
	dst = ix.base.appendPostings(dst, t, summary)
	if summary {
		return ix.spost.appendTo(dst, t)
	}
	return ix.post.appendTo(dst, t)
}

// recordFromNode builds the record of a freshly folded node. maxIdents > 0
// caps the identifiers its entry lists (capIdentifiers); 0 lists them all,
// as the reference does.
func (ix *index) recordFromNode(n *ColdNode, filePath string, maxIdents int) *record {
	r := &record{
		step: n.StepID, summary: n.Summary, payload: n.PayloadSHA256, projection: n.ProjectionSHA256,
		artifact: n.ArtifactSHA256, filePath: filePath, tokenEstimate: n.TokenEstimate, foldedAt: n.FoldedAt,
		idents: capIdentifiers(n.Identifiers, n.Summary, maxIdents), files: n.Files, commands: n.Commands, errors: n.Errors,
	}
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
	if r.idents, err = stringsField(doc, "identifiers"); err != nil {
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
	return r, nil
}

// entryDoc is the entry document of a record as ix.entry(r).Doc, sharing
// the record's lists instead of copying them, for checks that only read it
// (a fold validates every new entry, and a node of a large log lists
// a million identifiers).
func (ix *index) entryDoc(r *record) map[string]any {
	if r.extra != nil {
		return ix.entry(r).Doc
	}
	return map[string]any{
		"step_id": r.step, "projection_version": ProjectionVersion, "summary": r.summary,
		"payload_sha256": r.payload, "projection_sha256": r.projection, "artifact_sha256": r.artifact,
		"file_path": r.filePath, "token_estimate": r.tokenEstimate, "folded_at": r.foldedAt,
		"identifiers": r.idents, "files": r.files, "commands": r.commands, "errors": r.errors, "evicted": r.evicted,
	}
}

// entry materialises the public Entry of a record, with copies of its
// lists.
func (ix *index) entry(r *record) *Entry {
	return ix.entryOf(r, copyStrings)
}

// sharedEntry is entry with the record's own lists (FoldResult: a large
// node's identifiers are not held twice).
func (ix *index) sharedEntry(r *record) *Entry {
	return ix.entryOf(r, func(ss []string) []string { return ss })
}

func (ix *index) entryOf(r *record, lists func([]string) []string) *Entry {
	e := &Entry{
		StepID: r.step, Summary: r.summary, PayloadSHA256: r.payload, ProjectionSHA256: r.projection,
		ArtifactSHA256: r.artifact, FilePath: r.filePath, TokenEstimate: r.tokenEstimate, FoldedAt: r.foldedAt,
		Identifiers: lists(r.idents), Files: lists(r.files), Commands: lists(r.commands),
		Errors: lists(r.errors), Evicted: r.evicted,
	}
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

// sortedPositions returns node positions in ascending step order, with
// every record materialised (ix.recs[p] is set for each).
func (ix *index) sortedPositions() []int32 {
	pos := ix.stepOrder()
	ix.materialise(pos)
	for _, p := range pos {
		ix.rec(p)
	}
	return pos
}

// stepOrder returns node positions in ascending step order without
// materialising records: the base positions (already in step order) merged
// with the heap positions.
func (ix *index) stepOrder() []int32 {
	heap := make([]int32, 0, len(ix.recs)-ix.nb)
	for p := ix.nb; p < len(ix.recs); p++ {
		heap = append(heap, int32(p))
	}
	sort.Slice(heap, func(i, j int) bool { return ix.recs[heap[i]].step < ix.recs[heap[j]].step })
	pos := make([]int32, 0, len(ix.recs))
	b := int32(0)
	for _, h := range heap {
		for ; b < int32(ix.nb) && ix.stepAt(b) < ix.recs[h].step; b++ {
			pos = append(pos, b)
		}
		pos = append(pos, h)
	}
	for ; b < int32(ix.nb); b++ {
		pos = append(pos, b)
	}
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
	sort.Strings(keys) // deterministic positions
	for _, k := range keys {
		r, err := ix.recordFromDoc(k, nodes[k])
		if err != nil {
			return nil, err
		}
		ix.add(r)
	}
	return ix, nil
}

// entrySpan locates a position's entry in an encoded recall_index.json: the
// byte offset and length of its value (the object after `"KEY": `).
type entrySpan struct {
	off int64  // bytes from the start of the file
	n   uint32 // bytes
}

// nodesMarker stands for the "nodes" object while the header is encoded: raw
// control bytes, which the encoder escapes everywhere else.
const nodesMarker = "\x01nodes\x01"

// encode writes the index in the pretty form of spec §1 and returns, by
// position, the span of every entry. An untouched base record (recs[p] nil)
// is copied byte for byte from the index file it was loaded from, which
// holds it in exactly this form (the snapshot is only made of an index file
// in our encoding); every other record is encoded.
func (ix *index) encode() ([]byte, []entrySpan, error) {
	var b bytes.Buffer
	b.Grow(ix.base.jsonSize() + (len(ix.recs)-ix.nb)*2048 + 4096)
	spans, err := ix.encodeTo(&b)
	if err != nil {
		return nil, nil, err
	}
	return b.Bytes(), spans, nil
}

// indexWriter is what the index encoding is written to: a *bytes.Buffer, or
// an *offsetWriter streaming to the index file (a large index is
// not held whole in memory while it is written). Len is the bytes written.
type indexWriter interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
	Len() int
}

// offsetWriter buffers writes to w and counts them (the entry spans are
// offsets in the file). The first error is kept and returned by flush.
type offsetWriter struct {
	w   *bufio.Writer
	n   int
	err error
}

func newOffsetWriter(w io.Writer) *offsetWriter {
	return &offsetWriter{w: bufio.NewWriterSize(w, 256<<10)}
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.n += n
	if err != nil && o.err == nil {
		o.err = err
	}
	return n, err
}

func (o *offsetWriter) WriteString(s string) (int, error) {
	n, err := o.w.WriteString(s)
	o.n += n
	if err != nil && o.err == nil {
		o.err = err
	}
	return n, err
}

func (o *offsetWriter) WriteByte(c byte) error {
	err := o.w.WriteByte(c)
	if err == nil {
		o.n++
	} else if o.err == nil {
		o.err = err
	}
	return err
}

func (o *offsetWriter) Len() int { return o.n }

func (o *offsetWriter) flush() error {
	if o.err != nil {
		return o.err
	}
	return o.w.Flush()
}

// encodeTo is encode, written to b; it returns the spans.
func (ix *index) encodeTo(b indexWriter) ([]entrySpan, error) {
	doc := make(map[string]any, len(ix.header)+1)
	for k, v := range ix.header {
		doc[k] = v
	}
	doc["nodes"] = canonjson.Raw(nodesMarker)
	frame, err := canonjson.Pretty(doc)
	if err != nil {
		return nil, err
	}
	cut := bytes.Index(frame, []byte(nodesMarker))
	if cut < 0 {
		return nil, fmt.Errorf("index encoding: nodes marker lost")
	}
	type keyed struct {
		key string
		p   int32
	}
	keys := make([]keyed, len(ix.recs))
	for p := range ix.recs {
		keys[p] = keyed{strconv.Itoa(ix.stepAt(int32(p))), int32(p)}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].key < keys[j].key })
	b.Write(frame[:cut])
	spans := make([]entrySpan, len(ix.recs))
	if len(keys) == 0 {
		b.WriteString("{}")
	} else {
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    ")
			canonjson.WriteString(b, k.key)
			b.WriteString(": ")
			off := b.Len()
			if ix.recs[k.p] == nil {
				err = ix.base.copyEntry(b, k.p)
			} else {
				err = ix.writeEntry(b, ix.recs[k.p])
			}
			if err != nil {
				return nil, err
			}
			spans[k.p] = entrySpan{int64(off), uint32(b.Len() - off)}
		}
		b.WriteString("\n  }")
	}
	b.Write(frame[cut+len(nodesMarker):])
	return spans, nil
}

// writeEntry writes one entry in pretty form at depth 2 (encodeEntry): the
// encoding the record keeps from an earlier write when its evicted flag is
// the same, else encoded now, and kept within the index's bound
// (maxEncodedBytes). The bytes are the same either way. Safe for
// concurrent use (encodings of the same index race only to keep equal
// bytes).
func (ix *index) writeEntry(b indexWriter, r *record) error {
	if e := r.enc.Load(); e != nil && e.evicted == r.evicted {
		b.Write(e.b)
		return nil
	}
	var buf bytes.Buffer
	ev := r.evicted
	if err := ix.encodeEntry(&buf, r); err != nil {
		return err
	}
	if n := int64(buf.Len()); n <= maxEncodedEntry && ix.encBytes.Load()+n <= maxEncodedBytes {
		ix.encBytes.Add(n)
		r.enc.Store(&encodedEntry{b: buf.Bytes(), evicted: ev})
	}
	b.Write(buf.Bytes())
	return nil
}

// encodeEntry writes one entry in pretty form at depth 2. The standard form
// is written directly in sorted key order; anything else through the
// generic encoder.
func (ix *index) encodeEntry(b indexWriter, r *record) error {
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
	list(r.idents)
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

// MaxIndexIdentifiers is the most identifiers one node's index entry lists
// outside the reference profile (our extension; see capIdentifiers). A 62 MB
// log has millions of distinct identifiers (hashes, addresses, numbers),
// which would make the index and its snapshot as large as the log.
const MaxIndexIdentifiers = 10000

// capIdentifiers returns the identifiers an index entry lists: all of them
// when max <= 0 or there are at most max; else every identifier of the
// summary, then the shortest others (ties: the smaller in byte order) up to
// max, in the sorted order of idents. The cold node keeps every identifier
// (its projection is the reference's); only the index entry, which matching
// reads, is capped. idents is sorted and unique (extraction's output).
func capIdentifiers(idents []string, summary string, max int) []string {
	if max <= 0 || len(idents) <= max {
		return idents
	}
	keep := make(map[string]bool, max)
	for _, t := range extract.Identifiers(extract.NFC(summary)) {
		if len(keep) < max {
			keep[t] = true
		}
	}
	rest := make([]string, 0, len(idents))
	for _, t := range idents {
		if !keep[t] {
			rest = append(rest, t)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return len(rest[i]) < len(rest[j]) }) // stable: byte order within a length
	for _, t := range rest {
		if len(keep) >= max {
			break
		}
		keep[t] = true
	}
	out := make([]string, 0, len(keep))
	for _, t := range idents {
		if keep[t] {
			out = append(out, strings.Clone(t)) // the node's identifiers share one allocation: keep only these
		}
	}
	return out
}
