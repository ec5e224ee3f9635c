package contextfold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/schema"
	"github.com/contextfold/contextfold/scrub"
)

// Repair protocol (spec §12, beyond IPCF-1.1): our extension files.
const (
	// QuarantineDir receives every file repair takes out of service; nothing
	// is ever deleted.
	QuarantineDir = "quarantine"
	// RepairLogFile is the append-only record of repair actions:
	// {"actions": [{"at","action","step_id","file","reason"}, …]}.
	RepairLogFile = "repair_log.json"
)

// Repair actions.
const (
	ActionReindex       = "reindex"        // an orphan whose artifact verifies is indexed again
	ActionDropReference = "drop_reference" // an index entry without a usable file leaves the index (kept in quarantine/)
	ActionQuarantine    = "quarantine"     // a corrupt or tampered file (and its entry) moves to quarantine/
	ActionRebuildIndex  = "rebuild_index"  // an unreadable index (or journal) moves to quarantine/; the index is rebuilt from cold_nodes/
)

// RepairAction is one step of a repair plan.
type RepairAction struct {
	Action string // one of the Action* constants
	StepID *int   // nil for a store file
	File   string // the file concerned: an absolute path in a directory store
	Reason string // the finding that calls for it
}

// RepairResult is a repair plan, and whether it was applied.
type RepairResult struct {
	Actions []RepairAction
	Applied bool
	// Manual lists findings repair cannot fix because they are a person's
	// choice, not derived data: a hydration policy, store settings or log
	// file that does not parse or does not follow its schema.
	Manual []Finding
}

