package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// DefaultMaxRecordBytes is the largest record [ParseFileWith] reads when
// Options.MaxRecordBytes is 0: 128 MiB, twice the 64 MiB payload a turn may
// fold (contextfold.MaxPayloadBytes), so that a record whose JSON escapes
// or metadata (an image's base64, provider fields) double its text still
// fits. Parsing a record holds a few times its size in memory.
const DefaultMaxRecordBytes = 128 << 20

// Options says how [ParseFileWith], [ParseRegularFileWith] and [ParseWith]
// read a transcript.
type Options struct {
	// Format is the transcript's format; "" or FormatAuto detects it.
	Format Format
	// MaxRecordBytes bounds one record, in bytes: a JSONL line (a Claude
	// Code record, an OpenHands run), an element of a JSON document's
	// messages or history array, the document's info, instance_id, type
	// or trajectory_format value, any one token (a string) of its other
	// members, which are walked and never held, an Aider turn (its
	// lines). A larger record refuses the whole parse with a
	// *RecordTooLargeError as soon as the limit (plus 4 KiB of slack for
	// a token) is passed, before the record is held. 0 means
	// DefaultMaxRecordBytes, -1 no limit.
	MaxRecordBytes int64
	// Turn, when set, receives each turn in step order as soon as it is
	// parsed, and Result.Turns stays empty: a caller that keeps only what
	// it needs (or stops early) holds no more than that. An error from
	// Turn stops the parse (nothing more is read) and is returned as is,
	// wrapped with the path by the file readers (errors.Is finds it).
	// Turn is called from the goroutine that called the parse function.
	Turn func(Turn) error
}

// RecordTooLargeError reports a record of the transcript past
// Options.MaxRecordBytes; the parse was refused when the limit was passed.
type RecordTooLargeError struct {
	What  string // the record: "line 12", "messages[3] (from byte 1234)", …
	Limit int64  // the limit, in bytes
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("ingest: %s is larger than the %s one record may be (--max-record-bytes %d); parsing a record holds a few times its size in memory: "+
		"give --max-record-bytes N with N above the record's size (or -1 for no limit) if the machine has the memory",
		e.What, fsutil.ByteSize(e.Limit), e.Limit)
}

// ParseFileWith reads path and parses it as o says. path is a regular file
// of at most MaxTranscriptBytes, read as a stream in place (the memory a
// parse holds is about one record, plus the turns when o.Turn is nil), or
// a pipe (bash's <(…)), read into memory up to the same limit; a
// directory, a socket, or a larger input is refused with an error naming
// the limit. Binary input is refused after its first 64 KiB.
//
// JSONL (claude-code, openhands) and Aider input is read once, line by
// line, and no further than o.Turn lets it. A JSON document (openai,
// anthropic, swe-agent, mini-swe-agent) is read twice: once in full, one
// element at a time, to check it and to detect its format (the layout
// depends on every message), then up to where o.Turn stops it. Input that
// only the parser holding the whole transcript reproduces exactly — an
// invalid or truncated document (for the error's wording), a JSONL file
// whose first line is torn, a messages array holding a non-object, an
// unusual layout — is read whole, as ParseFile always did.
func ParseFileWith(path string, o Options) (*Result, error) {
	sec, closeFn, err := fsutil.OpenInputMax(path, MaxTranscriptBytes, binarySniff, binaryCheck(path))
	return parseOpened(path, sec, closeFn, err, o)
}

// ParseRegularFileWith is ParseFileWith for a path that must be a regular
// file (a hook's transcript_path): a FIFO or a device is refused without
// being opened for a blocking read.
func ParseRegularFileWith(path string, o Options) (*Result, error) {
	sec, closeFn, err := fsutil.OpenRegularMax(path, MaxTranscriptBytes, binarySniff, binaryCheck(path))
	return parseOpened(path, sec, closeFn, err, o)
}

// ParseWith parses the transcript data as o says (see ParseFileWith).
func ParseWith(data []byte, o Options) (*Result, error) {
	s := newStreamer(io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), o)
	s.data = data
	return s.parse()
}

func binaryCheck(path string) func(head []byte) error {
	return func(head []byte) error {
		if why, ok := binaryInput(head); ok {
			return fmt.Errorf("%s: %w", path, binaryFormat(why))
		}
		return nil
	}
}

func parseOpened(path string, sec *io.SectionReader, closeFn func() error, err error, o Options) (*Result, error) {
	if errors.Is(err, ErrUnknownFormat) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: read transcript: %w", err)
	}
	defer closeFn()
	res, err := newStreamer(sec, o).parse()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// streamer parses one transcript from a section it may read more than once.
