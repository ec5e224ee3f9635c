package ingest

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, with any format, and that
// whatever it returns keeps the documented invariants (valid UTF-8, short
// one-line summaries, ascending unique step ids).
//
// Run it with a cap on minimisation, which is otherwise slow for inputs of
// this size:
//
//	go test ./ingest/ -run '^$' -fuzz FuzzParse -fuzztime 60s -fuzzminimizetime 3s
func FuzzParse(f *testing.F) {
	for _, rel := range []string{
		"field-reports/01-lone-surrogate.jsonl",
		"field-reports/02-corrupt-line-midfile.jsonl",
		"field-reports/04-compaction-records.jsonl",
		"field-reports/05-thinking-signature.json",
		"field-reports/10-openai-orphan-tool.json",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(rel)))
		if err != nil {
			f.Fatal(err)
		}
		// Large seeds make the fuzzer's minimisation of new inputs very slow;
		// a prefix keeps the shape of the format.
		if len(data) > 2048 {
			data = data[:2048]
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"[]",
		"{}",
		`{"messages":[{"role":"user","content":"\ud83d"}]}`,
		`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},{"role":"tool","tool_call_ids":["a"],"content":"x"}]`,
		`{"history":[{"role":"system","content":"s"},{"role":"assistant","content":"t","action":"ls"}]}`,
		`{"history":[{"id":0,"source":"agent","action":"run","args":{"command":"ls"}},{"id":1,"cause":0,"observation":"run","content":"x","extras":{"metadata":{"exit_code":1}}}]}`,
		`{"trajectory_format":"mini-swe-agent-1","messages":[{"role":"assistant","content":"` + "```bash\\nls\\n```" + `"},{"role":"user","content":"<returncode>2</returncode><output>Error</output>"}]}`,
		"# aider chat started at x\n#### hi\n> out\nreply\n",
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}]}}\n[1]\n\n",
	} {
		f.Add([]byte(s))
	}
	formats := append([]Format{FormatAuto}, Formats()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range formats {
			res, err := Parse(data, format)
			if err != nil {
				continue
			}
			checkInvariants(t, res)
		}
	})
}
