package fsutil

import (
	"errors"
	"io"
	"testing"
)

// BenchmarkReadStreamAccepted reads a 64 MiB stream (a pipe such as
// <(zcat …)) under a 512 MiB limit; B/op is what the read allocates.
func BenchmarkReadStreamAccepted(b *testing.B) {
	const size = 64 << 20
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		data, err := ReadAllMaxHead(io.LimitReader(&zeros{}, size), 512<<20, 64<<10, func([]byte) error { return nil })
		if err != nil || len(data) != size {
			b.Fatal(len(data), err)
		}
	}
}

// BenchmarkReadStreamRefused refuses an endless stream past a 64 MiB
// limit; B/op is what refusing it costs.
func BenchmarkReadStreamRefused(b *testing.B) {
	const limit = 64 << 20
	b.SetBytes(limit)
	for i := 0; i < b.N; i++ {
		var tl *TooLargeError
		if _, err := ReadAllMax(&zeros{}, limit); !errors.As(err, &tl) {
			b.Fatal(err)
		}
		if _, err := ReadAllMaxHead(&zeros{}, limit, 64<<10, func([]byte) error { return nil }); !errors.As(err, &tl) {
			b.Fatal(err)
		}
	}
}