type streamer struct {
	p     *parser
	src   *io.SectionReader // the whole input
	data  []byte            // the whole input when the caller holds it, else nil
	base  int64             // the offset after the byte order mark, if any
	limit int64             // MaxRecordBytes (-1: none)
	f     Format
}

func newStreamer(src *io.SectionReader, o Options) *streamer {
	limit := o.MaxRecordBytes
	if limit == 0 {
		limit = DefaultMaxRecordBytes
	}
	if limit < 0 {
		limit = -1
	}
	f := o.Format
	if f == "" {
		f = FormatAuto
	}
	return &streamer{p: &parser{res: &Result{Format: f}, emit: o.Turn, lineLimit: limit}, src: src, limit: limit, f: f}
}

func (s *streamer) parse() (*Result, error) {
	if err := s.run(); err != nil {
		return nil, err
	}
	if s.p.err != nil {
		return nil, s.p.err
	}
	s.p.finish()
	return s.p.res, nil
}

// body is the input after its byte order mark.
func (s *streamer) body() *io.SectionReader {
	return io.NewSectionReader(s.src, s.base, s.src.Size()-s.base)
}

// whole parses the input held in memory, as Parse always did.
func (s *streamer) whole(f Format) error {
	data := s.data
	if data == nil {
		data = make([]byte, s.src.Size())
		if err := readAll(s.src, data, 0); err != nil {
			return err
		}
	}
	s.p.res = &Result{Format: f}
	return s.p.parseWhole(data, f)
}

const bom = "\xef\xbb\xbf"

func (s *streamer) run() error {
	f := s.f
	var start [2 * len(bom)]byte
	n, _ := s.src.ReadAt(start[:], 0)
	if n >= len(bom) && string(start[:len(bom)]) == bom {
		s.base = int64(len(bom))
		if n == len(start) && string(start[len(bom):]) == bom {
			return s.whole(f) // Detect would look past a second mark the parser keeps
		}
	}
	body := s.body()
	head := make([]byte, min(body.Size(), binarySniff))
	if err := readAll(body, head, 0); err != nil {
		return err
	}
	if why, ok := binaryInput(head); ok {
		return binaryFormat(why)
	}
	// i: the first byte that is not JSON white space; c: that byte.
	i := bytes.IndexFunc(head, func(r rune) bool { return r != ' ' && r != '\t' && r != '\r' && r != '\n' })
	c := byte(0)
	if i >= 0 {
		c = head[i]
	}
	// Leading Unicode white space that bytes.TrimSpace (Detect) skips but
	// a JSON decoder does not, or white space past the head: rare enough
	// to be left to the whole-input parser.
	odd := i < 0 || c >= utf8.RuneSelf || c == '\v' || c == '\f'
	switch f {
	case FormatClaudeCode:
		return s.jsonl(FormatClaudeCode)
	case FormatAider:
		return s.aider()
	case FormatOpenHands:
		if odd && i >= 0 {
			return s.whole(f) // "\f{…}": TrimSpace would find a document
		}
		if c == '{' {
			// A pretty-printed document is one run, not JSONL.
			di, err := s.scan()
			if err != nil {
				return err
			}
			if !di.bare || !di.valid {
				// A first line that is no JSON value by itself: a
				// pretty-printed run (perhaps with trailing white space
				// a JSON decoder refuses), or a torn first line.
				one, _, err := s.firstLine(int64(i))
				if err != nil {
					return err
				}
				if !one {
					return s.whole(f)
				}
			}
		}
		return s.jsonl(FormatOpenHands)
	case FormatOpenAI, FormatAnthropic, FormatSWEAgent, FormatMiniSWEAgent:
		if odd || (c != '[' && c != '{') {
			return s.whole(f)
		}
		di, err := s.scan()
		if err != nil {
			return err
		}
		key := "messages"
		if f == FormatSWEAgent {
			key = "history"
		}
		if di.bare {
			key = ""
		}
		if !di.valid || di.odd || di.arrays[key] == nil {
			return s.whole(f)
		}
		return s.doc(f, di, key)
	case FormatAuto:
	default:
		return s.whole(f) // the whole-input parser names the unknown format
	}
	if odd {
		return s.whole(f)
	}
	switch c {
	case '[':
		di, err := s.scan()
		if err != nil {
			return err
		}
		if !di.valid || di.odd {
			return s.whole(f)
		}
		d, ok := di.arrays[""].chat.format(nil)
		if !ok {
			return s.whole(f)
		}
		return s.doc(d, di, "")
	case '{':
		// One JSON document, or JSONL: a first line that is a JSON value
		// by itself, then more (the whole is then not valid JSON).
		di, err := s.scan()
		if err != nil {
			return err
		}
		if !di.valid {
			one, more, err := s.firstLine(int64(i))
			if err != nil {
				return err
			}
			if !one || !more {
				return s.whole(f) // truncated, or a syntax error: named exactly
			}
			d, err := s.detectJSONL()
			if err != nil {
				return err
			}
			return s.jsonl(d)
		}
		if di.odd {
			return s.whole(f)
		}
		d, ok := di.objectFormat()
		switch {
		case !ok || d == FormatClaudeCode:
			return s.whole(f)
		case d == FormatOpenHands:
			one, _, err := s.firstLine(int64(i))
			if err != nil {
				return err
			}
			if !one {
				return s.whole(f) // a pretty-printed run
			}
			return s.jsonl(d) // one line: JSONL of one run
		}
		key := "messages"
		if d == FormatSWEAgent {
			key = "history"
		}
		if di.arrays[key] == nil {
			return s.whole(f)
		}
		return s.doc(d, di, key)
	}
	aider, err := s.isAider(int64(i))
	if err != nil {
		return err
	}
	if !aider {
		return s.whole(f)
	}
	return s.aider()
}

