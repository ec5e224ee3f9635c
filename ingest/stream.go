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
	// *RecordTooLargeError as soon as limit+1 bytes of it are read, having
	// held at most 1.5 times the limit. 0 means DefaultMaxRecordBytes, -1
	// no limit.
	MaxRecordBytes int64
	// Turn, when set, receives each turn in step order as soon as it is
	// parsed, and Result.Turns stays empty: a caller that keeps only what
	// it needs (or stops early) holds no more than that. An error from
	// Turn stops the parse (nothing more is read) and is returned as is,
	// wrapped with the path by the file readers (errors.Is finds it).
	// Turn is called from the goroutine that called the parse function.
	Turn func(Turn) error
	// MaxTurns, when above 0, is the most turns the parse passes on: at
	// the first turn past it the parse stops with a *TooManyTurnsError
	// (nothing more is read, that turn is not passed on). In a JSON
	// messages array every message object is one turn, so the first read
	// of a document (which checks it and detects its format) stops as soon
	// as it has counted MaxTurns+1 of them, before the second read parses
	// any: a bare array (auto-detected once one message has a "role"), or
	// the "messages" or "history" array of a document whose Format is
	// given. The rest of such a document is not read, so a syntax error
	// past that point is not reported.
	MaxTurns int
}

// TooManyTurnsError reports a transcript of more turns than
// Options.MaxTurns; the parse stopped at the first turn past it.
type TooManyTurnsError struct {
	Limit int // Options.MaxTurns
	Step  int // the step id of the first turn past the limit
}

func (e *TooManyTurnsError) Error() string {
	return fmt.Sprintf("ingest: more than %d turns: reading stopped at step %d, the turn past the limit", e.Limit, e.Step)
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
// a pipe (bash's <(…)), read as [ParseReaderWith] reads one (parsed as it
// is read, spooled to a temporary file past its first MiB, up to the same
// limit); a directory, a socket, or a larger input is refused with an
// error naming the limit. Binary input is refused after its first 64 KiB.
//
// JSONL (claude-code, openhands) and Aider input is read once, line by
// line, and no further than o.Turn and o.MaxTurns let it. A JSON document
// (openai, anthropic, swe-agent, mini-swe-agent) is read twice, one
// element at a time: once to check it and to detect its format (OpenAI or
// Anthropic depends on every message), in full unless o.MaxTurns stops it
// (see Options.MaxTurns), then up to where o.Turn stops it. Input that
// only the parser holding the whole transcript reproduces exactly — an
// invalid or truncated document (for the error's wording), a JSONL file
// whose first line is torn, a messages array holding a non-object, an
// unusual layout — is read whole, as ParseFile always did.
func ParseFileWith(path string, o Options) (*Result, error) {
	f, fi, err := fsutil.OpenInput(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: read transcript: %w", err)
	}
	if !fi.Mode().IsRegular() {
		defer f.Close()
		return parseStream(path, f, fi, o)
	}
	sec, closeFn, err := fsutil.SectionOf(f, fi, path, MaxTranscriptBytes, binarySniff, binaryCheck(path))
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
		return nil, readErr(err)
	}
	defer closeFn()
	res, err := newStreamer(sec, o).parse()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// readErr is the error of a transcript that could not be read; one past
// MaxTranscriptBytes says what to do.
func readErr(err error) error {
	var tl *fsutil.TooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("ingest: read transcript: %w (a transcript is at most %s, MaxTranscriptBytes: split it at record boundaries, e.g. 'split -l 100000' for JSONL, and ingest each part into a store of its own, --dir: a part's step ids start at 1)", err, fsutil.ByteSize(tl.Limit))
	}
	return fmt.Errorf("ingest: read transcript: %w", err)
}

