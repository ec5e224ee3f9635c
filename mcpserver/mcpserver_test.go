package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// demoStore returns a store holding the spec's demo session.
func demoStore(t testing.TB) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper rewrites a cold node file, replacing old by new in its bytes (the
// recorded hashes stay as they were).
func tamper(t testing.TB, s *contextfold.Store, step int, old, new string) {
	t.Helper()
	p := s.NodePath(step)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("step %d: %q not in %s", step, old, p)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// connect serves s in memory and returns a connected SDK client session.
func connect(t testing.TB, s *contextfold.Store) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(s, mcpserver.Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its structured result into out (when the
// call succeeded). It returns the result.
func call(t testing.TB, cs *mcp.ClientSession, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if out != nil && !res.IsError {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %v in %s", name, err, data)
		}
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsListed(t *testing.T) {
	cs := connect(t, demoStore(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{mcpserver.ToolRecall: true, mcpserver.ToolFetch: true, mcpserver.ToolScan: true,
		mcpserver.ToolFold: true, mcpserver.ToolEvict: true, mcpserver.ToolStatus: true, mcpserver.ToolValidate: true}
	for _, tool := range res.Tools {
		if !want[tool.Name] {
			t.Errorf("unexpected tool %q", tool.Name)
		}
		delete(want, tool.Name)
		if len(tool.Description) < 80 || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: description, input or output schema missing", tool.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("tools missing: %v", want)
	}
}

func TestRecallTemporalDisambiguation(t *testing.T) {
	cs := connect(t, demoStore(t))
	var r mcpserver.RecallResult
	call(t, cs, mcpserver.ToolRecall, mcpserver.RecallArgs{Query: contextfold.DemoRecallQuery}, &r)
	if len(r.Candidates) < 2 || r.Candidates[0].Status != contextfold.StatusLatest || r.Candidates[0].StepID != 137 {
		t.Fatalf("recall %q: %+v", contextfold.DemoRecallQuery, r.Candidates)
	}
	if last := r.Candidates[len(r.Candidates)-1]; last.Status != contextfold.StatusRelated && last.Status != contextfold.StatusHistorical {
		t.Errorf("last candidate labelled %q", last.Status)
	}
	var lim mcpserver.RecallResult
	call(t, cs, mcpserver.ToolRecall, mcpserver.RecallArgs{Query: contextfold.DemoRecallQuery, Limit: 1}, &lim)
	if len(lim.Candidates) != 1 || lim.Omitted != len(r.Candidates)-1 {
		t.Errorf("limit 1: %d candidates, %d omitted", len(lim.Candidates), lim.Omitted)
	}
}

func TestScanDemoPrompt(t *testing.T) {
	cs := connect(t, demoStore(t))
	var r mcpserver.ScanResult
	call(t, cs, mcpserver.ToolScan, mcpserver.ScanArgs{Prompt: contextfold.DemoPrompt}, &r)
	var got []int
	for _, p := range r.Selected {
		got = append(got, p.StepID)
		if p.Reason == "" || len(p.MatchedTerms) == 0 {
			t.Errorf("step %d: no reason", p.StepID)
		}
	}
	if len(got) != 3 || got[0] != 342 || got[1] != 137 || got[2] != 447 {
		t.Errorf("scan picked %v, want [342 137 447]", got)
	}
}

func TestFetchVerifiedAndPaged(t *testing.T) {
	s := demoStore(t)
	long := strings.Repeat("línea 🧪 PostgreSQL\n", 1500) // 30,000 code points, over the 12,000 cap
	if _, err := s.Fold(contextfold.Turn{StepID: 900, Summary: "long log", RawContent: long}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	var got strings.Builder
	offset := 0
	for page := 0; ; page++ {
		var r mcpserver.FetchResult
		res := call(t, cs, mcpserver.ToolFetch, map[string]any{"step_id": 900, "offset": offset}, &r)
		if res.IsError {
			t.Fatal(text(res))
		}
		if n := utf8.RuneCountInString(r.Content); n > 12000 || !r.Verified || r.Offset != offset {
			t.Fatalf("page %d: %d code points, verified %v, offset %d", page, n, r.Verified, r.Offset)
		}
		got.WriteString(r.Content)
		if !r.Truncated {
			break
		}
		offset = r.NextOffset
	}
	if got.String() != long {
		t.Fatal("pages do not reassemble the stored content")
	}
	// By hash: the same node.
	var byHash mcpserver.FetchResult
	e, _ := s.Entry(137)
	call(t, cs, mcpserver.ToolFetch, mcpserver.FetchArgs{Hash: "sha256:" + e.ArtifactSHA256}, &byHash)
	if byHash.StepID != 137 {
		t.Errorf("by hash: step %d", byHash.StepID)
	}
}

// Field report 20 and the protocol errors: readable tool errors, never a
// crash; an unknown tool is a JSON-RPC error.
func TestToolErrors(t *testing.T) {
	s := demoStore(t)
	tamper(t, s, 137, "restored", "RESTORED")
	if err := os.Remove(s.NodePath(200)); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	cases := []struct {
		name string
		tool string
		args any
		want string
	}{
		{"not found", mcpserver.ToolFetch, map[string]any{"step_id": 4242}, "NodeNotFoundError"},
		{"tampered", mcpserver.ToolFetch, map[string]any{"step_id": 137}, "IntegrityCheckError"},
		{"missing file", mcpserver.ToolFetch, map[string]any{"step_id": 200}, "BrokenReferenceError"},
		{"unknown hash", mcpserver.ToolFetch, map[string]any{"hash": "sha256:" + strings.Repeat("0", 64)}, "NodeNotFoundError"},
		{"malformed hash", mcpserver.ToolFetch, map[string]any{"hash": "not-a-hash"}, "not a SHA-256 digest"},
		{"no reference", mcpserver.ToolFetch, map[string]any{}, "no step reference"},
		{"string step id", mcpserver.ToolFetch, map[string]any{"step_id": "abc"}, "step_id"},
		{"negative offset", mcpserver.ToolFetch, map[string]any{"step_id": 91, "offset": -1}, "offset"},
		{"evict unknown", mcpserver.ToolEvict, map[string]any{"step_id": 4242}, "NodeNotFoundError"},
		{"empty query", mcpserver.ToolRecall, map[string]any{"query": " "}, "query is empty"},
		{"fold no summary", mcpserver.ToolFold, map[string]any{"step_id": 1}, "summary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, cs, c.tool, c.args, nil)
			if !res.IsError || !strings.Contains(text(res), c.want) {
				t.Errorf("isError %v, text %q; want %q", res.IsError, text(res), c.want)
			}
			if strings.Contains(text(res), "RESTORED") {
				t.Error("tampered content was returned")
			}
		})
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: %v, want a JSON-RPC error", err)
	}
	// The tampered node is refused as a resource too.
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.StepURI(137)}); err == nil || !strings.Contains(err.Error(), "IntegrityCheckError") {
		t.Errorf("tampered resource: %v", err)
	}
	var v mcpserver.ValidateResult
	call(t, cs, mcpserver.ToolValidate, mcpserver.NoArgs{}, &v)
	kinds := map[string]bool{}
	for _, f := range v.Findings {
		kinds[f.Kind] = true
	}
	if v.OK || !kinds[contextfold.KindIntegrity] || !kinds[contextfold.KindBrokenReference] {
		t.Errorf("validate: %+v", v)
	}
}

// Field report 23: a torn blob (bytes that do not match the recorded hash)
// is refused, never pasted.
func TestTornBlobRefused(t *testing.T) {
	var fr struct {
		Blob   string `json:"blob_on_disk_utf8"`
		Prompt string `json:"hydrate_prompt"`
	}
	data, err := os.ReadFile("testdata/23-torn-cold-blob.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fr); err != nil {
		t.Fatal(err)
	}
	s, _ := contextfold.Open(t.TempDir(), contextfold.Options{})
	full := fr.Blob + "ok  example.com/widget/pkg240\t0.31s\nPASS\n"
	if _, err := s.Fold(contextfold.Turn{StepID: 7, Summary: "go test ./... output (toolu_01FAKE0000000000002301)", RawContent: full}); err != nil {
		t.Fatal(err)
	}
	tamper(t, s, 7, `pkg240\t0.31s\nPASS\n`, ``) // the write stopped early
	cs := connect(t, s)
	var sr mcpserver.ScanResult
	call(t, cs, mcpserver.ToolScan, mcpserver.ScanArgs{Prompt: fr.Prompt}, &sr)
	if len(sr.Selected) != 1 || sr.Selected[0].StepID != 7 {
		t.Fatalf("scan: %+v", sr.Selected)
	}
	res := call(t, cs, mcpserver.ToolFetch, map[string]any{"step_id": 7}, nil)
	if !res.IsError || !strings.HasPrefix(text(res), "IntegrityCheckError") || strings.Contains(text(res), "pkg000") {
		t.Fatalf("torn blob: isError %v, %q", res.IsError, text(res))
	}
}

func TestFoldEvictStatus(t *testing.T) {
	s, _ := contextfold.Open(t.TempDir(), contextfold.Options{})
	cs := connect(t, s)
	var f mcpserver.FoldResult
	call(t, cs, mcpserver.ToolFold, mcpserver.FoldArgs{StepID: 3, Summary: "ran migrations", Content: "$ make migrate\nApplied 0042_billing.sql"}, &f)
	if f.AlreadyIndexed || f.ArtifactSHA256 == "" || f.StepID != 3 {
		t.Fatalf("fold: %+v", f)
	}
	call(t, cs, mcpserver.ToolFold, mcpserver.FoldArgs{StepID: 3, Summary: "ran migrations", Content: "$ make migrate\nApplied 0042_billing.sql"}, &f)
	if !f.AlreadyIndexed || f.Warning != "" {
		t.Errorf("the same turn again: %+v", f)
	}
	f = mcpserver.FoldResult{}
	call(t, cs, mcpserver.ToolFold, mcpserver.FoldArgs{StepID: 3, Summary: "other"}, &f)
	if !f.AlreadyIndexed || !strings.Contains(f.Warning, "NOT stored") {
		t.Errorf("another turn at step 3: %+v", f)
	}
	var ev mcpserver.EvictResult
	call(t, cs, mcpserver.ToolEvict, mcpserver.StepArgs{StepID: 3}, &ev)
	if ev.StepID != 3 || ev.EvictedAt == "" {
		t.Errorf("evict: %+v", ev)
	}
	var st mcpserver.StatusResult
	call(t, cs, mcpserver.ToolStatus, mcpserver.NoArgs{}, &st)
	if st.Total != 1 || st.Evicted != 1 || st.PolicyHash == "" || st.Policy["max_rehydration_tokens_per_call"] == nil {
		t.Errorf("status: %+v", st)
	}
	var v mcpserver.ValidateResult
	call(t, cs, mcpserver.ToolValidate, mcpserver.NoArgs{}, &v)
	if !v.OK || v.Passed != 1 {
		t.Errorf("validate: %+v", v)
	}
}

// Resources: one per cold node, listed as the store grows (another
// process folding), and the recall index.
func TestResources(t *testing.T) {
	s := demoStore(t)
	cs := connect(t, s)
	ctx := context.Background()
	list := func() map[string]bool {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, r := range res.Resources {
			m[r.URI] = true
		}
		return m
	}
	got := list()
	if len(got) != 9 || !got[mcpserver.IndexURI] || !got[mcpserver.StepURI(137)] {
		t.Fatalf("resources: %v", got)
	}
	// Another process folds into the same directory.
	other, _ := contextfold.Open(s.Dir(), contextfold.Options{})
	if _, err := other.Fold(contextfold.Turn{StepID: 600, Summary: "deploy to staging", RawContent: "$ make deploy\nFATAL disk full"}); err != nil {
		t.Fatal(err)
	}
	if !list()[mcpserver.StepURI(600)] {
		t.Fatal("step 600 folded by another store handle is not listed")
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.StepURI(600)})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "FATAL disk full") {
		t.Fatalf("read step 600: %v %+v", err, rr)
	}
	ri, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.IndexURI})
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Nodes map[string]json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(ri.Contents[0].Text), &idx); err != nil || len(idx.Nodes) != 9 {
		t.Fatalf("index resource: %v, %d nodes", err, len(idx.Nodes))
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.StepURI(4242)}); err == nil {
		t.Error("reading an unknown step succeeded")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "contextfold://steps/abc"}); err == nil {
		t.Error("reading a malformed step address succeeded")
	}
}