// lineReader reads a transcript line by line, each line at most limit
// bytes (without its newline; limit < 0: no limit).
type lineReader struct {
	br    *bufio.Reader
	n     int // lines read
	limit int64
}

func newLineReader(r io.Reader, limit int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// next returns the next line without its newline, in a slice of its own
// that the caller may keep, or io.EOF after the last line (a final newline
// ends the last line; it does not start an empty one). A line past the
// limit is a *RecordTooLargeError, returned before the line is held.
func (l *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := l.br.ReadSlice('\n')
		n := int64(len(line) + len(chunk))
		if err == nil {
			n-- // the newline
		}
		if l.limit >= 0 && n > l.limit {
			return nil, &RecordTooLargeError{What: fmt.Sprintf("line %d", l.n+1), Limit: l.limit}
		}
		if need := len(line) + len(chunk); need > cap(line) {
			// Grow by doubling, but never past the limit: a line refused
			// at the limit holds 1.5 times the limit at most, not 3.
			c := max(2*cap(line), need)
			if l.limit >= 0 {
				c = min(c, int(l.limit)+1)
			}
			grown := make([]byte, len(line), max(c, need))
			copy(grown, line)
			line = grown
		}
		line = append(line, chunk...)
		switch err {
		case nil:
			l.n++
			return line[:len(line)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) == 0 {
				return nil, io.EOF
			}
			l.n++
			return line, nil
		default:
			return nil, err
		}
	}
}

// firstLine reports whether the first line of the input's text (from
// offset i, its first byte that is not white space) is a JSON value by
// itself (one), and whether a line that is not blank follows it (more):
// then the input is JSONL, not one JSON document. A first line past the
// record limit refuses the parse with its *RecordTooLargeError.
func (s *streamer) firstLine(i int64) (one, more bool, err error) {
	body := s.body()
	lr := newLineReader(io.NewSectionReader(body, i, body.Size()-i), s.limit)
	line, err := lr.next()
	if err == io.EOF {
		return false, false, nil
	}
	if err != nil {
		// A first line past the record limit (a *RecordTooLargeError)
		// refuses the parse as any other line would: the whole-input
		// parser would hold it, and every record, whatever the limit.
		return false, false, err
	}
	if !json.Valid(bytes.TrimSpace(line)) {
		return false, false, nil
	}
	for {
		line, err := lr.next()
		if err == io.EOF {
			return true, false, nil
		}
		if err != nil {
			return false, false, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return true, true, nil
		}
	}
}

// detectJSONL is detectJSONL on the input's first lines.
func (s *streamer) detectJSONL() (Format, error) {
	lr := newLineReader(s.body(), s.limit)
	return detectJSONLLines(func() ([]byte, bool, error) {
		line, err := lr.next()
		if err == io.EOF {
			return nil, false, nil
		}
		return line, err == nil, err
	})
}

