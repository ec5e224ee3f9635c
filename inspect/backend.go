package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/contextfold/contextfold"
)

// A database store (contextfold.Backend, e.g. a PostgreSQL session) is
// inspected through the Store and its backend's read methods only,
// exactly as a directory store is through the Store and its files: nothing
// is written (CONF-08), and the store is named by its Location, which holds
// no password.

// hasIndex reports whether the store has a recall index yet.
func (in *Inspector) hasIndex() bool {
	if be := in.store.Backend(); be != nil {
		st, err := in.store.Status()
		return err == nil && st.Total > 0
	}
	return fileExists(in.store.Dir(), contextfold.IndexFile)
}

// storeArg names the store on a command line: "--dir DIR", or "--store
// URL" for a database store (without its password).
func (in *Inspector) storeArg() string {
	if in.store.Backend() != nil {
		return "--store " + in.store.Dir()
	}
	return "--dir " + in.store.Dir()
}

// storeFingerprint identifies the store's state for the validate report
// cache: the files' names, sizes and times of a directory store
// (fingerprint); for a database store the index revision, the policy's
// bytes and the steps holding cold node bytes. A row rewritten behind the
// store's back is not seen until "verify now" (validate?fresh=1) — as a
// file rewritten with its old size and time is not.
func (in *Inspector) storeFingerprint() string {
	be := in.store.Backend()
	if be == nil {
		return fingerprint(in.store.Dir())
	}
	var b strings.Builder
	v, err := in.store.IndexVersion()
	fmt.Fprintf(&b, "index %s %v\n", v, err)
	p, err := be.ReadFile(contextfold.PolicyFile)
	sum := sha256.Sum256(p)
	fmt.Fprintf(&b, "policy %s %v\n", hex.EncodeToString(sum[:]), err != nil)
	steps, err := be.NodeSteps()
	fmt.Fprintf(&b, "nodes %v %v\n", steps, err != nil)
	return b.String()
}

// nodeSize returns the size of a step's stored cold node (bytes): its file,
// or its bytes in the database (read once per artifact_sha256 and cached;
// artifact "" is not cached).
func (in *Inspector) nodeSize(step int, artifact string) (int64, bool) {
	be := in.store.Backend()
	if be == nil {
		return fileSize(in.store.NodePath(step))
	}
	if artifact != "" {
		in.cache.mu.Lock()
		n, ok := in.cache.sizes[artifact]
		in.cache.mu.Unlock()
		if ok {
			return n, true
		}
	}
	data, err := be.ReadNode(step)
	if err != nil {
		return 0, false
	}
	if artifact != "" {
		in.cache.mu.Lock()
		if in.cache.sizes == nil {
			in.cache.sizes = map[string]int64{}
		}
		in.cache.sizes[artifact] = int64(len(data))
		in.cache.mu.Unlock()
	}
	return int64(len(data)), true
}

// nodeDoc reads a step's stored cold node without verifying it, for the
// views of nodes that failed verification.
func (in *Inspector) nodeDoc(step int) (map[string]any, error) {
	be := in.store.Backend()
	if be == nil {
		return readNodeDoc(in.store.NodePath(step))
	}
	data, err := be.ReadNode(step)
	if err != nil {
		return nil, err
	}
	if len(data) > maxNodeFileBytes {
		return nil, fmt.Errorf("cold node %d is larger than %d bytes", step, maxNodeFileBytes)
	}
	return decodeNodeDoc(data)
}
