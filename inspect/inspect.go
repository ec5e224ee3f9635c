package inspect

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/backend"
	"github.com/contextfold/contextfold/internal/hostguard"
)

//go:embed templates/*.html assets/*
var embedded embed.FS

// Options configure an Inspector. The zero value is the safe default.
type Options struct {
	// AllowedHosts are extra host names (without a port) that a request's
	// Host header may name, besides the loopback names localhost, 127.0.0.1
	// and ::1.
	AllowedHosts []string
	// AnyHost turns the Host header check off. UNSAFE for a loopback bind:
	// a web page on any site could then read the store through a DNS name
	// rebound to 127.0.0.1. Meant only for an explicitly non-loopback bind.
	AnyHost bool
	// Now stamps "verify now" results. nil: time.Now.
	Now func() time.Time
}

// Inspector is the read-only web inspector of one store. It is an
// http.Handler, safe for concurrent use.
type Inspector struct {
	store  *contextfold.Store
	opts   Options
	hosts  *hostguard.Guard
	mux    *http.ServeMux
	pages  map[string]*template.Template
	assets fs.FS
	cache  reportCache
}

// pageNames are the templates that render a whole page.
var pageNames = []string{"timeline", "step", "scan", "recall", "evictions", "validate", "charts", "workset", "error"}

// New returns the inspector of a store. It reads nothing yet: every request
// reads the store afresh, so the pages follow a store that changes. A
// database store (store.Backend() != nil, e.g. a PostgreSQL session) is
// served through backend.ReadOnly: every write it might attempt fails, no
// row changes (CONF-08).
func New(store *contextfold.Store, opts Options) (*Inspector, error) {
	if store == nil {
		return nil, errors.New("inspect: nil store")
	}
	if be := store.Backend(); be != nil {
		// Options only shape writes (clock, session id, scrubbing).
		ro, err := contextfold.OpenBackend(backend.ReadOnly(be), contextfold.Options{})
		if err != nil {
			return nil, err
		}
		store = ro
	}
	in := &Inspector{store: store, opts: opts, pages: map[string]*template.Template{},
		hosts: hostguard.New(opts.AllowedHosts)}
	funcs := template.FuncMap{
		"num":   num,
		"f1":    func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"short": func(h string) string { return shortHash(h) },
		"query": func(k, v string) string { return "?" + url.Values{k: {v}}.Encode() },
		"join":  strings.Join,
		"add":   func(a, b int) int { return a + b },
		// head and more show the first n of a list and count the rest (a
		// timeline row's tags: the step page lists them all).
		"head": func(ss []string, n int) []string { return ss[:min(n, len(ss))] },
		"more": func(ss []string, n int) int { return max(0, len(ss)-n) },
		"sub":  func(a, b int) int { return a - b },
		"pct": func(a, b float64) string {
			if b <= 0 {
				return "0"
			}
			return strconv.FormatFloat(100*a/b, 'f', 1, 64)
		},
	}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(embedded, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("inspect: template %s: %w", name, err)
		}
		in.pages[name] = t
	}
	sub, err := fs.Sub(embedded, "assets")
	if err != nil {
		return nil, err
	}
	in.assets = sub
	in.routes()
	return in, nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

func (in *Inspector) now() time.Time {
	if in.opts.Now != nil {
		return in.opts.Now()
	}
	return time.Now()
}

func (in *Inspector) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", in.handleTimeline)
	m.HandleFunc("GET /step/{id}", in.handleStep)
	m.HandleFunc("GET /step/{id}/raw", in.handleRaw)
	m.HandleFunc("GET /scan", in.handleScan)
	m.HandleFunc("GET /recall", in.handleRecall)
	m.HandleFunc("GET /evictions", in.handleEvictions)
	m.HandleFunc("GET /validate", in.handleValidate)
	m.HandleFunc("GET /charts", in.handleCharts)
	m.HandleFunc("GET /workset", in.handleWorkset)
	m.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(in.assets)))
	m.HandleFunc("GET /api/status", in.apiStatus)
	m.HandleFunc("GET /api/steps", in.apiSteps)
	m.HandleFunc("GET /api/steps/{id}", in.apiStep)
	m.HandleFunc("GET /api/steps/{id}/verify", in.apiVerify)
	m.HandleFunc("GET /api/scan", in.apiScan)
	m.HandleFunc("GET /api/recall", in.apiRecall)
	m.HandleFunc("GET /api/evictions", in.apiEvictions)
	m.HandleFunc("GET /api/validate", in.apiValidate)
	m.HandleFunc("GET /api/charts", in.apiCharts)
	m.HandleFunc("GET /api/workset", in.apiWorkset)
	m.HandleFunc("/", in.handleNotFound)
	in.mux = m
}

