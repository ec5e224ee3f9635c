package contextfold

// SetLargeStoreModeForTest makes stores journal and keep a snapshot however
// small they are; it returns a function restoring the defaults. Tests only.
func SetLargeStoreModeForTest() (restore func()) {
	jt, jm, ct := JournalThreshold, JournalMaxOps, IndexCacheThreshold
	JournalThreshold, JournalMaxOps, IndexCacheThreshold = 1, 256, 1
	return func() { JournalThreshold, JournalMaxOps, IndexCacheThreshold = jt, jm, ct }
}

// cacheFileOf is where s keeps the snapshot of its index: the per-user
// cache directory (TestMain points it into a temporary directory).
func cacheFileOf(s *Store) string { return s.cachePaths()[0] }
