package contextfold

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/tokens"
)

// Policy keys and default values (spec §7).
const (
	KeyPolicyVersion         = "policy_version"
	KeyMaxTokensPerCall      = "max_rehydration_tokens_per_call"
	KeyMaxTokensPerTurn      = "max_rehydration_tokens_per_turn"
	KeyScope                 = "scope"
	KeyEvictionTrigger       = "eviction_trigger"
	KeyIntegrityVerification = "integrity_verification"
	// KeyTokenCounter selects the token counter (absent: the reference
	// heuristic). An extension of ours; like any extra key it changes the
	// folding policy hash.
	KeyTokenCounter = "token_counter"

	DefaultMaxTokensPerCall = 3000 // tokens
	DefaultMaxTokensPerTurn = 3500 // tokens
)

// Policy is the hydration policy in force (spec §7): the parsed
// hydration_policy.json with all its keys, or the default. Numbers keep their
// JSON literals so that FoldingPolicyHash matches the reference for any file.
// A Policy is immutable and safe for concurrent use.
type Policy struct {
	doc  map[string]any
	hash string
}

// DefaultPolicy returns the policy in force when a store has no
// hydration_policy.json.
func DefaultPolicy() *Policy {
	p, err := newPolicy(map[string]any{
		KeyPolicyVersion:         "1.1",
		KeyMaxTokensPerCall:      json.Number("3000"),
		KeyMaxTokensPerTurn:      json.Number("3500"),
		KeyScope:                 "single_turn",
		KeyEvictionTrigger:       "after_response",
		KeyIntegrityVerification: true,
	})
	if err != nil {
		panic(err) // the default is a constant
	}
	return p
}

// ParsePolicy parses the bytes of a hydration_policy.json. The document must
// be a JSON object; any keys are kept.
func ParsePolicy(data []byte) (*Policy, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the policy must be a JSON object")
	}
	return newPolicy(m)
}

func newPolicy(m map[string]any) (*Policy, error) {
	c, err := canonjson.Canonical(m)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(c)
	return &Policy{doc: m, hash: hex.EncodeToString(sum[:])}, nil
}

// Hash is the folding_policy_hash: SHA-256 (hex) of the canonical JSON of the
// whole policy (spec §3).
func (p *Policy) Hash() string { return p.hash }

// Doc returns a copy of the policy document (top-level keys).
func (p *Policy) Doc() map[string]any {
	out := make(map[string]any, len(p.doc))
	for k, v := range p.doc {
		out[k] = v
	}
	return out
}

// Canonical returns the canonical JSON of the policy.
func (p *Policy) Canonical() []byte {
	c, _ := canonjson.Canonical(p.doc)
	return c
}

// number reads a numeric policy key as float64; a missing key gives def.
// Python treats true/false as 1/0, and so do we. Other types are an error.
func (p *Policy) number(key string, def float64) (float64, error) {
	v, ok := p.doc[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, err
		}
		return f, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("policy key %q must be a number, not %s", key, jsonType(v))
}

// MaxTokensPerCall is the per-call hydration cap in tokens (CONF-06). It may be
// zero, negative or fractional, as a policy file may say.
func (p *Policy) MaxTokensPerCall() (float64, error) {
	return p.number(KeyMaxTokensPerCall, DefaultMaxTokensPerCall)
}

// MaxTokensPerTurn is the per-turn hydration budget in tokens (CONF-06).
func (p *Policy) MaxTokensPerTurn() (float64, error) {
	return p.number(KeyMaxTokensPerTurn, DefaultMaxTokensPerTurn)
}

// IntegrityVerification reports whether hydrate verifies artifact hashes
// (default true). Path containment is checked regardless.
func (p *Policy) IntegrityVerification() bool {
	v, ok := p.doc[KeyIntegrityVerification]
	if !ok {
		return true
	}
	return truthy(v)
}

// TokenCounter is the name of the token counter the policy selects, "" for
// the reference heuristic.
func (p *Policy) TokenCounter() string {
	s, _ := p.doc[KeyTokenCounter].(string)
	return s
}

// Counter returns the token counter the policy selects: absent (or
// "heuristic") → the reference heuristic max(1, ⌊code points / 4⌋);
// "o200k_base" or "cl100k_base" → exact counts (vocabularies embedded).
// An unknown name or a non-string value is an error naming the accepted
// values.
func (p *Policy) Counter() (tokens.Counter, error) {
	v, ok := p.doc[KeyTokenCounter]
	if !ok {
		return tokens.Heuristic(), nil
	}
	name, isStr := v.(string)
	if !isStr {
		return nil, fmt.Errorf("policy key %q must be a string: heuristic, o200k_base or cl100k_base", KeyTokenCounter)
	}
	return tokens.ByName(name)
}

// truthy is Python's truth value of a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return err != nil || f != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// TokenCounter returns the token counter the store's policy selects, for
// accounting outside the store (the proxy's, a harness's); the reference
// heuristic when the policy names none or cannot be read (the operations
// that depend on the policy report that error themselves).
func (s *Store) TokenCounter() tokens.Counter {
	p, err := s.Policy()
	if err != nil {
		return tokens.Heuristic()
	}
	c, err := p.Counter()
	if err != nil {
		return tokens.Heuristic()
	}
	return c
}
