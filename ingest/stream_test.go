package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// parseWholeRef is the parser that holds the whole transcript, as Parse
// was before it read a stream: the reference the streaming parser must
// match.
func parseWholeRef(data []byte, f Format) (*Result, error) {
	if f == "" {
		f = FormatAuto
	}
	p := &parser{res: &Result{Format: f}}
	if err := p.parseWhole(data, f); err != nil {
		return nil, err
	}
	p.finish()
	return p.res, nil
}

// sameParse fails t when the streaming parse of data differs from the
// whole-input parse in anything: the error's text, the format, every turn,
// every problem, the counts; data read from a stream (ParseReaderWith) or
// held (Parse).
func sameParse(t testing.TB, name string, data []byte, f Format) {
	t.Helper()
	sameParseOf(t, name, data, f, func() (*Result, error) { return Parse(data, f) })
	sameParseOf(t, name+" (stream)", data, f, func() (*Result, error) {
		return ParseReaderWith(iotest.HalfReader(bytes.NewReader(data)), Options{Format: f, MaxRecordBytes: -1})
	})
}

func sameParseOf(t testing.TB, name string, data []byte, f Format, parse func() (*Result, error)) {
	t.Helper()
	want, werr := parseWholeRef(data, f)
	got, gerr := parse()
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%s (%s): error %v, want %v", name, f, gerr, werr)
	}
	if werr != nil {
		return
	}
	if got.Format != want.Format || got.Messages != want.Messages || got.Replaced != want.Replaced {
		t.Fatalf("%s (%s): format %s messages %d replaced %d, want %s %d %d", name, f, got.Format, got.Messages, got.Replaced, want.Format, want.Messages, want.Replaced)
	}
	if !reflect.DeepEqual(got.Problems, want.Problems) {
		t.Fatalf("%s (%s): problems\n%v\nwant\n%v", name, f, got.Problems, want.Problems)
	}
	if len(got.Turns) != len(want.Turns) {
		t.Fatalf("%s (%s): %d turns, want %d", name, f, len(got.Turns), len(want.Turns))
	}
	for i := range want.Turns {
		if got.Turns[i] != want.Turns[i] {
			t.Fatalf("%s (%s): turn %d\n%+v\nwant\n%+v", name, f, i, got.Turns[i], want.Turns[i])
		}
	}
}

// transcriptFiles lists the bundled transcripts and, when the shared
// folder is beside the repository, the shared ones and their corpus.
func transcriptFiles(t testing.TB) []string {
	var files []string
	for _, root := range []string{"testdata", filepath.Join("..", "..", "shared", "transcripts")} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".md") || err == nil && strings.HasSuffix(path, ".aider.chat.history.md") {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) < 10 {
		t.Fatalf("only %d transcripts found", len(files))
	}
	return files
}

