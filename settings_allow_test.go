package contextfold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/scrub"
)

// SetScrubAllowlist writes the allowlist into store_settings.json keeping
// the other keys, does not rewrite an equal one, refuses a bad regex
// without writing, removes the key on nil; the store's folds and audit use
// what it wrote.
func TestSetScrubAllowlist(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SettingsFile)
	os.WriteFile(path, []byte(`{"token_counter": "heuristic", "scrub": true}`), 0o644)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const pw = "Zx9Kq-Pw-8812ab"
	url := "postgres://app:" + pw + "@db.test:5432/app"
	if err := s.SetScrubAllowlist(&scrub.Allowlist{Secrets: []string{pw}}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"token_counter": "heuristic"`) || !strings.Contains(string(data), pw) {
		t.Fatalf("settings after the write:\n%s", data)
	}
	fi, _ := os.Stat(path)
	if err := s.SetScrubAllowlist(&scrub.Allowlist{Secrets: []string{pw}}); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(path); !os.SameFile(fi, fi2) {
		t.Error("an equal allowlist was written again")
	}
	if err := s.SetScrubAllowlist(&scrub.Allowlist{Regexes: []string{"("}}); err == nil || !strings.Contains(err.Error(), "regex") {
		t.Errorf("bad regex: %v", err)
	}
	if data2, _ := os.ReadFile(path); string(data2) != string(data) {
		t.Error("a refused allowlist changed the settings")
	}
	if _, err := s.Fold(Turn{StepID: 1, Summary: "db", RawContent: "connect " + url + "\n"}); err != nil {
		t.Fatal(err)
	}
	n, err := s.ReadColdNode(1)
	if err != nil || !strings.Contains(n.RawContent, url) {
		t.Fatalf("the allowed credential was redacted: %v %q", err, n.RawContent)
	}
	if err := s.SetScrubAllowlist(nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), SettingScrubAllowlist) || !strings.Contains(string(data), "token_counter") {
		t.Fatalf("settings after removing the allowlist:\n%s", data)
	}
}
