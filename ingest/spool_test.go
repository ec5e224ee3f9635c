package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bigJSONL is a Claude Code transcript of n one-line records.
func bigJSONL(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":"m%d %s"}}`+"\n", i, i, strings.Repeat("w", i%97))
	}
	return b.Bytes()
}

// TestReaderMatchesWhole: a transcript read from a stream (standard input,
// a pipe) parses as the same bytes held whole, small ones spooled in
// memory and larger ones (past 1 MiB) to a temporary file, which is gone
// once the parse returns.
func TestReaderMatchesWhole(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	inputs := map[string][]byte{"big claude-code": bigJSONL(12000)}
	big := bigJSONL(10000)
	var oa bytes.Buffer
	oa.WriteString(`{"system":"s","messages":[`)
	for i, line := range bytes.Split(bytes.TrimSpace(big), []byte("\n")) {
		if i > 0 {
			oa.WriteByte(',')
		}
		fmt.Fprintf(&oa, `{"role":"user","content":[{"type":"text","text":%q}]}`, line)
	}
	oa.WriteString("]}")
	inputs["big anthropic"] = oa.Bytes()
	inputs["big anthropic, truncated"] = oa.Bytes()[:oa.Len()-3]
	for _, path := range transcriptFiles(t) {
		if strings.Contains(filepath.ToSlash(path), "/corpus/") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inputs[path] = data
	}
	for _, s := range []string{"", " ", "[]", "{}", "\xef\xbb\xbf[]", "\x00\x01", "plain text", "#### hi\nreply\n", "[1,2]"} {
		inputs[fmt.Sprintf("%q", s)] = []byte(s)
	}
	for name, data := range inputs {
		for _, f := range []Format{FormatAuto, FormatOpenAI, FormatClaudeCode} {
			want, werr := Parse(data, f)
			got, gerr := ParseReaderWith(iotest.HalfReader(bytes.NewReader(data)), Options{Format: f, MaxRecordBytes: -1})
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("%s (%s): error %v, want %v", name, f, gerr, werr)
			}
			if werr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s (%s): the stream's parse differs from the bytes'", name, f)
			}
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("spool files left in TMPDIR: %v", left)
	}
}

// TestReaderReadsNoFurther: a JSONL transcript read from a stream is
// parsed as it is read: once the Turn callback stops the parse, the rest
// of the stream is not read (the bytes read are those of the turns parsed
// and a few 256 KiB chunks), and of what was read at most 1 MiB is held in
// memory. Before: standard input was read whole into memory, up to 512
// MiB, before the first turn was parsed.
func TestReaderReadsNoFurther(t *testing.T) {
	data := bigJSONL(200000)
	const stop = 1000
	c := &countingReader{r: bytes.NewReader(data)}
	_, err := ParseReaderWith(c, Options{Turn: stopAfter(stop)})
	if !errors.Is(err, errStopTurns) {
		t.Fatal(err)
	}
	if bound := int64(4*(256<<10)) + 2*int64(stop+1)*int64(len(data)/200000); c.n > bound {
		t.Fatalf("%d of %d bytes read to parse %d turns; want at most %d", c.n, len(data), stop+1, bound)
	}
}

// TestReaderTooLarge: a stream past MaxTranscriptBytes (lowered here to
// 4 MiB) is refused once past it, naming the limit, without being held.
func TestReaderTooLarge(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	defer func(n int64) { maxStreamBytes = n }(maxStreamBytes)
	maxStreamBytes = 4 << 20
	line := []byte(`{"type":"user","uuid":"u","message":{"content":"` + strings.Repeat("x", 1<<20) + `"}}` + "\n")
	for _, f := range []Format{FormatAuto, FormatClaudeCode, FormatOpenAI} {
		c := &countingReader{r: io.MultiReader(bytes.NewReader(line), &repeatReader{b: line})}
		_, err := ParseReaderWith(c, Options{Format: f})
		if err == nil || !strings.Contains(err.Error(), "more than the 4.0 MiB") || !strings.Contains(err.Error(), "split it") || c.n > maxStreamBytes+256<<10 {
			t.Fatalf("%s: a stream without end: %v, %d bytes read", f, err, c.n)
		}
	}
}

// repeatReader repeats b without end.
type repeatReader struct{ b []byte }

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.b)
	}
	return n, nil
}