func TestPage(t *testing.T) {
	h := &contextfold.Hydration{StepID: 1, RawContent: "abcdefgh", Content: "abc", Truncated: true}
	for _, c := range []struct {
		off        int
		want       string
		next       int
		shouldFail bool
	}{{0, "abc", 3, false}, {3, "def", 6, false}, {6, "gh", 0, false}, {8, "", 0, false}, {9, "", 0, true}, {-1, "", 0, true}} {
		p, err := mcpserver.Page(h, c.off)
		if (err != nil) != c.shouldFail || p.Content != c.want || p.Next != c.next {
			t.Errorf("Page(%d) = %+v, %v", c.off, p, err)
		}
	}
}

// TestFoldTurnsShareSecrets: a value one fold_turn's content revealed as a
// secret by its context (CLOUDFLARE_API_KEY=…) is redacted from a later
// fold_turn's content that shows it bare (the server's Store keeps the
// session's values); before, the later turn alone did not look like a
// secret and reached disk raw.
func TestFoldTurnsShareSecrets(t *testing.T) {
	v := "Mn6q" + "Wz3rTk8pLx2vBc5j"
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	for _, args := range []map[string]any{
		{"step_id": 1, "summary": "printed the environment", "content": "HOME=/root\nCLOUDFLARE_API_KEY=" + v + "\n"},
		{"step_id": 2, "summary": "assistant", "content": "The key " + v + " is the one in use."},
	} {
		var fr mcpserver.FoldResult
		if res := call(t, cs, "fold_turn", args, &fr); res.IsError {
			t.Fatalf("fold_turn refused: %s", text(res))
		}
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), v) {
				t.Errorf("%s holds the value an earlier fold_turn revealed", filepath.Base(p))
			}
		}
		return nil
	})
}
