package scrub

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

func mustNew(t *testing.T) *Scrubber {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlaceholdersAreNotRedacted: the credentials of documentation and test
// fixtures stay (and Audit says why); real ones next to them do not.
func TestPlaceholdersAreNotRedacted(t *testing.T) {
	s := mustNew(t)
	for _, text := range []string{
		"proxies = {'http': 'http://user:pass@10.10.1.10:3128/'}",
		"curl -x https://username:password@proxy.example.com:8080 https://pypi.org",
		"git clone https://user:password@git.example.com/repo.git",
		"aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
		"export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
	} {
		if r := s.Scrub(text); r.Redactions != 0 || r.Text != text {
			t.Errorf("placeholder redacted: %q → %q", text, r.Text)
		}
		secrets, allowed := s.Audit(text)
		if len(secrets) != 0 || len(allowed) == 0 || allowed[0].Reason != "placeholder" {
			t.Errorf("audit of %q: %v %v", text, secrets, allowed)
		}
	}
	for _, text := range []string{
		"postgres://app:Xk29sLq8vB@db.internal:5432/ledger",
		"http://user:s3cr3t-Pr0xy-Pa55@10.10.1.10:3128/",
		"aws_access_key_id = AKIAZ4QXLEWJTNMA7B3C",
	} {
		if r := s.Scrub(text); r.Redactions == 0 {
			t.Errorf("real secret kept: %q", text)
		}
	}
}

// TestAllowlist: regexes (on the secret or the line), stopwords and exact
// secrets let findings through; Audit reports each with the entry that let
// it through; everything else is still redacted.
func TestAllowlist(t *testing.T) {
	base := mustNew(t)
	text := "DB_PASSWORD=fixture-Pw-8812ab\nAPI_TOKEN=tok_live_9f8e7d6c5b4a3210\nGITHUB_TOKEN=ghp_R4nd0mR4nd0mR4nd0mR4nd0mR4nd0m12ab\n# test: SERVICE_SECRET=zz9-plural-Z-alpha\n"
	if n := base.Scrub(text).Redactions; n != 4 {
		t.Fatalf("without an allowlist %d redactions, want 4", n)
	}
	for _, tc := range []struct {
		a      Allowlist
		reason string
		left   int
	}{
		{Allowlist{StopWords: []string{"FIXTURE"}}, "allowlist: stopword fixture", 3},
		{Allowlist{Secrets: []string{"tok_live_9f8e7d6c5b4a3210"}}, "allowlist: secret", 3},
		{Allowlist{Regexes: []string{`^ghp_R4nd0m`}}, "allowlist: regex ^ghp_R4nd0m", 3},
		{Allowlist{Regexes: []string{`^# test:`}, RegexTarget: "line"}, "allowlist: regex ^# test:", 3},
	} {
		s, err := base.WithAllowlist(&tc.a)
		if err != nil {
			t.Fatal(err)
		}
		r := s.Scrub(text)
		if r.Redactions != tc.left {
			t.Errorf("%+v: %d redactions, want %d:\n%s", tc.a, r.Redactions, tc.left, r.Text)
		}
		_, allowed := s.Audit(text)
		if len(allowed) == 0 {
			t.Errorf("%+v: nothing reported as allowed", tc.a)
		}
		for _, a := range allowed { // several rules may find one span
			if a.Reason != tc.reason || a.Start != allowed[0].Start {
				t.Errorf("%+v: allowed %+v", tc.a, allowed)
			}
		}
	}
	if base.Scrub(text).Redactions != 4 {
		t.Error("WithAllowlist changed the receiver")
	}
	for _, bad := range []Allowlist{{Regexes: []string{"("}}, {RegexTarget: "path"}} {
		if _, err := base.WithAllowlist(&bad); err == nil || !strings.Contains(err.Error(), "scrub allowlist") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestSafeNameMemo: SafeName's memo gives the answers the rules give, the
// same on every call, each Scrubber its own (an allowlist changes them),
// and holds a bounded number of names.
func TestSafeNameMemo(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	token := "ghp_" + strings.Repeat("R8mZq2Lx7VtK", 3) // a GitHub token's shape, generated
	sum := sha256.Sum256([]byte(token))
	hashed := SafeNamePrefix + hex.EncodeToString(sum[:])
	for i := range 3 {
		if got := s.SafeName(token); got != hashed {
			t.Fatalf("call %d: SafeName(token) = %q, want %q", i, got, hashed)
		}
		if got := s.SafeName("alpha-1"); got != "alpha-1" {
			t.Fatalf("call %d: SafeName(alpha-1) = %q", i, got)
		}
	}
	allowing, err := s.WithAllowlist(&Allowlist{Secrets: []string{token}})
	if err != nil {
		t.Fatal(err)
	}
	if got := allowing.SafeName(token); got != token {
		t.Fatalf("an allowlisted token is named %q, want itself (the memo of the scrubber without the allowlist answered)", got)
	}
	if got := s.SafeName(token); got != hashed {
		t.Fatalf("the allowlist changed the first scrubber's answer: %q", got)
	}
	for i := range maxNameMemo + 10 {
		s.SafeName("session-" + strconv.Itoa(i))
	}
	if n := len(s.names.m); n > maxNameMemo {
		t.Fatalf("the memo holds %d names, bound %d", n, maxNameMemo)
	}
	long := strings.Repeat("a", maxNameMemoLen+1)
	s.SafeName(long)
	if _, ok := s.names.get(long); ok {
		t.Fatal("a name longer than maxNameMemoLen was kept")
	}
}
