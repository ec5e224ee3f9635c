// Package harness is the turn lifecycle of IPCF-1.1 made real: the
// pre_turn_dispatch and post_turn_response steps that the reference only
// simulates, over a transport-neutral message model.
//
// Before each model call, [Harness.PreTurnDispatch] folds the turns that have
// become cold (outside the hot window of recent messages and above the size
// threshold) into the store, replaces each folded turn in the outgoing
// conversation by its folded-step record (the hot projection, spec §8), scans
// the latest human prompt against the recall index, hydrates the selected cold
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
// # The fold boundary
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
