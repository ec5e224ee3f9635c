package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func readTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkInvariants verifies what every Result must satisfy.
func checkInvariants(t testing.TB, res *Result) {
	t.Helper()
	last := -1
	for i, tu := range res.Turns {
		if tu.StepID <= last {
			t.Fatalf("turn %d: step id %d not ascending after %d", i, tu.StepID, last)
		}
		last = tu.StepID
		for name, s := range map[string]string{
			"Role": tu.Role, "Kind": tu.Kind, "Tool": tu.Tool, "Command": tu.Command,
			"Summary": tu.Summary, "Payload": tu.Payload, "SessionID": tu.SessionID,
			"ID": tu.ID, "ParentID": tu.ParentID,
		} {
			if !utf8.ValidString(s) {
				t.Fatalf("step %d: %s is not valid UTF-8: %q", tu.StepID, name, s)
			}
		}
		if n := utf8.RuneCountInString(tu.Summary); n > MaxSummary {
			t.Fatalf("step %d: summary has %d code points", tu.StepID, n)
		}
		if strings.ContainsAny(tu.Summary, "\n\r\t") {
			t.Fatalf("step %d: summary is not one line: %q", tu.StepID, tu.Summary)
		}
		switch tu.Role {
		case "user", "assistant", "tool", "system":
		default:
			t.Fatalf("step %d: unexpected role %q", tu.StepID, tu.Role)
		}
		if tu.Kind == "" {
			t.Fatalf("step %d: empty kind", tu.StepID)
		}
	}
	for _, p := range res.Problems {
		if !utf8.ValidString(p.Message) {
			t.Fatalf("problem message not valid UTF-8: %q", p.Message)
		}
	}
}

type payloadCheck struct {
	step int
	want string
}

var transcriptCases = []struct {
	file     string
	format   Format
	turns    int
	messages int
	kinds    map[string]int // exact counts of some kinds
	payloads []payloadCheck
	sessions map[int]string // step -> session id
}{
	{
		file: "transcripts/claude-code/ledger-api-session.jsonl", format: FormatClaudeCode, turns: 47, messages: 47,
		// README.md says 20 tool calls; the file holds 19 tool_use blocks (counted by hand).
		kinds: map[string]int{"prompt": 5, "tool_call": 19, "tool_result": 19, "response": 3, "system": 1},
		payloads: []payloadCheck{
			{1, "toolu_00000000000000000001"}, {1, "docker compose up -d postgres"},
			{6, "SQLSTATE 40P01"}, {43, `"tenant_id":"t-992"`},
		},
		sessions: map[int]string{0: "5f1c2a9e-3b7d-4c1e-9a52-0d6e8b7f4a21"},
	},
	{
		file: "transcripts/swe-agent/i_got_id_demo.traj", format: FormatSWEAgent, turns: 43, messages: 43,
		kinds:    map[string]int{"system": 1, "prompt": 1, "tool_call": 21, "observation": 20},
		payloads: []payloadCheck{{42, "FLAG{p3rl_6_iz_EVEN_BETTER!!1}"}, {1, "I Got Id"}},
	},
	{
		file: "transcripts/openai-chat/marshmallow-1867.function-calling.traj", format: FormatSWEAgent, turns: 28, messages: 28,
		kinds:    map[string]int{"system": 1, "prompt": 1, "tool_call": 13, "observation": 13},
		payloads: []payloadCheck{{2, "call_9diWc1DYm4RLmPfHgIaP2wd"}, {3, "call_9diWc1DYm4RLmPfHgIaP2wd"}, {1, "TimeDelta serialization precision"}},
	},
	{
		file: "transcripts/mini-swe-agent/psf__requests-6028.traj.json", format: FormatMiniSWEAgent, turns: 100, messages: 100,
		kinds:    map[string]int{"system": 1, "prompt": 1},
		payloads: []payloadCheck{{1, "Proxy authentication bug"}, {2, "ls -la"}},
		sessions: map[int]string{0: "psf__requests-6028", 99: "psf__requests-6028"},
	},
	{
		file: "transcripts/openhands/multi_swe_bench_example_output.jsonl", format: FormatOpenHands, turns: 49 + 70 + 103, messages: 222,
		kinds:    map[string]int{"system": 3, "prompt": 3},
		payloads: []payloadCheck{{4, "ls -l /workspace/ponylang__ponyc__0.1"}, {27, "No replacement was performed"}},
		sessions: map[int]string{0: "ponylang__ponyc-4595", 48: "ponylang__ponyc-4595", 49: "ponylang__ponyc-4593", 118: "ponylang__ponyc-4593", 119: "ponylang__ponyc-4588", 221: "ponylang__ponyc-4588"},
	},
	{
		file: "transcripts/aider/afi-core.aider.chat.history.md", format: FormatAider, turns: 175, messages: 175,
		kinds:    map[string]int{"system": 9, "prompt": 49, "response": 42, "observation": 75},
		payloads: []payloadCheck{{0, "aider chat started at 2025-07-15 11:38:37"}, {2, "pipeline_config_schema.ts"}},
	},
	{
		file: "field-reports/05-thinking-signature.json", format: FormatAnthropic, turns: 5, messages: 5,
		kinds:    map[string]int{"prompt": 2, "tool_call": 1, "tool_result": 1, "response": 1},
		payloads: []payloadCheck{{0, "find why the cache test is flaky"}, {1, "[thinking]"}},
	},
	{
		file: "field-reports/08-hydrate-after-tool-results.json", format: FormatAnthropic, turns: 7, messages: 7,
		kinds:    map[string]int{"prompt": 2, "tool_call": 2, "tool_result": 2, "response": 1},
		payloads: []payloadCheck{{1, "build-log-7f3a.txt"}},
	},
	{
		file: "field-reports/10-openai-orphan-tool.json", format: FormatOpenAI, turns: 10, messages: 10,
		kinds:    map[string]int{"system": 1, "prompt": 3, "tool_call": 2, "tool_result": 3, "response": 1},
		payloads: []payloadCheck{{2, "call_FAKEa001"}, {8, "ok svc/b 0.2s"}},
	},
}

