package contextfold

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShareSecretsAcrossTurns: a value only one turn's context marks as a
// secret (CLOUDFLARE_API_KEY=…) reaches disk from the turns that show it
// bare or base64-encoded, earlier or later in the batch, when the batch is
// folded turn by turn; after ShareSecrets no byte of the store holds it,
// and a turn without a shared value is passed through as given.
func TestShareSecretsAcrossTurns(t *testing.T) {
	v := "Zk4p" + "Q9vLm2xT7wRb5nYc"
	b64 := base64.StdEncoding.EncodeToString([]byte(v))
	turns := []Turn{
		{StepID: 1, Summary: "user pasted a value", RawContent: "is " + v + " still valid?"},
		{StepID: 2, Summary: "printed the environment", RawContent: "$ env\nHOME=/root\nCLOUDFLARE_API_KEY=" + v + "\n"},
		{StepID: 3, Summary: "assistant", RawContent: "I see the key " + v + " is set (base64 " + b64 + ")."},
		{StepID: 4, Summary: "unrelated", RawContent: "go test ./... ok"},
	}
	leaks := func(dir string) []string {
		var found []string
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), v) || strings.Contains(string(b), b64) || strings.Contains(strings.ToLower(string(b)), strings.ToLower(v)) {
				found = append(found, filepath.Base(p))
			}
			return nil
		})
		return found
	}
	fold := func(share bool) []string {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		in := turns
		if share {
			if in, err = s.ShareSecrets(turns); err != nil {
				t.Fatal(err)
			}
			if in[3].RawContent != turns[3].RawContent || in[1].RawContent != turns[1].RawContent {
				t.Errorf("a turn without another turn's secret changed: %q, %q", in[3].RawContent, in[1].RawContent)
			}
		}
		if _, err := s.FoldBatch(in); err != nil {
			t.Fatal(err)
		}
		return leaks(dir)
	}
	if got := fold(false); len(got) == 0 {
		t.Fatal("folded turn by turn, no file holds the value: the test proves nothing")
	}
	if got := fold(true); len(got) > 0 {
		t.Errorf("after ShareSecrets these files hold the secret: %v", got)
	}
	// Scrubbing off: nothing is shared (the reference-identical profile).
	s, err := Open(t.TempDir(), Options{Scrub: ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := s.ShareSecrets(turns); out[2].RawContent != turns[2].RawContent {
		t.Errorf("scrubbing off, ShareSecrets changed a turn: %q", out[2].RawContent)
	}
}
