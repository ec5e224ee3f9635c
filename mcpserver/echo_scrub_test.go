package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/contextfold/contextfold/mcpserver"
)

// A prompt the user pasted a token into by mistake (field report 22's
// u-2208) is given to recall and scan as is: the reply echoes the query
// and its terms, and must not carry the token, in any letter case.
func TestRecallAndScanRepliesEchoNoSecret(t *testing.T) {
	tok := "ghp_" + "FAKEfake0123456789FAKEfake0123456789"
	key := "AKIA" + "FAKEFAKEFAKE1234"
	q := "I pasted my token by mistake: " + tok + " - ignore it. What port did PostgreSQL use? " + key
	cs := connect(t, demoStore(t))
	var r mcpserver.RecallResult
	res := call(t, cs, mcpserver.ToolRecall, mcpserver.RecallArgs{Query: q}, &r)
	var sr mcpserver.ScanResult
	res2 := call(t, cs, mcpserver.ToolScan, mcpserver.ScanArgs{Prompt: q}, &sr)
	all := strings.ToLower(text(res) + text(res2) + r.Query + strings.Join(r.Terms, " ") + strings.Join(sr.QueryTerms, " "))
	for _, secret := range []string{tok, key, "fakefake0123456789"} {
		if strings.Contains(all, strings.ToLower(secret)) {
			t.Errorf("reply echoes %q:\n%s\n%s", secret, text(res), text(res2))
		}
	}
	if !strings.Contains(r.Query, "PostgreSQL") || len(r.Candidates) == 0 {
		t.Errorf("the rest of the query must still work: %q, %d candidates", r.Query, len(r.Candidates))
	}
}