// TestStreamMatchesWhole: the streaming parser gives every bundled and
// shared transcript (and variants: a byte order mark, CRLF line ends, a
// pretty-printed or minified document, a truncated copy) the same result
// as the parser that holds the whole input, in every format.
func TestStreamMatchesWhole(t *testing.T) {
	formats := append([]Format{FormatAuto}, Formats()...)
	corpus := 0
	for _, path := range transcriptFiles(t) {
		if strings.Contains(filepath.ToSlash(path), "/corpus/") {
			// Five of the 25 long runs: all of them took 25 s under the
			// race detector. (Every one was also ingested by the binary
			// before the streaming parser and after: identical stores.)
			if corpus++; corpus > 5 {
				continue
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		variants := map[string][]byte{
			"":          data,
			"+bom":      append([]byte(bom), data...),
			"+crlf":     bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")),
			"+half":     data[:len(data)/2],
			"+lead":     append([]byte("\n\n  "), data...),
			"+trailing": append(append([]byte{}, data...), "\n\n \n"...),
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			pretty, _ := json.MarshalIndent(v, "", "  ")
			variants["+pretty"] = pretty
			var min bytes.Buffer
			json.Compact(&min, data)
			variants["+compact"] = min.Bytes()
		}
		if len(data) > 100<<10 {
			// The long corpus runs: as they are, detected (the whole
			// matrix over them takes a minute).
			variants = map[string][]byte{"": data}
		}
		for suffix, d := range variants {
			for _, f := range formats {
				if len(data) > 100<<10 && f != FormatAuto {
					continue
				}
				sameParse(t, path+suffix, d, f)
			}
		}
	}
}

// TestStreamMatchesWholeEdges: inputs the streaming parser hands to the
// whole-input parser, or reads in a way of its own, give the same result.
func TestStreamMatchesWholeEdges(t *testing.T) {
	for i, s := range []string{
		"", " ", "\n\n", "\xef\xbb\xbf", "\xef\xbb\xbf\xef\xbb\xbf[]", "[]", "{}", "[1,2]", `[{"role":"user","content":"a"},3]`,
		`{"messages":[{"role":"user","content":"a"}],"messages":[]}`,
		`{"messages":{"role":"user"}}`, `{"history":"x","messages":[{"role":"user","content":"hi"}]}`,
		`{"mess\u0061ges":[{"role":"user","content":"a\ud800"}],"system":"s"}`,
		`{"\ud800":1,"messages":[{"role":"user","content":"a"}]}`,
		"\u00a0[{\"role\":\"user\",\"content\":\"a\"}]", "[{\"role\":\"user\",\"content\":\"a\"}]\u00a0",
		"[{\"role\":\"user\",\"content\":\"a\"}] x", "[{\"role\":\"user\",\"content\":\"a\"}]\n[]",
		`{"type":"user","uuid":"u","message":{"content":"hi"}}`,
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"hi\"}}\n\n{\"type\":\"user\",\"uuid\":\"v\",\"message\":{\"content\":\"ho\"}}\n",
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"hi\"}} {}\n{\"type\":\"user\",\"uuid\":\"v\",\"message\":{\"content\":\"ho\"}}\n",
		"{\"type\":\"us\n{\"type\":\"user\",\"uuid\":\"v\",\"message\":{\"content\":\"ho\"}}\n",
		"{\"history\":[{\"id\":0,\"source\":\"agent\",\"action\":\"run\",\"args\":{\"command\":\"ls\"}}]}\n\n",
		"{\n\"history\":[{\"id\":0,\"source\":\"agent\",\"action\":\"run\",\"args\":{\"command\":\"ls\"}}]}",
		"\n{\"history\":[{\"id\":0,\"source\":\"agent\",\"action\":\"run\",\"args\":{\"command\":\"ls\"}}]}\n{\"history\":[]}",
		`{"trajectory_format":"mini-swe-agent-1","instance_id":"i","messages":[{"role":"assistant","content":"x"}]}`,
		`{"info":{"mini_version":"1"},"messages":[]}`, `{"history":[],"trajectory":[]}`, `{"history":[1,{"role":"user"}],"info":{}}`,
		"# aider chat started at x\n#### hi\n> out\nreply\n\n\n", "intro\n# aider chat started at x\n#### hi\n", "  \n#### hi\r\nreply\xff\n",
		"plain text", "[1e999]", `{"messages":[],"n":1e999}`, "[\"\\u00\"]", "{\"a\":[}",
	} {
		for _, f := range append([]Format{FormatAuto}, Formats()...) {
			sameParse(t, fmt.Sprintf("edge %d %q", i, s), []byte(s), f)
		}
	}
}

// FuzzStreamMatchesWhole: for any input and format, the streaming parser
// and the parser that holds the whole input agree.
//
//	go test ./ingest/ -run '^$' -fuzz FuzzStreamMatchesWhole -fuzztime 60s -fuzzminimizetime 3s
func FuzzStreamMatchesWhole(f *testing.F) {
	for _, s := range []string{
		"[]", "{}", `{"messages":[{"role":"user","content":"\ud83d"}]}`,
		`{"history":[{"role":"system","content":"s"},{"role":"assistant","content":"t","action":"ls"}]}`,
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"hi\"}}\n[1]\n\n",
		"# aider chat started at x\n#### hi\n> out\nreply\n",
		`{"trajectory_format":"mini-swe-agent-1","messages":[{"role":"assistant","content":"x"}]}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	formats := append([]Format{FormatAuto}, Formats()...)
	f.Fuzz(func(t *testing.T, data []byte, fi uint8) {
		sameParse(t, "fuzz", data, formats[int(fi)%len(formats)])
	})
}

// TestStreamStopsAtTurn: a Turn callback's error stops the parse where it
// is returned: the count of turns parsed is the count the callback let
// through plus one, whatever the transcript's length, in every format, and
// the error comes back as is.
func TestStreamStopsAtTurn(t *testing.T) {
	const n, stop = 5000, 100
	gen := map[Format]func(i int) string{
		FormatClaudeCode: func(i int) string {
			return fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":"m%d"}}`+"\n", i, i)
		},
		FormatOpenHands: nil,
		FormatAider:     func(i int) string { return fmt.Sprintf("#### q%d\n\nanswer %d\n\n", i, i) },
	}
	docs := map[Format]string{
		FormatOpenAI:       `[%s]`,
		FormatAnthropic:    `{"system":"s","messages":[%s]}`,
		FormatSWEAgent:     `{"info":{},"history":[%s]}`,
		FormatMiniSWEAgent: `{"trajectory_format":"mini-swe-agent-1","messages":[%s]}`,
	}
	stopErr := errors.New("enough")
	check := func(f Format, data []byte) {
		t.Helper()
		seen := 0
		_, err := ParseWith(data, Options{Format: FormatAuto, Turn: func(Turn) error {
			seen++
			if seen > stop {
				return stopErr
			}
			return nil
		}})
		if !errors.Is(err, stopErr) || seen != stop+1 {
			t.Fatalf("%s: %d turns parsed, error %v; want %d and the callback's error", f, seen, err, stop+1)
		}
	}
	for f, g := range gen {
		if g == nil {
			continue
		}
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(g(i))
		}
		check(f, []byte(b.String()))
	}
	var events strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			events.WriteByte(',')
		}
		fmt.Fprintf(&events, `{"id":%d,"source":"agent","action":"run","args":{"command":"ls %d"}}`, i, i)
	}
	check(FormatOpenHands, []byte(`{"instance_id":"x","history":[`+events.String()+"]}\n"+`{"instance_id":"y","history":[]}`+"\n"))
	for f, layout := range docs {
		var msgs strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				msgs.WriteByte(',')
			}
			fmt.Fprintf(&msgs, `{"role":"user","content":"m%d"}`, i)
		}
		check(f, []byte(fmt.Sprintf(layout, msgs.String())))
	}
}

