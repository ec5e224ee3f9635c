package hooks

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
)

// The injected context never exceeds the cap, is valid UTF-8 (no split
// surrogate pair or code point), and says what was left out.
func TestRenderContextWithinCap(t *testing.T) {
	long := strings.Repeat("[00001] assert ratio ≥ 0.9 — got 0.1 été 🧪\n", 700)
	oneLong := strings.Repeat("🧪é", 9000) // no line breaks at all
	mk := func(step int, s string) part {
		return part{h: &contextfold.Hydration{StepID: step, Content: s, RawContent: s, Summary: "step summary", ArtifactSHA256: strings.Repeat("a", 64)}, terms: []string{"x"}}
	}
	parts := []part{mk(2, long), mk(0, "short prompt"), mk(5, oneLong)}
	for max := 1; max < 30000; max += 31 {
		got := renderContext(parts, []string{"step 9 (IntegrityCheckError)"}, "/tmp/store", max, nil)
		if n := len16(got); n > max {
			t.Fatalf("max %d: %d characters", max, n)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("max %d: invalid UTF-8", max)
		}
		if max >= 700 && !strings.Contains(got, "left out") {
			t.Fatalf("max %d: no marker:\n%s", max, got)
		}
		if max >= 2000 && (!strings.Contains(got, "short prompt") || !strings.Contains(got, "fetch_archived_node")) {
			t.Fatalf("max %d: the short part or the fetch hint is missing:\n%s", max, got)
		}
	}
	whole := renderContext(parts[1:2], nil, "/tmp/store", DefaultMaxChars, nil)
	if strings.Contains(whole, "left out") {
		t.Errorf("nothing was left out, yet the marker says so:\n%s", whole)
	}
}

func TestCutTo(t *testing.T) {
	for _, c := range []struct {
		s     string
		max   int
		want  string
		whole bool
	}{
		{"abc", 3, "abc", true},
		{"ab\ncdef", 5, "ab\n", false},
		{"🧪🧪", 3, "🧪", false},               // a surrogate pair is never split
		{"a\nbcdefgh", 6, "a\nbcde", false}, // the only break is too early: character boundary
	} {
		got, whole := cutTo(c.s, c.max)
		if got != c.want || whole != c.whole {
			t.Errorf("cutTo(%q, %d) = %q, %v", c.s, c.max, got, whole)
		}
	}
}
