package pgsessions

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// send posts request k of session sid to a proxy at base.
func send(base, sid string, body []byte) (int, string, error) {
	code, warn, _, err := sendBody(base, sid, body)
	return code, warn, err
}

// sendBody is send returning the response body too.
func sendBody(base, sid string, body []byte) (int, string, []byte, error) {
	req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Contextfold-Session", sid)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Contextfold-Warning"), b, err
}

// firstDiff describes where two forwarded bodies first differ.
func firstDiff(a, b []byte) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	lo := max(n-120, 0)
	return fmt.Sprintf("at byte %d of %d/%d:\n  got  …%s\n  want …%s", n, len(a), len(b),
		strings.ReplaceAll(string(a[lo:min(n+120, len(a))]), "\n", `\n`), strings.ReplaceAll(string(b[lo:min(n+120, len(b))]), "\n", `\n`))
}
