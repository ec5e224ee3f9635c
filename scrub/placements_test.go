package scrub_test

import (
	"testing"
)

// TestPlacements: secrets in the places an unlucky user puts them, each
// redacted exactly where it stands and nothing else changed.
func TestPlacements(t *testing.T) {
	sc := newScrubber(t)
	pw := "p@ss" + "Wq7vTz3k"
	for _, c := range []struct{ in, want string }{
		// An unescaped '@' in a URL's password: the userinfo ends at the
		// authority's last '@'.
		{"git clone https://bob:" + pw + "@git.example.com/r.git",
			"git clone https://bob:[REDACTED:contextfold-url-password]@git.example.com/r.git"},
		// A query's e-mail address after the host is not the password's.
		{"https://u:" + "Wq7vTz3k" + "@host.example/x?to=a@b.example",
			"https://u:[REDACTED:contextfold-url-password]@host.example/x?to=a@b.example"},
	} {
		if got := sc.Scrub(c.in).Text; got != c.want {
			t.Errorf("Scrub(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
