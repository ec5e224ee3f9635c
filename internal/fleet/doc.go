// Package fleet holds the multi-process tests of the PostgreSQL store:
// a fleet of `contextfold proxy` replicas on one database in front
// of the scripted upstream (a replica killed with SIGKILL mid-session), and
// concurrent writer processes folding into one session and into many. Real
// processes, a real server (internal/pgtest), no mocks. The tests are built
// without the race detector (it sees one process only and would slow the
// children 5–10×); scripts/test.sh runs them in its multi-process phase.
package fleet
