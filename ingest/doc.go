// Package ingest turns a recorded agent session file into an ordered list of
// conversation turns that can be folded into cold storage.
//
// It is pure parsing: it never touches a store, the network or the clock, and
// the same input bytes always give the same [Result].
//
// # Formats
//
// Supported inputs (see [Format]):
//
//   - claude-code: Claude Code session JSONL (one record per line, chained
//     through uuid / parentUuid).
//   - openai: an OpenAI Chat Completions messages array, bare or under
//     "messages"; tool_calls and role "tool" messages included.
//   - anthropic: an Anthropic Messages array, bare or under "messages", with
//     text, tool_use, tool_result and thinking blocks.
//   - swe-agent: a SWE-agent .traj object (the older "history" layout and the
//     function-calling variant with tool_calls / tool_call_ids).
//   - mini-swe-agent: a mini-swe-agent .traj.json object with "messages".
//   - openhands: OpenHands evaluation output JSONL, one run per line, each with
//     a "history" event stream.
//   - aider: an Aider chat history Markdown file.
//
// [Detect] recognises each of them from its content; [Parse] with
// [FormatAuto] uses it.
//
// # Step ids
//
// A turn's StepID is its 0-based position in the conversation history as the
// file records it:
//
//   - openai, anthropic: the index of the message in the messages array (a
//     request's top-level "system" prompt is not in that array and is not a
//     turn);
//   - swe-agent: the index of the message in "history";
//   - mini-swe-agent: the index of the message in "messages";
//   - claude-code: the index among unique message records (type user,
//     assistant or system) in file order; a record whose uuid was already seen
//     is a re-appended copy and is skipped without taking a position; other
//     record types (queue-operation, file-history-snapshot, attachment,
//     summary, unknown types) and unreadable lines take no position;
//   - openhands: the index of the event in its run's "history", with the
//     positions continuing across runs in file order (the second run's first
//     event follows the first run's last event);
//   - aider: the index of the turn across the whole file, where a turn is a
//     session header ("# aider chat started at"), a run of "#### " user lines,
//     a run of "> " tool/output lines, or a run of other (assistant) lines;
//     blank lines never start a turn.
//
// Positions depend only on what precedes a turn, so when a transcript grows by
// appending, the earlier turns keep their step ids, payloads and summaries.
// An array element that is not a message object keeps its position but yields
// no turn, so step ids are unique and ascending but may have gaps.
//
// # Rendering
//
// Role is "user", "assistant", "tool" or "system". Tool output that a file
// records as a user message (SWE-agent and mini-swe-agent observations, Claude
// Code tool_result records) has Role "tool". Kind refines it: "prompt",
// "response", "tool_call", "tool_result", "observation", "thought",
// "compaction" (a machine-written recap of earlier context, never a user
// prompt), "compact_boundary", "meta", "demonstration", "system" or "event".
//
// Payload is a deterministic text rendering of everything in the turn: a
// header line "[role kind tool]", the text, thinking blocks, each tool call with its
// name, id and arguments (JSON arguments rendered as given, in their original
// key order), and tool output. Provider metadata (usage, raw model responses,
// signatures) is left out.
//
// Summary is an extractive one-liner of at most 280 code points: the role (or
// the kind for compaction records), the tool and the command when known, then
// the first meaningful line of the turn, or for a failing tool result the
// first line that looks like an error. Whitespace is collapsed, control
// characters removed, and any cut is made on a character boundary.
//
// # Text safety
//
// Lone UTF-16 surrogate escapes (such as \ud83d without its low half) and
// invalid UTF-8 bytes become U+FFFD and are counted in Result.Replaced; every
// string in a [Turn] is valid UTF-8.
package ingest