// csp allows the inspector's own script and stylesheet only: no inline
// script, no inline style, no other origin, no framing, no plugins.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// ServeHTTP guards every request (GET and HEAD only, loopback Host names,
// security headers) and serves it.
func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "contextfold ui is read-only: only GET and HEAD are served", http.StatusMethodNotAllowed)
		return
	}
	if !in.opts.AnyHost && !in.hosts.Allowed(r.Host) {
		http.Error(w, "Host "+strconv.Quote(r.Host)+" is not allowed: the inspector answers only to loopback names (DNS-rebinding guard); open it as http://127.0.0.1:PORT/", http.StatusForbidden)
		return
	}
	in.mux.ServeHTTP(w, r)
}

// pageData is what every page template receives.
type pageData struct {
	Title    string
	Nav      string
	Dir      string
	StoreArg string // the store on a command line: --dir DIR or --store URL (no password)
	Database bool   // a database store (contextfold.Backend), not a directory
	Exists   bool
	Warnings []string
	Data     any
}

func (in *Inspector) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, warnings []string) {
	pd := pageData{Title: title, Nav: name, Dir: in.store.Dir(), StoreArg: in.storeArg(), Database: in.store.Backend() != nil, Data: data, Warnings: warnings}
	pd.Exists = in.hasIndex()
	var buf bytes.Buffer
	if err := in.pages[name].ExecuteTemplate(&buf, "layout", pd); err != nil {
		http.Error(w, "inspect: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// errorData is the error page.
type errorData struct {
	Status  int
	Heading string
	Message string
}

func (in *Inspector) renderError(w http.ResponseWriter, r *http.Request, status int, heading, msg string) {
	in.render(w, r, status, "error", heading, errorData{Status: status, Heading: heading, Message: msg}, nil)
}

func (in *Inspector) handleNotFound(w http.ResponseWriter, r *http.Request) {
	in.renderError(w, r, http.StatusNotFound, "Not found", "There is no page at "+r.URL.Path+".")
}

func (in *Inspector) handleTimeline(w http.ResponseWriter, r *http.Request) {
	pq, err := pageOf(r)
	if err != nil {
		in.renderError(w, r, http.StatusBadRequest, "Bad page", err.Error())
		return
	}
	d := in.timeline(filterOf(r), pq)
	in.render(w, r, http.StatusOK, "timeline", "Timeline", d, d.Warnings)
}

// pageOf parses the timeline's paging parameters: limit (1..maxPageSize,
// default defaultPageSize), and one of after and before (step ids).
func pageOf(r *http.Request) (pageQuery, error) {
	q := r.URL.Query()
	pq := pageQuery{Limit: defaultPageSize}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pq, fmt.Errorf("limit=%q is not a page size: give a whole number from 1 to %d (default %d)", v, maxPageSize, defaultPageSize)
		}
		pq.Limit = min(n, maxPageSize)
	}
	step := func(name string) (*int, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a step id: step ids are integers (the next_after or prev_before of a page)", name, v)
		}
		return &n, nil
	}
	var err error
	if pq.After, err = step("after"); err != nil {
		return pq, err
	}
	if pq.Before, err = step("before"); err != nil {
		return pq, err
	}
	if pq.After != nil && pq.Before != nil {
		return pq, errors.New("after and before are both given: a page is the steps after one step or the steps before one, give one of them")
	}
	return pq, nil
}

