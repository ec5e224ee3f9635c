package contextfold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/schema"
)

// Finding kinds reported by Validate.
const (
	KindPathContainment = "path_containment" // CONF-12
	KindBrokenReference = "broken_reference" // CONF-12
	KindIntegrity       = "integrity"        // CONF-09
	KindOrphan          = "orphan"           // CONF-12
	// Deeper checks, beyond the reference.
	KindPayload       = "payload"        // payload_sha256 ≠ SHA-256 of the stored raw content
	KindProjection    = "projection"     // projection_sha256 ≠ recomputed projection
	KindIndexMismatch = "index_mismatch" // the index entry disagrees with its cold node
	KindStoreFile     = "store_file"     // the index, policy or eviction log cannot be read
	KindSchema        = "schema"         // a file does not follow its JSON Schema (package schema)
	KindTempFile      = "temp_file"      // a temporary file left by an interrupted atomic write
)

// Finding is one problem Validate found. StepID is nil for a finding about a
// file that holds no step (a store file).
type Finding struct {
	StepID  *int
	File    string // the file concerned
	Kind    string // one of the Kind* constants
	Message string
	Err     error // the typed error, when there is one
}

// Report is the result of Validate.
type Report struct {
	Passed   int // indexed nodes that passed every check
	Findings []Finding
}

// OK reports whether the store is clean.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

var stepFileRE = regexp.MustCompile(`^step_(-?\d+)\.json$`)

// ValidateLockWait is how long Validate waits for a writer holding the
// store lock before it reports unindexed files as orphans anyway.
var ValidateLockWait = 30 * time.Second

// rootTempFileRE matches the temporary files of interrupted atomic writes in
// the store root ("." + target name + random digits, as renameio names them,
// and the index snapshot's temporaries).
var rootTempFileRE = regexp.MustCompile(`^\.(recall_index\.json|eviction_log\.json|policy_history\.json|repair_log\.json|store_settings\.json|hydration_policy\.json)-?\d+$|^\.recall_index\.cache\.tmp\d*$`)

// leftoverFiles lists the orphan files of cold_nodes/ (step files whose
// step indexed does not report) and the temporary files of interrupted
// writes in cold_nodes/ (when coldNodes) and the store root.
func (s *Store) leftoverFiles(indexed func(int) bool, coldNodes bool) []Finding {
	if s.be != nil {
		return s.backendOrphans(indexed)
	}
	var out []Finding
	var names []os.DirEntry
	if coldNodes {
		names, _ = os.ReadDir(filepath.Join(s.dir, ColdNodesDir))
	}
	for _, d := range names {
		path := filepath.Join(s.dir, ColdNodesDir, d.Name())
		m := stepFileRE.FindStringSubmatch(d.Name())
		if m == nil {
			// An empty spare file is no part of the store (FillSpares);
			// one holding bytes is a fold's uncommitted node.
			spare, written := isSpare(filepath.Join(s.dir, ColdNodesDir), d.Name())
			if tempFileRE.MatchString(d.Name()) || spare && written {
				le := &LeftoverFileError{File: path}
				out = append(out, Finding{File: path, Kind: KindTempFile, Message: le.Error(), Err: le})
			}
			continue
		}
		id, err := strconv.Atoi(m[1])
		if err == nil && stepFileName(id) == d.Name() && indexed(id) {
			continue
		}
		step := id
		oe := &OrphanedNodeError{StepID: id, File: path}
		out = append(out, Finding{StepID: &step, File: path, Kind: KindOrphan, Message: oe.Error(), Err: oe})
	}
	roots, _ := os.ReadDir(s.dir)
	for _, d := range roots {
		// An empty spare file is no part of the store (FillSpares); one
		// holding bytes is an index rewrite's uncommitted file.
		if _, written := isSpare(s.dir, d.Name()); rootTempFileRE.MatchString(d.Name()) || written {
			path := filepath.Join(s.dir, d.Name())
			le := &LeftoverFileError{File: path}
			out = append(out, Finding{File: path, Kind: KindTempFile, Message: le.Error(), Err: le})
		}
	}
	return out
}

// checkColdNodesDir reports a cold_nodes/ that is not a plain directory of
// the store (a symlink may lead outside it).
func (s *Store) checkColdNodesDir() (Finding, bool) {
	if s.be != nil {
		return Finding{}, true
	}
	path := filepath.Join(s.dir, ColdNodesDir)
	fi, err := os.Lstat(path)
	if err != nil || fi.IsDir() {
		return Finding{}, true
	}
	err = &PathContainmentError{StepID: -1, FilePath: ColdNodesDir, Resolved: resolvePath(path), Want: path}
	return Finding{File: path, Kind: KindPathContainment, Message: path + " is not a directory of the store (a symlink to " + resolvePath(path) + "); cold nodes must live in the store", Err: err}, false
}

