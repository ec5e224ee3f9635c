package canonjson

import "testing"

func TestLoneSurrogate(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int
	}{
		{`"plain"`, -1},
		{`"\ud83d\ude00"`, -1},       // a pair
		{`"\uD83D\uDE00"`, -1},       // a pair, upper case
		{`"a\ud83d"`, 2},             // a high half alone
		{`"\ude00"`, 1},              // a low half alone
		{`"\ud83d\u0041"`, 1},        // a high half before another escape
		{`"\\ud83d"`, -1},            // an escaped backslash, then text
		{`"\u00e9\ud800x"`, 7},       // after a plain escape
		{`"\ud83d\ude00\udc00"`, 13}, // a pair, then a lone low half
	} {
		if got := LoneSurrogate([]byte(c.raw), 0); got != c.want {
			t.Errorf("LoneSurrogate(%s) = %d, want %d", c.raw, got, c.want)
		}
	}
	raw := []byte(`"\ud800 \udc00 \ud83d\ude00 \udbff"`)
	n := 0
	for i := LoneSurrogate(raw, 0); i >= 0; i = LoneSurrogate(raw, i+6) {
		n++
	}
	if n != 3 {
		t.Errorf("%d lone surrogates counted in %s, want 3", n, raw)
	}
}
