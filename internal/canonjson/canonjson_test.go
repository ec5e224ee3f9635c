package canonjson

import (
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"
)

func TestCanonicalStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{"quote\" back\\", `"quote\" back\\"`},
		{"\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"\x00\x01\x1b\x1f", `"\u0000\u0001\u001b\u001f"`},
		{"\x7f\u0085\u00ad\u2028\u2029\ufeff", "\"\x7f\u0085\u00ad\u2028\u2029\ufeff\""},
		{"<>&/", `"<>&/"`},
		{"İstanbul ✓ 🔑", `"İstanbul ✓ 🔑"`},
		{"bad\xffutf8", "\"bad\uFFFDutf8\""},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Canonical(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalAndPrettyShapes(t *testing.T) {
	v := map[string]any{"b": []any{json.Number("1"), map[string]any{"z": nil, "a": true}}, "a": "x", "B": []any{}, "e": map[string]any{}}
	c, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"B":[],"a":"x","b":[1,{"a":true,"z":null}],"e":{}}`; string(c) != want {
		t.Errorf("canonical = %s, want %s", c, want)
	}
	p, err := Pretty(v)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"B\": [],\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    {\n      \"a\": true,\n      \"z\": null\n    }\n  ],\n  \"e\": {}\n}"
	if string(p) != want {
		t.Errorf("pretty =\n%s\nwant\n%s", p, want)
	}
}

func TestNumberRepr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"-42", "-42"}, {"18446744073709551617", "18446744073709551617"},
		{"3000.0", "3000.0"}, {"1e-07", "1e-07"}, {"1E22", "1e+22"}, {"1e+22", "1e+22"},
		{"0.5", "0.5"}, {"-0.0", "-0.0"}, {"0.3333333333333333", "0.3333333333333333"},
		{"1e16", "1e+16"}, {"1e15", "1000000000000000.0"}, {"0.0001", "0.0001"}, {"0.00001", "1e-05"},
		{"123456789.125", "123456789.125"}, {"1.5e300", "1.5e+300"}, {"2.5e-10", "2.5e-10"},
		{"25.5", "25.5"}, {"1e400", "Infinity"}, {"-1e400", "-Infinity"},
	}
	for _, tt := range tests {
		got, err := NumberRepr(tt.in)
		if err != nil {
			t.Fatalf("NumberRepr(%s): %v", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("NumberRepr(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"", "abc", "1-2", "--1"} {
		if _, err := NumberRepr(bad); err == nil {
			t.Errorf("NumberRepr(%q) accepted", bad)
		}
	}
}

func TestFloatReprSpecials(t *testing.T) {
	for f, want := range map[float64]string{math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", 100: "100.0", 1e-4: "0.0001"} {
		if got, _ := FloatRepr(f); got != want {
			t.Errorf("FloatRepr(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestDecodeKeepsLiteralsAndLastDuplicate(t *testing.T) {
	v, err := Decode([]byte(`{"a": 1.0, "a": 2.50, "big": 18446744073709551617}`))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := Canonical(v)
	if want := `{"a":2.5,"big":18446744073709551617}`; string(c) != want {
		t.Errorf("got %s, want %s", c, want)
	}
	if _, err := Decode([]byte(`{} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

// FuzzCanonical: any string survives a round trip through encoding/json, and
// the encoding is valid UTF-8 JSON with sorted keys.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\u2028<>&", "İΣ🔑", "\xff\xfe", "\\u0000"} {
		f.Add(s, s+"k")
	}
	f.Fuzz(func(t *testing.T, s, k string) {
		v := map[string]any{"s": s, k: []any{s, json.Number("1")}}
		c, err := Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(c) {
			t.Fatalf("invalid UTF-8: %q", c)
		}
		var back map[string]any
		if err := json.Unmarshal(c, &back); err != nil {
			t.Fatalf("not JSON: %v: %q", err, c)
		}
		want := string([]rune(s)) // each invalid byte becomes U+FFFD
		if back["s"] != want {
			t.Fatalf("round trip: %q → %q", s, back["s"])
		}
		p, err := Pretty(v)
		if err != nil {
			t.Fatal(err)
		}
		var back2 map[string]any
		if err := json.Unmarshal(p, &back2); err != nil || back2["s"] != want {
			t.Fatalf("pretty round trip failed: %v", err)
		}
	})
}
