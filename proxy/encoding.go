package proxy

import (
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Request-body content codings the proxy decodes before folding (RFC 9110
// §8.4.1): gzip, deflate (the zlib format, as RFC 9110 defines it) and zstd
// (RFC 8878; Codex compresses its request bodies with it when its
// enable_request_compression feature is on). A decoded body is forwarded
// uncompressed, without Content-Encoding; the upstream APIs accept both.
// A body in any other coding, or in several, is forwarded as it arrived,
// unfolded, with a warning.

// decodableCoding reports whether ce, a Content-Encoding header value, is
// one coding the proxy decodes.
func decodableCoding(ce string) bool {
	switch normalCoding(ce) {
	case "gzip", "x-gzip", "deflate", "zstd":
		return true
	}
	return false
}

// normalCoding is ce lower-cased and trimmed.
func normalCoding(ce string) string { return strings.ToLower(strings.TrimSpace(ce)) }

// newBodyDecoder returns a reader of r decoded from coding ce (one that
// decodableCoding accepts). maxBytes bounds the decoder's window memory
// (bytes); the caller bounds the decoded size itself. Close releases the
// decoder. Not safe for concurrent use.
func newBodyDecoder(ce string, r io.Reader, maxBytes int64) (io.ReadCloser, error) {
	switch normalCoding(ce) {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("the gzip request body cannot be decoded: %w", err)
		}
		return zr, nil
	case "deflate":
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("the deflate (zlib) request body cannot be decoded: %w", err)
		}
		return zr, nil
	case "zstd":
		mem := uint64(maxBytes)
		if maxBytes <= 0 {
			mem = 1 << 30
		}
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(mem), zstd.WithDecoderMaxWindow(min(mem, 1<<27)))
		if err != nil {
			return nil, fmt.Errorf("the zstd request body cannot be decoded: %w", err)
		}
		return zstdCloser{zr}, nil
	}
	return nil, fmt.Errorf("content coding %q is not decoded by the proxy", ce)
}

// zstdCloser adapts a zstd.Decoder (whose Close returns nothing) to
// io.ReadCloser.
type zstdCloser struct{ d *zstd.Decoder }

func (z zstdCloser) Read(p []byte) (int, error) { return z.d.Read(p) }
func (z zstdCloser) Close() error               { z.d.Close(); return nil }

// decodeError marks an error of the body's content coding (a 400 that
// names the coding).
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// decodingReader reads a decoder and marks its errors as decodeErrors
// (the errors of the connection underneath keep their own type inside).
type decodingReader struct {
	r     io.Reader
	label string
}

func (d decodingReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = &decodeError{fmt.Errorf("the %s request body cannot be decoded: %w", d.label, err)}
	}
	return n, err
}