// TestRecordLimit: a record past MaxRecordBytes refuses the parse with a
// *RecordTooLargeError naming the record and the flag, in every layout; a
// limit above the record's size, or none, parses it.
func TestRecordLimit(t *testing.T) {
	big := strings.Repeat("x", 4096)
	for name, data := range map[string]string{
		"claude-code line": `{"type":"user","uuid":"a","message":{"content":"hi"}}` + "\n" + `{"type":"user","uuid":"b","message":{"content":"` + big + `"}}` + "\n",
		"openai element":   `[{"role":"user","content":"hi"},{"role":"user","content":"` + big + `"}]`,
		"swe-agent member": `{"info":{"submission":"` + big + `"},"history":[{"role":"user","content":"hi"}]}`,
		"aider turn":       "#### hi\n\n" + strings.Repeat(big[:100]+"\n", 41),
		"first line":       `{"messages":[{"role":"user","content":"` + big + `"}]}`,
	} {
		_, err := ParseWith([]byte(data), Options{MaxRecordBytes: 1024})
		var tooLarge *RecordTooLargeError
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "--max-record-bytes") || !strings.Contains(err.Error(), "1.0 KiB") {
			t.Errorf("%s: error %v; want a RecordTooLargeError naming the 1 KiB limit and --max-record-bytes", name, err)
		}
		for _, limit := range []int64{8192, -1} {
			res, err := ParseWith([]byte(data), Options{MaxRecordBytes: limit})
			if err != nil || len(res.Turns) == 0 {
				t.Errorf("%s, limit %d: %v", name, limit, err)
			}
		}
	}
}

