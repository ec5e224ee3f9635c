package scrub

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// The same text gives the same findings, rule ids included, every time:
// a value two rules find (a JWT in a curl Authorization header: gitleaks'
// curl-auth-header and jwt) and that the text repeats without context was
// labelled by whichever rule gitleaks happened to report first — gitleaks
// runs its rules in map order — so Find (and scrub-check's rule list)
// changed from run to run over gitleaks' own curl.go. The redacted text
// was the same; the findings were not.
func TestFindingsDeterministic(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 9))
	seg := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"`+seg(6)+`"}`)) + "." + seg(32)
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, "line %d of the log: nothing here but words and numbers %d\n", i, i*37)
	}
	fmt.Fprintf(&b, "curl -s -H \"Authorization: Bearer %s\" https://api.example.test/v1/items\n", jwt)
	b.WriteString("the token again, on its own:\n" + jwt + "\n")
	text := b.String()
	first := s.Find(text)
	if len(first) == 0 {
		t.Fatal("no finding: the test does not exercise the repeated value")
	}
	for i := range 40 {
		if got := s.Find(text); !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d: findings %+v, the first run's %+v", i, got, first)
		}
	}
}
