package ingest

import (
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/extract"
)

// TestOpenHandsActionsRenderedOnce: an OpenHands action's payload holds its
// text once — the arguments the message already carries are not repeated,
// and no argument is rendered as escaped JSON (whose \n and \" produced
// junk words and file names such as "-v/r/n0.55.1").
func TestOpenHandsActionsRenderedOnce(t *testing.T) {
	res, err := Parse(readTestdata(t, "transcripts/openhands/multi_swe_bench_example_output.jsonl"), FormatOpenHands)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, tu := range res.Turns {
		if strings.Contains(tu.Payload, "[args]\n{") {
			t.Errorf("step %d renders its arguments as JSON:\n%.300s", tu.StepID, tu.Payload)
		}
		if tu.Kind != "tool_call" || tu.Tool != "execute_bash" || tu.Command == "" {
			continue
		}
		calls++
		if n := strings.Count(tu.Payload, tu.Command); n != 1 {
			t.Errorf("step %d holds its command %d times:\n%.600s", tu.StepID, n, tu.Payload)
		}
		for _, f := range extract.Files(tu.Payload) {
			if strings.Contains(f, "/r/n") || strings.Contains(f, "/n/n") {
				t.Errorf("step %d: junk file name %q from escaped text", tu.StepID, f)
			}
		}
	}
	if calls < 20 {
		t.Fatalf("only %d tool calls with a command", calls)
	}
	// Nor an observation whose message is its content ("Added workspace
	// context", "Your thought has been logged.", tool errors).
	for _, tu := range res.Turns {
		seen := map[string]bool{}
		for _, para := range strings.Split(tu.Payload, "\n\n") {
			if para = strings.TrimSpace(para); len(para) >= 15 && seen[para] {
				t.Errorf("step %d holds %q twice:\n%.400s", tu.StepID, para, tu.Payload)
			}
			seen[para] = true
		}
	}
	// Arguments the message lacks are kept, as text.
	d := draft{}
	openHandsEvent(&d, mustObj(t, `{"id":1,"source":"agent","action":"edit","message":"I edit the file.","args":{"path":"/w/a.py","content":"x = 1\ny = 2","thought":"","blocking":false,"cwd":null}}`))
	if !strings.Contains(d.Payload, "content:\nx = 1\ny = 2") || !strings.Contains(d.Payload, "path: /w/a.py") ||
		strings.Contains(d.Payload, "blocking") || strings.Contains(d.Payload, "cwd") || strings.Count(d.Payload, "I edit the file.") != 1 {
		t.Errorf("edit action payload:\n%s", d.Payload)
	}
}

func mustObj(t *testing.T, s string) obj {
	t.Helper()
	o, ok := decodeObj([]byte(s))
	if !ok {
		t.Fatalf("not an object: %s", s)
	}
	return o
}

// TestSummaryLineSkipsProgressMeters: curl's progress meter (header and
// rows), carriage-return redrawn bars and similar noise are never the
// "first meaningful line" of a summary.
func TestSummaryLineSkipsProgressMeters(t *testing.T) {
	curl := "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n" +
		"                                 Dload  Upload   Total   Spent    Left  Speed\n" +
		"\r  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0\r100  1256  100  1256    0     0   5874      0 --:--:-- --:--:-- --:--:--  5896\n" +
		"<!doctype html><title>Example Domain</title>\n"
	if got := summarize("tool", "bash", "curl -O https://example.com/", curl, false); !strings.HasSuffix(got, ": <!doctype html><title>Example Domain</title>") {
		t.Errorf("curl summary: %q", got)
	}
	for _, noise := range []string{
		"100  1256  100  1256    0     0   5874      0 --:--:-- --:--:-- --:--:--  5896",
		"   ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 1.2/1.2 MB 3.4 MB/s eta 0:00:00",
		"     0K .......... .......... .......... 50% 1.20M 0s",
	} {
		if !progressLine(noise) && meaningfulLine(noise+"\nreal line") != "real line" {
			t.Errorf("not recognised as progress: %q", noise)
		}
	}
	// Older SWE-agent's end-of-output marker is no word of the output.
	if got := meaningfulLine("Hello World from Perl!///PROCESS-DONE:0:PROCESS-DONE///"); got != "Hello World from Perl!" {
		t.Errorf("PROCESS-DONE marker kept: %q", got)
	}
	if got := meaningfulLine("///PROCESS-DONE:1:PROCESS-DONE///\nreal line"); got != "real line" {
		t.Errorf("a bare PROCESS-DONE marker led: %q", got)
	}
	for _, line := range []string{"Downloading requests-2.31.0.tar.gz (110 kB)", "ok  	pkg/a	0.012s", "3 passed, 1 failed in 0.52s", "HTTP/1.1 200 OK"} {
		if progressLine(line) {
			t.Errorf("a message taken for progress: %q", line)
		}
	}
}

// TestTruncatedDocumentIsNamed: a JSON document cut short is reported as a
// truncated JSON document, with where it ends, whether the format is
// detected or forced; JSONL with a torn last line is still JSONL.
func TestTruncatedDocumentIsNamed(t *testing.T) {
	traj := readTestdata(t, "transcripts/swe-agent/i_got_id_demo.traj")
	msgs := []byte("[\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"role\": \"assistant\", \"content\": \"hel")
	for _, tc := range []struct {
		data []byte
		f    Format
	}{{traj[:3000], FormatAuto}, {traj[:3000], FormatSWEAgent}, {traj[:len(traj)-2], FormatAuto}, {msgs, FormatAuto}, {msgs, FormatOpenAI}} {
		_, err := Parse(tc.data, tc.f)
		if err == nil || !strings.Contains(err.Error(), "truncated JSON document") || !strings.Contains(err.Error(), "ends at line") {
			t.Errorf("%s, %d bytes: %v", tc.f, len(tc.data), err)
		}
	}
	jsonl := readTestdata(t, "transcripts/claude-code/ledger-api-session.jsonl")
	res, err := Parse(jsonl[:len(jsonl)-40], FormatAuto)
	if err != nil || len(res.Problems) != 1 {
		t.Errorf("JSONL with a torn last line: %v %v", err, res)
	}
}

// TestTruncatedDocumentQuotesNoToken: the bytes a truncated document's
// message quotes hold no token, whole (a github-pat) or cut (its first
// characters, which no rule knows): the message may reach a terminal, a
// log or an agent's transcript.
func TestTruncatedDocumentQuotesNoToken(t *testing.T) {
	tok := "gh" + "p_" + strings.Repeat("Nq7VwYS81V", 4)[:36]
	for _, data := range []string{
		`[{"role": "user", "content": "x ` + tok,
		`[{"role": "user", "content": "use ` + tok[:20],
		`[{"role": "user", "content": "PASSWORD=Zq9!hunter7x`,
	} {
		_, err := Parse([]byte(data), FormatAuto)
		if err == nil || !strings.Contains(err.Error(), "truncated JSON document") {
			t.Fatalf("%q: %v", data, err)
		}
		if msg := err.Error(); strings.Contains(msg, tok[4:16]) || strings.Contains(msg, "hunter7x") {
			t.Errorf("the message quotes the token: %s", msg)
		}
	}
}