func filterOf(r *http.Request) timelineFilter {
	q := r.URL.Query()
	clean := func(s string) string {
		s = strings.TrimSpace(s)
		if !utf8Valid(s) || len(s) > 1024 {
			return ""
		}
		return s
	}
	f := timelineFilter{Term: clean(q.Get("term")), File: clean(q.Get("file")), Error: clean(q.Get("error"))}
	switch st := q.Get("state"); st {
	case StateVerified, StateTampered, StateBroken, StateOrphan:
		f.State = st
	}
	return f
}

// stepArgs parses the step id of the path and the page and verify
// parameters; ok is false when it already answered (404).
func (in *Inspector) stepArgs(w http.ResponseWriter, r *http.Request, api bool) (step, page int, ok bool) {
	step, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		in.notFound(w, r, api, "“"+r.PathValue("id")+"” is not a step id: step ids are integers.")
		return 0, 0, false
	}
	page = 1
	if p := r.URL.Query().Get("page"); p != "" {
		page, err = strconv.Atoi(p)
		if err != nil || page < 1 {
			in.notFound(w, r, api, "“"+p+"” is not a page number.")
			return 0, 0, false
		}
	}
	return step, page, true
}

func (in *Inspector) notFound(w http.ResponseWriter, r *http.Request, api bool, msg string) {
	if api {
		in.writeJSON(w, r, http.StatusNotFound, map[string]any{"error": msg})
		return
	}
	in.renderError(w, r, http.StatusNotFound, "Not found", msg)
}

func (in *Inspector) stepError(w http.ResponseWriter, r *http.Request, api bool, step, page int, err error) {
	switch {
	case errors.Is(err, errNoStep):
		in.notFound(w, r, api, fmt.Sprintf("Step %d is not in the recall index and has no cold node file.", step))
	case errors.Is(err, errNoPage):
		in.notFound(w, r, api, fmt.Sprintf("Step %d's payload has no page %d.", step, page))
	default:
		in.renderError(w, r, http.StatusInternalServerError, "Cannot read the step", err.Error())
	}
}

func (in *Inspector) handleStep(w http.ResponseWriter, r *http.Request) {
	step, page, ok := in.stepArgs(w, r, false)
	if !ok {
		return
	}
	d, err := in.step(step, page, r.URL.Query().Get("verify") != "")
	if err != nil {
		in.stepError(w, r, false, step, page, err)
		return
	}
	in.render(w, r, http.StatusOK, "step", fmt.Sprintf("Step %d", step), d, nil)
}

// handleRaw serves the raw payload as plain text, whole. The browser shows
// it as text (nosniff); a sandbox CSP keeps it inert even if opened alone.
func (in *Inspector) handleRaw(w http.ResponseWriter, r *http.Request) {
	step, _, ok := in.stepArgs(w, r, false)
	if !ok {
		return
	}
	h, err := in.store.Hydrate(step)
	if err != nil {
		if errors.Is(err, contextfold.ErrNodeNotFound) {
			in.notFound(w, r, false, fmt.Sprintf("Step %d is not in the recall index.", step))
			return
		}
		in.renderError(w, r, http.StatusConflict, "Not verified", fmt.Sprintf("Step %d does not verify, so its raw payload is not served whole: %v. Its step page shows what the file holds, marked unverified.", step, err))
		return
	}
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("inline; filename=\"step_%d.txt\"", step))
	w.Header().Set("Content-Length", strconv.Itoa(len(h.RawContent)))
	if r.Method != http.MethodHead {
		w.Write([]byte(h.RawContent))
	}
}

func (in *Inspector) handleScan(w http.ResponseWriter, r *http.Request) {
	d := in.scan(r.URL.Query().Get("prompt"))
	status := http.StatusOK
	if d.Message != "" {
		status = http.StatusBadRequest
	}
	in.render(w, r, status, "scan", "MMU simulator", d, nil)
}

func (in *Inspector) handleRecall(w http.ResponseWriter, r *http.Request) {
	d := in.recall(r.URL.Query().Get("q"))
	status := http.StatusOK
	if d.Message != "" {
		status = http.StatusBadRequest
	}
	in.render(w, r, status, "recall", "Recall", d, nil)
}

