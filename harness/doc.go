// Package harness is the turn lifecycle of IPCF-1.1 made real: the
// pre_turn_dispatch and post_turn_response steps that the reference only
// simulates, over a transport-neutral message model.
//
// Before each model call, [Harness.PreTurnDispatch] folds the turns that have
// become cold (outside the hot window of recent messages and above the size
// threshold) into the store, replaces each folded turn in the outgoing
// conversation by its folded-step record (the hot projection, spec §8), scans
// the latest human prompt against the recall index (only in the request whose
// latest message is that prompt, or an assistant prefill after it; a
// scaffold's observation sent as a user
// message is no prompt: [IsObservation] knows the openings of known
// scaffolds, and [PromptIndex] also skips a user message filled from the
// template of another one after an action written in text), hydrates the
// selected cold
// nodes (verified, within the per-call and per-turn budgets) and places them in
// the message carrying that prompt, never earlier, so that the cached prefix
// of the conversation stays stable. After the response,
// [Harness.PostTurnResponse] evicts them and the store logs the eviction
// (CONF-07).
//
// # Step ids
//
// A message's step id is its 0-based position in the client's conversation.
// A client that rewrites its history is detected by comparing the payload of
// every already folded position with the stored payload hash: the dispatch
// then fails with [ErrHistoryDiverged] and the caller starts a new store.
//
// # The working set under a token budget (the default)
//
// With Config.ContextBudget (DefaultContextBudget unless FoldBlock selects
// the fixed window below), the harness keeps the forwarded request under a
// number of tokens instead of a number of messages:
//
//   - Pinned: system messages, and the leading messages through the first
//     human message (the task statement; Config.PinMessages to pin more),
//     and everything through the last Message.Pin message (an opaque
//     summary of the history before it, such as a compaction item),
//     are never folded. Neither is the hot tail (the last HotWindow
//     messages) nor the message carrying the latest human prompt.
//   - While the conversation fits, nothing changes: a short session goes out
//     byte for byte.
//   - Past the budget, a fold event folds oldest first until the estimate is
//     under its fold target: FoldTarget percent of the budget, or deeper so
//     that the event pays for its prompt-cache rewrite within
//     PaybackRequests requests (the cost rule, Harness.foldTarget; a request
//     after CacheTTL of idle folds earlier, at no extra cost): first in place (a message of
//     MinFoldTokens or more becomes its folded-step record), then whole
//     groups — a message and the tool results that answer it, never split —
//     leave the prompt. One user message holding the page-table block (one
//     line per removed step, PageLine) takes the place of the first removed
//     message; when the block outgrows PageTableShare percent of the budget,
//     its oldest lines leave it too. Every removed turn stays in the store
//     and the recall index, and a scan hydrates it back.
//   - The working set only changes at a fold event, so between two events
//     the forwarded prefix is byte-identical and prompt caches keep hitting.
//     Hydration goes into the latest user (or tool-result) message of the
//     human turn's first request and stays in that message for the turn
//     (until a fold event folds it), bounded by HydrationShare percent of
//     the budget.
//   - A record or page line only stands for a turn whose cold node verifies
//     (checked once per harness, so after every restart); a turn whose node
//     fails goes out as the client wrote it.
//
// Records are written from the harness's own reading of the turn: the
// command (for mini-swe-agent and SWE-agent, the fenced shell block of the
// message before), the exit status (<returncode>, OpenHands' "exit code"),
// the first error line, the files touched (Aider edit blocks, diffs, whole
// path tokens), with progress meters, banners and bare tags skipped. The
// recall index keeps the reference extraction of spec §4 for matching.
//
// # The fold boundary (fixed message window)
//
// The boundary below which turns are folded moves in blocks of
// [Config.FoldBlock] messages (hysteresis): it is
// ⌊(messages − HotWindow) / FoldBlock⌋ × FoldBlock, so the folded prefix of
// the outgoing conversation changes once every FoldBlock messages and prompt
// caches keep hitting in between. The message carrying the latest human prompt
// is never folded (it receives the hydration).
//
// # Hydrated content
//
// Hydrated content is wrapped in a <contextfold-hydration …> element naming
// the step and its verified artifact hash. Such elements are stripped from
// every message before it is folded or scanned, so content that a client
// echoes back is never folded in again as a new turn.
package harness