// jsonl parses a JSONL transcript (claude-code, openhands) line by line.
func (s *streamer) jsonl(f Format) error {
	p := s.p
	p.res.Format = f
	var each func(jsonLine)
	if f == FormatClaudeCode {
		each = p.claudeRecords()
	} else {
		each = p.openHandsRuns()
	}
	lr := newLineReader(s.body(), s.limit)
	readable := 0
	for p.err == nil {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		l, ok := p.jsonLine(lr.n, line)
		if !ok {
			continue
		}
		readable++
		each(l)
	}
	if p.err == nil && readable == 0 && p.problems() > 0 {
		if f == FormatClaudeCode {
			return p.noClaudeRecord()
		}
		return p.noOpenHandsRun()
	}
	return nil
}

// isAider is isAider on the input: its text starts with "#### " or one of
// its lines with the session header.
func (s *streamer) isAider(i int64) (bool, error) {
	body := s.body()
	var user [5]byte
	if n, _ := body.ReadAt(user[:], i); string(user[:n]) == "#### " {
		return true, nil
	}
	br := bufio.NewReaderSize(body, 64<<10)
	atStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if atStart && bytes.HasPrefix(chunk, []byte(aiderSessionPrefix)) {
			return true, nil
		}
		atStart = err == nil
		switch err {
		case nil, bufio.ErrBufferFull:
		case io.EOF:
			return false, nil
		default:
			return false, err
		}
	}
}

// aider parses an Aider chat history line by line.
func (s *streamer) aider() error {
	p := s.p
	p.res.Format = FormatAider
	a := p.aiderTurns(s.limit)
	lr := newLineReader(s.body(), s.limit)
	for p.err == nil {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		text, n := sanitize(string(line))
		p.res.Replaced += n
		if err := a.line(lr.n, text); err != nil {
			return err
		}
	}
	if p.err == nil {
		a.end()
	}
	return nil
}

// docInfo is what the scan of a JSON document found.
type docInfo struct {
	valid    bool                // one JSON value (an array or an object), then only white space
	bare     bool                // the value is an array, held in arrays[""]
	top      obj                 // the object's members but its "messages" and "history" arrays
	arrays   map[string]*arrScan // the "messages" and "history" arrays
	odd      bool                // only the whole-input parser reproduces this document exactly
	replaced int                 // countReplacements over the document
}

// arrScan is what the scan found in one array.
type arrScan struct {
	n     int        // elements
	chat  chatCounts // chatFormat's tally
	first obj        // the first element that is an object
}

func (a *arrScan) add(raw json.RawMessage, di *docInfo) {
	a.n++
	o, ok := decodeObj(raw)
	if !ok {
		di.odd = true // the whole-input parser reports its line
		return
	}
	if a.first == nil {
		a.first = o
	}
	a.chat.addObj(o)
}

// objectFormat is objectFormat on the scanned object.
func (di *docInfo) objectFormat() (Format, bool) {
	o := di.top
	if strings.HasPrefix(o.str("trajectory_format"), "mini-swe-agent") {
		return FormatMiniSWEAgent, true
	}
	if h := di.arrays["history"]; h != nil {
		if e := h.first; e != nil {
			if e.has("role") {
				return FormatSWEAgent, true
			}
			if e.has("action") || e.has("observation") || e.has("source") {
				return FormatOpenHands, true
			}
		}
		if o.has("instance_id") && (o.has("test_result") || o.has("instruction")) {
			return FormatOpenHands, true
		}
		if o.has("trajectory") || o.has("info") {
			return FormatSWEAgent, true
		}
	}
	if m := di.arrays["messages"]; m != nil {
		if info := o.obj("info"); info != nil && (info.has("mini_version") || strings.Contains(info.str("config"), "mini")) {
			return FormatMiniSWEAgent, true
		}
		if f, ok := m.chat.format(o); ok {
			return f, true
		}
		if m.n == 0 {
			if o.has("system") {
				return FormatAnthropic, true
			}
			return FormatOpenAI, true
		}
	}
	if isClaudeRecord(o) {
		return FormatClaudeCode, true
	}
	return "", false
}

// keptMembers are the top-level members of a document whose values
// detection or parsing reads (objectFormat, isClaudeRecord, a
// mini-swe-agent session id); of the others only the presence counts.
var keptMembers = map[string]bool{"trajectory_format": true, "instance_id": true, "info": true, "type": true}

// docReader decodes a JSON document one token or value at a time, each
// value (a record) at most limit bytes.
type docReader struct {
	dec   *json.Decoder
	br    *budgetReader
	base  int64 // the document's offset in the input
	limit int64
}

