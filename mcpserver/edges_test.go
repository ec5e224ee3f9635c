package mcpserver_test

import (
	"context"
	"errors"
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
