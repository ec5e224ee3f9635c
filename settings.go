package contextfold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/scrub"
)

// SettingsFile holds a store's own settings (our extension):
// {"scrub": bool, "token_counter": string, "scrub_allowlist": {…}}. Absent
// keys take the defaults.
const SettingsFile = "store_settings.json"

// EnvScrub turns secret scrubbing off when set to "off", "0" or "false".
const EnvScrub = "CONTEXTFOLD_SCRUB"

// ScrubMode says whether secrets are scrubbed before a cold node is written.
type ScrubMode int

const (
	// ScrubDefault scrubs unless CONTEXTFOLD_SCRUB=off or the store's
	// settings say "scrub": false.
	ScrubDefault ScrubMode = iota
	// ScrubOn always scrubs.
	ScrubOn
	// ScrubOff never scrubs: the reference-identical profile, under which
	// the conformance vectors run.
	ScrubOff
)

var sharedScrubber = sync.OnceValues(scrub.New)

// scrubber returns the scrubber in force for this store, or nil when
// scrubbing is off.
func (s *Store) scrubber() (*scrub.Scrubber, error) {
	switch s.opts.Scrub {
	case ScrubOff:
		return nil, nil
	case ScrubDefault:
		switch strings.ToLower(os.Getenv(EnvScrub)) {
		case "off", "0", "false", "no":
			return nil, nil
		}
	}
	// One read of store_settings.json serves both keys ("scrub" and the
	// allowlist): a fold and a preparation ask for the scrubber each time.
	m, err := s.settings()
	if s.opts.Scrub == ScrubDefault && err == nil {
		if on, ok := m["scrub"].(bool); ok && !on {
			return nil, nil
		}
	}
	return s.auditScrubber(m, err)
}

// SettingScrubAllowlist is the key of store_settings.json holding the
// scrubber's allowlist (scrub.Allowlist, gitleaks' allowlist fields as JSON).
const SettingScrubAllowlist = "scrub_allowlist"

// AuditScrubber returns the scrubber with this store's allowlist
// (store_settings.json "scrub_allowlist") whether or not folds scrub: the
// one scrub-check audits with. Errors: *StoreFileError for unreadable
// settings or a bad allowlist (a regex that does not compile).
func (s *Store) AuditScrubber() (*scrub.Scrubber, error) {
	return s.auditScrubber(s.settings())
}

// auditScrubber is AuditScrubber with the settings read (m, or the error
// of reading them).
func (s *Store) auditScrubber(m map[string]any, merr error) (*scrub.Scrubber, error) {
	sc, err := sharedScrubber()
	if err != nil {
		return nil, &StoreFileError{File: "(secret scrubber)", Err: err, Remedy: "set CONTEXTFOLD_SCRUB=off to fold without scrubbing"}
	}
	if merr != nil {
		return nil, merr
	}
	raw, ok := m[SettingScrubAllowlist]
	if !ok {
		return sc, nil
	}
	path := s.storePath(SettingsFile)
	c, err := canonjson.Canonical(raw)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "fix " + SettingScrubAllowlist}
	}
	var a scrub.Allowlist
	dec := json.NewDecoder(bytes.NewReader(c))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, &StoreFileError{File: path, Err: fmt.Errorf("%s: %v", SettingScrubAllowlist, err),
			Remedy: `write it as {"regexes": [...], "regexTarget": "secret"|"line", "stopwords": [...], "secrets": [...]} (gitleaks' allowlist fields; paths and commits do not apply)`}
	}
	sc, err = sc.WithAllowlist(&a)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "fix the regular expression (Go RE2 syntax) in " + SettingScrubAllowlist}
	}
	return sc, nil
}

// ScrubEnabled reports whether folds into this store scrub secrets.
func (s *Store) ScrubEnabled() bool {
	sc, err := s.scrubber()
	return err == nil && sc != nil
}

// settings reads store_settings.json; a missing file is empty settings.
func (s *Store) settings() (map[string]any, error) {
	path := s.storePath(SettingsFile)
	data, err := s.readStoreFile(SettingsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, s.storeErr(path, err, "make it readable or remove it")
	}
	v, err := canonjson.Decode(data)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, &StoreFileError{File: path, Err: errors.New("not a JSON object"), Remedy: `write {"scrub": true} or remove the file`}
	}
	return m, nil
}

