// Interop check: the official MCP TypeScript SDK client drives `contextfold mcp`
// over stdio. Usage: node client.mjs <contextfold binary> <store dir> <tampered step id>
// Prints one JSON report on stdout; exits 1 on the first failed expectation.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, dir, tamperedArg] = process.argv.slice(2);
if (!bin || !dir || !tamperedArg) {
  console.error("usage: node client.mjs <contextfold binary> <store dir> <tampered step id>");
  process.exit(2);
}
const tampered = Number(tamperedArg);
const report = { tools: [], calls: {} };

function check(cond, what) {
  if (!cond) {
    console.error("FAIL: " + what);
    console.log(JSON.stringify(report));
    process.exit(1);
  }
}
const textOf = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--dir", dir], stderr: "pipe" });
const client = new Client({ name: "ts-interop", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
report.tools = tools.map((t) => t.name).sort();
for (const name of ["recall_archived_nodes", "fetch_archived_node", "scan_prompt", "fold_turn", "evict_node", "store_status", "validate_store"]) {
  const t = tools.find((x) => x.name === name);
  check(t && t.description && t.inputSchema && t.outputSchema, `tool ${name} listed with schemas`);
}

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  report.calls[name + (report.calls[name] ? "#2" : "")] = { isError: !!res.isError, text: textOf(res).slice(0, 200) };
  return res;
}

let r = await call("recall_archived_nodes", { query: "PostgreSQL port" });
check(!r.isError && r.structuredContent.candidates[0].status === "latest_chronological", "recall ranks latest_chronological first");

r = await call("scan_prompt", { prompt: "What port are we using for PostgreSQL, and which migration applied the billing table?" });
check(!r.isError && r.structuredContent.selected.map((p) => p.step_id).join(",") === "342,137,447", "scan picks 342,137,447");

r = await call("fetch_archived_node", { step_id: 342 });
check(!r.isError && r.structuredContent.verified === true && r.structuredContent.content.length > 0, "fetch 342 verified");

r = await call("fetch_archived_node", { step_id: tampered });
check(r.isError === true && textOf(r).startsWith("IntegrityCheckError"), "tampered node is a typed tool error");

r = await call("fold_turn", { step_id: 1000, summary: "ts interop fold", content: "$ npm ci\nadded 91 packages" });
check(!r.isError && r.structuredContent.already_indexed === false, "fold_turn folds");

r = await call("evict_node", { step_id: 1000 });
check(!r.isError && r.structuredContent.step_id === 1000, "evict_node evicts");

r = await call("store_status", {});
check(!r.isError && r.structuredContent.total === 9 && r.structuredContent.evicted === 1, "store_status counts");

r = await call("validate_store", {});
check(!r.isError && r.structuredContent.ok === false && r.structuredContent.findings.some((f) => f.kind === "integrity"), "validate_store finds the tampering");

const res = await client.readResource({ uri: "contextfold://steps/342" });
check(res.contents[0].text.length > 0, "read a cold node resource");
report.resource = res.contents[0].uri;
const idx = await client.readResource({ uri: "contextfold://recall_index" });
check(Object.keys(JSON.parse(idx.contents[0].text).nodes).length === 9, "read the recall index resource");

let unknown = null;
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
} catch (e) {
  unknown = e;
}
check(unknown !== null && /unknown tool/.test(String(unknown.message)), "unknown tool is a JSON-RPC error");
report.unknownTool = String(unknown.message);

await client.close();
report.ok = true;
console.log(JSON.stringify(report));
