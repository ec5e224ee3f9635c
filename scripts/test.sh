#!/usr/bin/env bash
# Every test: go vet, the whole suite under the race detector, then the
# multi-process durability suite (crash injection with SIGKILL, 8 concurrent
# folding processes, injected disk errors), which runs without the race
# detector because it is built from separate processes (see durability_test.go),
# and the single-goroutine corpus and property loops that take a sample under
# the race detector, in full (scrub, harness, match/ranked).
#
# The fresh-clone CI run (.ci/run, 2 cores) took 29 and then 56 minutes before
# those loops were sampled under -race (2026-12-07); the race detector slows
# the suite 5-40 times. Sampling them took about 14 minutes of CPU out of the
# race phase (about 7 minutes of wall time on 2 cores) and added about 3
# minutes of non-race lines: about 50 minutes when CI is as loaded as the
# 56-minute run, not yet measured on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test.sh: go vet, go test -race ./..., then the multi-process suites; 30 minutes or more on 2 cores, 45-55 on a loaded CI machine" >&2
# The browser test (inspect TestBrowser) needs Chromium. Locally it is
# skipped without one, which 'go test' does not show: say so here. In CI
# (CI=true) it fails instead.
chromium="${CONTEXTFOLD_CHROMIUM:-}"
if [ -z "$chromium" ]; then
  for c in /usr/bin/chromium chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$c" >/dev/null 2>&1; then chromium="$c"; break; fi
  done