func TestTranscripts(t *testing.T) {
	for _, tc := range transcriptCases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			data := readTestdata(t, tc.file)
			f, err := Detect(data)
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if f != tc.format {
				t.Fatalf("Detect = %s, want %s", f, tc.format)
			}
			res, err := Parse(data, FormatAuto)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkInvariants(t, res)
			if res.Format != tc.format {
				t.Errorf("Result.Format = %s, want %s", res.Format, tc.format)
			}
			if len(res.Turns) != tc.turns {
				t.Errorf("turns = %d, want %d", len(res.Turns), tc.turns)
			}
			if res.Messages != tc.messages {
				t.Errorf("messages = %d, want %d", res.Messages, tc.messages)
			}
			if len(res.Problems) != 0 {
				t.Errorf("unexpected problems: %v", res.Problems)
			}
			if res.Replaced != 0 {
				t.Errorf("Replaced = %d, want 0", res.Replaced)
			}
			kinds := map[string]int{}
			for _, tu := range res.Turns {
				kinds[tu.Kind]++
			}
			for k, want := range tc.kinds {
				if kinds[k] != want {
					t.Errorf("kind %q: %d turns, want %d (all kinds %v)", k, kinds[k], want, kinds)
				}
			}
			byStep := map[int]Turn{}
			for _, tu := range res.Turns {
				byStep[tu.StepID] = tu
			}
			for _, pc := range tc.payloads {
				tu, ok := byStep[pc.step]
				if !ok {
					t.Errorf("no turn with step %d", pc.step)
					continue
				}
				if !strings.Contains(tu.Payload, pc.want) {
					t.Errorf("step %d payload lacks %q:\n%.400s", pc.step, pc.want, tu.Payload)
				}
			}
			for step, want := range tc.sessions {
				if got := byStep[step].SessionID; got != want {
					t.Errorf("step %d session = %q, want %q", step, got, want)
				}
			}
			// ParseFile gives the same result, and parsing is deterministic.
			res2, err := ParseFile(filepath.Join("testdata", filepath.FromSlash(tc.file)), tc.format)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, res2) {
				t.Error("two parses of the same input differ")
			}
		})
	}
}

