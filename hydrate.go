package contextfold

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/tokens"
)

// Hydration is a verified cold node paged into a prompt (spec §5 hydrate).
type Hydration struct {
	StepID int
	// Content is what may be injected into the prompt: the raw content, cut
	// to 4 × cap code points when its estimate exceeds the per-call cap.
	Content string
	// RawContent is the whole stored payload, for verification only; it must
	// never be injected.
	RawContent       string
	TokenEstimate    int // tokens of Content (the cap when truncated)
	Truncated        bool
	Summary          string
	PayloadSHA256    string
	ProjectionSHA256 string
	ArtifactSHA256   string
	Node             *ColdNode
	// Windows, set only by focused hydration (package match, ranked mode),
	// are the parts of RawContent that Content holds, in order; nil when
	// Content is the reference's prefix truncation or the whole payload.
	Windows []Window `json:",omitempty"`
}

// Window is one excerpt of a cold node's payload placed by focused
// hydration: code-point offsets [Start, End) into RawContent and the
// 1-based lines [FirstLine, LastLine] it spans.
type Window struct {
	Start, End          int
	FirstLine, LastLine int
}

// checkContainment verifies that the index's file_path resolves, symlinks
// followed, to exactly the step's canonical file inside cold_nodes/
// (CONF-12). It returns the path to read.
func (s *Store) checkContainment(e *Entry) (string, error) { return s.containedPath(e, "") }

// containedPath is checkContainment. storeReal, when not "", is the store
// directory resolved, with a plain cold_nodes/ directory: an entry whose
// file_path is the canonical one the index writes, and whose file is not a
// symlink, then resolves to the canonical file without resolving its path
// again (what resolving would find: the same file).
func (s *Store) containedPath(e *Entry, storeReal string) (string, error) {
	if s.be != nil {
		// A backend holds no paths: the entry must name the step's
		// canonical file_path, as the directory store writes it.
		if want := s.indexFilePath(e.StepID); e.FilePath != want {
			return "", &PathContainmentError{StepID: e.StepID, FilePath: e.FilePath, Resolved: e.FilePath, Want: want}
		}
		return s.NodePath(e.StepID), nil
	}
	if storeReal != "" && e.FilePath == s.indexFilePath(e.StepID) {
		want := filepath.Join(storeReal, ColdNodesDir, stepFileName(e.StepID))
		if fi, err := os.Lstat(s.NodePath(e.StepID)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return want, nil
		}
	}
	// The canonical file: the store's cold_nodes/ directory plus the step's
	// file name. The file itself is not resolved: a symlink in its place
	// must resolve to itself, i.e. not be a symlink out.
	// cold_nodes/ itself is not resolved either: a cold_nodes/ that is a
	// symlink (to a directory outside the store) contains nothing.
	want := filepath.Join(resolvePath(s.dir), ColdNodesDir, stepFileName(e.StepID))
	fp := filepath.FromSlash(e.FilePath)
	var got string
	if filepath.IsAbs(fp) {
		got = resolvePath(fp)
	} else {
		got = resolvePath(filepath.Join(filepath.Dir(s.dir), fp))
	}
	if got != want {
		return "", &PathContainmentError{StepID: e.StepID, FilePath: e.FilePath, Resolved: got, Want: want}
	}
	return want, nil
}

// resolvePath resolves symlinks in path as far as it exists: the existing
// prefix is resolved and the rest appended.
func resolvePath(path string) string {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	dir, base := filepath.Split(path)
	dir = filepath.Clean(dir)
	if dir == path { // root
		return path
	}
	return filepath.Join(resolvePath(dir), base)
}

// readColdNode reads and parses a step's canonical cold node file.
func (s *Store) readColdNode(step int) (*ColdNode, error) {
	return s.readColdNodeAt(step, s.NodePath(step))
}

// readColdNodeAt reads and parses the cold node of step at path (a
// directory store) or from the backend (path then only names it).
func (s *Store) readColdNodeAt(step int, path string) (*ColdNode, error) {
	data, err := s.nodeBytes(step, path)
	return parseColdNodeBytes(step, path, data, err)
}

func readColdNodeFile(step int, path string) (*ColdNode, error) {
	data, err := fsutil.ReadFileMax(path, MaxFileBytes)
	return parseColdNodeBytes(step, path, data, err)
}

