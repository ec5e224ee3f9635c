package scrub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Allowlist names findings known to be safe, so that they are neither
// redacted nor reported as secrets (scrub-check lists them apart). Its fields
// follow gitleaks' [allowlist] table, written as JSON in a store's
// store_settings.json under "scrub_allowlist":
//
//		{"description": "test fixtures",
//		 "regexes": ["^test-token-[0-9]+$"], "regexTarget": "secret",
//		 "stopwords": ["fixture"], "secrets": ["hunter2-for-tests"]}
//
//	  - regexes: Go RE2 expressions; a finding is allowed when one matches its
//	    regexTarget: "secret" (default: the redacted span) or "line" (the
//	    whole line holding it). gitleaks' "match" target is read as "secret".
//	  - stopwords: a finding whose secret contains one (ASCII case-insensitive)
//	    is allowed, as in gitleaks.
//	  - secrets: exact secret values that are allowed (our extension).
//
// gitleaks' "paths" and "commits" do not apply to folded turns and are
// refused rather than ignored.
type Allowlist struct {
	Description string   `json:"description,omitempty"`
	Regexes     []string `json:"regexes,omitempty"`
	RegexTarget string   `json:"regexTarget,omitempty"`
	StopWords   []string `json:"stopwords,omitempty"`
	Secrets     []string `json:"secrets,omitempty"`
}

// Validate reports whether a compiles: an error names a regex that is not
// Go RE2 syntax or a regexTarget other than secret, match or line.
func (a *Allowlist) Validate() error {
	_, err := a.compile()
	return err
}

// compiled is an Allowlist ready to test findings.
type compiled struct {
	res    []*regexp.Regexp
	line   bool
	stop   []string
	exact  map[string]bool
	source []string // the regexes as given, for reasons
}

func (a *Allowlist) compile() (*compiled, error) {
	c := &compiled{exact: map[string]bool{}}
	switch a.RegexTarget {
	case "", "secret", "match":
	case "line":
		c.line = true
	default:
		return nil, fmt.Errorf("scrub allowlist: regexTarget %q is not one of secret, match, line", a.RegexTarget)
	}
	for _, r := range a.Regexes {
		re, err := regexp.Compile(r)
		if err != nil {
			return nil, fmt.Errorf("scrub allowlist: regex %q: %v", r, err)
		}
		c.res, c.source = append(c.res, re), append(c.source, r)
	}
	for _, w := range a.StopWords {
		if w = strings.ToLower(w); w != "" {
			c.stop = append(c.stop, w)
		}
	}
	for _, s := range a.Secrets {
		if s != "" {
			c.exact[s] = true
		}
	}
	return c, nil
}

// why returns why the finding f of text is allowed, or "".
func (c *compiled) why(text string, f Finding) string {
	secret := text[f.Start:f.End]
	if c.exact[secret] {
		return "allowlist: secret"
	}
	low := strings.ToLower(secret)
	for _, w := range c.stop {
		if strings.Contains(low, w) {
			return "allowlist: stopword " + w
		}
	}
	target := secret
	if c.line && len(c.res) > 0 {
		a := strings.LastIndexByte(text[:f.Start], '\n') + 1
		b := len(text)
		if k := strings.IndexByte(text[f.End:], '\n'); k >= 0 {
			b = f.End + k
		}
		target = text[a:b]
	}
	for i, re := range c.res {
		if re.MatchString(target) {
			return "allowlist: regex " + c.source[i]
		}
	}
	return ""
}

// Placeholder credentials that documentation and test fixtures use, never
// redacted (reason "placeholder"):
//
//   - the example keys of vendor documentation: AWS's AKIAIOSFODNN7EXAMPLE,
//     wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (and every secret ending in
//     EXAMPLE or EXAMPLEKEY, AWS's convention), Stripe's sk_test_/pk_test_
//     documentation keys, Slack's xoxb-not-a-real-token-this-will-not-work
//     and jwt.io's example token;
//   - in a URL's user-info, the placeholder passwords of PlaceholderPasswords
//     (http://user:pass@host, https://username:password@proxy:3128).
var placeholderSecrets = map[string]bool{
	"AKIAIOSFODNN7EXAMPLE":                     true,
	"AKIAI44QH8DHBEXAMPLE":                     true,
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": true,
	"je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY": true,
	"sk_test_4eC39HqLyjWDarjtT1zdp7dc":         true,
	"pk_test_TYooMQauvdEDq54NiTphI7jx":         true,
	"sk_test_BQokikJOvBiI2HlWgH4olfQ2":         true,
	"xoxb-not-a-real-token-this-will-not-work": true,
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c": true,
}

