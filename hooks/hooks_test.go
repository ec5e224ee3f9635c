package hooks_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/hooks"
	"github.com/contextfold/contextfold/scrub"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// binary is the contextfold command, built once; the hooks run as real
// subprocesses, as Claude Code runs them.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "contextfold-hooks-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "contextfold")
	os.Setenv("CONTEXTFOLD_CACHE_DIR", filepath.Join(dir, "cache")) // derived data (ranked index) stays out of the user's cache
	out, err := exec.Command("go", "build", "-o", binary, "github.com/contextfold/contextfold/cmd/contextfold").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building contextfold: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// hook runs `contextfold hook claude-code <event> args...` in testdata/ with
// the payload file on stdin and the store in dir.
func hook(t testing.TB, dir, event, payloadFile string, args ...string) result {
	t.Helper()
	payload, err := os.ReadFile(filepath.Join("testdata", payloadFile))
	if err != nil {
		payload = []byte(payloadFile) // an inline payload
	}
	return hookRaw(t, dir, event, payload, args...)
}

func hookRaw(t testing.TB, dir, event string, payload []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"hook", "claude-code", event}, args...)...)
	cmd.Dir = "testdata"
	cmd.Env = append(os.Environ(), contextfold.EnvStoreDir+"="+dir, contextfold.EnvSourceDateEpoch+"=1772449200")
	cmd.Stdin = bytes.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// foldedSession returns a store holding the turns of 16-transcript.jsonl,
// folded by the Stop hook.
func foldedSession(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	if r := hook(t, dir, "Stop", "18-stop-hook-active.json"); r.code != 0 || r.stdout != "" {
		t.Fatalf("Stop: %+v", r)
	}
	return dir
}

// decodeOne checks that stdout is exactly one JSON object with
// hookSpecificOutput.hookEventName, and returns it.
func decodeOne(t *testing.T, stdout, event string) hooks.SpecificOutput {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var out struct {
		HookSpecificOutput *hooks.SpecificOutput `json:"hookSpecificOutput"`
	}
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	if out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != event {
		t.Fatalf("hookSpecificOutput.hookEventName missing or wrong:\n%s", stdout)
	}
	return *out.HookSpecificOutput
}

// golden compares got (with the store directory replaced by $STORE) with
// testdata/name.
func golden(t *testing.T, name, dir, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, dir, "$STORE")
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

func len16(s string) int { return len(utf16.Encode([]rune(s))) }

// Field report 18: the Stop hook never blocks, exits 0, prints nothing, and
// a second call folds nothing again.
func TestStopIdempotent(t *testing.T) {
	dir := foldedSession(t)
	index := filepath.Join(dir, contextfold.IndexFile)
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := contextfold.Open(dir, contextfold.Options{})
	entries, _ := s.Entries()
	if len(entries) != 4 {
		t.Fatalf("%d entries after Stop, want 4", len(entries))
	}
	for _, ev := range []string{"Stop", "PreCompact", "SubagentStop"} {
		r := hook(t, dir, ev, "18-stop-hook-active.json", "-v")
		if r.code != 0 || r.stdout != "" || strings.Contains(r.stdout, "block") {
			t.Fatalf("%s again: %+v", ev, r)
		}
		if ev == "Stop" && !strings.Contains(r.stderr, "folded 0 new turns (4 already stored") {
			t.Errorf("second Stop: %q", r.stderr)
		}
	}
	after, _ := os.ReadFile(index)
	if !bytes.Equal(before, after) {
		t.Error("a second Stop changed the recall index")
	}
	files, _ := os.ReadDir(filepath.Join(dir, contextfold.ColdNodesDir))
	if len(files) != 4 {
		t.Errorf("%d cold node files, want 4", len(files))
	}
}

