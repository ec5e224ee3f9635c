package ranked

import (
	"slices"
	"testing"
)

// Rule "a name and its version": which compounds yield a version and a
// name, and which yield nothing new (a timestamp, a date, a file:line, an
// address, a port).
func TestNamedVersionTerms(t *testing.T) {
	terms := func(text string) []string {
		var out []string
		for _, tm := range Analyze(text) {
			if tm.Kind == KindCompound {
				out = append(out, tm.Text)
			}
		}
		return out
	}
	for _, c := range []struct {
		text       string
		want, none []string
	}{
		{"Successfully installed pytest-xdist-1.34.0 six-1.17.0", []string{"1.34.0", "1.34", "pytest-xdist", "1.17.0"}, nil},
		{"Downloading pytest_xdist-3.8.0-py3-none-any.whl (46 kB)", []string{"3.8.0", "3.8"}, nil},
		{"requests-2.31.0.tar.gz", []string{"2.31.0"}, []string{"2.31.0.tar.gz"}},
		{"npm i lodash@4.17.21", []string{"4.17.21", "4.17"}, nil},
		{"image: postgres:16.2-alpine", []string{"16.2"}, nil},
		{"at 09:03:40.123 the job", nil, []string{"40.123"}},
		{"released 2024-01-02", nil, []string{"01", "02"}},
		{"app.py:12:5: E501", nil, []string{"12", "5"}},
		{"listening on 10.0.0.1:8080", nil, []string{"8080"}},
		{"ledger-api-postgres-1 started", nil, []string{"ledger-api-postgres"}},
		{"version-1.x-beta", nil, []string{"1.x"}},
	} {
		got := terms(c.text)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: compound terms %v lack %q", c.text, got, w)
			}
		}
		for _, w := range c.none {
			if slices.Contains(got, w) {
				t.Errorf("%q: compound terms %v hold %q", c.text, got, w)
			}
		}
	}
}

// "link" looks for "href" too (rule "tool and failure names"): an HTML
// page lists its links as <a href=…>, with no word "link".
func TestLinkLooksForHref(t *testing.T) {
	for _, w := range []string{"link", "hyperlink"} {
		if !contains(aliases[w], "href") {
			t.Errorf("aliases of %q: %q, want href", w, aliases[w])
		}
	}
}
