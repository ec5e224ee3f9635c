#!/usr/bin/env bash
# The main job, end to end: build contextfold, run the IPCF demo, then fold a
# real (bundled) agent session and let the MMU answer a question about it.
# Everything is written to a new temporary directory; nothing else is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/contextfold-quickstart-XXXXXX")
go build -o "$work/contextfold" ./cmd/contextfold
cf="$work/contextfold"

echo "== 1. The IPCF-1.1 demo session (spec §9) =="
"$cf" demo --dir "$work/demo/.contextfold"

session=ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl
store="$work/session/.contextfold"
echo
echo "== 2. Fold a real Claude Code session: $session =="
"$cf" --dir "$store" ingest "$session"
echo
echo "== 3. Ask about something from earlier in the session =="
q="which error did the 0003 migration raise?"
echo "prompt: $q"
"$cf" --dir "$store" scan -- "$q"
step=$("$cf" --dir "$store" scan --json -- "$q" | sed -n 's/.*"step_id": \([0-9-]*\).*/\1/p' | head -1)
echo
echo "== 4. Hydrate step $step (SHA-256 verified, capped per call) =="
"$cf" --dir "$store" hydrate "$step" | head -20
echo
echo "== 5. Validate the store =="
"$cf" --dir "$store" validate
echo
echo "Stores left in $work (inspect one with: $cf --dir $store ui --open)"
