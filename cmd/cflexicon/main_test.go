package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The list holds each word's stem once, sorted; names, possessives,
// stop words and short stems are left out; the same lists give the same
// bytes; a directory without SCOWL's files is refused.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("english-words-10.json", `["matches","match","taken","the","Caroline","don't","cat","tokens"]`)
	write("american-words-10.json", `["colors"]`)
	write("english-words-70.json", `["zyzzyva"]`) // past -max-size 60
	sized, err := read(dir, 60)
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, w := range sized {
		words = append(words, w.word)
	}
	data, n := build(words, 4)
	again, _ := build(words, 4)
	if !bytes.Equal(data, again) {
		t.Fatal("not deterministic")
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	if want := "color\nmatch\ntaken\ntoken\n"; string(got) != want || n != 4 {
		t.Fatalf("got %q (%d stems), want %q", got, n, want)
	}
	if _, err := read(t.TempDir(), 60); err == nil {
		t.Fatal("an empty directory was read")
	}
}

// The tiers list holds each stem once with the smallest size level of a
// word with that stem, short stems included, sizes past -tier-max left out.
func TestBuildTiers(t *testing.T) {
	words := []sizedWord{{"matches", 35}, {"match", 10}, {"cat", 20}, {"the", 10}, {"Caroline", 10}, {"weekend", 10}, {"weekends", 20}, {"zyzzyva", 70}}
	data, n := buildTiers(words, 40)
	again, _ := buildTiers(words, 40)
	if !bytes.Equal(data, again) {
		t.Fatal("not deterministic")
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	if want := "cat 20\nmatch 10\nweekend 10\n"; string(got) != want || n != 3 {
		t.Fatalf("got %q (%d stems), want %q", got, n, want)
	}
}
