package wordnet

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fixture (testdata/dict) has WordNet's layout: a derivation pointer
// between marriage (n) and marry (v), a pertainym from musical to music,
// and job with two noun senses, the first shared with occupation.
func TestLoadFixture(t *testing.T) {
	db, err := Load("testdata/dict")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lemma string
		syms  []string
		want  []string
	}{
		{"marriage", []string{"+"}, []string{"marry"}},
		{"marry", []string{"+"}, []string{"marriage"}},
		{"musical", []string{`\`}, []string{"music"}},
		{"musical", []string{"+"}, nil},
		{"job", []string{"+", `\`}, nil},
	} {
		if got := db.Derived(c.lemma, 0, c.syms...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Derived(%q, %q) = %q, want %q", c.lemma, c.syms, got, c.want)
		}
	}
	if got := db.FirstSynonyms("job"); !reflect.DeepEqual(got, []string{"occupation", "line_of_work"}) {
		t.Errorf("FirstSynonyms(job) = %q", got)
	}
	if got := db.FirstSynonyms("marry"); !reflect.DeepEqual(got, []string{"wed"}) {
		t.Errorf("FirstSynonyms(marry) = %q", got)
	}
	if db.Tags("job") != 5 || db.Tags("music") != 0 {
		t.Errorf("tags job %d music %d, want 5 and 0", db.Tags("job"), db.Tags("music"))
	}
	if got := db.Senses("job", 'n'); len(got) != 2 || got[0].Offset != 3 {
		t.Errorf("Senses(job, n) = %v", got)
	}
	if s := db.Synset(SynsetID{'a', 5}); s == nil || s.Words[0] != "musical" {
		t.Errorf("the adjective marker is not removed: %+v", s)
	}
}

// A line that does not parse is an error naming its file and line.
func TestLoadReportsBadLine(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj", "index.adv", "index.sense"} {
		b, err := os.ReadFile(filepath.Join("testdata/dict", n))
		if err != nil {
			t.Fatal(err)
		}
		if n == "data.verb" {
			b = append(b, "00000009 41 v zz marry 0 000 | bad word count\n"...)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "data.verb:2") {
		t.Fatalf("err %v, want one naming data.verb:2", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Fatal("no error for a directory without dictionary files")
	}
}
