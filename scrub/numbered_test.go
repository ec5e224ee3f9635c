package scrub

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A secret's name with a number after it (DB_PASSWORD_2, API_TOKEN_358,
// SECRET_KEY_1: the second database's password, a numbered token) is the
// name it numbers: its value is redacted as the unnumbered name's is.
// Before, the number was taken for the name's last component, and the
// value reached disk unless gitleaks' generic rule happened to take it
// (DB_PASSWORD_2=<24 random letters and digits> stayed for some values).
// Names that end in a number without a secret word before it stay.
func TestNumberedSecretNames(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 2))
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	value := func() string {
		v := make([]byte, 24)
		for i := range v {
			v[i] = alnum[r.IntN(len(alnum))]
		}
		return string(v)
	}
	for _, form := range []string{"DB_PASSWORD_2=%s", "export API_TOKEN_358=%s", "SECRET_KEY_1=\"%s\"", "client-secret-3: %s", "AWS_SECRET_ACCESS_KEY_2=%s"} {
		v := value()
		text := strings.Replace(form, "%s", v, 1)
		if got := s.Scrub(text).Text; strings.Contains(got, v) {
			t.Errorf("%q: the value stayed: %q", text, got)
		}
		// By our own rule, whatever gitleaks' generic rule makes of the
		// value (it takes some random values and leaves others).
		ours := false
		at := strings.Index(text, v)
		for _, f := range s.Find(text) {
			ours = ours || isOurs(f.RuleID) && f.Start <= at && at+len(v) <= f.End
		}
		if !ours {
			t.Errorf("%q: no rule of ours finds the value (findings %+v)", text, s.Find(text))
		}
	}
	for _, text := range []string{"SHA_256=" + value(), "BUILD_2=" + value(), "RETRIES_3=12"} {
		if got := s.Scrub(text).Text; got != text {
			t.Errorf("%q changed: %q", text, got)
		}
	}
}
