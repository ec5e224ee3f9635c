package harness

import (
	"strings"
	"testing"
)

// The target files a record reads from the message itself carry no secret:
// a vendor token in a path is found on its own; a value a rule recognises
// only by its context in the output ("twitter_key = …") is redacted in the
// path by that context. Plain paths are kept.
func TestTargetFilesAreScrubbed(t *testing.T) {
	tok := "ghp_" + "Q7wErT9yUiOp3AsDfGh5" + "JkLzXcVbNm1q2W8e"
	ctx := "Qm7x" + "Lp2rVz9KwT4nHs8d"
	payload := "wrote /srv/keys/" + tok + ".json\napi_key = " + ctx + "\nsaved /srv/keys/" + ctx + ".pem and src/app/main.go\n"
	files := scrubTargetFiles(targetFiles("cat /srv/keys/"+tok+".json", payload), "cat /srv/keys/"+tok+".json", payload)
	joined := strings.Join(files, " ")
	if strings.Contains(joined, tok) || strings.Contains(joined, ctx) {
		t.Errorf("target files keep a secret: %v", files)
	}
	if !strings.Contains(joined, "src/app/main.go") {
		t.Errorf("a plain path was lost: %v", files)
	}
	plain := []string{"src/app/main.go", "docs/README.md"}
	if got := scrubTargetFiles(plain, "go test ./...", "ok"); strings.Join(got, " ") != strings.Join(plain, " ") {
		t.Errorf("plain files changed: %v", got)
	}
}
