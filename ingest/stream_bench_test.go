package ingest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseStop measures what parsing a transcript of 100,000 short
// messages allocates when the caller stops at its 1,001st turn (as ingest
// does past --max-turns 1000), against the whole-input parser, which
// decoded every message first. B/op is the memory the parse allocates:
//
//	go test ./ingest -run '^$' -bench ParseStop -benchmem
func BenchmarkParseStop(b *testing.B) {
	const n, stop = 100000, 1000
	var cc, oa strings.Builder
	oa.WriteByte('[')
	for i := 0; i < n; i++ {
		fmt.Fprintf(&cc, `{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":"m%d"}}`+"\n", i, i)
		if i > 0 {
			oa.WriteByte(',')
		}
		fmt.Fprintf(&oa, `{"role":"user","content":"m%d"}`, i)
	}
	oa.WriteByte(']')
	for _, in := range []struct {
		name string
		data []byte
	}{{"claude-code", []byte(cc.String())}, {"openai", []byte(oa.String())}} {
		b.Run(in.name+"/stream", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for i := 0; i < b.N; i++ {
				_, err := ParseWith(in.data, Options{Turn: stopAfter(stop)})
				if !errors.Is(err, errStopTurns) {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/whole", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for i := 0; i < b.N; i++ {
				if _, err := parseWholeRef(in.data, FormatAuto); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