// TestProblemsBounded: a transcript of many bad lines lists the first
// MaxProblems of them and counts the rest, in the order the whole-input
// parser reports them (an OpenHands run's own problems after those of the
// lines). Before: every bad line was held as a problem, 150 bytes each (a
// 10 MB file of five million torn lines took 1.2 GB) and printed.
func TestProblemsBounded(t *testing.T) {
	const bad = 5000
	var cc strings.Builder
	cc.WriteString(`{"type":"user","uuid":"a","message":{"content":"hi"}}` + "\n")
	for i := 0; i < bad; i++ {
		cc.WriteString("x\n")
	}
	res, err := Parse([]byte(cc.String()), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != MaxProblems || res.ProblemsOmitted != bad-MaxProblems || res.Problems[MaxProblems-1].Line != MaxProblems+1 || len(res.Turns) != 1 {
		t.Fatalf("%d problems listed, %d omitted, last listed line %d, %d turns; want %d, %d, line %d, 1 turn",
			len(res.Problems), res.ProblemsOmitted, res.Problems[len(res.Problems)-1].Line, len(res.Turns), MaxProblems, bad-MaxProblems, MaxProblems+1)
	}
	// Only bad lines: the error counts them all.
	if _, err := Parse([]byte(strings.Repeat("x\n", bad)), FormatClaudeCode); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in %d line(s)", bad)) {
		t.Fatalf("all lines bad: %v", err)
	}
	// OpenHands: runs without history and bad lines interleaved.
	var oh strings.Builder
	for i := 0; i < 300; i++ {
		oh.WriteString(`{"instance_id":"x"}` + "\n" + "y\n")
		oh.WriteString(`{"instance_id":"x","history":[1,{"id":1,"source":"agent","action":"run","args":{"command":"ls"}}]}` + "\n")
	}
	sameParse(t, "openhands problems", []byte(oh.String()), FormatOpenHands)
	res, err = Parse([]byte(oh.String()), FormatOpenHands)
	if err != nil || len(res.Problems) != MaxProblems || res.ProblemsOmitted != 900-MaxProblems {
		t.Fatalf("openhands: %v, %d listed, %d omitted", err, len(res.Problems), res.ProblemsOmitted)
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r interface {
		ReadAt([]byte, int64) (int, error)
	}
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// TestStreamReadsNoFurther: once the Turn callback stops a JSONL or Aider
// parse, the rest of the transcript is not read: the bytes read are those
// of the turns parsed plus the reader's buffers (64 KiB each), not the
// file's length. A JSON document is read once in full, one element at a
// time, to detect its format and check it, then again up to the stop.
func TestStreamReadsNoFurther(t *testing.T) {
	const lines, stop = 200000, 1000
	var cc, md strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&cc, `{"type":"user","uuid":"u%d","message":{"role":"user","content":"m%d"}}`+"\n", i, i)
		fmt.Fprintf(&md, "#### q%d\nanswer %d\n", i, i)
	}
	for name, data := range map[string]string{"claude-code": cc.String(), "aider": md.String()} {
		c := &countingReaderAt{r: strings.NewReader(data)}
		s := newStreamer(io.NewSectionReader(c, 0, int64(len(data))), Options{Turn: stopAfter(stop)})
		if _, err := s.parse(); err == nil {
			t.Fatalf("%s: not stopped", name)
		}
		perTurn := int64(len(data)) / int64(lines)
		if name == "aider" {
			perTurn /= 2 // a question and its answer are two turns
		}
		// The head, the first line, then the parse: each at most a 64 KiB
		// buffer past what it used.
		bound := 4*(64<<10) + 2*int64(stop+1)*perTurn
		if c.n > bound || c.n >= int64(len(data))/10 {
			t.Errorf("%s: %d of %d bytes read to parse %d turns; want at most %d", name, c.n, len(data), stop+1, bound)
		}
	}
}

// TestRecordLimitSkipsUnreadMembers: a member of a document the parser
// does not read (a SWE-agent "trajectory", which repeats the history) is
// walked one token at a time, never held, so it may be larger than the
// record limit; only its single strings are held to it (and the limit's slack).
func TestRecordLimitSkipsUnreadMembers(t *testing.T) {
	var traj strings.Builder
	for i := 0; i < 200; i++ {
		if i > 0 {
			traj.WriteByte(',')
		}
		fmt.Fprintf(&traj, `{"action":"ls %d","observation":"%s"}`, i, strings.Repeat("o", 100))
	}
	data := `{"trajectory":[` + traj.String() + `],"history":[{"role":"system","content":"s"},{"role":"assistant","content":"t","action":"ls"}],"info":{}}`
	res, err := ParseWith([]byte(data), Options{MaxRecordBytes: 1024})
	if err != nil || res.Format != FormatSWEAgent || len(res.Turns) != 2 {
		t.Fatalf("a trajectory of %d bytes under a 1 KiB record limit: %v %+v", traj.Len(), err, res)
	}
	sameParse(t, "trajectory", []byte(data), FormatAuto)
	long := strings.Replace(data, `"ls 0"`, `"`+strings.Repeat("l", 16<<10)+`"`, 1)
	var tooLarge *RecordTooLargeError
	if _, err := ParseWith([]byte(long), Options{MaxRecordBytes: 1024}); !errors.As(err, &tooLarge) {
		t.Fatalf("a 16 KiB string in the trajectory under a 1 KiB limit: %v", err)
	}
}

