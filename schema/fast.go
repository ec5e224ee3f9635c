package schema

import (
	"encoding/json"
	"strconv"
)

// Fast paths for the two documents every fold writes and validate reads by
// the thousand: a cold node and an index entry. They answer "valid" only
// when the document meets every constraint of its schema (the same patterns,
// constants, types and bounds); for anything else, or any key whose
// constraints they do not model, they answer "unsure" and the JSON Schema
// validator decides (and explains). So the verdicts are the schema's; only
// the common case is cheaper. TestFastPathsAgreeWithTheSchemas checks them
// against the validator.

// isSHA256Hex is the schema's pattern ^[0-9a-f]{64}$ (validate checks three
// a node and three an entry; a regexp cost a tenth of validate).
func isSHA256Hex(v any) bool {
	s, ok := v.(string)
	if !ok || len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isTimestamp is the schema's timestamp pattern
// ^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$.
func isTimestamp(v any) bool {
	s, ok := v.(string)
	if !ok || len(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return false
	}
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	two := func(i int) int { return int(s[i]-'0')*10 + int(s[i+1]-'0') }
	month, day, hour := two(5), two(8), two(11)
	return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && s[14] <= '5' && s[17] <= '5'
}

// fastValid reports whether v is certainly valid against the named schema
// (false: ask the validator).
func fastValid(name string, v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	switch name {
	case ColdNode:
		return fastColdNode(m)
	case RecallIndex + "#entry":
		return fastEntry(m)
	}
	return false
}

func fastColdNode(m map[string]any) bool {
	for k, v := range m {
		var ok bool
		switch k {
		case "ipcf_version":
			ok = v == "1.1"
		case "projection_version":
			ok = v == "ipcf-projection-v2"
		case "step_id":
			_, ok = integer(v)
		case "session_id", "summary", "raw_content", "normalized_content":
			_, ok = v.(string)
		case "folded_at":
			ok = isTimestamp(v)
		case "payload_sha256", "projection_sha256", "artifact_sha256":
			ok = isSHA256Hex(v)
		case "identifiers", "files", "commands", "errors":
			ok = stringArray(v)
		case "token_estimate":
			n, isInt := integer(v)
			ok = isInt && n >= 1
		case "sanitized":
			_, ok = v.(bool)
		case "status":
			ok = v == "cold" || v == "hydrated" || v == "evicted"
		case "redactions":
			n, isInt := integer(v)
			ok = isInt && n >= 0
		case "original_prompt", "raw_tool_calls", "code_diffs":
			ok = false // constrained keys left to the validator
		default:
			ok = true // extra keys are allowed
		}
		if !ok {
			return false
		}
	}
	return len(m) >= 18 && hasAll(m, "ipcf_version", "projection_version", "step_id", "session_id", "folded_at", "summary", "raw_content",
		"normalized_content", "payload_sha256", "projection_sha256", "artifact_sha256", "identifiers", "files", "commands", "errors",
		"token_estimate", "sanitized", "status")
}

func fastEntry(m map[string]any) bool {
	for k, v := range m {
		var ok bool
		switch k {
		case "step_id":
			_, ok = integer(v)
		case "projection_version":
			ok = v == "ipcf-projection-v2"
		case "summary":
			_, ok = v.(string)
		case "payload_sha256", "projection_sha256", "artifact_sha256":
			ok = isSHA256Hex(v)
		case "file_path":
			s, isStr := v.(string)
			ok = isStr && s != ""
		case "token_estimate":
			n, isInt := integer(v)
			ok = isInt && n >= 1
		case "folded_at":
			ok = isTimestamp(v)
		case "identifiers", "files", "commands", "errors":
			ok = stringArray(v)
		case "evicted":
			_, ok = v.(bool)
		case "redactions":
			n, isInt := integer(v)
			ok = isInt && n >= 0
		default:
			ok = true
		}
		if !ok {
			return false
		}
	}
	return len(m) >= 14 && hasAll(m, "step_id", "projection_version", "summary", "payload_sha256", "projection_sha256", "artifact_sha256",
		"file_path", "token_estimate", "folded_at", "identifiers", "files", "commands", "errors", "evicted")
}

func hasAll(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// integer accepts the integers the fast path is sure of: Go ints and JSON
// integer literals that fit an int64 (anything else: the validator).
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func stringArray(v any) bool {
	switch x := v.(type) {
	case []string:
		return true
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}
