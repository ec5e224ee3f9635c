package extract

import (
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
