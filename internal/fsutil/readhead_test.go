package fsutil

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// zeros is an endless reader of NUL bytes that counts what it gave.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadAllMaxHeadStopsAtTheHead: a check that refuses the head ends the
// read after the head (an endless stream is not read up to the limit), its
// error is returned as is; an accepted head gives back the input byte for
// byte, whatever its length against the head and the limit.
func TestReadAllMaxHeadStopsAtTheHead(t *testing.T) {
	refuse := errors.New("not wanted")
	z := &zeros{}
	_, err := ReadAllMaxHead(z, 1<<30, 64<<10, func(head []byte) error {
		if len(head) != 64<<10 {
			t.Errorf("check saw %d bytes, want %d", len(head), 64<<10)
		}
		return refuse
	})
	if err != refuse {
		t.Fatalf("err = %v, want the check's error", err)
	}
	if z.n > 64<<10 {
		t.Errorf("read %d bytes of an endless stream before refusing it, want at most %d", z.n, 64<<10)
	}
	accept := func([]byte) error { return nil }
	for _, n := range []int{0, 1, 100, 64 << 10, 64<<10 + 1, 300 << 10} {
		in := bytes.Repeat([]byte("abc"), n)[:n]
		got, err := ReadAllMaxHead(bytes.NewReader(in), 300<<10, 64<<10, accept)
		if err != nil || !bytes.Equal(got, in) {
			t.Errorf("%d bytes: got %d bytes, err %v", n, len(got), err)
		}
	}
	var tl *TooLargeError
	if _, err := ReadAllMaxHead(io.LimitReader(&zeros{}, 300<<10+1), 300<<10, 64<<10, accept); !errors.As(err, &tl) || tl.Size != -1 {
		t.Errorf("past the limit: %v, want a TooLargeError of a stream", err)
	}
	if _, err := ReadAllMaxHead(io.LimitReader(&zeros{}, 11), 10, 64<<10, accept); !errors.As(err, &tl) {
		t.Errorf("past a limit shorter than the head: %v, want a TooLargeError", err)
	}
}