// Field report 16: the injected context stays within the cap, is cut on a
// line boundary, and ends with a marker naming the step, what was left out,
// and the MCP tool to fetch it.
func TestUserPromptSubmitCapAndMarker(t *testing.T) {
	dir := foldedSession(t)
	r := hook(t, dir, "UserPromptSubmit", "16-hook-userpromptsubmit.json", "--match", "exact") // the reference mode's cut and marker
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := decodeOne(t, r.stdout, "UserPromptSubmit")
	ctx := out.AdditionalContext
	if n := len16(ctx); n > hooks.DefaultMaxChars {
		t.Errorf("context is %d characters, over the cap %d", n, hooks.DefaultMaxChars)
	}
	if !utf8.ValidString(ctx) || strings.ContainsRune(ctx, utf8.RuneError) {
		t.Error("context is not clean UTF-8")
	}
	if !strings.Contains(ctx, "[00000] assert cache_hit ratio") {
		t.Error("the failing run's output is not in the context")
	}
	marker := ctx[strings.LastIndex(ctx, "\n[contextfold: left out"):]
	for _, want := range []string{"of step 2", "characters", "fetch_archived_node", `"step_id": 2`, `"offset": `, "contextfold hydrate 2"} {
		if !strings.Contains(marker, want) {
			t.Errorf("marker %q lacks %q", marker, want)
		}
	}
	if !strings.HasSuffix(ctx, "]") {
		t.Error("the context does not end with the marker")
	}
	// Cut on a line boundary: the shown part of step 2 ends with a whole line.
	shown := ctx[:strings.Index(ctx, "\n=== end of step 2 ===")]
	if !strings.HasSuffix(shown, "🧪\n") {
		t.Errorf("step 2 was not cut at the end of a line: …%q", shown[len(shown)-40:])
	}
	golden(t, "16-expected-stdout.json", dir, r.stdout)

	// A smaller cap holds too, with the marker.
	for _, max := range []string{"400", "1000", "2500"} {
		r := hook(t, dir, "UserPromptSubmit", "16-hook-userpromptsubmit.json", "--max-chars", max, "--match", "exact")
		ctx := decodeOne(t, r.stdout, "UserPromptSubmit").AdditionalContext
		if n := len16(ctx); n > atoi(max) {
			t.Errorf("--max-chars %s: %d characters", max, n)
		}
		if !strings.Contains(ctx, "fetch_archived_node") {
			t.Errorf("--max-chars %s: no marker", max)
		}
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// Field report 17: one JSON object with hookEventName; an unknown id is a
// diagnostic on stderr; nothing to add prints nothing; exit 0.
func TestUserPromptSubmitOneObject(t *testing.T) {
	dir := foldedSession(t)
	r := hook(t, dir, "UserPromptSubmit", "17-hook-two-ids.json", "--match", "exact") // the golden file is the reference mode's
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := decodeOne(t, r.stdout, "UserPromptSubmit")
	if !strings.Contains(out.AdditionalContext, "toolu_01FAKE0000000000001601") {
		t.Error("the tool call's output is not in the context")
	}
	if !strings.Contains(r.stderr, "build-log-0000") || strings.Contains(r.stdout, "does not exist") {
		t.Errorf("the unknown id is not reported on stderr: %q", r.stderr)
	}
	golden(t, "17-expected-stdout.json", dir, r.stdout)

	r = hook(t, dir, "UserPromptSubmit", "17b-hook-no-ids.json")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("no match: exit %d, stdout %q", r.code, r.stdout)
	}
	// No store at all: nothing, quickly.
	r = hook(t, filepath.Join(t.TempDir(), "none"), "UserPromptSubmit", "16-hook-userpromptsubmit.json")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("no store: exit %d, stdout %q", r.code, r.stdout)
	}
}