// streamer parses one transcript from a section it may read more than once.
type streamer struct {
	p     *parser
	src   *io.SectionReader // the whole input
	data  []byte            // the whole input when the caller holds it, else nil
	base  int64             // the offset after the byte order mark, if any
	limit int64             // MaxRecordBytes (-1: none)
	f     Format
	// stream, when set, is what src reads: a stream spooled as it is
	// read, whose size src does not know (src's Size is the largest a
	// transcript may be).
	stream *spool
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
	return &streamer{p: &parser{res: &Result{Format: f}, emit: o.Turn, lineLimit: limit, maxTurns: o.MaxTurns}, src: src, limit: limit, f: f}
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
		size := s.src.Size()
		if s.stream != nil {
			n, err := s.stream.size()
			if err != nil {
				return err
			}
			size = n
		}
		data = make([]byte, size)
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
	if s.stream != nil {
		n, err := body.ReadAt(head, 0) // a stream's size is not known
		if err != nil && err != io.EOF {
			return err
		}
		head = head[:n]
	} else if err := readAll(body, head, 0); err != nil {
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
	br      *bufio.Reader
	n       int // lines read
	limit   int64
	newline bool // the last line read ended in a newline
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
		line = appendCapped(line, chunk, l.limit)
		switch err {
		case nil:
			l.n++
			l.newline = true
			return line[:len(line)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) == 0 {
				return nil, io.EOF
			}
			l.n++
			l.newline = false
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

// turnPerElement reports whether every object element of the array key
// of the document ("": a bare array) is one turn, whatever the rest of
// the document holds: a bare array (the only layout a detected document
// may have and stay a bare array: openai or anthropic, one turn a
// message), or the messages or history array of a given Format.
func (s *streamer) turnPerElement(key string) bool {
	switch s.f {
	case FormatAuto, FormatOpenAI, FormatAnthropic, FormatMiniSWEAgent:
		return key == "" || key == "messages" && s.f != FormatAuto
	case FormatSWEAgent:
		return key == "" || key == "history"
	}
	return false
}

// add counts the element raw, which it does not keep; detect says whether
// the format is to be detected (a.first and a.chat counted).
func (a *arrScan) add(raw []byte, di *docInfo, detect bool) error {
	a.n++
	if !json.Valid(raw) {
		return errSyntax
	}
	if raw[0] != '{' {
		di.odd = true // the whole-input parser reports its line
		return nil
	}
	if !detect {
		return nil
	}
	if a.first == nil {
		a.first, _ = decodeObj(bytes.Clone(raw))
	}
	a.chat.addValid(raw)
	return nil
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

// invalid reports whether err says the document is not valid JSON (its
// syntax, its end), as against a record past the limit or a read error.
func invalid(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, errSyntax) || errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
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
	// The OpenAI and Anthropic evidence, and the first element, count
	// only when the format is to be detected.
	detect := s.f == FormatAuto
	tally := func(a *arrScan, key string) func(int, []byte) (bool, error) {
		turns, past := 0, -1
		counted := s.p.maxTurns > 0 && s.turnPerElement(key)
		return func(i int, raw []byte) (bool, error) {
			if err := a.add(raw, di, detect); err != nil {
				return false, err
			}
			di.replaced += countReplacements(raw)
			if counted && raw[0] == '{' {
				// Each message object is a turn, whatever the format:
				// past the limit the parse is refused, once a detected
				// array is known to hold chat messages (a "role").
				if turns++; turns == s.p.maxTurns+1 {
					past = i
				}
			}
			if past >= 0 && (!detect || a.chat.roles > 0) {
				return false, &TooManyTurnsError{Limit: s.p.maxTurns, Step: past}
			}
			return true, nil
		}
	}
	c, err := d.peek()
	if err != nil {
		return fail(err)
	}
	switch c {
	case '[':
		d.discard(1)
		di.bare = true
		a := &arrScan{}
		di.arrays[""] = a
		if _, err := d.elements("", 1, true, tally(a, "")); err != nil {
			return fail(err)
		}
	case '{':
		d.discard(1)
		di.top = obj{}
		for first := true; ; {
			more, err := d.more(&first, '}')
			if err != nil {
				return fail(err)
			}
			if !more {
				break
			}
			k, err := d.key(1)
			if err != nil {
				return fail(err)
			}
			if _, dup := di.top[k]; dup || di.arrays[k] != nil || !validClean(k) {
				di.odd = true // the last value wins; a key's bad text counts as replaced
			}
			if k == "messages" || k == "history" {
				c, err := d.peek()
				if err != nil {
					return fail(err)
				}
				if c != '[' {
					di.odd = true // held whole by the whole-input parser
					return di, nil
				}
				d.discard(1)
				a := &arrScan{}
				di.arrays[k] = a
				if _, err := d.elements(k, 2, true, tally(a, k)); err != nil {
					return fail(err)
				}
				continue
			}
			if !keptMembers[k] {
				// Only its presence counts: walked, never held (a
				// SWE-agent "trajectory" repeats the history).
				clean, err := d.skip(1)
				if err != nil {
					return fail(err)
				}
				if !clean {
					di.odd = true // U+FFFD in a string: replaced, or as written?
				}
				di.top[k] = json.RawMessage("null")
				continue
			}
			raw, err := d.value(func() string { return fmt.Sprintf("the value of %q", k) }, 1)
			if err != nil {
				return fail(err)
			}
			if !json.Valid(raw) {
				return fail(errSyntax)
			}
			di.top[k] = raw
			di.replaced += countReplacements(raw)
		}
	default:
		return di, nil
	}
	ok, err := d.end()
	if err != nil {
		return fail(err)
	}
	di.valid = ok // else something follows the document
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
	each := func(i int, raw []byte) (bool, error) {
		o, ok := decodeObj(raw)
		if !ok {
			return false, errChanged
		}
		message(i, o)
		return p.err == nil, nil
	}
	d := s.newDoc()
	c, err := d.peek()
	if err != nil {
		return changed(err)
	}
	if key == "" {
		if c != '[' {
			return errChanged
		}
		d.discard(1)
		_, err := d.elements("", 1, false, each)
		return changed(err)
	}
	if c != '{' {
		return errChanged
	}
	d.discard(1)
	for first := true; ; {
		more, err := d.more(&first, '}')
		if err != nil {
			return changed(err)
		}
		if !more {
			return errChanged // the scan found the array
		}
		k, err := d.key(1)
		if err != nil {
			return changed(err)
		}
		if k == "messages" || k == "history" {
			if c, err := d.peek(); err != nil {
				return changed(err)
			} else if c != '[' {
				return errChanged
			}
			d.discard(1)
			if k == key {
				_, err := d.elements(k, 2, false, each)
				return changed(err)
			}
			if _, err := d.elements(k, 2, true, func(int, []byte) (bool, error) { return true, nil }); err != nil {
				return changed(err)
			}
			continue
		}
		if _, err := d.skip(1); err != nil {
			return changed(err)
		}
	}
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
