package scrub

import (
	"reflect"
	"testing"
)

func TestRedactTerms(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tok := "ghp_" + "FAKEfake0123456789FAKEfake0123456789"
	text := "pasted " + tok + " by mistake, port 5432"
	terms := []string{"0123456789", "fak", "ghp", "ghp_fakefake0123456789fakefake0123456789", "mist*", "mistake", "pasted", "port", "5432"}
	got := s.RedactTerms(text, terms)
	want := []string{"[REDACTED:github-pat]", "fak", "ghp", "mist*", "mistake", "pasted", "port", "5432"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RedactTerms = %q, want %q", got, want)
	}
	if got := s.RedactTerms("port 5432", []string{"port", "5432"}); !reflect.DeepEqual(got, []string{"port", "5432"}) {
		t.Errorf("no secret: %q", got)
	}
	if s.RedactTerms("x", nil) != nil {
		t.Error("nil terms must give nil")
	}
}