// Repair plans, and with apply carries out, the repair of every broken state
// Validate reports: an orphan whose artifact verifies is re-indexed (with its
// eviction state restored from the eviction log); a broken reference or an
// entry whose path escapes cold_nodes/ leaves the index; a corrupt or
// tampered file moves to quarantine/ with its index entry; an unreadable
// index is rebuilt from cold_nodes/. Nothing is ever deleted. Applied actions
// are appended to repair_log.json. After an applied repair Validate is clean
// and a second Repair plans nothing.
//
// Without apply, Repair changes nothing. It is safe to call at start-up of a
// harness; it takes the store lock when applying.
func (s *Store) Repair(apply bool) (*RepairResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if apply {
		// The temporaries of interrupted writes are repair's to quarantine
		// (as its plan says; it deletes nothing): its lock does not sweep them.
		s.swept = true
		l, err := s.lock()
		if err != nil {
			return nil, err
		}
		defer l.Unlock()
	}
	// Repair writes into cold_nodes/ and quarantine/ only when they are
	// directories of the store: a symlink could lead the moves outside it.
	for _, d := range []string{ColdNodesDir, QuarantineDir} {
		if s.be != nil {
			break // a backend holds no directories
		}
		path := filepath.Join(s.dir, d)
		if fi, err := os.Lstat(path); err == nil && !fi.IsDir() {
			return nil, &StoreFileError{File: path, Err: fmt.Errorf("is not a directory of the store (it resolves to %s)", resolvePath(path)),
				Remedy: "replace it by a plain directory (move the link away, then move the files it holds back in), and run repair again"}
		}
	}
	res := &RepairResult{Applied: apply, Manual: s.checkStoreFileSchemas()}
	if _, err := s.Policy(); err != nil {
		var sf *StoreFileError
		if errors.As(err, &sf) {
			res.Manual = append(res.Manual, Finding{File: sf.File, Kind: KindStoreFile, Message: sf.Error(), Err: err})
		}
	}
	var moves [][2]string // quarantine moves: from, name
	var entryDocs = map[string]map[string]any{}
	var rawEntries []StoredEntry // a backend's unreadable index, kept in quarantine
	var rawHeader []byte
	moveStep := map[string]int{} // backend: quarantine name → step whose node moves

	if s.be != nil {
		s.ix = nil // repair reads the backend as it is (see Validate)
	}
	ix, err := s.loadIndex()
	if err != nil {
		var sf *StoreFileError
		if !errors.As(err, &sf) {
			return nil, err
		}
		res.Actions = append(res.Actions, RepairAction{Action: ActionRebuildIndex, File: sf.File, Reason: sf.Error()})
		if s.be != nil {
			d, derr := s.be.ReadIndex(Revision{})
			if derr != nil {
				return nil, s.storeErr(s.storePath(IndexFile), derr, "")
			}
			rawEntries, rawHeader = d.Entries, d.Header
		}
		for _, f := range []string{IndexFile, JournalFile, IndexCacheFile} {
			if s.be != nil {
				break
			}
			if _, err := os.Stat(filepath.Join(s.dir, f)); err == nil {
				moves = append(moves, [2]string{filepath.Join(s.dir, f), f})
			}
		}
		created := ""
		if s.be != nil {
			if v, derr := canonjson.Decode(rawHeader); derr == nil {
				if m, ok := v.(map[string]any); ok {
					created, _ = m["created_at"].(string)
				}
			}
		} else if data, rerr := fsutil.ReadFileMax(filepath.Join(s.dir, IndexFile), MaxIndexBytes); rerr == nil {
			if v, derr := canonjson.Decode(data); derr == nil {
				if m, ok := v.(map[string]any); ok {
					created, _ = m["created_at"].(string)
				}
			}
		}
		ix = newIndex(created)
	}
	policy, _ := s.Policy()
	known := s.knownPolicyHashes(policy)
	sc, _ := s.scrubber()

	keep := newIndex("")
	keep.header = ix.header
	for _, p := range ix.sortedPositions() {
		e := ix.entry(ix.recs[p])
		findings := s.checkEntry(e, known)
		if len(findings) == 0 {
			r, err := keep.recordFromDoc("", e.Doc)
			if err != nil {
				return nil, err
			}
			keep.add(r)
			continue
		}
		f := findings[0]
		step := e.StepID
		name := stepFileName(step)
		entryDocs[name] = e.Doc
		switch f.Kind {
		case KindBrokenReference, KindPathContainment:
			res.Actions = append(res.Actions, RepairAction{Action: ActionDropReference, StepID: &step, File: s.referencedPath(e.FilePath), Reason: f.Message})
		default:
			res.Actions = append(res.Actions, RepairAction{Action: ActionQuarantine, StepID: &step, File: s.NodePath(step), Reason: f.Message})
			moves = append(moves, [2]string{s.NodePath(step), name})
			moveStep[name] = step
		}
	}

	// Orphans: files in cold_nodes/ that the kept index does not list.
	var names []nodeName
	if s.be != nil {
		steps, err := s.be.NodeSteps()
		if err != nil {
			return nil, s.storeErr(s.storePath(ColdNodesDir), err, "")
		}
		for _, id := range steps {
			names = append(names, nodeName{stepFileName(id), true})
		}
	} else {
		des, _ := os.ReadDir(filepath.Join(s.dir, ColdNodesDir))
		for _, d := range des {
			names = append(names, nodeName{d.Name(), d.Type().IsRegular()})
		}
	}
	var reindex []*ColdNode
	for _, d := range names {
		m := stepFileRE.FindStringSubmatch(d.Name())
		if m == nil {
			// A temporary file of an atomic write that was interrupted
			// (".step_NNNNNN.json<random>"): never part of the store, moved
			// aside so that cold_nodes/ holds nodes only.
			// A spare file holding bytes is one too (a fold's
			// uncommitted node); an empty spare holds nothing (FillSpares).
			_, written := isSpare(filepath.Join(s.dir, ColdNodesDir), d.Name())
			if (tempFileRE.MatchString(d.Name()) || written) && d.regular {
				path := filepath.Join(s.dir, ColdNodesDir, d.Name())
				res.Actions = append(res.Actions, RepairAction{Action: ActionQuarantine, File: path, Reason: "temporary file left by an interrupted write"})
				moves = append(moves, [2]string{path, d.Name()})
			}
			continue
		}
		path := filepath.Join(s.dir, ColdNodesDir, d.Name())
		id, err := strconv.Atoi(m[1])
		if s.be != nil {
			path = s.NodePath(id)
		}
		if err == nil && stepFileName(id) == d.Name() {
			if _, indexed := keep.get(id); indexed {
				continue
			}
			if already(res.Actions, id, ActionQuarantine) {
				continue
			}
		}
		step := id
		n, why := s.verifyOrphan(id, d.Name(), path, known)
		if why == "" {
			res.Actions = append(res.Actions, RepairAction{Action: ActionReindex, StepID: &step, File: path, Reason: "orphan whose artifact verifies"})
			reindex = append(reindex, n)
		} else {
			res.Actions = append(res.Actions, RepairAction{Action: ActionQuarantine, StepID: &step, File: path, Reason: "orphan that does not verify: " + why})
			moves = append(moves, [2]string{path, d.Name()})
			moveStep[d.Name()] = id
		}
	}
	// Temporary files of interrupted writes in the store root.
	var roots []os.DirEntry
	if s.be == nil {
		roots, _ = os.ReadDir(s.dir)
	}
	for _, d := range roots {
		// A spare file holding bytes is one too (an index rewrite's
		// uncommitted file); an empty spare holds nothing (FillSpares).
		if _, written := isSpare(s.dir, d.Name()); (rootTempFileRE.MatchString(d.Name()) || written) && d.Type().IsRegular() {
			path := filepath.Join(s.dir, d.Name())
			res.Actions = append(res.Actions, RepairAction{Action: ActionQuarantine, File: path, Reason: "temporary file left by an interrupted write"})
			moves = append(moves, [2]string{path, strings.TrimPrefix(d.Name(), ".")})
		}
	}
	if !apply || len(res.Actions) == 0 {
		return res, nil
	}

	// Apply: quarantine first (moves, entry copies), then the new index.
	now := s.now()
	stamp := strings.NewReplacer(":", "", "-", "").Replace(now)
	if s.be != nil {
		if err := s.quarantineInBackend(stamp, entryDocs, moves, moveStep, rawEntries, rawHeader, res.Actions); err != nil {
			return nil, err
		}
		return s.finishRepair(res, keep, reindex, sc, now)
	}
	qdir := filepath.Join(s.dir, QuarantineDir)
	if err := mkQuarantine(qdir); err != nil {
		return nil, err
	}
	for name, doc := range entryDocs {
		data, err := canonjson.Pretty(doc)
		if err != nil {
			return nil, err
		}
		dst := uniquePath(filepath.Join(qdir, stamp+"-"+strings.TrimSuffix(name, ".json")+".index-entry.json"))
		if err := fsutil.WriteFileAtomic(dst, data, 0o644); err != nil {
			return nil, &StoreFileError{File: dst, Err: err, Remedy: "free disk space"}
		}
	}
	for _, mv := range moves {
		dst := uniquePath(filepath.Join(qdir, stamp+"-"+mv[1]))
		if err := os.Rename(mv[0], dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &StoreFileError{File: mv[0], Err: err, Remedy: "fix the permissions of the store directory"}
		}
	}
	if err := fsutil.SyncDir(qdir); err != nil {
		return nil, err
	}
	return s.finishRepair(res, keep, reindex, sc, now)
}

