package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// A harness given no matching mode matches as the proxy, the MCP server,
// the hooks and the command line do: the store's "matching" setting when it
// has one, else match.Default; a setting that names no mode falls back to
// the reference's exact matching.
func TestMatchModeDefaultsLikeEveryEntryPoint(t *testing.T) {
	for _, c := range []struct {
		setting string // store_settings.json, "" for none
		cfg     match.Mode
		want    match.Mode
	}{
		{"", "", match.Default},
		{`{"matching":"exact"}`, "", match.Exact},
		{`{"matching":"ranked"}`, "", match.Ranked},
		{`{"matching":"fuzzy"}`, "", match.Exact},
		{`{"matching":"ranked"}`, match.Exact, match.Exact},
	} {
		dir := t.TempDir()
		if c.setting != "" {
			if err := os.WriteFile(filepath.Join(dir, contextfold.SettingsFile), []byte(c.setting), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s, err := contextfold.Open(dir, contextfold.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := New(s, Config{Match: c.cfg}).matchMode(); got != c.want {
			t.Errorf("setting %q, Config.Match %q: mode %q, want %q", c.setting, c.cfg, got, c.want)
		}
	}
}
