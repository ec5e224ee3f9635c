// gen_golden.mjs writes golden.json: exact token counts of every sample in
// samples.json for o200k_base and cl100k_base, computed with js-tiktoken, an
// implementation independent of the Go tokenizer under test.
//
// Regenerate (node_modules stays outside the repository; ES module imports
// are resolved next to the script, so run a copy of it from /tmp/x):
//
//	mkdir -p /tmp/x && cd /tmp/x && npm init -y && npm install js-tiktoken@1.0.21
//	cp <repo>/tokens/testdata/gen_golden.mjs /tmp/x/
//	node /tmp/x/gen_golden.mjs <repo>/tokens/testdata
//
// Special-token text such as "<|endoftext|>" is encoded as ordinary text
// (no special tokens allowed, none disallowed), as the Go counters do.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getEncoding } from "js-tiktoken";

const dir = process.argv[2] ?? ".";
const { samples } = JSON.parse(readFileSync(join(dir, "samples.json"), "utf8"));
const encodings = ["o200k_base", "cl100k_base"];
const out = { generator: "js-tiktoken 1.0.21", counts: {} };
for (const name of encodings) {
  const enc = getEncoding(name);
  out.counts[name] = {};
  for (const s of samples) {
    out.counts[name][s.name] = enc.encode(s.text, [], []).length;
  }
}
writeFileSync(join(dir, "golden.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${samples.length} samples x ${encodings.length} encodings`);