func TestSummaries(t *testing.T) {
	res, err := Parse(readTestdata(t, "transcripts/claude-code/ledger-api-session.jsonl"), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[int]string{
		0:  "user: Set up the ledger-api service locally",
		1:  "assistant Bash $ docker compose up -d postgres: Start the database first.",
		6:  "tool Bash $ go run ./cmd/migrate up [error]: 2026/01/05 09:01:13 ERROR: deadlock detected (SQLSTATE 40P01)",
		16: "tool Bash $ go test ./... [error]: --- FAIL: TestEntries_Balance",
	}
	for step, want := range cases {
		tu := res.Turns[step]
		if tu.StepID != step {
			t.Fatalf("turn %d has step %d", step, tu.StepID)
		}
		if !strings.HasPrefix(tu.Summary, want) {
			t.Errorf("step %d summary = %q, want prefix %q", step, tu.Summary, want)
		}
	}
	if tu := res.Turns[6]; !tu.IsError || tu.Role != "tool" || tu.Tool != "Bash" || tu.Command != "go run ./cmd/migrate up" {
		t.Errorf("step 6 = %+v", tu)
	}
}

func TestClipOnCharacterBoundary(t *testing.T) {
	long := strings.Repeat("é🚀中", 200)
	got := summarize("tool", "Bash", "echo hi", long, false)
	if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxSummary {
		t.Fatalf("bad summary %q (%d code points)", got, utf8.RuneCountInString(got))
	}
	if !strings.HasSuffix(got, "…") {
		t.Errorf("cut summary should end with an ellipsis: %q", got)
	}
	if s := clip("abc", 3); s != "abc" {
		t.Errorf("clip kept %q", s)
	}
	if s := clip("abcd", 3); s != "ab…" {
		t.Errorf("clip = %q", s)
	}
}

func TestCountReplacements(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{`"ok"`, 0},
		{`"\ud83d\ude80"`, 0},       // a valid pair
		{`"\uD83D\uDE80"`, 0},       // upper-case hex
		{`"\ud83d"`, 1},             // lone high
		{`"\ude80"`, 1},             // lone low
		{`"\ud83d\u0041"`, 1},       // high followed by a non-surrogate escape
		{`"\ud83d\ud83d\ude80"`, 1}, // lone high, then a pair
		{`"\\ud83d"`, 0},            // an escaped backslash, not an escape
		{"\"\xff\xfe\"", 2},         // invalid UTF-8 bytes
		{"\"\xed\xa0\xbd\"", 3},     // a surrogate encoded in UTF-8
	}
	for _, c := range cases {
		if got := countReplacements([]byte(c.in)); got != c.want {
			t.Errorf("countReplacements(%q) = %d, want %d", c.in, got, c.want)
		}
		// encoding/json must agree on the number of U+FFFD produced.
		var s string
		if err := json.Unmarshal([]byte(c.in), &s); err == nil {
			if n := strings.Count(s, "\uFFFD"); n != c.want {
				t.Errorf("%q: encoding/json produced %d U+FFFD, counter says %d", c.in, n, c.want)
			}
		}
	}
}

