// Command scrubfp counts what the scrubber finds in texts that hold no
// secrets, for a false-positive comparison of two versions (build it from
// each and diff the outputs):
//
//	scrubfp < paths.txt                  # each file's findings: path, rule, secret, line
//	scrubfp -json locomo10.json.gz       # every string value of a JSON (.gz) file
//	FP_SCRUB=1 scrubfp < paths.txt       # the files Scrub changes, with the result's SHA-256
//
// Files over 4 MiB are skipped; a JSON file's strings are numbered in the
// order of their sorted keys, so two runs name them alike.
package main

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/contextfold/contextfold/scrub"
)

func main() {
	s, err := scrub.New()
	if err != nil {
		panic(err)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	scrubMode := os.Getenv("FP_SCRUB") != ""
	report := func(name, text string) {
		if scrubMode {
			if out := s.Scrub(text).Text; out != text {
				fmt.Fprintf(w, "%s\t%x\n", name, sha256.Sum256([]byte(out)))
			}
			return
		}
		for _, f := range s.Find(text) {
			ls := strings.LastIndexByte(text[:f.Start], '\n') + 1
			le := strings.IndexByte(text[f.End:], '\n')
			if le < 0 {
				le = len(text)
			} else {
				le += f.End
			}
			line := text[max(ls, f.Start-100):min(le, f.End+100)]
			fmt.Fprintf(w, "%s\t%s\t%q\t%q\n", name, f.RuleID, text[f.Start:f.End], line)
		}
	}
	if len(os.Args) > 1 && os.Args[1] == "-json" {
		for _, p := range os.Args[2:] {
			f, _ := os.Open(p)
			var r io.Reader = f
			if strings.HasSuffix(p, ".gz") {
				r, _ = gzip.NewReader(f)
			}
			var v any
			if err := json.NewDecoder(r).Decode(&v); err != nil {
				panic(err)
			}
			n := 0
			var walk func(any)
			walk = func(v any) {
				switch x := v.(type) {
				case string:
					n++
					report(fmt.Sprintf("%s#%d", p, n), x)
				case []any:
					for _, e := range x {
						walk(e)
					}
				case map[string]any:
					ks := make([]string, 0, len(x))
					for k := range x {
						ks = append(ks, k)
					}
					sort.Strings(ks)
					for _, k := range ks {
						walk(x[k])
					}
				}
			}
			walk(v)
			fmt.Fprintf(os.Stderr, "%s: %d strings\n", p, n)
		}
		return
	}
	sc := bufio.NewScanner(os.Stdin)
	n := 0
	for sc.Scan() {
		b, err := os.ReadFile(sc.Text())
		if err != nil || len(b) > 4<<20 {
			continue
		}
		n++
		report(sc.Text(), string(b))
	}
	fmt.Fprintf(os.Stderr, "%d files\n", n)
}
