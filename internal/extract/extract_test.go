package extract

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIdentifiers(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"ascii words and stop words", "The port and the PostgreSQL config", []string{"config", "port", "postgresql"}},
		{"numbers need 3 ascii digits", "12 123 4567 ٣٤٥ １２３ 123٤", []string{"123", "4567"}},
		{"digit start is no identifier", "2abc abc2 _ab", []string{"_ab", "abc2"}},
		{"non-decimal number may start", "²ab Ⅻab", []string{"²ab", "ⅻab"}},
		{"arabic-indic digit may not start", "٣ab", []string{}},
		{"combining marks split tokens", "abq\u0301def", []string{"abq", "def"}},
		{"dotted capital I", "İstanbul", []string{"istanbul"}},
		{"dotless i", "KAPIı", []string{"kapii"}},
		{"final sigma", "ΟΔΟΣ Σ_Σ", []string{"οδος", "σ_σ"}},
		{"turkish stop words", "bir şey için neden", []string{}},
		{"kelvin sign is NFC K", "\u212Aelvin", []string{"kelvin"}},
		{"ligature unchanged", "ﬁle", []string{"ﬁle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Identifiers(NFC(tt.text)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Identifiers(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"edit config.json now", []string{"config.js"}},
		{"app.tsx foo.pyc", []string{"app.ts", "foo.py"}},
		{`src\app\main.go and docs/a.b/c`, []string{"docs/a.b", "src/app/main.go"}},
		{"a//b.py", []string{"b.py"}},
		{"see auth/middleware.py.", []string{"auth/middleware.py"}},
		{"x/y.txté", []string{"x/y.txt"}},
		{"no files here.", []string{}},
	}
	for _, tt := range tests {
		if got := Files(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Files(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"$ docker compose up -d\nok", []string{"docker compose up -d"}},
		{"  > ls -la; rm x", []string{"ls -la"}},
		{"$ make\nnext line", []string{"make\nnext line"}},
		{"text $ not a command", []string{}},
		{"x\r$ cr is no line start", []string{}},
		{"x\u2028$ nor is U+2028", []string{}},
		{"\n\n  $\n  go test ./...", []string{"go test ./..."}},
		{"$ ls  ;", []string{"ls"}},
	}
	for _, tt := range tests {
		if got := Commands(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Commands(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"ValueError: x; KeyException; FATAL PANIC Traceback", []string{"FATAL", "KeyException", "PANIC", "Traceback", "ValueError"}},
		{"ValueErroré AError XYError", []string{"XYError"}},
		{"HTTP 404 HTTP\n503 HTTP  4٣٤ XHTTP 500", []string{"HTTP\n503", "HTTP  4٣٤", "HTTP 404", "HTTP 500"}},
		{"DB_CONN_ERROR AB_ERROR AB__ERROR", []string{"DB_CONN_ERROR"}},
	}
	for _, tt := range tests {
		if got := Errors(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Errors(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestTrimRightSpace(t *testing.T) {
	in := "x\u001c\u001f\u0085\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000 \t\n"
	if got := TrimRightSpace(in); got != "x" {
		t.Errorf("got %q", got)
	}
	for _, keep := range []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e"} {
		if got := TrimRightSpace("x" + keep); got != "x"+keep {
			t.Errorf("%U was stripped", []rune(keep)[0])
		}
	}
}

// alphabet mixes the characters the spec calls out as traps.
var alphabet = []string{
	"a", "b", "Z", "E", "r", "o", "Error", "Exception", "HTTP", " ", "  ", "\n", "\r", "\t", "$", ">", ";", ".", "-", "_", "/", `\`,
	"0", "4", "5", "123", "py", "js", "json", "tsx", "İ", "ı", "Σ", "σ", "ß", "é", "e\u0301", "\u0307", "²", "½", "Ⅻ", "٣", "１",
	"\u212A", "\u2126", "ﬁ", "µ", "\u001c", "\u0085", "\u00a0", "\u2028", "\u3000", "\u200b", "ʰ", "ǅ", "🔑", "の", "ह", "ि",
	"FATAL", "PANIC", "Traceback", "_ERROR", "DB", "the", "bir", "ve", "mı", "src", "config", "ΟΔΟΣ",
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	n := 1 + r.Intn(24)
	for i := 0; i < n; i++ {
		b.WriteString(alphabet[r.Intn(len(alphabet))])
	}
	return NFC(b.String())
}

// TestDifferentialAgainstPythonRe runs the spec's patterns in Python's own re
// module (testdata/pyextract.py) over thousands of generated texts and
// compares. It needs python3; in CI a missing python3 is a failure.
func TestDifferentialAgainstPythonRe(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required for the differential extraction test in CI")
		}
		t.Skip("python3 not found")
	}
	seed, n := int64(20261130), 4000
	if v := os.Getenv("EXTRACT_DIFF_SEED"); v != "" { // longer local runs
		seed, _ = strconv.ParseInt(v, 10, 64)
		n = 50000
	}
	r := rand.New(rand.NewSource(seed))
	texts := make([]string, n)
	for i := range texts {
		texts[i] = randomText(r)
	}
	in, _ := json.Marshal(texts)
	cmd := exec.Command(py, "testdata/pyextract.py")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want []struct {
		Identifiers, Files, Commands, Errors []string
		Fold                                 string
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	fails := 0
	for i, text := range texts {
		got := Extract(text)
		w := want[i]
		norm := func(s []string) []string {
			if s == nil {
				return []string{}
			}
			return s
		}
		if !reflect.DeepEqual(got.Identifiers, norm(w.Identifiers)) || !reflect.DeepEqual(got.Files, norm(w.Files)) ||
			!reflect.DeepEqual(got.Commands, norm(w.Commands)) || !reflect.DeepEqual(got.Errors, norm(w.Errors)) {
			fails++
			if fails <= 5 {
				t.Errorf("text %q:\n got %q\nwant ids=%q files=%q cmds=%q errs=%q", text, got, w.Identifiers, w.Files, w.Commands, w.Errors)
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d texts differ", fails, len(texts))
	}
}

func sortedUnique(ss []string) bool {
	return sort.StringsAreSorted(ss) && func() bool {
		for i := 1; i < len(ss); i++ {
			if ss[i] == ss[i-1] {
				return false
			}
		}
		return true
	}()
}

// FuzzExtract: extraction never panics, and every output list is sorted,
// unique and valid UTF-8.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{"$ make\nx", "HTTP 404", "src/a.py", "ΟΔΟΣ İ", "\xff\xfe", "a\u0307b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := Extract(Text(s, s))
		for _, list := range [][]string{terms.Identifiers, terms.Files, terms.Commands, terms.Errors} {
			if !sortedUnique(list) {
				t.Fatalf("not sorted/unique: %q", list)
			}
			for _, x := range list {
				if !utf8.ValidString(x) {
					t.Fatalf("invalid UTF-8 %q", x)
				}
			}
		}
	})
}