// TestStreamMatchesWholeOddWhiteSpace: white space that bytes.TrimSpace
// skips and a JSON decoder refuses (form feed, vertical tab, U+00A0,
// U+0085), before or after a document or JSONL, in every format.
func TestStreamMatchesWholeOddWhiteSpace(t *testing.T) {
	docs := []string{
		"{\n\"history\":[{\"id\":0,\"source\":\"agent\",\"action\":\"run\",\"args\":{\"command\":\"ls\"}}]}",
		`{"history":[{"id":0,"source":"agent","action":"run","args":{"command":"ls"}}]}`,
		"[{\"role\":\"user\",\"content\":\"a\"}]",
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"user\",\"uuid\":\"v\",\"message\":{\"content\":\"ho\"}}",
		"{\n}",
	}
	for _, ws := range []string{"\f", "\v", "\u00a0", "\u0085", "\n\f\n"} {
		for i, d := range docs {
			for _, in := range []string{ws + d, d + ws, ws + d + ws} {
				for _, f := range append([]Format{FormatAuto}, Formats()...) {
					sameParse(t, fmt.Sprintf("doc %d with %q", i, ws), []byte(in), f)
				}
			}
		}
	}
}

// TestRecordLimitFirstLine: a JSONL transcript whose first line is past
// MaxRecordBytes is refused like any other line, even when every string
// in it is short (so the document scan, which holds only single tokens to
// the limit, lets it through). Before: the first line's size sent the
// parse to the whole-input parser, which holds no record to the limit,
// and a 20 MB first line of short content blocks was folded under
// --max-record-bytes 1000000.
func TestRecordLimitFirstLine(t *testing.T) {
	var blocks strings.Builder
	for i := 0; i < 100; i++ {
		if i > 0 {
			blocks.WriteByte(',')
		}
		fmt.Fprintf(&blocks, `{"type":"text","text":"block %d %s"}`, i, strings.Repeat("w", 100))
	}
	cc := `{"type":"user","uuid":"a","message":{"role":"user","content":[` + blocks.String() + `]}}` + "\n" +
		`{"type":"user","uuid":"b","message":{"role":"user","content":"hi"}}` + "\n"
	oh := `{"instance_id":"i1","history":[` + strings.Repeat(`{"id":1,"source":"user","action":"message","message":"`+strings.Repeat("m", 100)+`","args":{"content":"c"}},`, 100) +
		`{"id":2,"source":"agent","action":"finish","message":"done","args":{}}]}` + "\n" +
		`{"instance_id":"i2","history":[{"id":1,"source":"user","action":"message","message":"m","args":{"content":"c"}}]}` + "\n"
	for _, c := range []struct {
		name string
		data string
		f    Format
	}{
		{"claude-code, auto", cc, FormatAuto},
		{"openhands, auto", oh, FormatAuto},
		{"openhands", oh, FormatOpenHands},
	} {
		var tooLarge *RecordTooLargeError
		if _, err := ParseWith([]byte(c.data), Options{Format: c.f, MaxRecordBytes: 1024}); !errors.As(err, &tooLarge) || tooLarge.What != "line 1" {
			t.Errorf("%s: a first line of %d bytes under a 1 KiB record limit: %v; want a RecordTooLargeError for line 1", c.name, strings.Index(c.data, "\n"), err)
		}
		if res, err := ParseWith([]byte(c.data), Options{Format: c.f, MaxRecordBytes: -1}); err != nil || len(res.Turns) == 0 {
			t.Errorf("%s, no limit: %v", c.name, err)
		}
	}
}