// PlaceholderPasswords are the URL passwords (ASCII case-insensitive) taken
// for placeholders rather than secrets: "user:pass@", "username:password@"
// and the like in documentation, test fixtures and proxy examples.
var PlaceholderPasswords = []string{"pass", "password", "passwd", "pwd", "secret", "changeme", "example", "placeholder",
	"your_password", "yourpassword", "your-password", "mypassword", "my_password", "pa55word", "p@ssw0rd", "passw0rd", "xxx", "xxxx", "xxxxxx", "xxxxxxxx", "***", "****"}

var placeholderPasswordSet = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range PlaceholderPasswords {
		m[p] = true
	}
	return m
}()

// placeholderWhy returns "placeholder" for a documentation or fixture
// credential.
func placeholderWhy(text string, f Finding) string {
	secret := text[f.Start:f.End]
	if placeholderSecrets[secret] || strings.HasSuffix(secret, "EXAMPLE") || strings.HasSuffix(secret, "EXAMPLEKEY") {
		return "placeholder"
	}
	// A URL password: the secret sits between "user:" and "@".
	if f.End < len(text) && text[f.End] == '@' && f.Start > 0 && text[f.Start-1] == ':' && placeholderPasswordSet[strings.ToLower(secret)] {
		return "placeholder"
	}
	return ""
}

// WithAllowlist returns a Scrubber that also allows what a lets through.
// The receiver is not changed. Errors name a bad regex or regexTarget.
func (s *Scrubber) WithAllowlist(a *Allowlist) (*Scrubber, error) {
	if a == nil {
		return s, nil
	}
	c, err := a.compile()
	if err != nil {
		return nil, err
	}
	cp := *s
	cp.allow, cp.names = c, new(nameMemo)
	return &cp, nil
}

// Allowed is a finding that was not redacted, with the reason: "placeholder"
// or "allowlist: …" (the allowlist entry that let it through).
type Allowed struct {
	Finding
	Reason string
}

// split separates the allowed findings from the secrets.
func (s *Scrubber) split(text string, fs []Finding) (secrets []Finding, allowed []Allowed) {
	for _, f := range fs {
		why := placeholderWhy(text, f)
		if why == "" && s.allow != nil {
			why = s.allow.why(text, f)
		}
		if why != "" {
			allowed = append(allowed, Allowed{f, why})
		} else {
			secrets = append(secrets, f)
		}
	}
	return secrets, allowed
}

// Audit returns the secrets Scrub would redact in text (as Find) and the
// findings the placeholders and the allowlist let through. It changes
// nothing.
func (s *Scrubber) Audit(text string) (secrets []Finding, allowed []Allowed) {
	return s.split(text, s.findAll(text))
}

// SafeNamePrefix starts the name SafeName gives a name holding a secret.
const SafeNamePrefix = "sha256-"

// SafeName returns a form of name that may be written to disk, shown and
// logged: name itself when the scrubber finds no secret in it (placeholders
// and the allowlist apply, as for Scrub), else SafeNamePrefix followed by
// the 64 lower-case hex digits of the SHA-256 of name (71 bytes: longer than
// the 64 characters a client-chosen proxy session name may have, so it never
// equals one). The same name always gives the same result, in every process
// and replica, so a store named after it is found again. A plain hash rather
// than a keyed one: the secrets the rules find in a short name are
// high-entropy tokens (a github-pat, an API key), which a hash does not let
// anyone guess back, and a key would have to be shared by every replica.
// Used for client-supplied session names (proxy X-Contextfold-Session, hook
// session_id) that become directory and store names. Safe for concurrent
// use.
func (s *Scrubber) SafeName(name string) string {
	if v, ok := s.names.get(name); ok {
		return v
	}
	v := name
	if len(s.Find(name)) > 0 {
		sum := sha256.Sum256([]byte(name))
		v = SafeNamePrefix + hex.EncodeToString(sum[:])
	}
	s.names.put(name, v)
	return v
}

// nameMemo holds SafeName's answers for the names asked lately: a proxy
// asks for the session name of every request, and running the rules over
// it costs some 0.2 ms of CPU each time. At most maxNameMemo names of at
// most maxNameMemoLen bytes are held (the table is emptied when full), so
// its memory stays bounded whatever clients send. A nil *nameMemo holds
// nothing. Safe for concurrent use.
type nameMemo struct {
	mu sync.Mutex
	m  map[string]string
}

const (
	maxNameMemo    = 4096
	maxNameMemoLen = 256 // bytes
)

func (n *nameMemo) get(name string) (string, bool) {
	if n == nil {
		return "", false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.m[name]
	return v, ok
}

func (n *nameMemo) put(name, v string) {
	if n == nil || len(name) > maxNameMemoLen {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil || len(n.m) >= maxNameMemo {
		n.m = make(map[string]string)
	}
	n.m[name] = v
}