// Validate audits every indexed node (path containment, broken reference,
// artifact integrity, payload and projection hashes, agreement of the entry
// with its node) and every orphan file in cold_nodes/, continuing past
// failures (spec §5 validate, CONF-12). It is read-only.
func (s *Store) Validate() (*Report, error) {
	rep := &Report{Findings: []Finding{}}
	if s.be != nil {
		// An audit reads the backend as it is, not the warm copy: an entry
		// changed behind the store's back is checked as stored.
		s.mu.Lock()
		s.ix = nil
		s.mu.Unlock()
	}
	entries, err := s.Entries()
	if err != nil {
		var sf *StoreFileError
		if errors.As(err, &sf) {
			rep.Findings = append(rep.Findings, Finding{File: sf.File, Kind: KindStoreFile, Message: sf.Error(), Err: err})
			return rep, nil
		}
		return nil, err
	}
	policy, perr := s.Policy()
	if perr != nil {
		var sf *StoreFileError
		if errors.As(perr, &sf) {
			rep.Findings = append(rep.Findings, Finding{File: sf.File, Kind: KindStoreFile, Message: sf.Error(), Err: perr})
		}
	}
	rep.Findings = append(rep.Findings, s.checkStoreFileSchemas()...)
	known := s.knownPolicyHashes(policy)
	coldOK := true
	if f, ok := s.checkColdNodesDir(); !ok {
		rep.Findings, coldOK = append(rep.Findings, f), false
	}
	indexed := make(map[int]bool, len(entries))
	for _, e := range entries {
		indexed[e.StepID] = true
	}
	storeReal := ""
	if coldOK && s.be == nil {
		storeReal = resolvePath(s.dir)
	}
	// Every entry's checks are independent (reading and hashing its node,
	// re-extracting its projection, two schema checks): they run on all
	// CPUs, and their findings are gathered in step order.
	per := make([][]Finding, len(entries))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(1, len(entries)/64)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(entries) {
					return
				}
				e := entries[i]
				fs := s.checkEntryIn(e, known, storeReal)
				if err := validateEntryDoc(e.Doc); err != nil {
					fs = append(fs, finding(e.StepID, s.storePath(IndexFile), KindSchema, err))
				}
				per[i] = fs
			}
		}()
	}
	wg.Wait()
	for _, fs := range per {
		if len(fs) == 0 {
			rep.Passed++
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	leftovers := s.leftoverFiles(func(id int) bool { return indexed[id] }, coldOK)
	if validateListedHook != nil {
		validateListedHook()
	}
	if len(leftovers) > 0 && s.be == nil { // a backend's writes are transactions: nothing is midway
		leftovers = s.settleLeftovers(leftovers, coldOK)
	}
	rep.Findings = append(rep.Findings, leftovers...)
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i].StepID, rep.Findings[j].StepID
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		return *a < *b
	})
	return rep, nil
}

// validateListedHook, when set (tests), is called by Validate once it has
// listed the unindexed files of cold_nodes/, before it settles them with a
// live writer (settleLeftovers): a test orders a writer's commit after the
// listing without sleeping.
var validateListedHook func()

// settleLeftovers tells the files a live writer has not committed yet from
// the left-over ones. Under the shared store lock no writer is midway, so
// what is still unindexed then is left over. A writer may hold the lock for
// longer than ValidateLockWait (a long ingest commits its index midway,
// under the lock) or keep a polling reader from it (the lock is not fair):
// meanwhile the index is re-read without the lock, and a finding of the
// first listing whose node has been indexed, or whose file has gone (a
// temporary renamed into place), since is dropped. What is still there
// after ValidateLockWait is reported.
func (s *Store) settleLeftovers(leftovers []Finding, coldOK bool) []Finding {
	deadline := time.Now().Add(ValidateLockWait)
	for {
		wait := min(250*time.Millisecond, max(time.Until(deadline), time.Millisecond))
		l, locked, err := fsutil.RLockExisting(filepath.Join(s.dir, lockFile), wait)
		if err != nil {
			return leftovers // no lock file: no writer of ours has been here
		}
		s.mu.Lock()
		ix, lerr := s.loadIndex()
		s.mu.Unlock()
		if locked {
			if lerr == nil {
				leftovers = s.leftoverFiles(func(id int) bool { _, ok := ix.get(id); return ok }, coldOK)
			}
			l.Unlock()
			return leftovers
		}
		if lerr == nil {
			kept := leftovers[:0]
			for _, f := range leftovers {
				if _, err := os.Lstat(f.File); err != nil {
					continue
				}
				if f.Kind == KindOrphan && f.StepID != nil && stepFileName(*f.StepID) == filepath.Base(f.File) {
					if _, ok := ix.get(*f.StepID); ok {
						continue
					}
				}
				kept = append(kept, f)
			}
			leftovers = kept
		}
		if len(leftovers) == 0 || !time.Now().Before(deadline) {
			return leftovers
		}
	}
}

func finding(step int, file, kind string, err error) Finding {
	return Finding{StepID: &step, File: file, Kind: kind, Message: err.Error(), Err: err}
}

// checkEntry runs every check on one indexed node.
// known holds the folding policy hashes the node may have been folded under.
func (s *Store) checkEntry(e *Entry, known map[string]bool) []Finding {
	return s.checkEntryIn(e, known, "")
}

