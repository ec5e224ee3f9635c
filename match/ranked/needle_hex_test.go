package ranked

import "testing"

// hexPrefixed: a hex number quoted without its 0x (or with the 0 lost) is
// also looked up as the 0x word; words spelt in a–f, short numbers and
// tokens with other letters are not.
func TestHexPrefixed(t *testing.T) {
	cases := map[string]string{
		"7f3a9c2b1e80":   "0x7f3a9c2b1e80",
		"x7082971cba00":  "0x7082971cba00",
		"X7082971CBA00":  "0x7082971cba00",
		"00401000":       "0x00401000",
		"0x7082971cba00": "", // its own word
		"deadbeef":       "", // no digit: a word
		"facade":         "",
		"x12345":         "", // five digits
		"7f3a9c2b1g80":   "", // not hex
		"xx7082971cba00": "",
	}
	for in, want := range cases {
		if got := hexPrefixed(in); got != want {
			t.Errorf("hexPrefixed(%q) = %q, want %q", in, got, want)
		}
	}
}