// nodeName is a name in cold_nodes/ (a backend's: every node a regular file).
type nodeName struct {
	name    string
	regular bool
}

func (n nodeName) Name() string { return n.name }

// quarantineInBackend is the quarantine step of an applied repair of a
// backend store: entry copies, node moves and an unreadable index go to the
// backend's quarantine, in the repair's write transaction.
func (s *Store) quarantineInBackend(stamp string, entryDocs map[string]map[string]any, moves [][2]string, moveStep map[string]int,
	rawEntries []StoredEntry, rawHeader []byte, actions []RepairAction) error {
	s.txWrites = true
	reason := func(step int) string {
		for _, a := range actions {
			if a.StepID != nil && *a.StepID == step {
				return a.Reason
			}
		}
		return ""
	}
	names := make([]string, 0, len(entryDocs))
	for name := range entryDocs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data, err := canonjson.Pretty(entryDocs[name])
		if err != nil {
			return err
		}
		qn := stamp + "-" + strings.TrimSuffix(name, ".json") + ".index-entry.json"
		if err := s.tx.Quarantine(qn, data, reason(moveStep[name])); err != nil {
			return s.storeErr(s.storePath(QuarantineDir), err, "")
		}
	}
	if rawHeader != nil || len(rawEntries) > 0 {
		for _, e := range rawEntries {
			if err := s.tx.Quarantine(stamp+"-"+strings.TrimSuffix(stepFileName(e.StepID), ".json")+".index-entry.json", e.Doc, "the index did not read; rebuilt from the cold nodes"); err != nil {
				return s.storeErr(s.storePath(QuarantineDir), err, "")
			}
		}
		if rawHeader != nil {
			if err := s.tx.Quarantine(stamp+"-recall_index.header.json", rawHeader, "the index did not read; rebuilt from the cold nodes"); err != nil {
				return s.storeErr(s.storePath(QuarantineDir), err, "")
			}
		}
	}
	for _, mv := range moves {
		step, ok := moveStep[mv[1]]
		if !ok {
			continue
		}
		if err := s.tx.QuarantineNode(step, stamp+"-"+mv[1], reason(step)); err != nil {
			return s.storeErr(mv[0], err, "")
		}
	}
	return nil
}

