package extract

import (
	"strings"
	"testing"
)

// Extraction must stay linear on adversarial inputs: long runs of word
// characters, long path chains without an extension, many blank lines.
func BenchmarkExtractAdversarial(b *testing.B) {
	inputs := map[string]string{
		"long-token":     strings.Repeat("a", 200000),
		"path-chain":     strings.Repeat("ab/", 7000),
		"dots":           strings.Repeat("a.", 10000),
		"blank-lines":    strings.Repeat("\n", 200000) + "$ ls",
		"spaces-command": "$ ls" + strings.Repeat(" ", 200000) + ";",
	}
	for name, in := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for i := 0; i < b.N; i++ {
				Extract(in)
			}
		})
	}
}