func (in *Inspector) handleEvictions(w http.ResponseWriter, r *http.Request) {
	d := in.evictions()
	in.render(w, r, http.StatusOK, "evictions", "Eviction log", d, d.Warnings)
}

func (in *Inspector) handleValidate(w http.ResponseWriter, r *http.Request) {
	d, err := in.validate(r.URL.Query().Get("fresh") != "")
	if err != nil {
		in.renderError(w, r, http.StatusInternalServerError, "Validate failed", err.Error())
		return
	}
	in.render(w, r, http.StatusOK, "validate", "Validate", d, nil)
}

func (in *Inspector) handleWorkset(w http.ResponseWriter, r *http.Request) {
	d, err := in.worksetLog()
	if err != nil {
		in.renderError(w, r, http.StatusInternalServerError, "Working-set log unreadable", err.Error())
		return
	}
	in.render(w, r, http.StatusOK, "workset", "Working set", d, nil)
}

func (in *Inspector) apiWorkset(w http.ResponseWriter, r *http.Request) {
	d, err := in.worksetLog()
	if err != nil {
		in.writeJSON(w, r, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	in.writeJSON(w, r, http.StatusOK, d)
}

func (in *Inspector) handleCharts(w http.ResponseWriter, r *http.Request) {
	in.render(w, r, http.StatusOK, "charts", "Charts", in.charts(), nil)
}

// writeJSON answers with v as indented JSON.
func (in *Inspector) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, "inspect: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

func (in *Inspector) apiStatus(w http.ResponseWriter, r *http.Request) {
	sn := in.snapshot(false)
	in.writeJSON(w, r, http.StatusOK, map[string]any{"summary": in.summarize(sn), "warnings": nonNil(sn.warnings), "ipcf_version": contextfold.IPCFVersion})
}

func (in *Inspector) apiSteps(w http.ResponseWriter, r *http.Request) {
	pq, err := pageOf(r)
	if err != nil {
		in.writeJSON(w, r, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	in.writeJSON(w, r, http.StatusOK, in.timeline(filterOf(r), pq))
}

func (in *Inspector) apiStep(w http.ResponseWriter, r *http.Request) {
	step, page, ok := in.stepArgs(w, r, true)
	if !ok {
		return
	}
	d, err := in.step(step, page, false)
	if err != nil {
		in.stepError(w, r, true, step, page, err)
		return
	}
	in.writeJSON(w, r, http.StatusOK, d)
}

func (in *Inspector) apiVerify(w http.ResponseWriter, r *http.Request) {
	step, _, ok := in.stepArgs(w, r, true)
	if !ok {
		return
	}
	d, err := in.step(step, 1, true)
	if err != nil {
		in.stepError(w, r, true, step, 1, err)
		return
	}
	in.writeJSON(w, r, http.StatusOK, d.Verify)
}

func (in *Inspector) apiScan(w http.ResponseWriter, r *http.Request) {
	d := in.scan(r.URL.Query().Get("prompt"))
	status := http.StatusOK
	if d.Message != "" {
		status = http.StatusBadRequest
	}
	in.writeJSON(w, r, status, d)
}

func (in *Inspector) apiRecall(w http.ResponseWriter, r *http.Request) {
	d := in.recall(r.URL.Query().Get("q"))
	status := http.StatusOK
	if d.Message != "" {
		status = http.StatusBadRequest
	}
	in.writeJSON(w, r, status, d)
}

func (in *Inspector) apiEvictions(w http.ResponseWriter, r *http.Request) {
	in.writeJSON(w, r, http.StatusOK, in.evictions())
}

func (in *Inspector) apiValidate(w http.ResponseWriter, r *http.Request) {
	d, err := in.validate(r.URL.Query().Get("fresh") != "")
	if err != nil {
		in.writeJSON(w, r, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	in.writeJSON(w, r, http.StatusOK, d)
}

func (in *Inspector) apiCharts(w http.ResponseWriter, r *http.Request) {
	in.writeJSON(w, r, http.StatusOK, in.charts())
}
