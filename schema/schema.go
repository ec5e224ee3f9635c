// Package schema holds JSON Schemas (draft 2020-12) for the files of an
// IPCF-1.1 store and for our own records, embedded in the binary, and
// validates documents against them with github.com/santhosh-tekuri/jsonschema/v6.
//
// Schemas: cold_node, recall_index, hydration_policy, eviction_log,
// folded_step, repair_log, store_settings. Each schema's description says
// whether unknown keys are allowed: they are, except where the spec fixes
// the key set (eviction_log, folded_step, and the keys of recall_index.nodes,
// which must be decimal step ids).
package schema

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed schemas/*.json
var files embed.FS

const baseURL = "https://github.com/contextfold/contextfold/schema/"

// Schema names, for Validate, ValidateValue and Source.
const (
	ColdNode        = "cold_node"
	RecallIndex     = "recall_index"
	HydrationPolicy = "hydration_policy"
	EvictionLog     = "eviction_log"
	FoldedStep      = "folded_step"
	RepairLog       = "repair_log"
	StoreSettings   = "store_settings"
)

// ErrUnknownSchema is wrapped by the errors returned for a schema name that
// does not exist.
var ErrUnknownSchema = errors.New("unknown schema")

// ValidationError reports why a document does not satisfy a schema.
type ValidationError struct {
	// Schema is the schema name, e.g. "cold_node".
	Schema string
	// Pointer is the RFC 6901 JSON pointer of the offending value in the
	// document ("" is the whole document).
	Pointer string
	// Message describes the problem at Pointer.
	Message string
	// Details lists every problem found, each as "pointer: message", the
	// most specific first.
	Details []string
}

// Error names the schema, the JSON pointer and the problem.
func (e *ValidationError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "(root)"
	}
	return fmt.Sprintf("schema %s: %s: %s", e.Schema, p, e.Message)
}

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
	names       []string
)

func load() {
	entries, err := files.ReadDir("schemas")
	if err != nil {
		compileErr = err
		return
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		src, err := files.ReadFile("schemas/" + e.Name())
		if err != nil {
			compileErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
		if err != nil {
			compileErr = fmt.Errorf("schema %s: %w", name, err)
			return
		}
		if err := c.AddResource(baseURL+name+".json", doc); err != nil {
			compileErr = fmt.Errorf("schema %s: %w", name, err)
			return
		}
		names = append(names, name)
	}
	sort.Strings(names)
	compiled = make(map[string]*jsonschema.Schema, len(names))
	for _, n := range names {
		s, err := c.Compile(baseURL + n + ".json")
		if err != nil {
			compileErr = fmt.Errorf("schema %s: %w", n, err)
			return
		}
		compiled[n] = s
	}
	// One entry of the recall index, on its own (ValidateIndexEntry).
	if compiledEntry, compileErr = c.Compile(baseURL + RecallIndex + ".json#/$defs/entry"); compileErr != nil {
		compileErr = fmt.Errorf("schema %s entry: %w", RecallIndex, compileErr)
	}
}

var compiledEntry *jsonschema.Schema

// ValidateIndexEntry checks one entry of recall_index.json, the value under
// "nodes" → key, against the recall_index schema's entry definition: the
// same check Validate(RecallIndex, …) makes of each entry, without encoding
// and decoding a whole index. v is as for ValidateValue, except that Go
// ints and []string are accepted too (as the integers and string arrays
// they encode). Errors point into the index ("/nodes/<key>/…"). Safe for
// concurrent use.
func ValidateIndexEntry(key string, v any) error {
	compileOnce.Do(load)
	if compileErr != nil {
		return compileErr
	}
	if fastValid(RecallIndex+"#entry", v) {
		return nil
	}
	err := validate(RecallIndex, compiledEntry, jsonValue(v))
	var ve *ValidationError
	if errors.As(err, &ve) {
		prefix := "/nodes/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
		ve.Pointer = prefix + ve.Pointer
		for i, d := range ve.Details {
			ve.Details[i] = prefix + d
		}
	}
	return err
}

// jsonValue turns the Go values a store builds (int, []string) into the
// forms a decoded JSON document holds (json.Number, []any), recursively.
func jsonValue(v any) any {
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}

func get(name string) (*jsonschema.Schema, error) {
	compileOnce.Do(load)
	if compileErr != nil {
		return nil, compileErr
	}
	s, ok := compiled[name]
	if !ok {
		return nil, fmt.Errorf("schema: %w %q (known: %s)", ErrUnknownSchema, name, strings.Join(names, ", "))
	}
	return s, nil
}

// Names returns the sorted names of the embedded schemas.
func Names() []string {
	compileOnce.Do(load)
	return append([]string(nil), names...)
}

// Source returns the raw text of the named schema, or an error wrapping
// ErrUnknownSchema.
func Source(name string) ([]byte, error) {
	b, err := files.ReadFile("schemas/" + name + ".json")
	if err != nil || strings.ContainsAny(name, "/\\.") {
		return nil, fmt.Errorf("schema: %w %q", ErrUnknownSchema, name)
	}
	return b, nil
}

// Validate checks the JSON document doc against the named schema. Numbers
// are decoded exactly (json.Number), so integers beyond 2^64 validate as
// integers. It returns nil when doc is valid, a *ValidationError when it is
// not, and another error when doc is not a single JSON value or the schema
// is unknown (wrapping ErrUnknownSchema). Safe for concurrent use.
func Validate(name string, doc []byte) error {
	s, err := get(name)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty document")
		}
		return fmt.Errorf("schema %s: invalid JSON: %w", name, err)
	}
	return validate(name, s, v)
}

// ValidateValue checks a value already decoded from JSON (with
// json.Decoder.UseNumber: numbers as json.Number, objects as
// map[string]any, arrays as []any) against the named schema; Go ints and
// []string are accepted too, as the integers and string arrays they encode,
// so that a document built in memory is checked without encoding and
// decoding it. Errors are as for Validate. Safe for concurrent use.
func ValidateValue(name string, v any) error {
	s, err := get(name)
	if err != nil {
		return err
	}
	if fastValid(name, v) {
		return nil
	}
	return validate(name, s, jsonValue(v))
}

var printer = message.NewPrinter(language.English)

func validate(name string, s *jsonschema.Schema, v any) error {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	type leaf struct{ ptr, msg string }
	var leaves []leaf
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, leaf{pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(printer)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// Most specific (deepest) first; stable keeps the validator's order.
	sort.SliceStable(leaves, func(i, j int) bool {
		return strings.Count(leaves[i].ptr, "/") > strings.Count(leaves[j].ptr, "/")
	})
	out := &ValidationError{Schema: name, Pointer: leaves[0].ptr, Message: leaves[0].msg}
	for _, l := range leaves {
		out.Details = append(out.Details, l.ptr+": "+l.msg)
	}
	return out
}

// pointer renders an instance location as an RFC 6901 JSON pointer.
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}