// parseColdNodeBytes parses a cold node's bytes (err: the read's error).
func parseColdNodeBytes(step int, path string, data []byte, err error) (*ColdNode, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &BrokenReferenceError{StepID: step, File: path}
	}
	if err != nil {
		return nil, &IntegrityCheckError{StepID: step, File: path, Check: "read", Reason: "unreadable: " + err.Error()}
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, &IntegrityCheckError{StepID: step, File: path, Check: "parse", Reason: "not valid JSON (truncated or corrupt): " + err.Error()}
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, &IntegrityCheckError{StepID: step, File: path, Check: "parse", Reason: "not a JSON object"}
	}
	n, err := coldNodeFromDoc(doc)
	if err != nil {
		return nil, &IntegrityCheckError{StepID: step, File: path, Check: "parse", Reason: err.Error()}
	}
	return n, nil
}

// verifyNode checks a cold node against itself and the index entry: the
// artifact hash must be present, recompute to the stored value, and equal the
// index's (CONF-09); and the raw content must hash to payload_sha256.
func verifyNode(e *Entry, n *ColdNode, path string) error {
	if n.ArtifactSHA256 == "" {
		return &IntegrityCheckError{StepID: e.StepID, File: path, Check: "artifact", Reason: "no artifact_sha256"}
	}
	h, err := ArtifactHash(n.Doc)
	if err != nil {
		return &IntegrityCheckError{StepID: e.StepID, File: path, Check: "artifact", Reason: err.Error()}
	}
	if h != n.ArtifactSHA256 {
		return &IntegrityCheckError{StepID: e.StepID, File: path, Check: "artifact", Reason: "artifact hash mismatch: recomputed " + h + ", stored " + n.ArtifactSHA256 + " (the file was modified)"}
	}
	if n.ArtifactSHA256 != e.ArtifactSHA256 {
		return &IntegrityCheckError{StepID: e.StepID, File: path, Check: "index", Reason: "artifact hash " + n.ArtifactSHA256 + " differs from the index's " + e.ArtifactSHA256}
	}
	// Beyond the reference: the payload itself must hash to payload_sha256,
	// so a node re-signed after tampering is still refused (exact retrieval).
	if got := sha256Hex([]byte(n.RawContent)); got != n.PayloadSHA256 {
		return &IntegrityCheckError{StepID: e.StepID, File: path, Check: "payload", Reason: "payload hash mismatch: the stored raw content hashes to " + got + ", payload_sha256 says " + n.PayloadSHA256}
	}
	return nil
}

// Hydrate pages a cold node in (spec §5, CONF-05/06/09/10/12). It is
// read-only: it changes no byte of the store.
//
// Errors: *NodeNotFoundError (unknown step), *OrphanedNodeError (unknown
// step whose file exists), *PathContainmentError, *BrokenReferenceError
// (file missing), *IntegrityCheckError (unparsable, hash-less or tampered
// file, when the policy's integrity_verification is on), *StoreFileError.
func (s *Store) Hydrate(step int) (*Hydration, error) {
	e, err := s.lookup(step)
	if err != nil {
		return nil, err
	}
	policy, err := s.Policy()
	if err != nil {
		return nil, err
	}
	return s.hydrateEntry(e, policy)
}

// lookup returns the entry of a step, or NodeNotFound/OrphanedNode.
func (s *Store) lookup(step int) (*Entry, error) {
	e, err := s.Entry(step)
	if errors.Is(err, ErrNodeNotFound) {
		if s.be != nil {
			if _, berr := s.be.ReadNode(step); berr == nil {
				return nil, &OrphanedNodeError{StepID: step, File: s.NodePath(step)}
			}
		} else if _, serr := os.Lstat(s.NodePath(step)); serr == nil {
			return nil, &OrphanedNodeError{StepID: step, File: s.NodePath(step)}
		}
	}
	return e, err
}