// budgetSlack is what a record's read allows past the limit: the white
// space and separator before the value. The record itself is then held to
// the limit exactly.
const budgetSlack = 4 << 10

// errBudget is what budgetReader returns past its allowance.
var errBudget = errors.New("record budget spent")

// budgetReader reads r up to allow bytes in all (allow < 0: no bound).
type budgetReader struct {
	r     io.Reader
	pos   int64
	allow int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.allow >= 0 {
		if b.pos >= b.allow {
			return 0, errBudget
		}
		if rem := b.allow - b.pos; int64(len(p)) > rem {
			p = p[:rem]
		}
	}
	n, err := b.r.Read(p)
	b.pos += int64(n)
	return n, err
}

func (s *streamer) newDoc() *docReader {
	br := &budgetReader{r: bufio.NewReaderSize(s.body(), 64<<10), allow: -1}
	dec := json.NewDecoder(br)
	dec.UseNumber() // a number token is kept as written: 1e999 is no error
	return &docReader{dec: dec, br: br, base: s.base, limit: s.limit}
}

// budget lets the decoder read one more record's worth.
func (d *docReader) budget() {
	if d.limit >= 0 {
		d.br.allow = d.dec.InputOffset() + d.limit + budgetSlack
	}
}

func (d *docReader) token() (json.Token, error) {
	d.budget()
	t, err := d.dec.Token()
	if errors.Is(err, errBudget) {
		return nil, &RecordTooLargeError{What: fmt.Sprintf("the JSON token at byte %d", d.base+d.dec.InputOffset()), Limit: d.limit}
	}
	return t, err
}

// value decodes the next value; what names it for the error past the limit.
func (d *docReader) value(what func() string) (json.RawMessage, error) {
	d.budget()
	at := d.base + d.dec.InputOffset()
	var raw json.RawMessage
	err := d.dec.Decode(&raw)
	if errors.Is(err, errBudget) || err == nil && d.limit >= 0 && int64(len(raw)) > d.limit {
		return nil, &RecordTooLargeError{What: fmt.Sprintf("%s (from byte %d)", what(), at), Limit: d.limit}
	}
	return raw, err
}

// skip reads the next value token by token, holding one token at a time
// (each at most the limit). clean is false when a string in it (a key
// included) holds U+FFFD, which may stand for bytes the decoder replaced.
func (d *docReader) skip() (clean bool, err error) {
	clean = true
	depth := 0
	for {
		t, err := d.token()
		if err != nil {
			return clean, err
		}
		switch v := t.(type) {
		case json.Delim:
			if v == '[' || v == '{' {
				depth++
			} else {
				depth--
			}
		case string:
			if strings.ContainsRune(v, utf8.RuneError) {
				clean = false
			}
		}
		if depth == 0 {
			return clean, nil
		}
	}
}

// elements reads the elements of the array whose '[' was just read,
// calling each until it returns false, and the closing ']' when each
// never did. name names the array in errors.
func (d *docReader) elements(name string, each func(i int, raw json.RawMessage) bool) (stopped bool, err error) {
	for i := 0; ; i++ {
		d.budget() // More reads ahead
		if !d.dec.More() {
			break
		}
		raw, err := d.value(func() string {
			if name == "" {
				return fmt.Sprintf("element %d of the JSON array", i)
			}
			return fmt.Sprintf("%s[%d]", name, i)
		})
		if err != nil {
			return false, err
		}
		if !each(i, raw) {
			return true, nil
		}
	}
	_, err = d.token()
	return false, err
}

