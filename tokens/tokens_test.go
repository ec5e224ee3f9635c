package tokens

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

type sample struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

func loadSamples(t testing.TB) []sample {
	t.Helper()
	data, err := os.ReadFile("testdata/samples.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Samples []sample `json:"samples"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f.Samples
}

func mustCounter(t testing.TB, name string) Counter {
	t.Helper()
	c, err := ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGolden compares exact counts with js-tiktoken's (testdata/golden.json,
// written by testdata/gen_golden.mjs).
func TestGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Counts map[string]map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	samples := loadSamples(t)
	for _, enc := range []string{O200kBaseName, Cl100kBaseName} {
		c := mustCounter(t, enc)
		if c.Name() != enc {
			t.Errorf("Name() = %q, want %q", c.Name(), enc)
		}
		want := g.Counts[enc]
		if len(want) != len(samples) {
			t.Fatalf("%s: golden has %d counts for %d samples; regenerate it", enc, len(want), len(samples))
		}
		for _, s := range samples {
			w, ok := want[s.Name]
			if !ok {
				t.Errorf("%s: no golden count for %q", enc, s.Name)
				continue
			}
			if got := c.Count(s.Text); got != w {
				t.Errorf("%s %s: Count = %d, want %d", enc, s.Name, got, w)
			}
		}
	}
}

func TestByName(t *testing.T) {
	for _, n := range []string{"", "heuristic"} {
		if c := mustCounter(t, n); c.Name() != "heuristic" {
			t.Errorf("ByName(%q).Name() = %q", n, c.Name())
		}
	}
	a, b := mustCounter(t, "o200k_base"), mustCounter(t, "o200k_base")
	if a != b {
		t.Error("exact counters are not cached")
	}
	_, err := ByName("gpt2")
	if !errors.Is(err, ErrUnknownCounter) {
		t.Fatalf("err = %v", err)
	}
	for _, n := range []string{"heuristic", "o200k_base", "cl100k_base", "gpt2"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
}

func TestHeuristic(t *testing.T) {
	h := Heuristic()
	counts := map[string]int{"": 1, "abc": 1, "abcdefg": 1, "abcdefgh": 2, "çğıöşü€€": 2, "😀😀😀😀": 1, strings.Repeat("x", 4001): 1000}
	for s, want := range counts {
		if got := h.Count(s); got != want {
			t.Errorf("Count(%q) = %d, want %d", s, got, want)
		}
	}
	trunc := []struct {
		in   string
		max  int
		want string
		cut  bool
	}{
		{"abcdefghijk", 2, "abcdefghijk", false}, // estimate 2 fits
		{"abcdefghijkl", 2, "abcdefgh", true},    // estimate 3
		{"abc", 0, "", true},                     // estimate max(1, 0) = 1
		{"abcdefghijklmnop", 3, "abcdefghijkl", true},
		{"abcdefghijklmnop", 1, "abcd", true},
		{"abcdefghijklmnop", 0, "", true},
		{"abcdefghijklmnop", -1, "abcdefghijkl", true}, // s[:-4]
		{"abcdefghijklmnop", -3, "abcd", true},
		{"abcdefghijklmnop", -4, "", true},
		{"abcdefghijklmnop", -1 << 62, "", true},
		{"😀é😀é😀é😀é😀é😀é", 1, "😀é😀é", true},
		{"", 0, "", true},
		{"", 1, "", false},
	}
	for _, c := range trunc {
		got, cut := h.Truncate(c.in, c.max)
		if got != c.want || cut != c.cut {
			t.Errorf("Truncate(%q, %d) = %q, %v; want %q, %v", c.in, c.max, got, cut, c.want, c.cut)
		}
	}
}

func checkTruncate(t *testing.T, c Counter, text string, limit int) {
	t.Helper()
	got, cut := c.Truncate(text, limit)
	if !strings.HasPrefix(text, got) {
		t.Fatalf("%s: Truncate(%d) is not a prefix", c.Name(), limit)
	}
	if cut != (got != text) {
		t.Fatalf("%s: Truncate(%d) cut=%v but len %d of %d", c.Name(), limit, cut, len(got), len(text))
	}
	if utf8.ValidString(text) && !utf8.ValidString(got) {
		t.Fatalf("%s: Truncate(%d) is not valid UTF-8: %q", c.Name(), limit, got[max(0, len(got)-8):])
	}
	if got == text {
		if text != "" && c.Count(text) > limit {
			t.Fatalf("%s: Truncate(%d) kept a text of %d tokens", c.Name(), limit, c.Count(text))
		}
		return
	}
	if n := c.Count(got); got != "" && n > limit {
		t.Fatalf("%s: Truncate(%d) gives %d tokens", c.Name(), limit, n)
	}
	// Maximal: the prefix up to the next token end on a UTF-8 boundary no
	// longer fits.
	if limit > 0 {
		_, toks, _ := c.(*exact).codec.Encode(text)
		end := 0
		for _, tk := range toks {
			end += len(tk)
			if end > len(got) && (end == len(text) || utf8.RuneStart(text[end])) {
				if n := c.Count(text[:end]); n <= limit {
					t.Fatalf("%s: Truncate(%d) not maximal: prefix of %d bytes counts %d", c.Name(), limit, end, n)
				}
				break
			}
		}
	}
}

func TestExactTruncate(t *testing.T) {
	samples := loadSamples(t)
	for _, enc := range []string{O200kBaseName, Cl100kBaseName} {
		c := mustCounter(t, enc)
		for _, s := range samples {
			n := c.Count(s.Text)
			maxes := []int{-1, 0, 1, 2, 3, n / 3, n / 2, n - 1, n, n + 1}
			if testing.Short() || len(s.Text) > 2000 || raceEnabled {
				// Long single pieces cost the tokenizer quadratic time.
				maxes = []int{0, 1, n / 2, n}
			}
			if len(s.Text) > 2000 && raceEnabled {
				continue
			}
			for _, m := range maxes {
				checkTruncate(t, c, s.Text, m)
			}
		}
		// Multi-byte tokens split across characters: emoji and CJK.
		for m := 1; m < 40; m++ {
			checkTruncate(t, c, "👨‍👩‍👧‍👦🇹🇷😀 中文测试 ığdır", m)
		}
	}
}

func TestConcurrent(t *testing.T) {
	samples := loadSamples(t)
	var wg sync.WaitGroup
	for _, enc := range []string{O200kBaseName, Cl100kBaseName, HeuristicName} {
		want := map[string]int{}
		c := mustCounter(t, enc)
		for _, s := range samples[:12] {
			want[s.Name] = c.Count(s.Text)
		}
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := ByName(enc)
				if err != nil {
					t.Error(err)
					return
				}
				for _, s := range samples[:12] {
					if got := c.Count(s.Text); got != want[s.Name] {
						t.Errorf("%s %s: concurrent count %d, want %d", enc, s.Name, got, want[s.Name])
					}
					c.Truncate(s.Text, 5)
				}
			}()
		}
	}
	wg.Wait()
}

func benchmarkCount(b *testing.B, enc string) {
	c := mustCounter(b, enc)
	var sb strings.Builder
	for _, s := range loadSamples(b) {
		if s.Name == "long-repeated-char" || s.Name == "long-cjk" {
			continue // single huge pre-tokenizer pieces: quadratic in the tokenizer
		}
		sb.WriteString(s.Text)
		sb.WriteByte('\n')
	}
	text := sb.String()
	n := c.Count(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Count(text)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkCount* report tokens per second over the samples (without the
// two pathological single-piece ones).
func BenchmarkCountO200k(b *testing.B)     { benchmarkCount(b, O200kBaseName) }
func BenchmarkCountCl100k(b *testing.B)    { benchmarkCount(b, Cl100kBaseName) }
func BenchmarkCountHeuristic(b *testing.B) { benchmarkCount(b, HeuristicName) }