func (s *Store) hydrateEntry(e *Entry, policy *Policy) (*Hydration, error) {
	path, err := s.checkContainment(e)
	if err != nil {
		return nil, err
	}
	n, err := s.readColdNodeAt(e.StepID, path)
	if err != nil {
		return nil, err
	}
	if policy.IntegrityVerification() {
		if err := verifyNode(e, n, path); err != nil {
			return nil, err
		}
	}
	capTokens, err := policy.MaxTokensPerCall()
	if err != nil {
		return nil, &StoreFileError{File: s.storePath(PolicyFile), Err: err, Remedy: "set max_rehydration_tokens_per_call to a number"}
	}
	h := &Hydration{
		StepID:           e.StepID,
		Content:          n.RawContent,
		RawContent:       n.RawContent,
		TokenEstimate:    n.TokenEstimate,
		Summary:          n.Summary,
		PayloadSHA256:    n.PayloadSHA256,
		ProjectionSHA256: n.ProjectionSHA256,
		ArtifactSHA256:   n.ArtifactSHA256,
		Node:             n,
	}
	if float64(n.TokenEstimate) > capTokens {
		counter, err := policy.Counter()
		if err != nil {
			return nil, &StoreFileError{File: s.storePath(PolicyFile), Err: err, Remedy: "set token_counter to heuristic, o200k_base or cl100k_base, or remove it"}
		}
		h.Truncated = true
		h.TokenEstimate = int(math.Floor(capTokens))
		if counter.Name() == tokens.HeuristicName {
			// The reference: the first 4 × cap code points (Python slice
			// semantics, so a negative cap drops from the end).
			h.Content = pySlicePrefix(n.RawContent, capCodePoints(capTokens))
		} else {
			// An exact counter cuts on a token boundary, never inside a
			// UTF-8 sequence, and reports what the content really costs.
			h.Content, _ = counter.Truncate(n.RawContent, h.TokenEstimate)
			if c := counter.Count(h.Content); c < h.TokenEstimate {
				h.TokenEstimate = c
			}
		}
	}
	return h, nil
}

// capCodePoints is 4 × cap, the per-call cap in code points.
func capCodePoints(capTokens float64) int {
	f := math.Floor(capTokens * 4)
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	if f < math.MinInt32 {
		return math.MinInt32
	}
	return int(f)
}

// pySlicePrefix is Python's s[:n] over code points: a negative n drops -n
// code points from the end.
func pySlicePrefix(s string, n int) string {
	count := utf8.RuneCountInString(s)
	if n < 0 {
		n += count
		if n < 0 {
			n = 0
		}
	}
	if n >= count {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// ReadColdNode reads and parses a step's cold node file without verifying it
// (audits such as scrub-check use it; hydrate is the verified read).
func (s *Store) ReadColdNode(step int) (*ColdNode, error) { return s.readColdNode(step) }

// ReadColdNodeBytes returns the bytes of a step's cold node as stored (its
// file, or a backend store's copy), neither parsed nor verified; a read
// error is returned as it is (fs.ErrNotExist for a missing node). With
// ParseColdNode it is ReadColdNode in two steps, for a caller that looks
// at the bytes first (the ranked scan's needle stage searches them before
// it decodes a node). Safe for concurrent use as the store is.
func (s *Store) ReadColdNodeBytes(step int) ([]byte, error) {
	return s.nodeBytes(step, s.NodePath(step))
}

// AppendColdNodeBytes is ReadColdNodeBytes appending the node's bytes to
// buf: a node file is read into buf's spare capacity when it has room (a
// caller reading many nodes reuses one buffer instead of allocating one a
// node); a backend store's copy, or a node whose file is still being
// committed, is appended. It returns the extended buffer; on an error,
// buf unchanged and ReadColdNodeBytes's error. Safe for concurrent use as
// the store is (on distinct buffers).
func (s *Store) AppendColdNodeBytes(buf []byte, step int) ([]byte, error) {
	path := s.NodePath(step)
	if s.be == nil {
		out, err := fsutil.AppendFileMax(buf, path, MaxFileBytes)
		if !errors.Is(err, fs.ErrNotExist) {
			return out, err
		}
	}
	data, err := s.nodeBytes(step, path)
	if err != nil {
		return buf, err
	}
	return append(buf, data...), nil
}

// ParseColdNode parses bytes ReadColdNodeBytes returned for step, with
// ReadColdNode's errors (an *IntegrityCheckError naming the node's file
// for bytes that are not a cold node). Not verified.
func (s *Store) ParseColdNode(step int, data []byte) (*ColdNode, error) {
	return parseColdNodeBytes(step, s.NodePath(step), data, nil)
}