// invalid reports whether err says the document is not valid JSON (its
// syntax, its end), as against a record past the limit or a read error.
func invalid(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// scan reads the whole document once, one record at a time: whether it is
// valid, the members detection looks at, chatFormat's tally over its
// messages and history arrays. The error is a record past the limit or a
// read error; invalid JSON is di.valid false.
func (s *streamer) scan() (*docInfo, error) {
	d := s.newDoc()
	di := &docInfo{arrays: map[string]*arrScan{}}
	fail := func(err error) (*docInfo, error) {
		if invalid(err) {
			return di, nil
		}
		return nil, err
	}
	tok, err := d.token()
	if err != nil {
		return fail(err)
	}
	switch tok {
	case json.Delim('['):
		di.bare = true
		a := &arrScan{}
		di.arrays[""] = a
		if _, err := d.elements("", func(_ int, raw json.RawMessage) bool {
			a.add(raw, di)
			di.replaced += countReplacements(raw)
			return true
		}); err != nil {
			return fail(err)
		}
	case json.Delim('{'):
		di.top = obj{}
		for d.budget(); d.dec.More(); d.budget() {
			kt, err := d.token()
			if err != nil {
				return fail(err)
			}
			k, _ := kt.(string)
			if _, dup := di.top[k]; dup || di.arrays[k] != nil || strings.ContainsRune(k, utf8.RuneError) {
				di.odd = true // the last value wins; a key's bad text counts as replaced
			}
			if k == "messages" || k == "history" {
				t, err := d.token()
				if err != nil {
					return fail(err)
				}
				if t != json.Delim('[') {
					di.odd = true // held whole by the whole-input parser
					return di, nil
				}
				a := &arrScan{}
				di.arrays[k] = a
				if _, err := d.elements(k, func(_ int, raw json.RawMessage) bool {
					a.add(raw, di)
					di.replaced += countReplacements(raw)
					return true
				}); err != nil {
					return fail(err)
				}
				continue
			}
			if !keptMembers[k] {
				// Only its presence counts: walked, never held (a
				// SWE-agent "trajectory" repeats the history).
				clean, err := d.skip()
				if err != nil {
					return fail(err)
				}
				if !clean {
					di.odd = true // U+FFFD in a string: replaced, or as written?
				}
				di.top[k] = json.RawMessage("null")
				continue
			}
			raw, err := d.value(func() string { return fmt.Sprintf("the value of %q", k) })
			if err != nil {
				return fail(err)
			}
			di.top[k] = raw
			di.replaced += countReplacements(raw)
		}
		if _, err := d.token(); err != nil {
			return fail(err)
		}
	default:
		return di, nil
	}
	if _, err := d.token(); err != io.EOF {
		if err == nil || invalid(err) {
			return di, nil // something follows the document
		}
		return nil, err
	}
	di.valid = true
	return di, nil
}

// readAll fills buf from r at off. The input's size is the one it had when
// it was opened, so a short read means the file was cut short since (an
// agent rewriting it in place): errChanged, not bytes left zero that would
// read as binary input.
func readAll(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n < len(buf) {
		if err == nil || err == io.EOF {
			return errChanged
		}
		return err
	}
	return nil
}

// errChanged is returned when the second read of a document does not find
// what the first did, or the input is shorter than it was when opened.
var errChanged = errors.New("ingest: the transcript changed while it was read; ingest it again once the agent has stopped writing it")

// doc parses the array key ("" for a bare array) of the scanned document
// di as format f, one element at a time, until the parser stops.
func (s *streamer) doc(f Format, di *docInfo, key string) error {
	p := s.p
	p.res.Format = f
	p.res.Replaced += di.replaced
	a := di.arrays[key]
	p.res.Messages = a.n
	var message func(i int, o obj)
	switch f {
	case FormatOpenAI, FormatAnthropic:
		message = p.chatMessages(f)
	case FormatSWEAgent:
		message = p.sweMessages()
	default:
		message = p.miniMessages(di.top.str("instance_id"))
	}
	each := func(i int, raw json.RawMessage) bool {
		o, ok := decodeObj(raw)
		if !ok {
			p.err = errChanged
			return false
		}
		message(i, o)
		return p.err == nil
	}
	d := s.newDoc()
	tok, err := d.token()
	if err != nil {
		return changed(err)
	}
	if key == "" {
		if tok != json.Delim('[') {
			return errChanged
		}
		_, err := d.elements("", each)
		return changed(err)
	}
	if tok != json.Delim('{') {
		return errChanged
	}
	for d.budget(); d.dec.More(); d.budget() {
		kt, err := d.token()
		if err != nil {
			return changed(err)
		}
		k, _ := kt.(string)
		if k == "messages" || k == "history" {
			if t, err := d.token(); err != nil {
				return changed(err)
			} else if t != json.Delim('[') {
				return errChanged
			}
			if k == key {
				_, err := d.elements(k, each)
				return changed(err)
			}
			if _, err := d.elements(k, func(int, json.RawMessage) bool { return true }); err != nil {
				return changed(err)
			}
			continue
		}
		if _, err := d.skip(); err != nil {
			return changed(err)
		}
	}
	return errChanged
}

// changed maps a decoding error of the second read to errChanged; a record
// past the limit or a read error is returned as is.
func changed(err error) error {
	if err == nil {
		return nil
	}
	if invalid(err) {
		return errChanged
	}
	return err
}
