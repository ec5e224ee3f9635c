package proxy

import "time"

// settleWait bounds a test's wait for an event that takes milliseconds
// (a request's record logged just after the client read the response, a
// flushed event, a cancelled upstream call). It is no timing assertion:
// only a hang reaches it, so it is far above what a loaded 2-core machine
// under the race detector needs (a 3-5 s bound could be reached there).
const settleWait = time.Minute
