package inspect

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// pagesAndEndpoints lists every page and JSON endpoint with what it must
// answer on the demo store.
var pagesAndEndpoints = []struct {
	path   string
	status int
	ctype  string
	want   []string
}{
	{"/", 200, "text/html", []string{`id="timeline"`, `href="/step/137"`, "PostgreSQL port 5434 reverted back to Port 5433", "COMMAND_EXECUTION", "REFACTOR", "VERIFICATION", `class="state verified"`, "evicted"}},
	{"/?term=postgresql+5433", 200, "text/html", []string{`id="step-37"`, `id="step-137"`, "2 of 10 steps"}},
	{"/?file=tenantbilling", 200, "text/html", []string{`id="step-318"`, `id="step-447"`, "2 of 10 steps"}},
	{"/?term=migration&file=.sql", 200, "text/html", []string{`id="step-318"`, `id="step-447"`, "2 of 10 steps"}},
	{"/?error=NoSuchError", 200, "text/html", []string{`id="no-steps"`}},
	{"/?state=tampered", 200, "text/html", []string{`id="no-steps"`}},
	{"/step/137", 200, "text/html", []string{`id="step-id">137<`, "$ sed -i &#39;s/5434/5433/&#39; config.env\nPostgreSQL Port 5433 restored", "payload_sha256", "projection_sha256", "artifact_sha256", `id="verify-now"`, `id="hydrated"`, "whole payload fits the cap", "config.env", "sed -i"}},
	{"/step/137?verify=1", 200, "text/html", []string{`id="verify"`, "✓ verified", "✓ match"}},
	{"/step/137/raw", 200, "text/plain", []string{"$ sed -i 's/5434/5433/' config.env\nPostgreSQL Port 5433 restored"}},
	{"/step/601?page=2", 200, "text/html", []string{`id="pager"`, "page 2 of"}},
	{"/scan", 200, "text/html", []string{`id="scan-form"`, `id="showcase"`, "3000 tokens per call, 3500 per turn"}},
	{"/scan?prompt=" + url.QueryEscape(contextfold.DemoPrompt), 200, "text/html", []string{`id="picks"`, `data-step="342"`, `data-step="137"`, `data-step="447"`, "SHA-256 verified", "of 3500 tokens used"}},
	{"/recall", 200, "text/html", []string{`id="recall-form"`}},
	{"/recall?q=PostgreSQL+port", 200, "text/html", []string{`id="recall"`, "latest_chronological", "superseded", "historical", "related", "tier-primary"}},
	{"/evictions", 200, "text/html", []string{`id="evictions"`, "step 342", "step 137", "step 447", "Hydrations per step"}},
	{"/validate", 200, "text/html", []string{`id="validate-ok"`, "10 nodes verified"}},
	{"/charts", 200, "text/html", []string{`id="charts"`, "<svg", "Tokens per step", "Archive size over steps", "Hydrations per step", "<polyline"}},
	{"/assets/style.css", 200, "text/css", []string{"pre.payload"}},
	{"/assets/app.js", 200, "text/javascript", []string{"use strict"}},
	{"/assets/favicon.svg", 200, "image/svg+xml", []string{"<svg"}},
	{"/api/status", 200, "application/json", []string{`"steps": 10`, `"evicted": 3`}},
	{"/api/steps", 200, "application/json", []string{`"step_id": 137`, `"action_type": "COMMAND_EXECUTION"`, `"state": "verified"`}},
	{"/api/steps?term=billing", 200, "application/json", []string{`"step_id": 342`}},
	{"/api/steps/137", 200, "application/json", []string{`"page_text"`, `"hydrate_ok": true`}},
	{"/api/steps/137/verify", 200, "application/json", []string{`"ok": true`, `"state": "verified"`, `"recomputed"`}},
	{"/api/scan?prompt=" + url.QueryEscape(contextfold.DemoPrompt), 200, "application/json", []string{`"selected"`, `"ranked"`, `"why"`}},
	{"/scan?prompt=" + url.QueryEscape(contextfold.DemoPrompt), 200, "text/html", []string{`id="ranked"`, `id="ranked-picks"`, "stem of", `id="ranked-superseded"`}},
	{"/scan?prompt=" + url.QueryEscape("thanks, go on"), 200, "text/html", []string{`id="ranked-empty"`}},
	{"/api/recall?q=PostgreSQL+port", 200, "application/json", []string{`"status": "latest_chronological"`}},
	{"/api/evictions", 200, "application/json", []string{`"step_id": 342`}},
	{"/api/validate", 200, "application/json", []string{`"ok": true`, `"passed": 10`}},
	{"/api/charts", 200, "application/json", []string{`"archive_bytes"`, `"hydrations": 1`}},
	// Bad input: 404 pages and messages, never a panic.
	{"/step/abc", 404, "text/html", []string{"is not a step id"}},
	{"/step/99999", 404, "text/html", []string{"Step 99999 is not in the recall index"}},
	{"/step/137?page=2", 404, "text/html", []string{"has no page 2"}},
	{"/step/137?page=-1", 404, "text/html", []string{"is not a page number"}},
	{"/step/99999/raw", 404, "text/html", []string{"not in the recall index"}},
	{"/api/steps/99999", 404, "application/json", []string{`"error"`}},
	{"/api/steps/abc/verify", 404, "application/json", []string{`"error"`}},
	{"/nowhere", 404, "text/html", []string{"There is no page at /nowhere"}},
	{"/scan?prompt=%ff%fe", 400, "text/html", []string{`id="scan-message"`, "not valid UTF-8"}},
	{"/scan?prompt=" + strings.Repeat("x", maxQueryBytes+1), 400, "text/html", []string{"bytes; the inspector takes up to"}},
	{"/scan?prompt=zzzqqq+nothing+matches", 200, "text/html", []string{"nothing is hydrated", "term unmatched"}},
	{"/recall?q=%ff", 400, "text/html", []string{`id="recall-message"`}},
	{"/api/scan?prompt=%ff", 400, "application/json", []string{`"message"`}},
}

