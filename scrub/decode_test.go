package scrub

import "testing"

// The decoded view maps every span back to the escaped text, an escape
// cut by the span counting whole.
func TestDecodedViewSpans(t *testing.T) {
	text := `a\nb\u0026c%2Fd\\\"e` + "\u00e9f"
	v, ok := decodeEscapes(text)
	if !ok || v.text != "a\nb&c/d\"e\u00e9f" {
		t.Fatalf("view %q %v", v.text, ok)
	}
	cases := []struct{ s, e, ts, te int }{
		{0, 1, 0, 1},    // a
		{1, 2, 1, 3},    // \n
		{2, 3, 3, 4},    // b
		{3, 4, 4, 10},   // \u0026
		{4, 7, 10, 15},  // c%2Fd
		{7, 8, 15, 19},  // \\\" (a run of backslashes and a quote)
		{8, 11, 19, 22}, // eé (é is two bytes)
		{2, 5, 3, 11},
	}
	for _, c := range cases {
		if a, b := v.span(c.s, c.e); a != c.ts || b != c.te {
			t.Errorf("span(%d,%d) = %d,%d, want %d,%d (%q → %q)", c.s, c.e, a, b, c.ts, c.te, v.text[c.s:c.e], text[c.ts:c.te])
		}
	}
	if _, ok := decodeEscapes("no escapes, 100% sure"); ok {
		t.Error("a text without escapes has no view")
	}
}

// A terminal control sequence is nothing in the view, raw or escaped, and
// a span next to it maps back around it.
func TestDecodedViewTerminalSequences(t *testing.T) {
	text := "a\x1b[1;31mbc\\u001b[0md"
	v, ok := decodeEscapes(text)
	if !ok || v.text != "abcd" {
		t.Fatalf("view %q %v", v.text, ok)
	}
	if a, b := v.span(1, 3); text[a:b] != "bc" {
		t.Errorf("span(1,3) = %q, want \"bc\"", text[a:b])
	}
	if a, b := v.span(3, 4); text[a:b] != "d" {
		t.Errorf("span(3,4) = %q, want \"d\"", text[a:b])
	}
	if _, ok := decodeEscapes("a\x1b not a sequence"); ok {
		t.Error("a lone ESC has no view")
	}
}
