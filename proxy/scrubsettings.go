package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/scrub"
)

// LoadScrubSettings reads the proxy's scrub settings file (the CLI's
// --scrub-settings FILE): a JSON object in the form of a store's
// store_settings.json holding only "scrub_allowlist" (scrub.Allowlist,
// gitleaks' allowlist fields):
//
//	{"scrub_allowlist": {"regexes": ["^hunter2-fixture$"], "secrets": ["…"]}}
//
// It is read once, when the proxy starts; Options.ScrubAllowlist takes the
// result. Errors name the file and the problem (unreadable, not a JSON
// object, a key other than scrub_allowlist, an unknown allowlist field, a
// regex that is not Go RE2, a bad regexTarget) with the remedy.
func LoadScrubSettings(path string) (*scrub.Allowlist, error) {
	data, err := fsutil.ReadFileMax(path, contextfold.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("scrub settings %s: %v (give a readable JSON file such as {\"scrub_allowlist\": {\"secrets\": [\"…\"]}})", path, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("scrub settings %s: not a JSON object (%v); write {\"scrub_allowlist\": {\"regexes\": [...], \"regexTarget\": \"secret\"|\"line\", \"stopwords\": [...], \"secrets\": [...]}}", path, err)
	}
	var extra []string
	for k := range m {
		if k != contextfold.SettingScrubAllowlist {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		return nil, fmt.Errorf("scrub settings %s: key %q is not a scrub setting; the file holds only %q (other settings of a session store are its own)", path, extra[0], contextfold.SettingScrubAllowlist)
	}
	raw, ok := m[contextfold.SettingScrubAllowlist]
	if !ok {
		return nil, fmt.Errorf("scrub settings %s: no %q key; write {\"scrub_allowlist\": {…}}", path, contextfold.SettingScrubAllowlist)
	}
	var a scrub.Allowlist
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("scrub settings %s: %s: %v; write it as {\"regexes\": [...], \"regexTarget\": \"secret\"|\"line\", \"stopwords\": [...], \"secrets\": [...]} (gitleaks' allowlist fields; paths and commits do not apply)", path, contextfold.SettingScrubAllowlist, err)
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("scrub settings %s: %v; fix the regular expression (Go RE2 syntax) or the regexTarget", path, err)
	}
	return &a, nil
}
