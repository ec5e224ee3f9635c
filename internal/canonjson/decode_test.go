package canonjson

import (
	"reflect"
	"strings"
	"testing"
)

// decodeCases are documents the fast decoder must read exactly as
// encoding/json does, or refuse so that encoding/json decides.
var decodeCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `12`, `-1.5e+10`, `1E5`, `0.25`,
	` {"a" : [1, "x", {"b": null}] , "c": true } `,
	`{"a": 1, "a": 2}`, // the last value wins
	`"plain"`, `"é ü 中文"`, `"tab\there \"q\" \\ \/ \b\f\n\r"`,
	`"\u00e9\u4e2d\uD83D\uDE00"`, `"\uD83D"`, `"\uD83Dx"`, `"\uDE00\uD83D"`, `"\uD83D\u0041"`,
	"\"bad \xff utf8 \xed\xa0\x80 \xc3\"", "{\"k\xff\": \"v\"}",
	`{"step_id": 3, "identifiers": ["a", "b"], "files": [], "raw_content": "x\ny"}`,
	// invalid: every one must give encoding/json's error
	``, ` `, `{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`,
	`"\x"`, `"\u12"`, `"\u12G4"`, "\"ctl \x01\"", `"unterminated`, `{"a" 1}`, `{1: 2}`,
	`[1 2]`, `{} {}`, `1 2`, `{}x`, "\xef\xbb\xbf{}", `'a'`, `NaN`, `Infinity`,
	`"\uD83D\u12"`, `"\'"`,
	strings.Repeat("[", 600) + strings.Repeat("]", 600),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

// TestDecodeMatchesEncodingJSON: Decode gives encoding/json's value or
// error text for every case, whether it shares one copy of the document or
// not (the fast decoder).
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		checkDecode(t, []byte(c))
	}
}

func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	want, werr := decodeStd(data)
	got, gerr := Decode(data)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", data, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, encoding/json %#v", data, got, want)
	}
	owned, oerr := DecodeOwned(append([]byte(nil), data...))
	if (werr == nil) != (oerr == nil) || (werr != nil && werr.Error() != oerr.Error()) || !reflect.DeepEqual(owned, want) {
		t.Fatalf("%q: DecodeOwned %#v, %v; encoding/json %#v, %v", data, owned, oerr, want, werr)
	}
	// The per-string copies of a large document give the same values.
	d := fastDecoder{data: data}
	if v, ok := d.document(); ok && !reflect.DeepEqual(v, want) {
		t.Fatalf("%q unshared: %#v, encoding/json %#v", data, v, want)
	}
}

// FuzzDecode: on any input, Decode is encoding/json (value or error).
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}
