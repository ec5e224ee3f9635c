package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/contextfold/contextfold/internal/canonjson"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool arguments are decoded here, not by the SDK's typed mcp.AddTool: the
// SDK validates arguments by unmarshalling them into map[string]any and,
// once it has applied schema defaults, decodes the typed arguments from that
// map marshalled again, so every number passes through float64 and a step
// id above 2^53 is rounded (9007199254740993 became 9007199254740992, and
// evict_node evicted the wrong node). It does the same to results. Here the
// schema check still runs on a generic copy, but the typed arguments are
// decoded from the client's own bytes, so integers are exact over the whole
// int64 range (the CLI's range), and results are marshalled once.

// handlerFor is a typed tool handler.
type handlerFor[In, Out any] func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, Out, error)

// addTool registers a typed tool like mcp.AddTool, with the same input and
// output schemas (inferred from In and Out), decoding arguments exactly.
// An argument that fails the schema or does not decode is a tool error
// whose text starts with "BadArgument: ". It panics on a type whose schema
// cannot be inferred (a programming error, found at start).
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h handlerFor[In, Out]) {
	in, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema of %s: %v", t.Name, err))
	}
	resolved, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema of %s: %v", t.Name, err))
	}
	out, err := jsonschema.For[Out](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	tt := *t
	tt.InputSchema, tt.OutputSchema = in, out
	s.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeArgs[In](req.Params.Arguments, resolved)
		if err != nil {
			return errorResult(err), nil
		}
		res, outv, err := h(ctx, req, args)
		if err != nil {
			var wire *jsonrpc.Error
			if errors.As(err, &wire) {
				return nil, wire
			}
			return errorResult(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := json.Marshal(outv)
		if err != nil {
			return nil, fmt.Errorf("marshaling the result of %s: %w", t.Name, err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	})
}

func errorResult(err error) *mcp.CallToolResult {
	r := &mcp.CallToolResult{}
	r.SetError(err)
	return r
}

// decodeArgs checks raw arguments against the schema and decodes them into
// In from the raw bytes (exact integers; a number that does not fit the
// field, such as 2^63 for an int or 1.5, is refused).
func decodeArgs[In any](raw json.RawMessage, resolved *jsonschema.Resolved) (In, error) {
	var in In
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	generic := map[string]any{}
	if err := json.Unmarshal(raw, &generic); err != nil {
		return in, fmt.Errorf("BadArgument: the arguments are not a JSON object: %v", err)
	}
	var v any = generic
	if err := resolved.Validate(&v); err != nil {
		return in, fmt.Errorf("BadArgument: %v", err)
	}
	if _, ok := any(in).(losslessArgs); ok {
		if at := canonjson.LoneSurrogate(raw, 0); at >= 0 {
			return in, fmt.Errorf("BadArgument: a lone UTF-16 surrogate escape (%s, a \\uD800–\\uDFFF escape without its pair) at byte %d of the arguments is not text; IPCF stores text losslessly, so nothing was folded: send the whole surrogate pair, or \\ufffd where the character is unknown", raw[at:at+6], at)
		}
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return in, fmt.Errorf("BadArgument: %s: %s is not a %s%s", te.Field, te.Value, kindName(te.Type), rangeHint(te.Type))
		}
		return in, fmt.Errorf("BadArgument: %v", err)
	}
	return in, nil
}

// losslessArgs marks the arguments whose strings are stored (fold_turn's):
// a lone UTF-16 surrogate escape in them, which encoding/json turns into
// U+FFFD, is refused rather than stored as other text than was sent.
type losslessArgs interface{ lossless() }

func (FoldArgs) lossless() {}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "64-bit integer"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list"
	}
	return strings.ToLower(t.Kind().String())
}

func rangeHint(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Int || t.Kind() == reflect.Int64 {
		return " (an integer from -9223372036854775808 to 9223372036854775807, written without a fraction or exponent)"
	}
	return ""
}

// wireError gives every error that leaves a method handler a JSON-RPC code
// (a plain error would go out with code 0): -32602 Invalid params for a
// BadArgument, -32603 Internal error for anything else; the message keeps
// the error's name first. A *jsonrpc.Error passes as it is.
func wireError(err error) error {
	if err == nil {
		return nil
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return err
	}
	code := int64(jsonrpc.CodeInternalError)
	if strings.HasPrefix(err.Error(), "BadArgument") {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: err.Error()}
}