// TestRecordLimitTornFirstLine: a JSONL transcript whose first line is
// torn is parsed by the whole-input parser (for the wording of its
// problems), and its lines are still held to MaxRecordBytes. Before: a
// torn first line lifted the limit from every line after it.
func TestRecordLimitTornFirstLine(t *testing.T) {
	big := strings.Repeat(`{"type":"text","text":"`+strings.Repeat("w", 100)+`"},`, 100)
	data := `{"type":"user","uuid":"x` + "\n" +
		`{"type":"user","uuid":"a","message":{"role":"user","content":[` + big + `{"type":"text","text":"end"}]}}` + "\n" +
		`{"type":"user","uuid":"b","message":{"role":"user","content":"hi"}}` + "\n"
	for _, f := range []Format{FormatAuto, FormatClaudeCode} {
		var tooLarge *RecordTooLargeError
		if _, err := ParseWith([]byte(data), Options{Format: f, MaxRecordBytes: 1024}); !errors.As(err, &tooLarge) || tooLarge.What != "line 2" {
			t.Errorf("%s: a torn first line, then a line of %d bytes under a 1 KiB record limit: %v; want a RecordTooLargeError for line 2", f, len(big), err)
		}
		res, err := ParseWith([]byte(data), Options{Format: f, MaxRecordBytes: 1 << 20})
		if err != nil || len(res.Turns) != 2 || len(res.Problems) != 1 {
			t.Errorf("%s, a 1 MiB limit: %v %+v", f, err, res)
		}
	}
}

// TestCompressedInputNamed: a compressed transcript (ingest session.jsonl.gz)
// is refused as binary with the kind of compression named and the way to
// read it (decompress into standard input), for every input path.
func TestCompressedInputNamed(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(`{"type":"user","uuid":"a","message":{"content":"hi"}}` + "\n"))
	w.Close()
	for name, c := range map[string]struct{ data, want string }{
		"gzip":  {gz.String(), "gzip"},
		"zstd":  {"\x28\xb5\x2f\xfd" + strings.Repeat("\x00", 60), "zstd"},
		"xz":    {"\xfd7zXZ\x00" + strings.Repeat("\x01", 60), "xz"},
		"bzip2": {"BZh91AY&SY\x00" + strings.Repeat("\x01", 60), "bzip2"},
	} {
		_, err := ParseWith([]byte(c.data), Options{})
		if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), c.want+"-compressed") || !strings.Contains(err.Error(), "| contextfold ingest -") {
			t.Errorf("%s: %v; want the %s compression named and a pipe into ingest -", name, err, c.want)
		}
	}
	if _, err := ParseWith([]byte("\x00\x01\x02"), Options{}); err == nil || strings.Contains(err.Error(), "compressed") {
		t.Errorf("binary input that is not compressed: %v", err)
	}
}

// TestTranscriptShrunkWhileRead: a transcript that is cut short after it
// was opened (an agent rewriting its .traj.json in place: truncated, then
// written again) is refused as changed while it was read, not as binary
// input. The section below claims the size the file had when opened and
// serves fewer bytes, as the file does once truncated. Before: the bytes
// never read stayed zero and the error was "the input is binary, not a
// transcript (a NUL byte at offset 36889)".
func TestTranscriptShrunkWhileRead(t *testing.T) {
	doc := `{"info":{},"messages":[` + strings.Repeat(`{"role":"user","content":"hello there"},`, 200) + `{"role":"user","content":"end"}]}`
	rewritten := `{"info":{},"messages":[{"role":"user","content":"rewritten"}]}`
	for name, now := range map[string]string{
		"emptied":   "",
		"rewritten": rewritten,
		"cut":       doc[:len(doc)/2],
	} {
		sec := io.NewSectionReader(strings.NewReader(now), 0, int64(len(doc)))
		_, err := newStreamer(sec, Options{}).parse()
		if !errors.Is(err, errChanged) {
			t.Errorf("%s: %v; want %v", name, err, errChanged)
		}
	}
}

// allocated returns the bytes and the count of allocations f made.
func allocated(f func()) (bytes, count uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs
}

// TestElementRefusedWhileRead: an element of a messages array past the
// record limit is refused as a JSONL line is, holding at most about 1.5
// times the limit and allocating about twice it in all, however large the
// element. Before: a json.Decoder buffered it, its buffer doubling past the
// limit (a 200 MB element under the 128 MiB default peaked at 420 MB).
func TestElementRefusedWhileRead(t *testing.T) {
	const limit = 1 << 20
	big := strings.Repeat("x", 8*limit)
	for name, data := range map[string]string{
		"bare array": `[{"role":"user","content":"hi"},{"role":"user","content":"` + big + `"}]`,
		"messages":   `{"system":"s","messages":[{"role":"user","content":"hi"},{"role":"user","content":"` + big + `"}]}`,
		"jsonl line": `{"type":"user","uuid":"a","message":{"content":"hi"}}` + "\n" + `{"type":"user","uuid":"b","message":{"content":"` + big + `"}}` + "\n",
	} {
		in := []byte(data)
		var err error
		n, _ := allocated(func() { _, err = ParseWith(in, Options{MaxRecordBytes: limit}) })
		var tooLarge *RecordTooLargeError
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "--max-record-bytes") {
			t.Fatalf("%s: %v; want a RecordTooLargeError", name, err)
		}
		// Twice the limit, the reader's 64 KiB buffers and the rest.
		if bound := uint64(2*limit + 512<<10); n > bound {
			t.Errorf("%s: %d bytes allocated to refuse an element of %d bytes under a limit of %d; want at most %d", name, n, len(big), limit, bound)
		}
	}
}

