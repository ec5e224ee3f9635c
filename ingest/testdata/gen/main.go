// Command gen writes the large transcripts the ingest measurements use
// (README, "Ingesting agent sessions"), to standard output, so that no
// large file is committed:
//
//	go run ./ingest/testdata/gen KIND N > FILE
//
// KIND is one of:
//
//	openai-many N   an OpenAI messages array of N one-line messages
//	openai-big N    an OpenAI messages array whose second message holds N bytes
//	claude-many N   Claude Code JSONL of N one-line user records
//	claude-big N    Claude Code JSONL whose second line holds N bytes
//
// The output depends on KIND and N only.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen openai-many|openai-big|claude-many|claude-big N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, "gen: N must be a count of 0 or more")
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	big := func() {
		for i := 0; i < n; i++ {
			w.WriteByte("abcdefghij klmnopq\\n"[i%20])
		}
	}
	switch os.Args[1] {
	case "openai-many":
		w.WriteByte('[')
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `{"role":"user","content":"m%d"}`, i)
		}
		w.WriteString("]\n")
	case "openai-big":
		w.WriteString(`[{"role":"user","content":"hi"},{"role":"assistant","content":"`)
		big()
		w.WriteString(`"},{"role":"user","content":"bye"}]` + "\n")
	case "claude-many":
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, `{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":"m%d"}}`+"\n", i, i)
		}
	case "claude-big":
		w.WriteString(`{"type":"user","uuid":"u0","sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n")
		w.WriteString(`{"type":"assistant","uuid":"u1","parentUuid":"u0","sessionId":"s","message":{"role":"assistant","content":"`)
		big()
		w.WriteString(`"}}` + "\n")
	default:
		fmt.Fprintln(os.Stderr, "gen: unknown KIND", os.Args[1])
		os.Exit(2)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
