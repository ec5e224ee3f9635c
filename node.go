package contextfold

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/extract"
	"github.com/contextfold/contextfold/scrub"
)

// Protocol constants (spec §1, §3).
const (
	IPCFVersion       = "1.1"
	ProjectionVersion = "ipcf-projection-v2"
	DefaultSessionID  = "default-session"
	// TimeFormat is the layout of every IPCF timestamp (UTC, seconds).
	TimeFormat = "2006-01-02T15:04:05Z"
)

// Turn is one conversation turn to fold (spec §5 fold). Files, Commands and
// Errors are nil to extract them from the text; a non-nil slice (even empty)
// replaces extraction and is stored as given.
type Turn struct {
	StepID     int      // canonical position in the conversation history
	Summary    string   // short description kept in the prompt
	RawContent string   // the verbose payload; "" means the summary is the payload
	Files      []string // nil: extract
	Commands   []string // nil: extract
	Errors     []string // nil: extract
	SessionID  string   // "" means DefaultSessionID
	// OutputOf is the command line of the tool call whose output the
	// payload is, when the caller pairs a tool result with its call (the
	// proxy, ingest): the scrub reads the payload as that command's output
	// (the lines of a credential file "cat /etc/rsyncd.secrets" printed).
	// Not stored; "" when unknown.
	OutputOf string

	// shared is the number of redactions Store.ShareSecrets made in the
	// turn's texts before the fold (counted with the fold's own: the node
	// is sanitized).
	shared int
	// own is the values the turn's context reveals as secrets, as
	// ShareSecrets computed them (nil: not computed), so that the fold
	// event's sharing does not compute them again.
	own *scrub.Known
}

// Payload returns the payload of the turn: the raw content, or the summary
// when the raw content is empty (spec §3).
func (t Turn) Payload() string {
	if t.RawContent != "" {
		return t.RawContent
	}
	return t.Summary
}

// ColdNode is a folded turn as stored in cold_nodes/step_NNNNNN.json
// (spec §5). Doc holds every key of the stored object, including keys this
// version does not know; the typed fields mirror the protocol's keys.
type ColdNode struct {
	StepID            int
	SessionID         string
	FoldedAt          string
	Summary           string
	RawContent        string // the payload
	NormalizedContent string
	PayloadSHA256     string
	ProjectionSHA256  string
	ArtifactSHA256    string
	Identifiers       []string
	Files             []string
	Commands          []string
	Errors            []string
	TokenEstimate     int // tokens
	Sanitized         bool
	Status            string
	// Doc is the whole stored object (all keys, artifact_sha256 included).
	Doc map[string]any
}

