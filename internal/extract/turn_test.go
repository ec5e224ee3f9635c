package extract

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// turnPieces are fragments that sit at the seam of summary and payload in
// every way the patterns care about: commands ('$', '>', blank lines),
// HTTP statuses across a line, error words, paths, words, digits, non-ASCII
// letters, combining marks, invalid UTF-8, and the separators.
var turnPieces = []string{
	"$", ">", " ", "  ", "\t", "\n", "\r", ";", "\n\n", "$ go test ./...", "> ls -la", "ls", "foo bar",
	"HTTP", "HTTP ", "404", "503", "HTTP 404", "ValueError", "KeyError:", "FATAL", "Traceback",
	"DB_CONN_ERROR", "src/app.py", "a/b\\c.go", "config.json", ".", "-", "/", "\\", "_", "pkg",
	"README.md", "straße", "Ärger", "e\u0301", "\u0130", "\xff", "\xe2\x82", "123", "12", "x9", "über/ölçü.ts",
}

func randTurnText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(8); n > 0; n-- {
		b.WriteString(turnPieces[r.IntN(len(turnPieces))])
	}
	return b.String()
}

// TestExtractTurnIsExtractOfText: the extraction of a turn without the
// concatenation gives what extraction of the concatenation gives, on
// random summaries and payloads made of the pieces that meet at the seam.
func TestExtractTurnIsExtractOfText(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 2026))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		sum, pay := randTurnText(r), randTurnText(r)
		checkExtractTurn(t, sum, pay)
	}
	for _, c := range [][2]string{
		{"", ""}, {"ran tests", "$ go test\nok"}, {"   ", "$ ls\nfoo"}, {"see HTTP", "404 page"},
		{"$ ls", "\nfoo"}, {"x >", " cat f"}, {"Value", "Error"}, {"src/a", "b.py"}, {"", "\n\n$ make all"},
	} {
		checkExtractTurn(t, c[0], c[1])
	}
}

func checkExtractTurn(t *testing.T, sum, pay string) {
	t.Helper()
	if got, want := ExtractTurn(sum, pay), Extract(Text(sum, pay)); !reflect.DeepEqual(got, want) {
		t.Fatalf("summary %q payload %q:\n got %#v\nwant %#v", sum, pay, got, want)
	}
}

func FuzzExtractTurn(f *testing.F) {
	f.Add("ran $ go test", "ok\nHTTP 404")
	f.Add("   ", "$ ls\nfoo")
	f.Add("HTTP", "\n503")
	f.Fuzz(func(t *testing.T, sum, pay string) { checkExtractTurn(t, sum, pay) })
}

// TestExtractTurnRecycledCollectors: extractions that share the recycled
// collectors on several goroutines at once, small turns between a turn of
// more distinct terms than a recycled collector keeps (collectorKeepMax),
// give what one extraction alone gives, empty lists as empty (not nil)
// slices, and no later extraction writes into a result kept before.
func TestExtractTurnRecycledCollectors(t *testing.T) {
	var big strings.Builder
	for i := range collectorKeepMax / 2 { // some 3 distinct identifiers a line
		fmt.Fprintf(&big, "$ go test ./pkg%d\nsrc/mod%d/file%d.go: ValueError%d\n", i, i%97, i, i)
	}
	type turn struct{ summary, payload string }
	turns := []turn{{"bash $ go test ./...", big.String()}, {"", ""}, {"note", "nothing here"}}
	for i := range 30 {
		var b strings.Builder
		for j := range 5 + 20*i {
			fmt.Fprintf(&b, "ok  github.com/acme/pkg%d/sub%d.go %d.%03ds KeyError\n", j%13, i, i, j)
		}
		turns = append(turns, turn{"tool bash", b.String()})
	}
	want := make([]Terms, len(turns))
	for k, tu := range turns {
		want[k] = ExtractTurn(tu.summary, tu.payload)
	}
	if n := len(want[0].Identifiers); n <= collectorKeepMax {
		t.Fatalf("the large turn has %d identifiers, not more than %d", n, collectorKeepMax)
	}
	if w := want[1]; w.Identifiers == nil || w.Files == nil || w.Commands == nil || w.Errors == nil {
		t.Fatalf("an empty turn's lists: %#v, want empty slices", w)
	}
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			var kept []Terms
			for k := range 3 * len(turns) {
				tu := turns[(k+g)%len(turns)]
				kept = append(kept, ExtractTurn(tu.summary, tu.payload))
			}
			for k, got := range kept {
				if !reflect.DeepEqual(got, want[(k+g)%len(turns)]) {
					errs <- fmt.Sprintf("goroutine %d, turn %d: extraction differs", g, (k+g)%len(turns))
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