func TestFieldReport01LoneSurrogate(t *testing.T) {
	data := readTestdata(t, "field-reports/01-lone-surrogate.jsonl")
	res, err := Parse(data, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if len(res.Turns) != 5 || len(res.Problems) != 0 {
		t.Fatalf("turns %d problems %v", len(res.Turns), res.Problems)
	}
	// Line 3 holds two lone \ud83d escapes (message content and toolUseResult).
	if res.Replaced != 2 {
		t.Errorf("Replaced = %d, want 2", res.Replaced)
	}
	tu := res.Turns[2]
	if !strings.Contains(tu.Payload, "ok 🚀 shipped, pending \uFFFD…") {
		t.Errorf("payload does not carry the repaired text:\n%s", tu.Payload)
	}
	if !strings.Contains(tu.Summary, "pending \uFFFD") {
		t.Errorf("summary = %q", tu.Summary)
	}
	for _, tu := range res.Turns {
		for _, s := range []string{tu.Payload, tu.Summary} {
			for _, r := range s {
				if r >= 0xD800 && r <= 0xDFFF {
					t.Fatalf("surrogate code point in step %d", tu.StepID)
				}
			}
			if strings.Contains(strings.ToLower(s), `\ud83d`) {
				t.Fatalf("step %d still carries a surrogate escape", tu.StepID)
			}
		}
	}
	// The long multilingual tool result is summarised with a cut on a
	// character boundary.
	long := res.Turns[3]
	if n := utf8.RuneCountInString(long.Summary); n < MaxSummary-2 || n > MaxSummary || !strings.HasSuffix(long.Summary, "…") {
		t.Errorf("long summary: %d code points: %q", utf8.RuneCountInString(long.Summary), long.Summary)
	}
}

func TestFieldReport02CorruptLines(t *testing.T) {
	res, err := Parse(readTestdata(t, "field-reports/02-corrupt-line-midfile.jsonl"), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	var ids []string
	for _, tu := range res.Turns {
		ids = append(ids, tu.ID)
	}
	if want := []string{"u-0201", "a-0202", "u-0204", "a-0205", "u-0206"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ingested %v, want %v", ids, want)
	}
	var lines []int
	for _, p := range res.Problems {
		lines = append(lines, p.Line)
		if p.Message == "" {
			t.Errorf("line %d: empty problem message", p.Line)
		}
	}
	if want := []int{3, 4, 5, 6}; !reflect.DeepEqual(lines, want) {
		t.Errorf("problem lines %v, want %v (%v)", lines, want, res.Problems)
	}
	if !strings.Contains(res.Problems[3].Message, "array") {
		t.Errorf("bare array problem: %q", res.Problems[3].Message)
	}
	if res.Turns[2].Tool != "Bash" || res.Turns[2].Kind != "tool_result" {
		t.Errorf("u-0204 = %+v", res.Turns[2])
	}
}

func TestFieldReport04Compaction(t *testing.T) {
	res, err := Parse(readTestdata(t, "field-reports/04-compaction-records.jsonl"), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if len(res.Turns) != 8 {
		t.Fatalf("%d turns, want 8", len(res.Turns))
	}
	seen := map[string]Turn{}
	var prompts []string
	for _, tu := range res.Turns {
		if _, dup := seen[tu.ID]; dup {
			t.Errorf("uuid %s ingested twice", tu.ID)
		}
		seen[tu.ID] = tu
		if tu.Kind == "prompt" {
			prompts = append(prompts, tu.ID)
		}
	}
	if want := []string{"u-0401", "u-0407"}; !reflect.DeepEqual(prompts, want) {
		t.Errorf("prompts %v, want %v", prompts, want)
	}
	if k := seen["u-0406"].Kind; k != "compaction" {
		t.Errorf("recap kind %q, want compaction", k)
	}
	if !strings.HasPrefix(seen["u-0406"].Summary, "compaction: Recap of earlier work") {
		t.Errorf("recap summary %q", seen["u-0406"].Summary)
	}
	if p := seen["s-0405"].ParentID; p != "a-0404" {
		t.Errorf("boundary parent %q, want a-0404 (logicalParentUuid)", p)
	}
	// Walk the chain from the last record back to the root.
	var chain []string
	for id := "a-0408"; id != ""; id = seen[id].ParentID {
		if _, ok := seen[id]; !ok {
			t.Fatalf("chain broken at %s", id)
		}
		chain = append(chain, id)
		if len(chain) > 10 {
			t.Fatal("chain loops")
		}
	}
	want := []string{"a-0408", "u-0407", "u-0406", "s-0405", "a-0404", "u-0403", "a-0402", "u-0401"}
	if !reflect.DeepEqual(chain, want) {
		t.Errorf("chain %v, want %v", chain, want)
	}
}

func TestCompactionPrefixWithoutFlag(t *testing.T) {
	in := `{"type":"user","uuid":"a","message":{"role":"user","content":"This session is being continued from a previous conversation that ran out of context. Summary: ..."}}
{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":[{"type":"text","text":"go on"}]}}
`
	res, err := Parse([]byte(in), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns[0].Kind != "compaction" || res.Turns[1].Kind != "prompt" {
		t.Errorf("kinds %q %q", res.Turns[0].Kind, res.Turns[1].Kind)
	}
}

func TestInvalidUTF8(t *testing.T) {
	jsonl := []byte("{\"type\":\"user\",\"uuid\":\"x\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff\xfe byte \\udc00\"}}\n")
	res, err := Parse(jsonl, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Replaced != 3 {
		t.Errorf("Replaced = %d, want 3", res.Replaced)
	}
	md := []byte("# aider chat started at 2025-01-01 00:00:00\n\n#### fix \xc3 it\n\nok \xe2\x82\n")
	res, err = Parse(md, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Format != FormatAider || res.Replaced != 3 || len(res.Turns) != 3 {
		t.Errorf("aider: format %s replaced %d turns %d", res.Format, res.Replaced, len(res.Turns))
	}
	arr := []byte(`[{"role":"user","content":"hi \ud800"},{"role":"assistant","content":[{"type":"text","text":"ok"}]}]`)
	res, err = Parse(arr, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Replaced != 1 || !strings.Contains(res.Turns[0].Payload, "hi \uFFFD") {
		t.Errorf("array: replaced %d payload %q", res.Replaced, res.Turns[0].Payload)
	}
}

// prefixes of line-oriented files are cut at a line boundary and, to model a
// file being written, in the middle of the next line.
func jsonlPrefixes(data []byte) [][]byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	k := len(lines) / 2
	if k == 0 {
		k = 1
	}
	cut := bytes.Join(lines[:k], nil)
	torn := append(append([]byte{}, cut...), lines[k][:len(lines[k])/2]...)
	return [][]byte{cut, torn}
}

// arrayPrefix rebuilds a JSON document with only the first k elements of its
// messages array (key "" means a bare array), keeping the elements' bytes.
func arrayPrefix(t *testing.T, data []byte, key string, k int) []byte {
	t.Helper()
	if key == "" {
		var a []json.RawMessage
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(a[:k])
		return out
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(o[key], &a); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("{")
	for _, extra := range []string{"trajectory_format", "instance_id"} {
		if v, ok := o[extra]; ok {
			b.WriteString(`"` + extra + `":`)
			b.Write(v)
			b.WriteString(",")
		}
	}
	b.WriteString(`"` + key + `":[`)
	for i, e := range a[:k] {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.Write(e)
	}
	b.WriteString("]}")
	return b.Bytes()
}

func TestAppendStability(t *testing.T) {
	type prefixCase struct {
		name   string
		full   []byte
		prefix []byte
	}
	var cases []prefixCase
	for _, f := range []string{
		"transcripts/claude-code/ledger-api-session.jsonl",
		"transcripts/openhands/multi_swe_bench_example_output.jsonl",
		"field-reports/04-compaction-records.jsonl",
		"field-reports/01-lone-surrogate.jsonl",
	} {
		full := readTestdata(t, f)
		for i, p := range jsonlPrefixes(full) {
			cases = append(cases, prefixCase{name: filepath.Base(f) + []string{"/lines", "/torn"}[i], full: full, prefix: p})
		}
	}
	for _, c := range []struct{ file, key string }{
		{"transcripts/swe-agent/i_got_id_demo.traj", "history"},
		{"transcripts/openai-chat/marshmallow-1867.function-calling.traj", "history"},
		{"transcripts/mini-swe-agent/psf__requests-6028.traj.json", "messages"},
		{"field-reports/05-thinking-signature.json", "messages"},
		{"field-reports/10-openai-orphan-tool.json", "messages"},
	} {
		full := readTestdata(t, c.file)
		var probe map[string]json.RawMessage
		_ = json.Unmarshal(full, &probe)
		var a []json.RawMessage
		_ = json.Unmarshal(probe[c.key], &a)
		// Compare against the full array rebuilt the same way, so that only
		// the number of elements differs.
		rebuilt := arrayPrefix(t, full, c.key, len(a))
		for _, k := range []int{1, len(a) / 2, len(a) - 1} {
			cases = append(cases, prefixCase{name: filepath.Base(c.file) + "/" + strconv.Itoa(k), full: rebuilt, prefix: arrayPrefix(t, full, c.key, k)})
		}
	}
	{
		full := readTestdata(t, "transcripts/aider/afi-core.aider.chat.history.md")
		cut := bytes.Index(full, []byte("\n# aider chat started at 2025-07-22"))
		cases = append(cases, prefixCase{name: "aider/session-boundary", full: full, prefix: full[:cut+1]})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			whole, err := Parse(c.full, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			part, err := Parse(c.prefix, whole.Format)
			if err != nil {
				t.Fatal(err)
			}
			if len(part.Turns) == 0 || len(part.Turns) >= len(whole.Turns) {
				t.Fatalf("prefix has %d turns, whole %d", len(part.Turns), len(whole.Turns))
			}
			for i, tu := range part.Turns {
				if !reflect.DeepEqual(tu, whole.Turns[i]) {
					t.Fatalf("turn %d differs:\nprefix %+v\nwhole  %+v", i, tu, whole.Turns[i])
				}
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"blank":        "  \n\n",
		"prose":        "hello world\nthis is not a transcript\n",
		"object":       `{"foo": 1, "bar": [1, 2]}`,
		"numbers":      `[1, 2, 3]`,
		"broken array": `[{"role":"user"`,
		"jsonl other":  "{\"a\":1}\n{\"b\":2}\n",
		"binary":       "\x00\x01\x02\xff",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Detect([]byte(in))
			if err == nil {
				t.Fatal("Detect accepted unknown input")
			}
			if !errors.Is(err, ErrUnknownFormat) {
				t.Errorf("error does not wrap ErrUnknownFormat: %v", err)
			}
			for _, f := range Formats() {
				if !strings.Contains(err.Error(), string(f)) {
					t.Errorf("error does not name %s: %v", f, err)
				}
			}
			if _, err := Parse([]byte(in), FormatAuto); err == nil {
				t.Error("Parse accepted unknown input")
			}
		})
	}
}

func TestForcedFormatMismatch(t *testing.T) {
	md := readTestdata(t, "transcripts/aider/afi-core.aider.chat.history.md")
	jsonl := readTestdata(t, "transcripts/claude-code/ledger-api-session.jsonl")
	for _, f := range []Format{FormatOpenAI, FormatAnthropic, FormatSWEAgent, FormatMiniSWEAgent, FormatClaudeCode, FormatOpenHands} {
		if _, err := Parse(md, f); err == nil {
			t.Errorf("%s accepted a Markdown file", f)
		}
	}
	for _, f := range []Format{FormatOpenAI, FormatAnthropic, FormatSWEAgent, FormatMiniSWEAgent} {
		if _, err := Parse(jsonl, f); err == nil {
			t.Errorf("%s accepted a JSONL file", f)
		}
	}
	if _, err := Parse(jsonl, Format("yaml")); err == nil {
		t.Error("an unknown format name was accepted")
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatAuto, "auto": FormatAuto, "Claude-Code": FormatClaudeCode, " aider ": FormatAider, "openhands": FormatOpenHands} {
		got, err := ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil || !strings.Contains(err.Error(), "mini-swe-agent") {
		t.Errorf("ParseFormat(csv) error = %v", err)
	}
}

func TestBadArrayElements(t *testing.T) {
	in := "[\n{\"role\":\"user\",\"content\":\"a\"},\n42,\n\"text\",\n{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]},\n{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":[{\"type\":\"text\",\"text\":\"x.go\"}]}\n]"
	res, err := Parse([]byte(in), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Format != FormatOpenAI {
		t.Errorf("format %s", res.Format)
	}
	var steps []int
	for _, tu := range res.Turns {
		steps = append(steps, tu.StepID)
	}
	if !reflect.DeepEqual(steps, []int{0, 3, 4}) {
		t.Errorf("steps %v", steps)
	}
	if len(res.Problems) != 2 || res.Problems[0].Line != 3 || res.Problems[1].Line != 4 {
		t.Errorf("problems %v", res.Problems)
	}
	if tu := res.Turns[2]; tu.Tool != "bash" || tu.Command != "ls" || !strings.Contains(tu.Payload, "x.go") {
		t.Errorf("tool turn %+v", tu)
	}
}