// TokenEstimate is the reference heuristic: max(1, ⌊code points / 4⌋)
// tokens (spec §5).
func TokenEstimate(s string) int {
	n := utf8.RuneCountInString(s) / 4
	if n < 1 {
		return 1
	}
	return n
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sha256HexString is sha256Hex of a string without copying it whole: a
// payload of many megabytes is hashed through a 32 KiB buffer, a small
// one from the stack.
func sha256HexString(s string) string {
	var small [4 << 10]byte
	if len(s) <= len(small) { // the common turn: no allocation
		n := copy(small[:], s)
		return sha256Hex(small[:n])
	}
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for len(s) > 0 {
		n := copy(buf, s)
		h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sortedUnique returns ss sorted and unique: ss itself when it already is
// (extracted lists always are; no copy of a large list), else a
// sorted, de-duplicated copy (explicit lists stay as given). A nil or empty
// input gives an empty slice.
func sortedUnique(ss []string) []string {
	for i := 1; i < len(ss); i++ {
		if ss[i-1] >= ss[i] {
			return extract.SortUnique(copyStrings(ss))
		}
	}
	if ss == nil {
		return []string{}
	}
	return ss
}

// canonicalSHA256Hex is the hex SHA-256 of the canonical JSON of v, hashed
// while it is encoded (no copy of a large node's encoding).
func canonicalSHA256Hex(v any) (string, error) {
	sum, err := canonjson.CanonicalSHA256(v)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

func copyStrings(ss []string) []string {
	if ss == nil {
		return nil
	}
	return append([]string{}, ss...)
}

// Projection holds the deterministic fold of a turn (spec §3): the eight
// fields whose canonical JSON is hashed into projection_sha256, and the
// lists as stored (explicit lists verbatim, extracted ones sorted).
type Projection struct {
	StepID            int
	NormalizedContent string
	Identifiers       []string // sorted, unique
	Files, Commands   []string // as stored
	Errors            []string // as stored
	PolicyHash        string
	SHA256            string // projection_sha256
}

// Project computes the projection of a turn under a policy (spec §3, §4,
// CONF-03, CONF-11). It is a pure function.
func Project(t Turn, policyHash string) (Projection, error) {
	p := projectFields(t)
	var err error
	p.PolicyHash = policyHash
	p.SHA256, err = p.hash(policyHash)
	return p, err
}

// projectFields extracts the projection's fields (everything but the hash).
func projectFields(t Turn) Projection {
	payload := t.Payload()
	terms := extract.ExtractTurn(t.Summary, payload) // Extract(Text(summary, payload)) without the copy
	p := Projection{
		StepID:            t.StepID,
		NormalizedContent: extract.NormalizeContent(payload),
		Identifiers:       terms.Identifiers,
		Files:             terms.Files,
		Commands:          terms.Commands,
		Errors:            terms.Errors,
	}
	if t.Files != nil {
		p.Files = copyStrings(t.Files)
	}
	if t.Commands != nil {
		p.Commands = copyStrings(t.Commands)
	}
	if t.Errors != nil {
		p.Errors = copyStrings(t.Errors)
	}
	return p
}

// hash is projection_sha256 of the fields under a folding policy hash: the
// SHA-256 of the canonical JSON of the eight projection fields.
func (p Projection) hash(policyHash string) (string, error) {
	return canonicalSHA256Hex(map[string]any{
		"projection_version":  ProjectionVersion,
		"step_id":             p.StepID,
		"normalized_content":  p.NormalizedContent,
		"identifiers":         p.Identifiers,
		"files":               sortedUnique(p.Files),
		"commands":            sortedUnique(p.Commands),
		"errors":              sortedUnique(p.Errors),
		"folding_policy_hash": policyHash,
	})
}

// buildColdNodeFrom makes the cold node of a turn (spec §5) and computes
// its artifact hash over the canonical JSON of the node without that key.
// fields are t's projection fields (projectFields(t), perhaps computed
// ahead: Store.Prepare), hashed under policyHash as Project does. extra
// holds additional keys (e.g. "redactions"), may be nil.
func buildColdNodeFrom(t Turn, fields Projection, policyHash, foldedAt string, sanitized bool, tokenEstimate int, extra map[string]any) (*ColdNode, error) {
	proj := fields
	proj.PolicyHash = policyHash
	var err error
	if proj.SHA256, err = proj.hash(policyHash); err != nil {
		return nil, err
	}
	payload := t.Payload()
	session := t.SessionID
	if session == "" {
		session = DefaultSessionID
	}
	n := &ColdNode{
		StepID:            t.StepID,
		SessionID:         session,
		FoldedAt:          foldedAt,
		Summary:           t.Summary,
		RawContent:        payload,
		NormalizedContent: proj.NormalizedContent,
		PayloadSHA256:     sha256HexString(payload),
		ProjectionSHA256:  proj.SHA256,
		Identifiers:       proj.Identifiers,
		Files:             proj.Files,
		Commands:          proj.Commands,
		Errors:            proj.Errors,
		TokenEstimate:     tokenEstimate,
		Sanitized:         sanitized,
		Status:            "cold",
	}
	doc := map[string]any{
		"ipcf_version":       IPCFVersion,
		"projection_version": ProjectionVersion,
		"step_id":            n.StepID,
		"session_id":         n.SessionID,
		"folded_at":          n.FoldedAt,
		"summary":            n.Summary,
		"raw_content":        n.RawContent,
		"normalized_content": n.NormalizedContent,
		"payload_sha256":     n.PayloadSHA256,
		"projection_sha256":  n.ProjectionSHA256,
		"identifiers":        n.Identifiers,
		"files":              n.Files,
		"commands":           n.Commands,
		"errors":             n.Errors,
		"token_estimate":     n.TokenEstimate,
		"sanitized":          n.Sanitized,
		"status":             n.Status,
	}
	for k, v := range extra {
		doc[k] = v
	}
	if n.ArtifactSHA256, err = canonicalSHA256Hex(doc); err != nil {
		return nil, err
	}
	doc["artifact_sha256"] = n.ArtifactSHA256
	n.Doc = doc
	return n, nil
}

// ArtifactHash recomputes artifact_sha256 of a decoded cold node document:
// SHA-256 of the canonical JSON of every key but artifact_sha256 (spec §3).
func ArtifactHash(doc map[string]any) (string, error) {
	sum, err := canonjson.CanonicalSHA256Except(doc, "artifact_sha256")
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// coldNodeFromDoc reads the typed fields of a decoded cold node document.
func coldNodeFromDoc(doc map[string]any) (*ColdNode, error) {
	n := &ColdNode{Doc: doc}
	var err error
	str := func(k string) string {
		s, ok := doc[k].(string)
		if !ok && err == nil {
			if _, present := doc[k]; present {
				err = fmt.Errorf("key %q is not a string", k)
			}
		}
		return s
	}
	n.SessionID = str("session_id")
	n.FoldedAt = str("folded_at")
	n.Summary = str("summary")
	n.RawContent = str("raw_content")
	n.NormalizedContent = str("normalized_content")
	n.PayloadSHA256 = str("payload_sha256")
	n.ProjectionSHA256 = str("projection_sha256")
	n.ArtifactSHA256 = str("artifact_sha256")
	n.Status = str("status")
	if err != nil {
		return nil, err
	}
	if n.StepID, err = intField(doc, "step_id"); err != nil {
		return nil, err
	}
	if n.TokenEstimate, err = intField(doc, "token_estimate"); err != nil {
		return nil, err
	}
	n.Sanitized, _ = doc["sanitized"].(bool)
	for k, dst := range map[string]*[]string{"identifiers": &n.Identifiers, "files": &n.Files, "commands": &n.Commands, "errors": &n.Errors} {
		if *dst, err = stringsField(doc, k); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// Turn returns the turn this node was folded from, with its stored lists.
func (n *ColdNode) Turn() Turn {
	raw := n.RawContent
	if raw == n.Summary {
		raw = ""
	}
	return Turn{StepID: n.StepID, Summary: n.Summary, RawContent: raw, Files: n.Files, Commands: n.Commands, Errors: n.Errors, SessionID: n.SessionID}
}
