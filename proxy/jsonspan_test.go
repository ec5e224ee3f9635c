package proxy

import (
	"encoding/json"
	"testing"
	"unsafe"
)

// decodeString (its unescape fast path included) decodes as encoding/json
// does: escapes at the start, middle and end, runs between them, \u escapes
// and invalid UTF-8 (handed to encoding/json).
func TestDecodeStringMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`""`, `"plain"`, `"\n"`, `"a\nb"`, `"\\\\"`, `"\"quoted\""`, `"tab\there\r\n"`,
		`"end\\"`, `"\/slash\b\f"`, `"caf\u00e9 \ud83d\ude00"`, `"lone \ud800 x"`, "\"bad \xff utf8\"",
		`"line1\nline2\n\nline4 with \"quotes\" and \\backslash\\ at end\n"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := decodeString([]byte(raw), span{0, len(raw)}); got != want {
			t.Errorf("decodeString(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A message whose content is a string is decoded once: the part the fold
// reads and the append point share one string (the decoded texts
// were held twice, ≈ 1.4× the body at a large request's peak).
func TestStringContentDecodedOnce(t *testing.T) {
	for _, c := range []struct {
		api  API
		body string
	}{
		{APIOpenAI, `{"model":"m","messages":[{"role":"user","content":"run the\ntests"}]}`},
		{APIAnthropic, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"run the\ntests"}]}`},
		{APIResponses, `{"model":"m","input":[{"type":"message","role":"user","content":"run the\ntests"}]}`},
	} {
		r, err := parseRequest(c.api, []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.api, err)
		}
		last := len(r.msgs) - 1
		pt := r.points[last]
		if !pt.ok || pt.isArr || pt.text != "run the\ntests" || len(r.msgs[last].Parts) != 1 {
			t.Fatalf("%s: point %+v, parts %+v", c.api, pt, r.msgs[last].Parts)
		}
		if p := r.msgs[last].Parts[0].Text; p != pt.text || unsafe.StringData(p) != unsafe.StringData(pt.text) {
			t.Errorf("%s: the part's text is a second decoded copy", c.api)
		}
	}
}
