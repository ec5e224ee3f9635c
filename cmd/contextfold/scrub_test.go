package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/scrub/scrubtest"
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

// TestScrubAllowlistAndSessionID: the allowlist in store_settings.json lets
// known-safe findings through the fold, placeholders stay, real secrets go;
// a secret in a session id (fold --session, fold --input) is scrubbed too;
// scrub-check finds a session-id secret in an unscrubbed store and reports
// what the allowlist and the placeholders let through.
func TestScrubAllowlistAndSessionID(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	dir := filepath.Join(t.TempDir(), ".contextfold")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "store_settings.json"), []byte(`{"scrub": true, "scrub_allowlist": {"description": "test fixtures", "stopwords": ["fixture"]}}`), 0o644)
	payload := "proxy http://user:pass@10.0.0.1:3128\nDB_PASSWORD=fixture-Pw-8812ab\nAPI_TOKEN=tok_live_9f8e7d6c5b4a3210\n"
	log := filepath.Join(t.TempDir(), "out.log")
	os.WriteFile(log, []byte(payload), 0o644)
	secretSession := "deploy AKIAZ4QXLEWJTNMA7B3D"
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "1", "proxy auth test", "--file", log, "--session", secretSession); code != 0 {
		t.Fatalf("fold: %s", errs)
	}
	in := `{"step_id": 2, "summary": "s", "session_id": "AKIAZ4QXLEWJTNMA7B3C"}`
	if _, errs, code := cli(t, in, "--dir", dir, "fold", "--input", "-"); code != 0 {
		t.Fatalf("fold --input: %s", errs)
	}
	all := string(storeBytes(t, dir))
	for _, gone := range []string{"tok_live_9f8e7d6c5b4a3210", "AKIAZ4QXLEWJTNMA7B3D", "AKIAZ4QXLEWJTNMA7B3C"} {
		if strings.Contains(all, gone) {
			t.Errorf("%q reached disk", gone)
		}
	}
	for _, kept := range []string{"http://user:pass@10.0.0.1:3128", "DB_PASSWORD=fixture-Pw-8812ab"} {
		if !strings.Contains(all, kept) {
			t.Errorf("%q (placeholder or allowlisted) was redacted", kept)
		}
	}
	out, _, code := cli(t, "", "--dir", dir, "scrub-check")
	if code != 0 || !strings.Contains(out, "allowlist: stopword fixture") || !strings.Contains(out, "(placeholder)") {
		t.Errorf("scrub-check of the scrubbed store: %d\n%s", code, out)
	}
	// An unscrubbed store: scrub-check names the session id.
	raw := filepath.Join(t.TempDir(), ".contextfold")
	cli(t, in, "--dir", raw, "--no-scrub", "fold", "--input", "-")
	out, _, code = cli(t, "", "--dir", raw, "scrub-check")
	if code != 1 || !strings.Contains(out, "[session_id]") {
		t.Errorf("scrub-check of a session-id secret: %d\n%s", code, out)
	}
	// A bad allowlist is named.
	os.WriteFile(filepath.Join(dir, "store_settings.json"), []byte(`{"scrub_allowlist": {"regexes": ["("]}}`), 0o644)
	if _, errs, code := cli(t, "", "--dir", dir, "fold", "3", "x"); code != 1 || !strings.Contains(errs, "store_settings.json") || !strings.Contains(errs, "regex") {
		t.Errorf("bad allowlist: %d %s", code, errs)
	}
}

// TestScrubCheckAuditsEveryField: scrub-check finds a secret in any string
// a node holds — files, commands and errors given on the command line,
// identifiers — not only in its session id, summary and payload; and in
// the index entry of a node that cannot be read.
func TestScrubCheckAuditsEveryField(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	dir := filepath.Join(t.TempDir(), ".contextfold")
	tok := "ghp_qcFaEEXpmyPmqB5niESDhTOWIVCEjBibggX5"
	if _, errs, code := cli(t, "", "--dir", dir, "--no-scrub", "fold", "2", "x", "--files", tok+".py", "--commands", "echo "+tok, "--errors", tok+"Error"); code != 0 {
		t.Fatalf("fold: %s", errs)
	}
	out, _, code := cli(t, "", "--dir", dir, "scrub-check")
	if code != 1 || !strings.Contains(out, "[files commands errors]") || strings.Contains(out, tok) {
		t.Errorf("scrub-check of secrets in the lists: exit %d\n%s", code, out)
	}
	// Identifiers (lower-cased words of the payload) hold it too.
	in := `{"step_id": 3, "summary": "s", "raw_content": "key sk_live_4ec39hqlyjwdarjtt1zdp7dcq8"}`
	cli(t, in, "--dir", dir, "--no-scrub", "fold", "--input", "-")
	out, _, _ = cli(t, "", "--dir", dir, "scrub-check", "--json")
	var rep struct {
		Hits []struct {
			StepID int      `json:"step_id"`
			Fields []string `json:"fields"`
		} `json:"nodes_with_secrets"`
	}
	mustJSON(t, out, &rep)
	if len(rep.Hits) != 2 || rep.Hits[1].StepID != 3 || strings.Join(rep.Hits[1].Fields, ",") != "raw_content,identifiers" {
		t.Errorf("scrub-check --json: %+v", rep.Hits)
	}
	// A node that cannot be read: its index entry is audited.
	os.WriteFile(filepath.Join(dir, "cold_nodes", "step_000002.json"), []byte("torn"), 0o644)
	out, _, code = cli(t, "", "--dir", dir, "scrub-check")
	if code != 1 || !strings.Contains(out, "step 2 ") || !strings.Contains(out, "[files commands errors]") {
		t.Errorf("scrub-check of an unreadable node: exit %d\n%s", code, out)
	}
}