// Setting returns the value of one key of the store's store_settings.json
// (decoded JSON: bool, string, float64, []any, map[string]any or nil) and
// whether the key is present. A missing or unreadable file has no keys.
// Read-only; safe for concurrent use. Used by extensions such as the
// matching mode ({"matching": "ranked"}, package match).
func (s *Store) Setting(key string) (any, bool) {
	m, err := s.settings()
	if err != nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

// scrubTurn redacts secrets from every text of a turn that reaches disk:
// session id, summary, payload and explicit lists, scrubbed together
// (scrub.ScrubSet), so that a secret the payload's context reveals is also
// redacted in a field too short to reveal it. Everything else written for
// the turn (identifiers, extracted files, commands, errors, the index
// entry) is derived from the result. It returns the clean turn and the
// number of redactions.
func scrubTurn(sc *scrub.Scrubber, t Turn) (Turn, int) { return scrubTurnKnown(sc, t, nil, 0) }

// scrubTurnKnown is scrubTurn that also adds to own (when not nil) the
// values the context of t's texts from the from-th on reveals as secrets
// (texts in turnTexts' order: session id, summary, payload, files,
// commands, errors), as contextValues does, from the scrub's own findings
// (scrub.Scrubber.ScrubSetKnown).
func scrubTurnKnown(sc *scrub.Scrubber, t Turn, own *scrub.Known, from int) (Turn, int) {
	if sc == nil {
		return t, 0
	}
	texts := []string{t.SessionID, t.Summary, t.RawContent}
	lists := [][]string{t.Files, t.Commands, t.Errors}
	for _, l := range lists {
		texts = append(texts, l...)
	}
	rs := sc.ScrubSetKnown(texts, own, from)
	n := t.shared
	for _, r := range rs {
		n += r.Redactions
	}
	t.SessionID, t.Summary, t.RawContent = rs[0].Text, rs[1].Text, rs[2].Text
	k := 3
	cleanList := func(ss []string) []string {
		if ss == nil {
			return nil
		}
		out := make([]string, len(ss))
		for i := range ss {
			out[i] = rs[k].Text
			k++
		}
		return out
	}
	t.Files, t.Commands, t.Errors = cleanList(t.Files), cleanList(t.Commands), cleanList(t.Errors)
	return t, n
}

// ScrubbedTurn returns t as Fold would write it: its texts scrubbed
// together with the scrubber in force for this store (none when scrubbing
// is off), and the number of redactions. A caller that compares a turn with
// what the store holds (the harness's payload_sha256 check) uses it to
// scrub exactly as the fold did. Errors are those of AuditScrubber.
func (s *Store) ScrubbedTurn(t Turn) (Turn, int, error) {
	sc, err := s.scrubber()
	if err != nil {
		return t, 0, err
	}
	if t.SessionID == "" {
		t.SessionID = s.opts.SessionID
	}
	t, n := scrubTurn(sc, t)
	return t, n, nil
}

// maxIndexIdentifiers is the cap on the identifiers of one index entry
// (MaxIndexIdentifiers) for a store whose folds scrub with sc: the default
// profile. The reference-identical profile (scrubbing off, sc nil: the
// conformance vectors) lists every identifier, as the reference does.
func (s *Store) maxIndexIdentifiers(sc *scrub.Scrubber) int {
	if sc == nil {
		return 0
	}
	return MaxIndexIdentifiers
}

// SetScrubAllowlist writes a as the scrub_allowlist of the store's
// store_settings.json (nil removes the key), keeping its other keys; a
// store whose settings hold the same allowlist already is not written. It
// lets a program that manages stores (the proxy's --scrub-settings) give
// each one the allowlist its folds scrub with, so that scrub-check on the
// store audits with it too. The allowlist is compiled first: errors name a
// bad regex or regexTarget (nothing is written), or are *StoreFileError for
// unreadable settings and failed writes. Takes the store lock; safe for
// concurrent use.
func (s *Store) SetScrubAllowlist(a *scrub.Allowlist) error {
	var want any
	if a != nil {
		if err := a.Validate(); err != nil {
			return err
		}
		raw, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if want, err = canonjson.Decode(raw); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.lock()
	if err != nil {
		return err
	}
	defer l.Unlock()
	m, err := s.settings()
	if err != nil {
		return err
	}
	old, had := m[SettingScrubAllowlist]
	if had && want != nil {
		x, err1 := canonjson.Canonical(old)
		y, err2 := canonjson.Canonical(want)
		if err1 == nil && err2 == nil && bytes.Equal(x, y) {
			return nil
		}
	}
	if !had && want == nil {
		return nil
	}
	if want == nil {
		delete(m, SettingScrubAllowlist)
	} else {
		m[SettingScrubAllowlist] = want
	}
	data, err := canonjson.Pretty(m)
	if err != nil {
		return err
	}
	if err := s.writeStoreFile(SettingsFile, append(data, '\n')); err != nil {
		return s.storeErr(s.storePath(SettingsFile), err, "check that the store can be written")
	}
	return s.flush()
}
