package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Field report 22: after ingest, no needle appears anywhere under the store
// directory (raw bytes of every file); markers name the kind; harmless lines
// survive.
func TestIngestScrubsSecretsBeforeDisk(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	needles := readNeedles(t)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := cli(t, "", "--dir", dir, "ingest", "../../scrub/testdata/22-secrets-in-tool-output.jsonl"); code != 0 {
		t.Fatalf("ingest: %s", errs)
	}
	all := storeBytes(t, dir)
	for _, n := range needles {
		if bytes.Contains(all, []byte(n)) {
			t.Errorf("secret %q reached disk", n)
		}
	}
	for _, keep := range []string{"AWS_REGION=eu-west-1", "[REDACTED:"} {
		if !bytes.Contains(all, []byte(keep)) {
			t.Errorf("%q missing from the store", keep)
		}
	}
	if !bytes.Contains(all, []byte(`"sanitized": true`)) || !bytes.Contains(all, []byte(`"redactions": `)) {
		t.Error("scrubbed nodes must say sanitized: true and count their redactions")
	}
	if _, errs, code := cli(t, "", "--dir", dir, "validate"); code != 0 {
		t.Errorf("validate: %s", errs)
	}
	// hydrate, scan and recall output carry no needle either.
	out, _, _ := cli(t, "", "--dir", dir, "recall", "--json", "environment deploy aws")
	out2, _, _ := cli(t, "", "--dir", dir, "scan", "--json", "AWS_SECRET_ACCESS_KEY DATABASE_URL")
	for _, n := range needles {
		if strings.Contains(out+out2, n) {
			t.Errorf("secret %q in command output", n)
		}
	}
	// scrub-check on the clean store finds nothing.
	if out, _, code := cli(t, "", "--dir", dir, "scrub-check"); code != 0 {
		t.Errorf("scrub-check on a scrubbed store: %d %s", code, out)
	}
}

func TestNoScrubKeepsTheReferenceProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := cli(t, "", "--dir", dir, "--no-scrub", "ingest", "../../scrub/testdata/22-secrets-in-tool-output.jsonl"); code != 0 {
		t.Fatalf("ingest: %s", errs)
	}
	all := storeBytes(t, dir)
	if !bytes.Contains(all, []byte(readNeedles(t)[0])) || bytes.Contains(all, []byte("[REDACTED:")) {
		t.Error("--no-scrub must store the payload as given")
	}
	// scrub-check audits such a store and reports, changing nothing.
	before := storeBytes(t, dir)
	out, _, code := cli(t, "", "--dir", dir, "scrub-check", "--json")
	if code != 1 || !strings.Contains(out, "aws") {
		t.Errorf("scrub-check: %d %s", code, out)
	}
	if !bytes.Equal(before, storeBytes(t, dir)) {
		t.Error("scrub-check changed the store")
	}
	for _, n := range readNeedles(t) {
		if strings.Contains(out, n) {
			t.Errorf("scrub-check printed the secret %q", n)
		}
	}
}

func readNeedles(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../scrub/testdata/22-secrets-needles.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func storeBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
			all = append(all, 0)
		}
		return nil
	})
	return all
}