// sampleOf returns the generated token of a rule (scrubtest), so that no
// secret-looking literal is committed.
func sampleOf(t *testing.T, rule string) string {
	t.Helper()
	sc, err := scrub.New()
	if err != nil {
		t.Fatal(err)
	}
	samples, _ := scrubtest.Samples(sc)
	for _, s := range samples {
		if s.RuleID == rule && s.Prefix == "" {
			return s.Secret
		}
	}
	t.Fatalf("no generated token for %s", rule)
	return ""
}

// The security test's repro: a token followed by punctuation is redacted
// by fold (it reached the cold node, the index and identifiers before);
// scrub-check agrees with the store fold wrote. On a store written without
// scrubbing, scrub-check finds the GCP, SendGrid and Pulumi keys it called
// clean, in the fields that hold them, identifiers (lower-cased) included,
// and does not claim the store was merely written without scrubbing. A
// redaction marker in URL user-info is not a credential.
func TestScrubCheckAgreesWithFold(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	stripe := sampleOf(t, "stripe-access-token")
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if _, errs, code := cli(t, "uploaded backup to /srv/keys/"+stripe+".json\n", "--dir", dir, "fold", "4", "backup", "--file", "-"); code != 0 {
		t.Fatalf("fold: %s", errs)
	}
	if all := storeBytes(t, dir); bytes.Contains(bytes.ToLower(all), []byte(strings.ToLower(stripe))) {
		t.Errorf("the Stripe key reached the store")
	}
	if out, _, code := cli(t, "", "--dir", dir, "scrub-check"); code != 0 || !strings.Contains(out, "0 contain secrets") {
		t.Errorf("scrub-check on the store fold just wrote: exit %d\n%s", code, out)
	}

	old := filepath.Join(t.TempDir(), ".contextfold")
	gcp, sg, pul := sampleOf(t, "gcp-api-key"), sampleOf(t, "sendgrid-api-token"), sampleOf(t, "pulumi-api-token")
	payload := "GET /maps?key=" + gcp + "&q=1\nmail(" + sg + "), stack login token(" + pul + ")\n"
	if _, errs, code := cli(t, payload, "--dir", old, "--no-scrub", "fold", "1", "calls", "--file", "-"); code != 0 {
		t.Fatalf("fold --no-scrub: %s", errs)
	}
	out, _, code := cli(t, "", "--dir", old, "scrub-check")
	for _, want := range []string{"gcp-api-key", "sendgrid-api-token", "pulumi-api-token", "identifiers", "fold the session again into a new store"} {
		if !strings.Contains(out, want) {
			t.Errorf("scrub-check of an unscrubbed store does not say %q: exit %d\n%s", want, code, out)
		}
	}
	if code != 1 || strings.Contains(out, "was written without scrubbing;") {
		t.Errorf("scrub-check: exit %d\n%s", code, out)
	}
	for _, tok := range []string{gcp, sg, pul} {
		if strings.Contains(strings.ToLower(out), strings.ToLower(tok)) {
			t.Errorf("scrub-check printed a secret")
		}
	}

	marked := filepath.Join(t.TempDir(), ".contextfold")
	cli(t, "git push https://[REDACTED:github-pat]@github.com/acme/widget.git\n", "--dir", marked, "--no-scrub", "fold", "1", "push", "--file", "-")
	if out, _, code := cli(t, "", "--dir", marked, "scrub-check"); code != 0 {
		t.Errorf("scrub-check reads its own marker as a credential: exit %d\n%s", code, out)
	}
}