// finishRepair re-indexes the verified orphans, writes the new index and the
// repair log, and commits (a backend's transaction). Callers hold the lock.
func (s *Store) finishRepair(res *RepairResult, keep *index, reindex []*ColdNode, sc *scrub.Scrubber, now string) (*RepairResult, error) {
	evicted := map[int]bool{}
	if log, err := s.evictionEvents(); err == nil {
		for _, ev := range log {
			evicted[ev.StepID] = true
		}
	}
	for _, n := range reindex {
		r := keep.recordFromNode(n, s.indexFilePath(n.StepID), s.maxIndexIdentifiers(sc))
		r.evicted = evicted[n.StepID]
		keep.add(r)
	}
	if v, _ := keep.header["created_at"].(string); v == "" {
		keep.header["created_at"] = now
	}
	if keep.header["ipcf_version"] == nil {
		keep.header["ipcf_version"] = IPCFVersion
		keep.header["projection_version"] = ProjectionVersion
	}
	s.ix = nil
	if err := s.writeIndex(keep); err != nil {
		return nil, err
	}
	if err := s.appendRepairLog(now, res.Actions); err != nil {
		return nil, err
	}
	return res, s.flush()
}

// referencedPath is the absolute path an index file_path names (relative
// to the directory that holds the store, spec §1), without resolving
// symlinks, so a drop_reference action names its file the way every other
// action does. A database store's file_path is returned as it is.
func (s *Store) referencedPath(filePath string) string {
	if s.be != nil {
		return filePath
	}
	fp := filepath.FromSlash(filePath)
	if filepath.IsAbs(fp) {
		return filepath.Clean(fp)
	}
	return filepath.Join(filepath.Dir(s.dir), fp)
}

// tempFileRE matches the temporary files of an interrupted atomic write in
// cold_nodes/ (renameio names them "." + target name + random digits).
var tempFileRE = regexp.MustCompile(`^\.step_-?\d+\.json-?\d+$`)

func already(actions []RepairAction, step int, action string) bool {
	for _, a := range actions {
		if a.StepID != nil && *a.StepID == step && a.Action == action {
			return true
		}
	}
	return false
}

// verifyOrphan checks that an unindexed file is a whole, untampered cold node
// of the step its name says; it returns the reason when it is not.
func (s *Store) verifyOrphan(id int, name, path string, known map[string]bool) (*ColdNode, string) {
	if s.be != nil {
		// A backend's node is bytes: there is no file type to check.
	} else if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, "not a regular file"
	}
	if stepFileName(id) != name {
		return nil, "the file name is not a canonical step file name"
	}
	n, err := s.readColdNodeAt(id, path)
	if err != nil {
		return nil, err.Error()
	}
	if n.StepID != id {
		return nil, fmt.Sprintf("the file holds step %d", n.StepID)
	}
	if n.ArtifactSHA256 == "" {
		return nil, "no artifact_sha256"
	}
	if h, err := ArtifactHash(n.Doc); err != nil || h != n.ArtifactSHA256 {
		return nil, "artifact hash mismatch"
	}
	if sha256Hex([]byte(n.RawContent)) != n.PayloadSHA256 {
		return nil, "payload hash mismatch"
	}
	if pv, _ := n.Doc["projection_version"].(string); pv == ProjectionVersion && !projectsUnderAny(n, known) {
		return nil, "projection hash mismatch"
	}
	return n, ""
}

func uniquePath(p string) string {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return p
	}
	ext := filepath.Ext(p)
	base := strings.TrimSuffix(p, ext)
	for i := 2; ; i++ {
		q := fmt.Sprintf("%s.%d%s", base, i, ext)
		if _, err := os.Lstat(q); errors.Is(err, fs.ErrNotExist) {
			return q
		}
	}
}

// appendRepairLog appends actions to repair_log.json.
func (s *Store) appendRepairLog(at string, actions []RepairAction) error {
	path := s.storePath(RepairLogFile)
	doc := map[string]any{"actions": []any{}}
	if data, err := s.readStoreFile(RepairLogFile); err == nil {
		if v, err := canonjson.Decode(data); err == nil {
			if m, ok := v.(map[string]any); ok {
				if _, ok := m["actions"].([]any); ok {
					doc = m
				}
			}
		}
	}
	list := doc["actions"].([]any)
	for _, a := range actions {
		item := map[string]any{"at": at, "action": a.Action, "file": a.File, "reason": a.Reason, "step_id": nil}
		if a.StepID != nil {
			item["step_id"] = *a.StepID
		}
		list = append(list, item)
	}
	doc["actions"] = list
	data, err := canonjson.Pretty(doc)
	if err != nil {
		return err
	}
	if err := schema.Validate(schema.RepairLog, data); err != nil {
		return &StoreFileError{File: path, Err: err, Remedy: "repair_log.json does not follow its schema; move it aside and repair again"}
	}
	if err := s.writeStoreFile(RepairLogFile, data); err != nil {
		return s.storeErr(path, err, "free disk space")
	}
	return nil
}
