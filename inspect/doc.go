// Package inspect is the developer view of an IPCF store: a read-only web
// inspector served by the contextfold binary itself ('contextfold ui').
//
// It shows what was folded (the timeline of steps and their verification
// state), one step in full (the raw payload verbatim, its three hashes with a
// "verify now" check, its terms, and the hydrated view with the per-call cap
// applied), what the MMU would page in for a prompt (the scan simulator),
// recall with its tiers and labels, the eviction log, the validate report with
// repair suggestions, and charts.
//
// # Zero prompt cost (CONF-08)
//
// Nothing the inspector shows reaches a model, and it changes nothing: it only
// calls the store's read-only operations (Entries, Hydrate, Scan, Recall,
// EvictionLog, Validate, Status, Policy) and reads cold node files. Every byte
// of the store, the eviction log included, is the same after any browsing;
// the tests hash the store before and after to prove it.
//
// # Safety
//
// Pages are rendered with html/template, so stored payloads (HTML, script
// tags, ANSI escapes, huge lines) are always text. Control and bidirectional
// formatting characters are shown as visible marks. Every response carries a
// Content-Security-Policy that allows only the inspector's own embedded
// script and stylesheet. Only GET and HEAD are served, and requests whose Host
// header is not a loopback name are refused (a guard against DNS rebinding)
// unless Options.AnyHost is set. CheckListenAddr refuses non-loopback listen
// addresses unless asked explicitly.
//
// # Pages and JSON endpoints
//
//	/                    timeline of folded steps, a page at a time (?limit=
//	                     rows, default 100, at most 1000; ?after=STEP or
//	                     ?before=STEP; ?term= &file= &error= &state= filters)
//	/step/{id}           one step (?page=N of the payload, ?verify=1 to verify now)
//	/step/{id}/raw       the raw payload as text/plain
//	/scan?prompt=…       the MMU simulator
//	/recall?q=…          recall with tiers and labels
//	/evictions           the eviction log as a timeline
//	/validate            the validate report with repair suggestions
//	/charts              tokens per step, archive size, hydrations per step
//	/workset             a proxy session's working set per request (the log the
//	                     proxy keeps beside the store): pinned part, page table,
//	                     folded records, verbatim, hot tail, hydrated, against
//	                     the budget, with the cache-stable prefix and fold events
//	/api/status, /api/steps, /api/steps/{id}, /api/steps/{id}/verify,
//	/api/scan?prompt=, /api/recall?q=, /api/evictions, /api/validate,
//	/api/charts, /api/workset the same data as JSON (/api/steps paged as
//	                     the timeline, with a "page" object: limit, count,
//	                     matched, offset, next_after, prev_before)
package inspect