func TestPagesAndEndpoints(t *testing.T) {
	srv, _ := sharedServer(t)
	for _, tc := range pagesAndEndpoints {
		resp, body := get(t, srv, tc.path)
		name := tc.path
		if len(name) > 80 {
			name = name[:80] + "…"
		}
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: status %d, want %d\n%s", name, resp.StatusCode, tc.status, body[:min(len(body), 600)])
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", name, ct, tc.ctype)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: body lacks %q", name, w)
			}
		}
		if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: missing security headers: %v", name, resp.Header)
		}
		if strings.HasPrefix(tc.ctype, "application/json") && !json.Valid([]byte(body)) {
			t.Errorf("GET %s: invalid JSON", name)
		}
	}
}

func TestScanJSONPicksShowcase(t *testing.T) {
	srv, _ := sharedServer(t)
	_, body := get(t, srv, "/api/scan?prompt="+url.QueryEscape(contextfold.DemoPrompt))
	var d struct {
		Selected []struct {
			StepID       int      `json:"step_id"`
			MatchedTerms []string `json:"matched_terms"`
			HydrateOK    bool     `json:"hydrate_ok"`
		} `json:"selected"`
		QueryTerms []struct{ Term, Fate string } `json:"query_terms"`
		Budget     float64                       `json:"budget_tokens"`
		Used       float64                       `json:"used_tokens"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, p := range d.Selected {
		got = append(got, p.StepID)
		if !p.HydrateOK || len(p.MatchedTerms) == 0 {
			t.Errorf("pick %d: hydrate_ok %v, terms %v", p.StepID, p.HydrateOK, p.MatchedTerms)
		}
	}
	if want := []int{342, 137, 447}; !equalInts(got, want) {
		t.Fatalf("scan picks %v, want %v", got, want)
	}
	if d.Budget != 3500 || d.Used <= 0 || d.Used > d.Budget {
		t.Errorf("budget %v used %v", d.Budget, d.Used)
	}
	if len(d.QueryTerms) == 0 {
		t.Error("no query terms")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDroppedIntentExplained(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	// A per-turn budget that fits only the first pick.
	policy := `{"policy_version": "1.1", "max_rehydration_tokens_per_call": 3000, "max_rehydration_tokens_per_turn": 14}`
	if err := os.WriteFile(filepath.Join(dir, contextfold.PolicyFile), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, dir, Options{})
	resp, body := get(t, srv, "/scan?prompt="+url.QueryEscape(contextfold.DemoPrompt))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, w := range []string{`id="dropped"`, "intent ownership", "of the 14-token turn budget were left", `class="term dropped"`} {
		if !strings.Contains(body, w) {
			t.Errorf("simulator page lacks %q", w)
		}
	}
}

func TestGuards(t *testing.T) {
	srv, _ := sharedServer(t)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		resp, _ := do(t, srv, m, "/step/137", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: status %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	resp, body := do(t, srv, http.MethodHead, "/step/137", nil)
	if resp.StatusCode != 200 || body != "" || resp.ContentLength <= 0 {
		t.Errorf("HEAD: status %d, body %q, length %d", resp.StatusCode, body, resp.ContentLength)
	}
	for host, want := range map[string]int{
		"evil.example":          403,
		"evil.example:80":       403,
		"127.0.0.1.nip.io:8080": 403,
		"localhost:7137":        200,
		"LOCALHOST":             200,
		"127.0.0.1":             200,
		"[::1]:7137":            200,
	} {
		resp, _ := do(t, srv, http.MethodGet, "/", map[string]string{"Host": host})
		if resp.StatusCode != want {
			t.Errorf("Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, w := range []string{"script-src 'self'", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, w) {
			t.Errorf("CSP %q lacks %q", csp, w)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows inline script: %q", csp)
	}
	open := serve(t, filepath.Join(t.TempDir(), "none"), Options{AnyHost: true})
	if resp, _ := do(t, open, http.MethodGet, "/", map[string]string{"Host": "inspector.lan:7137"}); resp.StatusCode != 200 {
		t.Errorf("AnyHost: status %d", resp.StatusCode)
	}
	allowed := serve(t, filepath.Join(t.TempDir(), "none"), Options{AllowedHosts: []string{"devbox"}})
	if resp, _ := do(t, allowed, http.MethodGet, "/", map[string]string{"Host": "devbox:7137"}); resp.StatusCode != 200 {
		t.Errorf("AllowedHosts: status %d", resp.StatusCode)
	}
}

func TestHostileContentRendersAsText(t *testing.T) {
	srv, _ := sharedServer(t)
	for _, path := range []string{"/step/600", "/", "/scan?prompt=hostile+payload", "/recall?q=hostile+payload", "/evictions", "/charts", "/validate"} {
		resp, body := get(t, srv, path)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		for _, bad := range []string{"<script>window", "<img src=x", "<svg onload", "<iframe", "<style>body", `<b onmouseover`, "\x1b", "\x00", "\u202E", "</pre><style>"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: hostile %q reached the page unescaped", path, bad)
			}
		}
	}
	_, body := get(t, srv, "/step/600")
	for _, w := range []string{
		"&lt;script&gt;window.__pwned = &#39;script&#39;;",
		"&lt;img src=x onerror=&#34;window.__pwned=&#39;img&#39;&#34;&gt;",
		`<span class="ctl" title="U&#43;001B">␛</span>[31mRED ANSI`,
		`<span class="ctl" title="U&#43;000D">␍</span>`,
		`<span class="ctl" title="U&#43;0000">␀</span>`,
		`<span class="ctl" title="U&#43;202E">\u202e</span>`,
		`<span class="ctl" title="U&#43;007F">␡</span>`,
		"{{.Secret}} ${jndi:ldap://x} %s %n &amp;amp; &amp;lt;b&amp;gt;",
		strings.Repeat("A-huge-line of-many words_that wraps ", 400),
		strings.Repeat("unbroken", 80),
		"&lt;b onmouseover=",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("step page lacks the escaped text %q", w)
		}
	}
	// The JSON API keeps the payload exact (JSON-escaped, never HTML).
	_, js := get(t, srv, "/api/steps/600")
	var d struct {
		PageText string `json:"page_text"`
		Summary  struct {
			Summary string `json:"summary"`
		} `json:"step"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	if d.PageText != hostilePayload || d.Summary.Summary != hostileSummary {
		t.Errorf("API payload differs from the stored one")
	}
	// The plain-text view is text, sandboxed.
	resp, raw := get(t, srv, "/step/600/raw")
	if raw != hostilePayload || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("raw view: type %q, CSP %q, equal %v", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"), raw == hostilePayload)
	}
}

func TestLargePayloadIsPagedAndCapped(t *testing.T) {
	srv, _ := sharedServer(t)
	var pages []string
	for p := 1; ; p++ {
		_, body := get(t, srv, "/api/steps/601?page="+itoa(p))
		var d struct {
			PageText  string `json:"page_text"`
			Pages     int    `json:"pages"`
			Truncated bool   `json:"truncated"`
			Hydrated  string `json:"hydrated_content"`
			Tokens    int    `json:"hydrated_tokens"`
		}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("page %d: %v", p, err)
		}
		if len(d.PageText) > payloadPageBytes {
			t.Errorf("page %d has %d bytes", p, len(d.PageText))
		}
		pages = append(pages, d.PageText)
		if p == 1 {
			if !d.Truncated || d.Tokens != 3000 || len([]rune(d.Hydrated)) != 12000 || !strings.HasPrefix(bigPayload, d.Hydrated) {
				t.Errorf("hydrated view: truncated %v, tokens %d, %d code points", d.Truncated, d.Tokens, len([]rune(d.Hydrated)))
			}
		}
		if p >= d.Pages {
			break
		}
		if p > 100 {
			t.Fatal("too many pages")
		}
	}
	if len(pages) < 3 {
		t.Errorf("%d pages, want at least 3", len(pages))
	}
	if strings.Join(pages, "") != bigPayload {
		t.Error("the pages do not add up to the payload")
	}
	resp, body := get(t, srv, "/step/601")
	if resp.StatusCode != 200 || !strings.Contains(body, `id="next-page"`) || !strings.Contains(body, `id="truncated"`) {
		t.Errorf("step 601 page: status %d, pager/truncation missing", resp.StatusCode)
	}
	if len(body) > 3*payloadPageBytes {
		t.Errorf("step page is %d bytes: the payload is not paged", len(body))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestVerificationStates(t *testing.T) {
	dir := demoCopy(t)
	damage(t, dir)
	srv := serve(t, dir, Options{})

	_, body := get(t, srv, "/api/steps")
	var tl struct {
		Steps []struct {
			StepID int    `json:"step_id"`
			State  string `json:"state"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(body), &tl); err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for _, s := range tl.Steps {
		got[s.StepID] = s.State
	}
	for step, want := range map[int]string{37: StateVerified, 91: StateBroken, 137: StateTampered, 777: StateOrphan, 342: StateVerified} {
		if got[step] != want {
			t.Errorf("step %d: state %q, want %q", step, got[step], want)
		}
	}

	_, body = get(t, srv, "/step/137?verify=1")
	for _, w := range []string{"UNVERIFIED", "Port 6666 restored", "✗ tampered", "the recomputed hash differs from the stored one", `id="hydrate-error"`, "repair --apply"} {
		if !strings.Contains(body, w) {
			t.Errorf("tampered step page lacks %q", w)
		}
	}
	_, body = get(t, srv, "/api/steps/137/verify")
	if !strings.Contains(body, `"ok": false`) || !strings.Contains(body, `"state": "tampered"`) {
		t.Errorf("verify of a tampered step: %s", body)
	}
	resp, body := get(t, srv, "/step/91?verify=1")
	if resp.StatusCode != 200 || !strings.Contains(body, "broken") || !strings.Contains(body, "no readable cold node file") {
		t.Errorf("broken step page: %d", resp.StatusCode)
	}
	resp, body = get(t, srv, "/step/777")
	if resp.StatusCode != 200 || !strings.Contains(body, "orphan") || !strings.Contains(body, "PostgreSQL configured on Port 5433") {
		t.Errorf("orphan step page: %d", resp.StatusCode)
	}
	resp, body = get(t, srv, "/step/137/raw")
	if resp.StatusCode != http.StatusConflict || strings.Contains(body, "Port 6666") {
		t.Errorf("raw view of a tampered step: %d", resp.StatusCode)
	}
	_, body = get(t, srv, "/validate")
	for _, w := range []string{`id="validate-bad"`, "broken_reference", "integrity", "orphan", "contextfold repair --apply", `href="/step/137"`} {
		if !strings.Contains(body, w) {
			t.Errorf("validate page lacks %q", w)
		}
	}
	_, body = get(t, srv, "/?state=tampered")
	if !strings.Contains(body, `id="step-137"`) || strings.Contains(body, `id="step-37"`) {
		t.Error("state filter")
	}
}

func TestEmptyAndMissingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing-here", ".contextfold")
	srv := serve(t, dir, Options{})
	for _, p := range []string{"/", "/scan?prompt=PostgreSQL", "/recall?q=port", "/evictions", "/validate", "/charts", "/api/steps", "/api/charts"} {
		resp, body := get(t, srv, p)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s on a missing store: %d %s", p, resp.StatusCode, body)
		}
	}
	_, body := get(t, srv, "/")
	if !strings.Contains(body, `id="no-store"`) || !strings.Contains(body, "contextfold demo --dir") {
		t.Error("no hint to create a store")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("browsing created the store directory: %v", err)
	}
}

func TestBadStoreFilesShowWarnings(t *testing.T) {
	dir := demoCopy(t)
	for _, f := range []string{contextfold.IndexFile, contextfold.EvictionLogFile} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, dir, Options{})
	for _, p := range []string{"/", "/step/137", "/scan?prompt=port", "/recall?q=port", "/evictions", "/validate", "/charts", "/api/status"} {
		resp, body := get(t, srv, p)
		if resp.StatusCode >= 500 {
			t.Errorf("GET %s on a corrupt store: %d %s", p, resp.StatusCode, body)
		}
	}
	_, body := get(t, srv, "/")
	if !strings.Contains(body, `class="banner bad"`) || !strings.Contains(body, "recall_index.json") {
		t.Error("the timeline does not warn about the corrupt index")
	}
	_, body = get(t, srv, "/validate")
	if !strings.Contains(body, "store_file") {
		t.Error("validate page lacks the store_file finding")
	}
}
