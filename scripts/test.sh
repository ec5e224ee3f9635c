#!/usr/bin/env bash
# Every test: go vet, the whole suite under the race detector, then the
# multi-process durability suite (crash injection with SIGKILL, 8 concurrent
# folding processes, injected disk errors), which runs without the race
# detector because it is built from separate processes (see durability_test.go).
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
go test -race -timeout 45m ./...
go test -count=1 -timeout 30m -run 'TestCrashInjection|TestConcurrentProcessFolds|TestWriteFailuresKeepPreviousState|TestReadOnlyAndPermissionDenied' .
