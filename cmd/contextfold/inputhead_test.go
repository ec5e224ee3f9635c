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