// checkEntryIn is checkEntry; storeReal, when not "", is the store
// directory with every symlink resolved, known to hold a plain cold_nodes/
// directory (Validate resolves it once, not twice per entry).
func (s *Store) checkEntryIn(e *Entry, known map[string]bool, storeReal string) []Finding {
	path, err := s.containedPath(e, storeReal)
	if err != nil {
		return []Finding{finding(e.StepID, e.FilePath, KindPathContainment, err)}
	}
	n, err := s.readColdNodeAt(e.StepID, path)
	if err != nil {
		if errors.Is(err, ErrBrokenReference) {
			return []Finding{finding(e.StepID, path, KindBrokenReference, err)}
		}
		return []Finding{finding(e.StepID, path, KindIntegrity, err)}
	}
	var out []Finding
	if err := schema.ValidateValue(schema.ColdNode, n.Doc); err != nil {
		out = append(out, finding(e.StepID, path, KindSchema, err))
	}
	if err := verifyNode(e, n, path); err != nil {
		var ie *IntegrityCheckError
		if errors.As(err, &ie) && ie.Check == "payload" {
			// The artifact hash verifies but the payload does not: the
			// file was re-signed after tampering.
			out = append(out, finding(e.StepID, path, KindPayload, err))
		} else {
			return append(out, finding(e.StepID, path, KindIntegrity, err))
		}
	}
	if pv, _ := n.Doc["projection_version"].(string); pv == ProjectionVersion && !projectsUnderAny(n, known) {
		out = append(out, finding(e.StepID, path, KindProjection, &IntegrityCheckError{StepID: e.StepID, File: path, Check: "projection",
			Reason: fmt.Sprintf("projection_sha256 %s is not reproduced by the stored content and lists under any folding policy this store has used", n.ProjectionSHA256)}))
	}
	var diffs []string
	if n.StepID != e.StepID {
		diffs = append(diffs, fmt.Sprintf("step_id %d vs %d", e.StepID, n.StepID))
	}
	if n.PayloadSHA256 != e.PayloadSHA256 {
		diffs = append(diffs, "payload_sha256")
	}
	if n.ProjectionSHA256 != e.ProjectionSHA256 {
		diffs = append(diffs, "projection_sha256")
	}
	if n.Summary != e.Summary {
		diffs = append(diffs, "summary")
	}
	if len(diffs) > 0 {
		out = append(out, finding(e.StepID, path, KindIndexMismatch, &IntegrityCheckError{StepID: e.StepID, File: path,
			Reason: fmt.Sprintf("the index entry disagrees with the cold node on %v", diffs)}))
	}
	return out
}

// projectsUnderAny reports whether the node's stored fields reproduce its
// projection_sha256 under one of the policy hashes.
func projectsUnderAny(n *ColdNode, policyHashes map[string]bool) bool {
	hashes := make([]string, 0, len(policyHashes))
	for h := range policyHashes {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	fields := projectFields(n.Turn())
	for _, h := range hashes {
		if sum, err := fields.hash(h); err == nil && sum == n.ProjectionSHA256 {
			return true
		}
	}
	return false
}

// checkStoreFileSchemas validates the store's JSON files other than the index
// and the cold nodes against their schemas.
func (s *Store) checkStoreFileSchemas() []Finding {
	var out []Finding
	for _, f := range []struct{ file, schema string }{
		{PolicyFile, schema.HydrationPolicy},
		{EvictionLogFile, schema.EvictionLog},
		{SettingsFile, schema.StoreSettings},
		{RepairLogFile, schema.RepairLog},
		{PolicyHistoryFile, ""},
	} {
		path := s.storePath(f.file)
		data, err := s.readStoreFile(f.file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil { // a FIFO, a device, a directory, past MaxFileBytes, unreadable
			out = append(out, Finding{File: path, Kind: KindStoreFile, Message: err.Error(), Err: err})
			continue
		}
		if f.schema == "" {
			continue
		}
		if err := schema.Validate(f.schema, data); err != nil {
			out = append(out, Finding{File: path, Kind: KindSchema, Message: err.Error(), Err: err})
		}
	}
	return out
}

// Remedy says what to do about a finding of a kind: the repair action that
// fixes it, or what a person must restore. validate and the inspector show it.
func Remedy(kind string) string {
	switch kind {
	case KindOrphan:
		return "contextfold repair --apply re-indexes it if its artifact verifies, else moves it to quarantine/"
	case KindBrokenReference:
		return "contextfold repair --apply drops the entry from the index (or restore the file from a backup)"
	case KindIntegrity, KindPayload, KindIndexMismatch, KindProjection:
		return "contextfold repair --apply moves the file and its entry to quarantine/ (or restore the file from a backup)"
	case KindPathContainment:
		return "the index points outside cold_nodes/: contextfold repair --apply drops the entry and re-indexes the real file (or restore recall_index.json)"
	case KindTempFile:
		return "contextfold repair --apply moves it to quarantine/ (it is never part of the store)"
	case KindSchema:
		return "the file does not follow its schema (contextfold schema NAME): fix or restore it"
	case KindStoreFile:
		return "restore the file from a backup; for recall_index.json, contextfold repair --apply rebuilds it from cold_nodes/"
	}
	return "fix or restore the file named"
}
