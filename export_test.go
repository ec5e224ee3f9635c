package contextfold

// SetLargeStoreModeForTest makes stores journal and keep a snapshot however
// small they are; it returns a function restoring the defaults. Tests only.
func SetLargeStoreModeForTest() (restore func()) {
	jt, jm, ct := JournalThreshold, JournalMaxOps, IndexCacheThreshold
	JournalThreshold, JournalMaxOps, IndexCacheThreshold = 1, 256, 1
	return func() { JournalThreshold, JournalMaxOps, IndexCacheThreshold = jt, jm, ct }
}

// SetDeferBytesForTest sets the bytes of nodes a deferred fold holds in
// memory (deferCreateBytes; 0: every node written on the fold's path, into
// spares while there are); it returns a function restoring the default.
// Tests only.
func SetDeferBytesForTest(n int) (restore func()) {
	old := deferCreateBytes
	deferCreateBytes = n
	return func() { deferCreateBytes = old }
}

// cacheFileOf is where s keeps the snapshot of its index: the per-user
// cache directory (TestMain points it into a temporary directory).
func cacheFileOf(s *Store) string { return s.cachePaths()[0] }

// PrepareContentForTest derives what folding t into s takes from its
// content alone (prepareContent: scrubbing, token estimate, projection),
// without keeping it. Tests and benchmarks only.
func PrepareContentForTest(s *Store, t Turn) {
	policy, err := s.Policy()
	if err != nil {
		panic(err)
	}
	sc, err := s.scrubber()
	if err != nil {
		panic(err)
	}
	counter, err := policy.Counter()
	if err != nil {
		panic(err)
	}
	prepareContent(t, s.opts.SessionID, sc, counter, false)
}