// TestScanDoesNotDecodeEachMessage: the first read of a JSON document
// (checking it, tallying the OpenAI and Anthropic evidence) reads each
// message without decoding it into a map: 2 allocations a message (3
// under the race detector). Before: 42 (a json.Decoder's value, a map, its
// values, the content blocks'), which made the first read of a million
// messages take 2.2 s of the 2.5 s a parse stopped by --max-turns took.
func TestScanDoesNotDecodeEachMessage(t *testing.T) {
	const n, stop = 20000, 10
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":"m%d"}],"name":"u"}`, i)
	}
	b.WriteByte(']')
	data := []byte(b.String())
	_, count := allocated(func() {
		_, err := ParseWith(data, Options{Turn: stopAfter(stop)})
		if !errors.Is(err, errStopTurns) {
			t.Fatal(err)
		}
	})
	if perMessage := float64(count) / n; perMessage > 5 {
		t.Errorf("%.1f allocations a message to read %d messages and stop at the %dth; want at most 5", perMessage, n, stop+1)
	}
}

// TestAddValidMatchesAdd: the tally read without a map counts as the one
// over decoded objects, repeated and escaped keys included.
func TestAddValidMatchesAdd(t *testing.T) {
	for _, s := range []string{
		`{}`, `{"role":"user"}`, `{"role":"tool"}`, `{"rol\u0065":"tool"}`, `{"role":"t\u006fol"}`,
		`{"role":"tool","role":"user"}`, `{"role":"user","role":1}`, `{"role":null,"tool_calls":[]}`,
		`{"role":"user","content":[{"type":"tool_use"},{"type":"image","source":{}},{"type":"image"},{"type":"refusal"},1,"x",[]]}`,
		`{"role":"user","content":[{"type":"tool_use","type":"text"},{"typ\u0065":"thinking"}]}`,
		`{"role":"user","content":{"type":"tool_use"}}`, `{"role":"assistant","function_call":{"name":"f"}, "content":"x"}`,
		`{"role":"us\"er","content":[{"source":"s","type":"image"}] , "tool_call_id" : "1" }`,
		`{"role":"ütool","content":[{"type":"input_text"}]}`,
	} {
		var want, got chatCounts
		want.add(json.RawMessage(s))
		got.addValid([]byte(s))
		if got != want {
			t.Errorf("%s: %+v, want %+v", s, got, want)
		}
	}
}