// Field report 23: a node whose bytes do not match its hash is refused, not
// pasted; the hook still exits 0.
func TestTornBlobNeverPasted(t *testing.T) {
	var fr struct {
		Blob   string `json:"blob_on_disk_utf8"`
		Prompt string `json:"hydrate_prompt"`
	}
	data, _ := os.ReadFile("testdata/23-torn-cold-blob.json")
	if err := json.Unmarshal(data, &fr); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	s, _ := contextfold.Open(dir, contextfold.Options{})
	if _, err := s.Fold(contextfold.Turn{StepID: 7, Summary: "go test ./... (toolu_01FAKE0000000000002301)", RawContent: fr.Blob + "ok  example.com/widget/pkg240\t0.31s\nPASS\n"}); err != nil {
		t.Fatal(err)
	}
	p := s.NodePath(7)
	node, _ := os.ReadFile(p)
	torn := strings.Replace(string(node), `pkg240\t0.31s\nPASS\n`, ``, 1)
	if torn == string(node) {
		t.Fatal("could not tear the node")
	}
	os.WriteFile(p, []byte(torn), 0o644)
	payload, _ := json.Marshal(map[string]any{"session_id": "s-23", "transcript_path": "", "cwd": t.TempDir(), "hook_event_name": "UserPromptSubmit", "prompt": fr.Prompt})
	r := hookRaw(t, dir, "UserPromptSubmit", payload)
	if r.code != 0 || r.stdout != "" || strings.Contains(r.stderr, "pkg000") {
		t.Fatalf("torn blob: exit %d, stdout %q", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "integrity check failed for step 7") {
		t.Errorf("stderr does not say why: %q", r.stderr)
	}
}

func TestSessionStartPageTable(t *testing.T) {
	dir := foldedSession(t)
	r := hook(t, dir, "SessionStart", `{"session_id":"5a9d7e3b-1c2f-4e8a-b6d0-7e1f2c3a4b5d","transcript_path":"./16-transcript.jsonl","cwd":"/home/dev/widget","hook_event_name":"SessionStart","source":"resume"}`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := decodeOne(t, r.stdout, "SessionStart")
	if !strings.Contains(out.AdditionalContext, "\n#2 FAILED tool Bash $ RUN_TAG=9c41e2 make itest") {
		t.Errorf("page table:\n%s", out.AdditionalContext)
	}
	golden(t, "sessionstart-expected-stdout.json", dir, r.stdout)
	r = hook(t, dir, "SessionStart", `{"session_id":"x","hook_event_name":"SessionStart"}`, "--max-chars", "300")
	if ctx := decodeOne(t, r.stdout, "SessionStart").AdditionalContext; len16(ctx) > 300 {
		t.Errorf("--max-chars 300: %d characters", len16(ctx))
	}
	// Over the budget the oldest lines leave first, as in the proxy's block.
	r = hook(t, dir, "SessionStart", `{"session_id":"5a9d7e3b-1c2f-4e8a-b6d0-7e1f2c3a4b5d","hook_event_name":"SessionStart"}`, "--max-chars", "600")
	ctx := decodeOne(t, r.stdout, "SessionStart").AdditionalContext
	if len16(ctx) > 600 || strings.Contains(ctx, "\n#0 ") || !strings.Contains(ctx, "\n#3 ok") || !strings.Contains(ctx, "older steps left out") {
		t.Errorf("--max-chars 600: the newest lines should stay, the oldest leave with a note:\n%s", ctx)
	}
}

// A failing hook never blocks: exit 0 with one line on stderr, unless
// --strict (exit 1, never 2).
func TestFailuresNeverBlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	cases := []struct{ name, event, payload string }{
		{"not json", "UserPromptSubmit", "{not json"},
		{"two objects", "UserPromptSubmit", `{"prompt":"a"}{"prompt":"b"}`},
		{"wrong event", "Stop", `{"session_id":"s","hook_event_name":"UserPromptSubmit","transcript_path":"x"}`},
		{"missing transcript", "Stop", `{"session_id":"s","hook_event_name":"Stop","transcript_path":"/nonexistent/t.jsonl"}`},
		{"unknown event", "Notification", `{}`},
		{"bad session id", "SessionStart", `{"session_id":"../../etc","cwd":"/tmp","hook_event_name":"SessionStart"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := dir
			if c.name == "bad session id" {
				d = "" // per-session default: the id must be refused
			}
			r := hookRaw(t, d, c.event, []byte(c.payload))
			if r.code != 0 || r.stdout != "" || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
				t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			r = hookRaw(t, d, c.event, []byte(c.payload), "--strict")
			if r.code != 1 {
				t.Errorf("--strict: exit %d", r.code)
			}
		})
	}
}

// The per-session store: <cwd>/.contextfold/sessions/<session_id>.
func TestDefaultStoreLocation(t *testing.T) {
	cwd := t.TempDir()
	tr, _ := filepath.Abs("testdata/16-transcript.jsonl")
	payload, _ := json.Marshal(map[string]any{"session_id": "sess-1", "transcript_path": tr, "cwd": cwd, "hook_event_name": "Stop"})
	if r := hookRaw(t, "", "Stop", payload); r.code != 0 || r.stderr != "" {
		t.Fatalf("%+v", r)
	}
	if _, err := os.Stat(filepath.Join(cwd, ".contextfold", "sessions", "sess-1", contextfold.IndexFile)); err != nil {
		t.Fatal(err)
	}
	dir, err := hooks.StoreDir(&hooks.Input{SessionID: "abc", CWD: "/p"}, "{cwd}/stores/{session_id}")
	if err != nil || dir != "/p/stores/abc" {
		t.Errorf("placeholders: %q %v", dir, err)
	}
}

// TestSessionIDNamingAStoreFile: a session_id that is the name of a
// store's own file (cold_nodes, recall_index.json) is refused, and the
// sessions already in .contextfold/sessions stay listed. Before, the Stop
// hook of session "cold_nodes" made .contextfold/sessions/cold_nodes, so
// sessions/ read as one empty store and every hooks session was hidden
// (contextfold sessions: "sessions  store  0 nodes").
func TestSessionIDNamingAStoreFile(t *testing.T) {
	cwd := t.TempDir()
	tr, _ := filepath.Abs("testdata/16-transcript.jsonl")
	stop := func(id string) result {
		payload, _ := json.Marshal(map[string]any{"session_id": id, "transcript_path": tr, "cwd": cwd, "hook_event_name": "Stop"})
		return hookRaw(t, "", "Stop", payload)
	}
	if r := stop("sess-1"); r.code != 0 || r.stderr != "" {
		t.Fatalf("%+v", r)
	}
	sessions := filepath.Join(cwd, ".contextfold", "sessions")
	for _, id := range []string{contextfold.ColdNodesDir, contextfold.IndexFile} {
		if _, err := hooks.StoreDir(&hooks.Input{SessionID: id, CWD: cwd}, ""); err == nil || !strings.Contains(err.Error(), "the name of a store's own file") {
			t.Errorf("StoreDir of session_id %s: %v", id, err)
		}
		stop(id) // fails, and never blocks the agent
		for _, f := range []string{contextfold.ColdNodesDir, contextfold.IndexFile} {
			if _, err := os.Lstat(filepath.Join(sessions, f)); err == nil {
				t.Errorf("the Stop hook of session_id %s wrote %s into %s", id, f, sessions)
			}
		}
	}
}

// TestSessionIDStartsAlnum: a session_id starting with '.' or '-' is
// refused (a hidden directory, or a flag when typed again), as the
// proxy's session names are; nothing is written under sessions/.
func TestSessionIDStartsAlnum(t *testing.T) {
	cwd := t.TempDir()
	tr, _ := filepath.Abs("testdata/16-transcript.jsonl")
	for _, id := range []string{".hidden", ".lineage", "-rf", "_x"} {
		if _, err := hooks.StoreDir(&hooks.Input{SessionID: id, CWD: cwd}, ""); err == nil || !strings.Contains(err.Error(), "starts with a letter or a digit") {
			t.Errorf("StoreDir of session_id %s: %v", id, err)
		}
		payload, _ := json.Marshal(map[string]any{"session_id": id, "transcript_path": tr, "cwd": cwd, "hook_event_name": "Stop"})
		if r := hookRaw(t, "", "Stop", payload); r.code != 0 || r.stderr == "" {
			t.Errorf("Stop of session_id %s: %+v, want exit 0 and one line on stderr", id, r)
		}
		if _, err := os.Lstat(filepath.Join(cwd, ".contextfold", "sessions", id)); err == nil {
			t.Errorf("the Stop hook of session_id %s made its directory", id)
		}
	}
	if _, err := hooks.StoreDir(&hooks.Input{SessionID: "5a9d7e3b-1c2f-4e8a-b6d0-7e1f2c3a4b5d", CWD: cwd}, ""); err != nil {
		t.Errorf("a UUID session_id: %v", err)
	}
}

// BenchmarkUserPromptSubmitNoMatch times the whole hook process on a prompt
// that matches nothing (target: under 20 ms per call).
func BenchmarkUserPromptSubmitNoMatch(b *testing.B) {
	dir := foldedSession(b)
	payload, _ := os.ReadFile("testdata/17b-hook-no-ids.json")
	for b.Loop() {
		if r := hookRaw(b, dir, "UserPromptSubmit", payload); r.code != 0 || r.stdout != "" {
			b.Fatalf("%+v", r)
		}
	}
}

// Field report 22: secrets in the transcript never reach the store or the
// hook's output; harmless settings survive.
func TestSecretsRedacted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	tr, _ := filepath.Abs("testdata/22-secrets-in-tool-output.jsonl")
	stop, _ := json.Marshal(map[string]any{"session_id": "s22", "transcript_path": tr, "cwd": t.TempDir(), "hook_event_name": "Stop"})
	if r := hookRaw(t, dir, "Stop", stop); r.code != 0 || r.stderr != "" {
		t.Fatalf("Stop: %+v", r)
	}
	prompt, _ := json.Marshal(map[string]any{"session_id": "s22", "cwd": t.TempDir(), "hook_event_name": "UserPromptSubmit", "prompt": "why does the deploy script fail? show the environment, AWS_REGION and EDITOR"})
	r := hookRaw(t, dir, "UserPromptSubmit", prompt)
	ctx := decodeOne(t, r.stdout, "UserPromptSubmit").AdditionalContext
	needles, _ := os.ReadFile("testdata/22-secrets-needles.txt")
	var haystack strings.Builder
	haystack.WriteString(r.stdout + r.stderr + ctx)
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			haystack.Write(b)
		}
		return nil
	})
	for _, n := range strings.Split(strings.TrimSpace(string(needles)), "\n") {
		if n = strings.TrimSpace(n); n != "" && strings.Contains(haystack.String(), n) {
			t.Errorf("secret %.8s… found in the store or the hook output", n)
		}
	}
	if !strings.Contains(haystack.String(), "REDACTED") {
		t.Error("no redaction marker anywhere")
	}
}

// The hook ranks by default: a large node comes back as excerpts around
// the matched lines, with their offsets, and a prompt that asks about
// nothing in the archive injects nothing.
func TestUserPromptSubmitRankedDefault(t *testing.T) {
	dir := foldedSession(t)
	r := hook(t, dir, "UserPromptSubmit", "17-hook-two-ids.json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	ctx := decodeOne(t, r.stdout, "UserPromptSubmit").AdditionalContext
	if !strings.Contains(ctx, "toolu_01FAKE0000000000001601") || !strings.Contains(ctx, "[contextfold: lines ") || !strings.Contains(ctx, "shown as excerpts around the matched lines") {
		t.Errorf("ranked context lacks the matched excerpt or its marker: %.600q", ctx)
	}
	for _, prompt := range []string{"thanks, go on", "now write a haiku about autumn", "ok"} {
		payload, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": t.TempDir(), "hook_event_name": "UserPromptSubmit", "prompt": prompt})
		if r := hookRaw(t, dir, "UserPromptSubmit", payload); r.code != 0 || r.stdout != "" {
			t.Errorf("%q injected %q (exit %d)", prompt, r.stdout, r.code)
		}
	}
	if r := hook(t, dir, "UserPromptSubmit", "17-hook-two-ids.json", "--match", "fuzzy"); r.stdout != "" || !strings.Contains(r.stderr, "exact, ranked") {
		t.Errorf("an unknown --match was accepted: exit %d, %q", r.code, r.stderr)
	}
}

// A session_id holding a secret (a token where Claude Code puts a UUID)
// names its store by its SHA-256, never in clear; UUIDs and ordinary ids
// stay as they are.
func TestSessionIDHoldingSecret(t *testing.T) {
	const token = "ghp_R8mZq2Lx7VtK4pW9nHc3Jd6Fs1Yb5GuE0aTo"
	cwd := t.TempDir()
	tr, _ := filepath.Abs("testdata/16-transcript.jsonl")
	payload, _ := json.Marshal(map[string]any{"session_id": token, "transcript_path": tr, "cwd": cwd, "hook_event_name": "Stop"})
	if r := hookRaw(t, "", "Stop", payload); r.code != 0 || strings.Contains(r.stderr+r.stdout, "ghp_") {
		t.Fatalf("%+v", r)
	}
	sum := sha256.Sum256([]byte(token))
	want := filepath.Join(cwd, ".contextfold", "sessions", scrub.SafeNamePrefix+hex.EncodeToString(sum[:]))
	if _, err := os.Stat(filepath.Join(want, contextfold.IndexFile)); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(cwd, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(p, "ghp_") {
			t.Errorf("a path names the token: %s", p)
		}
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
	for _, id := range []string{"0f8e6a52-3c1d-4b7e-9a2f-5d6c7b8a9e01", "sess-1"} {
		if dir, err := hooks.StoreDir(&hooks.Input{SessionID: id, CWD: "/p"}, "{cwd}/stores/{session_id}"); err != nil || dir != "/p/stores/"+id {
			t.Errorf("%s: %q %v", id, dir, err)
		}
	}
	if _, err := hooks.StoreDir(&hooks.Input{SessionID: token + "/x", CWD: "/p"}, ""); err == nil || strings.Contains(err.Error(), "ghp_") {
		t.Errorf("a bad id holding a token: %v", err)
	}
}

// TestMarkerCommandReadsOnWhereTheToolDoes: the command the marker names
// reads on from the same character as the MCP tool call it names (before:
// the tool call had "offset": N and the command had no --offset, so it
// printed again the part the context already held).
func TestMarkerCommandReadsOnWhereTheToolDoes(t *testing.T) {
	dir := foldedSession(t)
	r := hook(t, dir, "UserPromptSubmit", "16-hook-userpromptsubmit.json", "--match", "exact")
	ctx := decodeOne(t, r.stdout, "UserPromptSubmit").AdditionalContext
	marker := ctx[strings.LastIndex(ctx, "\n[contextfold: left out"):]
	m := regexp.MustCompile(`"offset": (\d+)\}`).FindStringSubmatch(marker)
	if m == nil || m[1] == "0" {
		t.Fatalf("the marker names no tool call reading on past 0: %q", marker)
	}
	if !strings.Contains(marker, "--offset "+m[1]) {
		t.Errorf("the marker's command does not read on from %s like its tool call: %q", m[1], marker)
	}
}

// TestStopSharesSecretsWithLaterStops: a value a tool output revealed as a
// secret by its context (CLOUDFLARE_API_KEY=…), folded by one Stop, is
// redacted from the assistant text that repeats it bare, folded by a later
// Stop (another process: the store knows it from the transcript's turns
// folded before, Store.LearnSecrets). Before, the later turn alone did not
// look like a secret and reached disk raw.
func TestStopSharesSecretsWithLaterStops(t *testing.T) {
	v := "Rk5m" + "Wq2zPn8xLc4vTb7h"
	dir := filepath.Join(t.TempDir(), "store")
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	line := func(typ, uuid, parent string, msg map[string]any) string {
		b, _ := json.Marshal(map[string]any{"type": typ, "uuid": uuid, "parentUuid": parent, "sessionId": "s-share",
			"timestamp": "2026-03-02T11:0" + uuid[len(uuid)-1:] + ":00.000Z", "message": msg})
		return string(b) + "\n"
	}
	first := line("user", "u-1", "", map[string]any{"role": "user", "content": "deploy it"}) +
		line("assistant", "a-2", "u-1", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "env"}}}}) +
		line("user", "u-3", "a-2", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "HOME=/root\nCLOUDFLARE_API_KEY=" + v + "\nPATH=/usr/bin"}}})
	later := line("assistant", "a-4", "u-3", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "I checked that " + v + " is the one in use."}}})
	stop, _ := json.Marshal(map[string]any{"session_id": "s-share", "transcript_path": tr, "cwd": t.TempDir(), "hook_event_name": "Stop"})
	for k, content := range []string{first, first + later} {
		if err := os.WriteFile(tr, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := hookRaw(t, dir, "Stop", stop); r.code != 0 {
			t.Fatalf("Stop %d: %+v", k+1, r)
		}
	}
	nodes, held := storeFilesHolding(dir, v)
	if nodes < 4 {
		t.Fatalf("%d cold nodes, want 4: the later Stop did not fold the new turn", nodes)
	}
	if len(held) > 0 {
		t.Errorf("these files hold the value an earlier Stop's turn revealed: %v", held)
	}
}

// TestStopFoldsALongTranscriptInBatches: a first Stop on a transcript of
// more new turns than hooks.StopBatchTurns folds them all (in batches), and a
// value that a late turn reveals as a secret is redacted in an early turn
// of another batch, as one fold event of them all would.
func TestStopFoldsALongTranscriptInBatches(t *testing.T) {
	v := "Zq8v" + "Lm3xPw7nKc2tRb5j"
	dir := filepath.Join(t.TempDir(), "store")
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	var b strings.Builder
	prev := ""
	add := func(typ string, msg map[string]any) {
		uuid := fmt.Sprintf("%s-%d", typ[:1], b.Len())
		line, _ := json.Marshal(map[string]any{"type": typ, "uuid": uuid, "parentUuid": prev, "sessionId": "s-long",
			"timestamp": "2026-03-02T11:00:00.000Z", "message": msg})
		b.Write(line)
		b.WriteByte('\n')
		prev = uuid
	}
	add("user", map[string]any{"role": "user", "content": "is " + v + " still the token we deploy with?"})
	for i := 0; b.Len() < 1<<30 && i < hooks.StopBatchTurns+40; i++ {
		if i%2 == 0 {
			add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("checked item %d", i)}}})
		} else {
			add("user", map[string]any{"role": "user", "content": fmt.Sprintf("next item %d", i)})
		}
	}
	add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_env", "name": "Bash", "input": map[string]any{"command": "env"}}}})
	add("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_env", "content": "HOME=/root\nCLOUDFLARE_API_KEY=" + v + "\nPATH=/usr/bin"}}})
	if err := os.WriteFile(tr, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stop, _ := json.Marshal(map[string]any{"session_id": "s-long", "transcript_path": tr, "cwd": t.TempDir(), "hook_event_name": "Stop"})
	if r := hookRaw(t, dir, "Stop", stop); r.code != 0 {
		t.Fatalf("Stop: %+v", r)
	}
	nodes, held := storeFilesHolding(dir, v)
	if nodes <= hooks.StopBatchTurns {
		t.Fatalf("%d cold nodes, want more than one batch (%d)", nodes, hooks.StopBatchTurns)
	}
	if len(held) > 0 {
		t.Errorf("these files hold the value a turn of a later batch revealed: %v", held)
	}
}

// storeFilesHolding returns how many cold nodes the store at dir holds and
// the names of its files that hold v.
func storeFilesHolding(dir, v string) (nodes int, held []string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if strings.HasPrefix(d.Name(), "step_") {
				nodes++
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), v) {
				held = append(held, d.Name())
			}
		}
		return nil
	})
	return nodes, held
}

// TestStopSkipsATurnTooLargeToFold: one turn whose payload is past
// contextfold.MaxPayloadBytes (a 65 MiB tool output) is not folded and is
// named on stderr; the transcript's other turns, before and after it, are
// folded. Before, the whole Stop failed on it, and so did every later Stop
// of the session: nothing of it was ever folded again.
func TestStopSkipsATurnTooLargeToFold(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	f, err := os.Create(tr)
	if err != nil {
		t.Fatal(err)
	}
	prev, n := "", 0
	add := func(typ string, msg map[string]any) {
		n++
		uuid := fmt.Sprintf("%s-%d", typ[:1], n)
		line, _ := json.Marshal(map[string]any{"type": typ, "uuid": uuid, "parentUuid": prev, "sessionId": "s-big",
			"timestamp": "2026-03-02T11:00:00.000Z", "message": msg})
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		prev = uuid
	}
	add("user", map[string]any{"role": "user", "content": "dump the build cache listing"})
	add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_ls", "name": "Bash", "input": map[string]any{"command": "ls -R /cache"}}}})
	add("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_ls",
		"content": strings.Repeat("cache/obj ", contextfold.MaxPayloadBytes/10+1024)}}})
	add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "the listing is huge; the port is 5433"}}})
	add("user", map[string]any{"role": "user", "content": "which port again?"})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	stop, _ := json.Marshal(map[string]any{"session_id": "s-big", "transcript_path": tr, "cwd": t.TempDir(), "hook_event_name": "Stop"})
	for round := 1; round <= 2; round++ {
		r := hookRaw(t, dir, "Stop", stop)
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "not folded") || !strings.Contains(r.stderr, "MaxPayloadBytes") {
			t.Fatalf("Stop %d: %+v", round, r)
		}
	}
	nodes, held := storeFilesHolding(dir, "the port is 5433")
	if nodes < 3 || len(held) == 0 {
		t.Fatalf("%d cold nodes, the turn after the large one in %v: the other turns were not folded", nodes, held)
	}
	if _, big := storeFilesHolding(dir, "cache/obj cache/obj"); len(big) > 0 {
		t.Errorf("the turn too large to fold reached the store: %v", big)
	}
}
