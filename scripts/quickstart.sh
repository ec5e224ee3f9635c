#!/usr/bin/env bash
# The main job, end to end: build contextfold, run the IPCF demo, then fold a
# real (bundled) agent session and let the MMU answer a question about it.
# Everything is written to a new temporary directory; nothing else is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/contextfold-quickstart-XXXXXX")
# The first build compiles contextfold and the ~480 packages it depends on
# (about 80 modules, downloaded first when Go's module cache lacks them): 2-5
# minutes on 2 cores, most of it third-party code (the SDKs, the PostgreSQL
# driver, the secret detector's rules). Later builds reuse Go's build cache and
# take seconds. 'go build -v' names each package it compiles; show the count.
echo "== 0. Build contextfold into $work =="
echo "   the first build on a machine compiles ~480 packages: 2-5 minutes on 2 cores, counted below; later builds take seconds"
start=$(date +%s)
go build -v -o "$work/contextfold" ./cmd/contextfold 2>&1 | {
  n=0
  while IFS= read -r line; do
    case "$line" in
    *" "* | *:* | "#"*) printf '%s\n' "$line" >&2 ;; # a compiler or download message, not a package path
    *)
      n=$((n + 1))
      if [ -t 1 ]; then
        printf '\r   compiled %d packages: %-50.50s' "$n" "$line"
      elif [ $((n % 100)) -eq 0 ]; then
        echo "   compiled $n packages"
      fi
      ;;
    esac
  done
  if [ -t 1 ] && [ "$n" -gt 0 ]; then printf '\r%-80s\r' ''; fi
  if [ "$n" -eq 0 ]; then echo "   nothing to compile: Go's build cache held every package"; else echo "   compiled $n packages"; fi
}
echo "   built in $(($(date +%s) - start)) s"
echo
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