// TestMaxTurnsStopsFirstRead: with Options.MaxTurns, a JSON messages
// array is refused by the first read as soon as it has counted one message
// object more than the limit: the rest is not read (before, the first read
// went through the whole document, a million messages, to detect its
// format before the second read reached the turn past the limit). The
// refusal names the step the turn-by-turn refusal names, in every layout
// it applies to, and in the others the limit applies turn by turn.
func TestMaxTurnsStopsFirstRead(t *testing.T) {
	const n, limit = 100000, 100
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"m%d"}`, i)
	}
	b.WriteByte(']')
	data := b.String()
	c := &countingReaderAt{r: strings.NewReader(data)}
	_, err := newStreamer(io.NewSectionReader(c, 0, int64(len(data))), Options{MaxTurns: limit}).parse()
	var many *TooManyTurnsError
	if !errors.As(err, &many) || many.Step != limit || many.Limit != limit {
		t.Fatalf("%v; want a TooManyTurnsError at step %d", err, limit)
	}
	if c.n > 4*(64<<10) {
		t.Fatalf("%d of %d bytes read to refuse the turn past %d", c.n, len(data), limit)
	}

	msgs := func(ms ...string) string { return strings.Join(ms, ",") }
	u, r, x := `{"role":"user","content":"a"}`, `{"content":"no role"}`, `7`
	for _, doc := range []string{
		"[" + msgs(u, u, u, u) + "]",
		"[" + msgs(r, r, r, u, u) + "]",
		"[" + msgs(r, r, r, r) + "]",
		"[" + msgs(u, x, u, x, u, u) + "]",
		"[" + msgs(u, u, u, u) + "] x",
		"[" + msgs(u, u, u, u) + ",]",
		`{"messages":[` + msgs(u, u, u, u) + `]}`,
		`{"system":"s","messages":[` + msgs(u, u, u, u) + `],"messages":[]}`,
		`{"history":[` + msgs(u, u, x, u, u) + `],"info":{}}`,
		`{"trajectory_format":"mini-swe-agent-1","instance_id":"i","messages":[` + msgs(u, u, u, u) + `]}`,
		"{\"type\":\"user\",\"uuid\":\"a\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"user\",\"uuid\":\"b\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"user\",\"uuid\":\"c\",\"message\":{\"content\":\"hi\"}}\n",
		"#### a\n\nb\n\n#### c\n\nd\n",
	} {
		for _, f := range append([]Format{FormatAuto}, Formats()...) {
			for limit := 1; limit <= 3; limit++ {
				sameRefusal(t, doc, f, limit)
			}
		}
	}
}

// sameRefusal fails t when ParseWith with MaxTurns limit refuses doc at
// another step than the limit applied turn by turn by the caller's Turn
// callback, or gives another error or none where the callback's parse
// gives one (but for a refusal by the first read of a document before a
// syntax error, or a repeated array, further on).
func sameRefusal(t *testing.T, doc string, f Format, limit int) {
	t.Helper()
	seen, step := 0, -1
	errStop := errors.New("stop")
	_, werr := ParseWith([]byte(doc), Options{Format: f, Turn: func(t Turn) error {
		if seen++; seen > limit {
			step = t.StepID
			return errStop
		}
		return nil
	}})
	_, gerr := ParseWith([]byte(doc), Options{Format: f, MaxTurns: limit})
	var many *TooManyTurnsError
	switch {
	case errors.Is(werr, errStop):
		if !errors.As(gerr, &many) || many.Step != step {
			t.Errorf("%q (%s, %d): %v; want a TooManyTurnsError at step %d", doc, f, limit, gerr, step)
		}
	case errors.As(gerr, &many):
		// Refused by the first read before a syntax error or a
		// repeated array past the limit is read.
		if werr == nil && strings.Count(doc, `"messages"`)+strings.Count(doc, `"history"`) < 2 {
			t.Errorf("%q (%s, %d): %v; the turn-by-turn parse gave %d turns and no error", doc, f, limit, gerr, seen)
		}
	case (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error():
		t.Errorf("%q (%s, %d): %v; want %v", doc, f, limit, gerr, werr)
	}
}

// FuzzMaxTurnsMatchesTurnByTurn: for any input, format and limit,
// Options.MaxTurns refuses the parse where the limit applied turn by turn
// does (see sameRefusal).
//
//	go test ./ingest/ -run '^$' -fuzz FuzzMaxTurnsMatchesTurnByTurn -fuzztime 60s -fuzzminimizetime 3s
func FuzzMaxTurnsMatchesTurnByTurn(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]`,
		`[{"content":"a"},7,{"role":"user","content":"b"},{"role":"user","content":"c"}]`,
		`{"history":[{"role":"system","content":"s"},{"role":"assistant","content":"t","action":"ls"},{"role":"user","content":"o"}]}`,
		`{"trajectory_format":"mini-swe-agent-1","messages":[{"role":"assistant","content":"x"},{"role":"user","content":"y"}]}`,
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"user\",\"uuid\":\"v\",\"message\":{\"content\":\"hi\"}}\n",
		"#### a\n\nb\n\n#### c\n",
	} {
		f.Add([]byte(s), uint8(0), uint8(1))
	}
	formats := append([]Format{FormatAuto}, Formats()...)
	f.Fuzz(func(t *testing.T, data []byte, fi, limit uint8) {
		sameRefusal(t, string(data), formats[int(fi)%len(formats)], 1+int(limit)%4)
	})
}

// errStopTurns is the error a stopAfter callback stops a parse with.
var errStopTurns = errors.New("stop")

// stopAfter returns an Options.Turn callback that lets n turns through
// and stops the parse at the next one with errStopTurns.
func stopAfter(n int) func(Turn) error {
	seen := 0
	return func(Turn) error {
		if seen++; seen > n {
			return errStopTurns
		}
		return nil
	}
}
