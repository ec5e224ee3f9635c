package extract

import (
	"strings"
	"unicode"
)

// FilePaths returns the file paths mentioned in text, for our own derived
// data (the harness's target_files, summaries), where the reference's Files
// (spec §4, kept exactly as it is for interop) invents names: it cuts
// "README.rst" to "README.rs", takes "pip.pypa.io" for "pip.py" and
// "requests.py" after an escape for "equests.py", and reads
// "172.16.1.1/-172.16.1.1" as a file.
//
// Escapes of JSON or C strings in text (\n, \r, \t, \", \\) are read as
// what they stand for. A word of text (split at white space, quotes,
// brackets, commas, ';', '=' and '|'; then cut at "::" (a test id) and
// trimmed of trailing '.', ':', '!', '?' and a ":line" or ":line:col"
// suffix) is a file path when
//
//   - it holds no "://" (a URL), does not start with '-' (a flag) or '@', and
//     none of its '/'-separated segments starts with '-';
//   - its last segment is a name and an extension: a '.' with at least one
//     character before it, an extension of 1–10 ASCII letters and digits
//     with at least one letter, and a name holding a letter; and
//   - it holds a '/' or '\' (a path: any such extension), or its extension
//     is a well-known source, document or configuration extension
//     (KnownFileExtensions: "README.rst" yes, "pip.pypa.io" no).
//
// Backslashes become '/'. The result is sorted and unique; nil when none.
func FilePaths(text string) []string {
	// Text escaped as in JSON or a C string ("line\nnext", "C:\\src"): an
	// escape is not part of a name.
	text = escapes.Replace(text)
	var out []string
	for w := range strings.FieldsFuncSeq(text, isPathSep) {
		if p, ok := filePath(w); ok {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return SortUnique(out)
}

var escapes = strings.NewReplacer(`\\`, `\`, `\n`, " ", `\r`, " ", `\t`, " ", `\"`, " ")

func isPathSep(r rune) bool {
	switch r {
	case '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', '=', '|', ';':
		return true
	}
	return unicode.IsSpace(r)
}

func filePath(w string) (string, bool) {
	if k := strings.Index(w, "::"); k > 0 { // a test id: tests/test_api.py::test_get
		w = w[:k]
	}
	w = strings.TrimRight(w, ".:!?")
	// file.go:12 or file.go:12:5
	for i := 0; i < 2; i++ {
		if k := strings.LastIndexByte(w, ':'); k > 0 && k < len(w)-1 && isDigits(w[k+1:]) {
			w = w[:k]
		}
	}
	w = strings.TrimRight(w, ".:")
	if w == "" || strings.Contains(w, "://") || w[0] == '-' || w[0] == '@' {
		return "", false
	}
	p := strings.ReplaceAll(w, `\`, "/")
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if strings.HasPrefix(s, "-") {
			return "", false
		}
	}
	last := segs[len(segs)-1]
	dot := strings.LastIndexByte(last, '.')
	if dot <= 0 || dot == len(last)-1 {
		return "", false
	}
	name, ext := last[:dot], last[dot+1:]
	if len(ext) > 10 || !asciiAlnumWithLetter(ext) || !hasLetter(name) {
		return "", false
	}
	if len(segs) == 1 && !KnownFileExtensions[strings.ToLower(ext)] {
		return "", false
	}
	return p, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func asciiAlnumWithLetter(s string) bool {
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return letter
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// KnownFileExtensions are the extensions (lower case) that make a bare
// name, without a directory, a file for FilePaths.
var KnownFileExtensions = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(`py pyi pyx ipynb js mjs cjs jsx ts tsx vue svelte json jsonl json5 md rst txt adoc
		sql sh bash zsh fish ps1 bat yml yaml toml ini cfg conf env properties xml html htm css scss sass less
		rs go mod sum c h cc cpp cxx hpp hh cs java kt kts scala groovy gradle rb php swift m mm lua pl pm r jl
		ex exs erl hrl hs ml mli clj cljs dart zig nim pony proto graphql gql tf tfvars hcl nix
		lock log csv tsv diff patch cmake mk dockerfile`) {
		m[e] = true
	}
	return m
}()
