// Package cachedir names the per-user directory where contextfold keeps
// derived data about a store (index snapshots, matcher indexes) that a
// read-only command may want to write. Keeping it outside the store keeps
// read-only commands read-only (CONF-08): a store is never written by
// validate, scan, recall, hydrate or status.
//
// Layout: $CONTEXTFOLD_CACHE_DIR, else os.UserCacheDir()/contextfold, then
// one directory per store named by the SHA-256 of the store's absolute,
// symlink-resolved path, or of a database store's location URL (without
// password), first 32 hex digits. Everything in it is derived:
// deleting it costs only time. Callers must bind each file they keep there to
// the identity of what it was derived from (size, mtime, inode or a hash) and
// treat a mismatch as a miss.
package cachedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Env overrides the cache root; "off" disables the per-user cache.
const Env = "CONTEXTFOLD_CACHE_DIR"

// ErrDisabled is returned by For when CONTEXTFOLD_CACHE_DIR is "off" or no
// per-user cache directory can be determined (no $HOME or $XDG_CACHE_HOME).
var ErrDisabled = errors.New("cachedir: no per-user cache directory (set CONTEXTFOLD_CACHE_DIR)")

// Root returns the cache root without creating it.
func Root() (string, error) {
	if v := os.Getenv(Env); v != "" {
		if v == "off" {
			return "", ErrDisabled
		}
		return filepath.Abs(v)
	}
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		return "", ErrDisabled
	}
	return filepath.Join(base, "contextfold"), nil
}

// For returns the cache directory of the store at storeDir, creating it
// (mode 0700) when create is true. The store directory itself is never
// touched. Safe for concurrent use.
func For(storeDir string, create bool) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	abs := storeDir
	if !strings.Contains(storeDir, "://") { // a database store's location is no path
		if abs, err = filepath.Abs(storeDir); err != nil {
			return "", err
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(root, hex.EncodeToString(sum[:16]))
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
	}
	return dir, nil
}
