package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// endlessZeros is standard input that never ends (like /dev/zero) and
// counts what was read of it.
type endlessZeros struct{ n int64 }

func (z *endlessZeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestInputNotJSONIsRefusedAtItsHead: fold --input with text that does not
// start as a JSON object, and ingest with binary input, are refused after
// their first 64 KiB with the error naming what they hold (exit 1), not
// after reading up to the 1 GiB (--input) or 512 MiB (ingest) limit into
// memory: fold --input /dev/zero held 2.1 GB, ingest /dev/zero 1.3 GB.
func TestInputNotJSONIsRefusedAtItsHead(t *testing.T) {
	dir := t.TempDir()
	z := &endlessZeros{}
	var out, errb bytes.Buffer
	code := run([]string{"--dir", dir, "fold", "--input", "-"}, z, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "text that is not JSON") || !strings.Contains(errb.String(), "not a turn object") {
		t.Errorf("fold --input - of NUL bytes: exit %d, %s", code, errb.String())
	}
	if z.n > 1<<20 {
		t.Errorf("fold --input read %d bytes of an endless stream before refusing it", z.n)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, errs, code := cli(t, "", "--dir", dir, "ingest", "/dev/zero")
	runtime.ReadMemStats(&m1)
	if code != 1 || !strings.Contains(errs, "binary") {
		t.Errorf("ingest /dev/zero: exit %d, %s", code, errs)
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > 64<<20 {
		t.Errorf("ingest /dev/zero allocated %d MiB before refusing it, want less than 64", a>>20)
	}
	_, errs, code = cli(t, "", "--dir", dir, "fold", "--input", t.TempDir())
	if code != 1 || !strings.Contains(errs, "--input takes a file path") {
		t.Errorf("fold --input DIR: exit %d, %s", code, errs)
	}
}

// TestInputLoneSurrogateIsRefused: a lone UTF-16 surrogate escape in any
// string of an --input turn is refused (exit 1, naming the field and the
// remedy, nothing written), as invalid UTF-8 on the command line is; a
// whole surrogate pair and a U+FFFD written as such are folded. Before, the
// surrogate became U+FFFD silently and the payload stored was not the one
// given.
func TestInputLoneSurrogateIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ in, field string }{
		{`{"step_id":1,"summary":"s","raw_content":"a \ud800 b"}`, `"raw_content"`},
		{`{"step_id":1,"summary":"tail \udfff"}`, `"summary"`},
		{`{"step_id":1,"summary":"s","files":["ok.go","x\udc00.go"]}`, `"files[1]"`},
	} {
		_, errs, code := cli(t, c.in, "--dir", dir, "fold", "--input", "-")
		if code != 1 || !strings.Contains(errs, c.field) || !strings.Contains(errs, "lone UTF-16 surrogate") {
			t.Errorf("%s: exit %d, %s", c.in, code, errs)
		}
	}
	if out, errs, code := cli(t, "", "--dir", dir, "status"); code == 0 && !strings.Contains(out+errs, "0 nodes") {
		t.Errorf("a refused turn was stored: %s", out)
	}
	ok := `{"step_id":2,"summary":"kept \ufffd","raw_content":"pair \ud83d\ude00 and ` + "\uFFFD" + `"}`
	if _, errs, code := cli(t, ok, "--dir", dir, "fold", "--input", "-"); code != 0 {
		t.Fatalf("a surrogate pair and U+FFFD: exit %d, %s", code, errs)
	}
	out, _, _ := cli(t, "", "--dir", dir, "hydrate", "2", "--raw")
	if out != "pair \U0001F600 and \uFFFD" {
		t.Errorf("hydrated %q", out)
	}
}