fi
if [ -z "$chromium" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "test.sh: no Chromium found; in CI the browser test fails (.ci/run installs chromium)" >&2
  else
    echo "test.sh: note: no Chromium found, so the browser test (inspect TestBrowser) is SKIPPED; install chromium (or set CONTEXTFOLD_CHROMIUM) to run it" >&2
  fi
fi
# The PostgreSQL store's tests (internal/pgtest) start a temporary cluster
# with initdb and postgres, or use CONTEXTFOLD_TEST_POSTGRES_URL. Locally they
# are skipped without either; say so here. In CI (CI=true) they fail instead.
if [ -z "${CONTEXTFOLD_TEST_POSTGRES_URL:-}" ]; then
  pgbin="${CONTEXTFOLD_TEST_POSTGRES_BIN:-}"
  if [ -z "$pgbin" ]; then
    if command -v initdb >/dev/null 2>&1; then pgbin=$(dirname "$(command -v initdb)"); fi
    for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && pgbin="$d"; done
  fi
  if [ -z "$pgbin" ] || [ ! -x "$pgbin/initdb" ]; then
    if [ "${CI:-}" = "true" ]; then
      echo "test.sh: no PostgreSQL server (initdb) found; in CI the PostgreSQL tests fail (.ci/run installs postgresql)" >&2
    else
      echo "test.sh: note: no PostgreSQL server (initdb) found, so the PostgreSQL store tests are SKIPPED; install Debian's postgresql package (or set CONTEXTFOLD_TEST_POSTGRES_BIN, or CONTEXTFOLD_TEST_POSTGRES_URL to a server) to run them" >&2
    fi
  fi
fi
# The end-to-end tests (e2e/) run the real agents (Claude Code, Codex CLI,
# Qwen Code: node programs installed with npm ci in e2e/testdata/agents), and
# the MCP interop test runs the TypeScript SDK client under node. Locally they
# skip without node or the agents, which 'go test' does not show: say so here.
# In CI (CI=true) they fail instead.
missing_e2e=""
if ! command -v node >/dev/null 2>&1; then
  missing_e2e="node is not installed"
else
  for a in claude codex qwen; do
    if [ ! -e "e2e/testdata/agents/node_modules/.bin/$a" ]; then
      missing_e2e="the pinned agents are not installed (no e2e/testdata/agents/node_modules/.bin/$a)"
      break
    fi
  done
fi
if [ -n "$missing_e2e" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "test.sh: $missing_e2e; in CI the end-to-end tests fail (.ci/run installs nodejs, npm and the agents)" >&2
  else
    echo "test.sh: note: $missing_e2e, so the end-to-end tests with real agents (e2e/) are SKIPPED; install Node.js and npm, then run: (cd e2e/testdata/agents && npm ci)   (~950 MB)" >&2
  fi
fi
if ! command -v node >/dev/null 2>&1 || [ ! -d mcpserver/testdata/ts-client/node_modules/@modelcontextprotocol/sdk ]; then
  if [ "${CI:-}" != "true" ]; then
    echo "test.sh: note: the MCP TypeScript client test (mcpserver TestTypeScriptClient) is SKIPPED; it needs node and: (cd mcpserver/testdata/ts-client && npm ci)" >&2
  fi
fi
go vet ./...
# The store, CLI and proxy build on Windows and macOS too (not tested there).
GOOS=windows go build ./...
GOOS=darwin go build ./...
go test -race -timeout 45m ./...
go test -count=1 -timeout 30m -run 'TestCrashInjection|TestConcurrentProcessFolds|TestWriteFailuresKeepPreviousState|TestReadOnlyAndPermissionDenied' .
# The memory guards (the heap multiple of a large fold and of a large proxy
# request), which the race detector's instrumentation would distort: about
# 40 s on 2 cores.
go test -count=1 -timeout 10m -run 'TestFoldLargeLogHeapMultiple' .
go test -count=1 -timeout 10m -run 'TestLargeRequestHeapMultiple' ./proxy
# The scrubber's corpus and property loops (every rule and our own rules
# crossed with every neighbour, the prefilter against the full detector over
# every text, the anchor scan, the secret corpus's second seed, 1 MiB of
# pathological input, 300 KiB of dense keyword lines), which run on a
# deterministic sample under -race above: they call single-goroutine pure
# functions, to which the race detector adds nothing but a 10-40 times
# slowdown. About 2 minutes on 2 cores.
go test -count=1 -timeout 20m -run '^(TestCoveredSkipSame|TestPathologicalInputStillScrubbed|TestExtraFindingsAnchorScanSame|TestScrubSetKnownSameAsAddContext|TestSecretCorpus|TestPrefilterKeepsEveryMatchingRule|TestPrefilterSameFindings|TestDenseTextWindowsBounded|TestEveryRuleEveryNeighbour|TestOwnRulesEveryNeighbour)$' ./scrub
# The harness's prefilters against the regular expressions they stand in
# front of, on some 160,000 texts (every turn of the bundled transcripts and the edge cases) (every eighth
# under -race above: single-goroutine pure functions). About 15 s.
go test -count=1 -timeout 10m -run '^TestPrefilterMatchesRegexp$' ./harness
# The ranked matcher's counted analysis against one term at a time, on every
# turn of the bundled transcripts under every setting (every fourth text per
# setting under -race above: a single-goroutine pure function). About 20 s.
go test -count=1 -timeout 10m -run '^TestAnalyseDocCountedSame$' ./match/ranked
# Every rule's generated secret crossed with every neighbour and field, on
# every write path (fold, ingest, the Stop hook, MCP, the proxy), every byte
# written searched: under -race above it takes every twelfth rule; here all of
# them. About 1 minute on 2 idle cores.
go test -count=1 -timeout 20m -run '^TestNoSecretReachesDisk$' ./cmd/contextfold
# The proxy's whole-transcript replays (bundled sessions, the mini-swe-agent
# corpus subset, signed thinking and reasoning items, append-only wire),
# skipped under -race above: a few minutes on 2 cores.
go test -count=1 -timeout 30m -run '^TestReplay' ./proxy
# The PostgreSQL fleet and multi-process writer tests (internal/fleet, built
# without the race detector for the same reason): three proxy processes with a
# SIGKILL, 8 writer processes x 1,000 folds, 1,000 sessions x 20 folds.
# About 1.5 minutes on 2 cores.
go test -count=1 -timeout 20m ./internal/fleet
