package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/mcpserver"
)

// connectVersion is connect with the client asking for protocol revision
// version ("" for the SDK's latest).
func connectVersion(t testing.TB, s *contextfold.Store, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(s, mcpserver.Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestReadMissingStepCode: resources/read of a step with no cold node answers
// the resource-not-found code of the negotiated revision (-32002 up to
// 2025-11-25, -32602 from 2026-07-28, SEP-2164), with a message that starts
// with NodeNotFoundError, names the step and the remedy, and data {"uri"}.
func TestReadMissingStepCode(t *testing.T) {
	s := demoStore(t)
	for _, tc := range []struct {
		version string
		code    int64
	}{
		{"2025-06-18", -32002},
		{"2025-11-25", -32002},
		{"2026-07-28", jsonrpc.CodeInvalidParams},
	} {
		t.Run(tc.version, func(t *testing.T) {
			cs := connectVersion(t, s, tc.version)
			if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
				t.Fatalf("negotiated %s, want %s", got, tc.version)
			}
			uri := mcpserver.StepURI(4242)
			_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) {
				t.Fatalf("read of a missing step: %v (%T), want a JSON-RPC error", err, err)
			}
			if werr.Code != tc.code {
				t.Errorf("code %d, want %d", werr.Code, tc.code)
			}
			for _, want := range []string{"NodeNotFoundError", "step 4242", "resources/list", "recall_archived_nodes"} {
				if !strings.Contains(werr.Message, want) {
					t.Errorf("message %q lacks %q", werr.Message, want)
				}
			}
			if !strings.HasPrefix(werr.Message, "NodeNotFoundError") {
				t.Errorf("message %q does not start with its name", werr.Message)
			}
			if string(werr.Data) != `{"uri":"`+uri+`"}` {
				t.Errorf("data %s", werr.Data)
			}
			// An existing step still reads.
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.StepURI(137)}); err != nil {
				t.Errorf("read step 137: %v", err)
			}
		})
	}
}

// TestFoldEmptySummaryAsCLI: fold_turn folds a turn with an empty summary
// (empty or absent content included) as the reference and the CLI 'fold'
// do, with a warning in the result: the cold node and recall index bytes
// equal what 'contextfold fold --input' writes for the same turn, and for
// the conformance vector fold-166 what the reference wrote.
func TestFoldEmptySummaryAsCLI(t *testing.T) {
	t.Setenv(contextfold.EnvSourceDateEpoch, "1767225600") // the vectors' clock
	var vector struct {
		FileText, IndexFileText string
	}
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "conformance", "fold.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			ID       string `json:"id"`
			Expected struct {
				FileText      string `json:"file_text"`
				IndexFileText string `json:"index_file_text"`
			} `json:"expected"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		if c.ID == "fold-166-adversarial-empty_summary_raw_none" {
			vector.FileText, vector.IndexFileText = c.Expected.FileText, c.Expected.IndexFileText
		}
	}
	if vector.FileText == "" {
		t.Fatal("vector fold-166-adversarial-empty_summary_raw_none not found")
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		warn string
	}{
		{"content absent (fold-166)", map[string]any{"step_id": 1165, "summary": ""}, "empty turn"},
		{"content empty", map[string]any{"step_id": 7, "summary": "", "content": ""}, "empty turn"},
		{"content given", map[string]any{"step_id": 8, "summary": "", "content": "$ make test\nFAIL TestPort: dial tcp :5433"}, "empty summary"},
		{"summary blank", map[string]any{"step_id": 9, "summary": "   ", "content": "kept as given"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := contextfold.Open(filepath.Join(t.TempDir(), ".contextfold"), contextfold.Options{Scrub: contextfold.ScrubOff})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, s)
			var fr mcpserver.FoldResult
			res := call(t, cs, "fold_turn", tc.args, &fr)
			if res.IsError {
				t.Fatalf("fold_turn refused: %s", text(res))
			}
			step := tc.args["step_id"].(int)
			if fr.StepID != step || fr.AlreadyIndexed {
				t.Fatalf("result %+v", fr)
			}
			if tc.warn == "" && fr.Warning != "" || tc.warn != "" && !strings.Contains(fr.Warning, tc.warn) {
				t.Errorf("warning %q, want one saying %q", fr.Warning, tc.warn)
			}
			// The CLI, same turn, another store.
			in := map[string]any{"step_id": step, "summary": tc.args["summary"]}
			if c, ok := tc.args["content"]; ok {
				in["raw_content"] = c
			}
			body, _ := json.Marshal(in)
			cliDir := filepath.Join(t.TempDir(), ".contextfold")
			cmd := exec.Command(binary, "--dir", cliDir, "--no-scrub", "fold", "--input", "-")
			cmd.Stdin = strings.NewReader(string(body))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("cli fold: %v\n%s", err, out)
			}
			cli, _ := contextfold.Open(cliDir, contextfold.Options{})
			gotNode, err1 := os.ReadFile(s.NodePath(step))
			wantNode, err2 := os.ReadFile(cli.NodePath(step))
			if err1 != nil || err2 != nil || string(gotNode) != string(wantNode) {
				t.Errorf("cold node differs from the CLI's (%v %v):\n mcp %q\n cli %q", err1, err2, gotNode, wantNode)
			}
			gotIx, _ := os.ReadFile(filepath.Join(s.Dir(), contextfold.IndexFile))
			wantIx, _ := os.ReadFile(filepath.Join(cliDir, contextfold.IndexFile))
			if len(wantIx) == 0 || string(gotIx) != string(wantIx) {
				t.Errorf("recall index differs from the CLI's:\n mcp %q\n cli %q", gotIx, wantIx)
			}
			if step == 1165 && (string(gotNode) != vector.FileText || string(gotIx) != vector.IndexFileText) {
				t.Errorf("fold-166 differs from the reference:\n node %q\n want %q\n index %q\n want %q", gotNode, vector.FileText, gotIx, vector.IndexFileText)
			}
		})
	}
}
