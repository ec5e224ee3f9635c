package ranked

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// containsFoldRef is ContainsFold's ASCII case the plain way: every window
// of the needle's length compared with strings.EqualFold.
func containsFoldRef(s, needle string) bool {
	for i := 0; i+len(needle) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(needle)], needle) {
			return true
		}
	}
	return false
}

// ContainsFold with an ASCII needle (searched from an anchor byte, or the
// first letter in both cases) answers as comparing every window does, on
// texts mixing both cases, punctuation, the Kelvin sign and the long s
// (which fold to k and s but are not one byte) and cut multi-byte runes.
func TestContainsFoldASCII(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "A", "k", "K", "s", "S", "/", ".", "_", "1", "\u212a", "\u017f", "é", "\xe2", " "}
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	needles := []string{"a", "k", "Ks", "sK/", "/a", "a.k", "_1", "AKS", "kask", "s.s", "1/1", "ak ks"}
	for range 20000 {
		s := word(r.IntN(24))
		nd := needles[r.IntN(len(needles))]
		if r.IntN(3) == 0 {
			// Plant the needle, in a random case.
			i := r.IntN(len(s) + 1)
			var b strings.Builder
			for _, c := range []byte(nd) {
				if r.IntN(2) == 0 {
					c ^= 0x20 * byte(boolInt(isASCIILetter(c)))
				}
				b.WriteByte(c)
			}
			s = s[:i] + b.String() + s[i:]
		}
		if got, want := ContainsFold(s, nd), containsFoldRef(s, nd); got != want {
			t.Fatalf("ContainsFold(%q, %q) = %v, want %v", s, nd, got, want)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
