#!/usr/bin/env python3
"""Extract the small subset of the IPCF-1.1 conformance vectors the schema
tests need into vectors.json (the full vector files are 1.3 MB).

Usage: python3 extract_vectors.py /work/shared/conformance/public > vectors.json

Picks fold cases that vary in step id (negative, zero, above 999999), in
explicit vs extracted lists, in Unicode content, in empty summary/payload
and in policy, and collects every policy object of every vector file.
"""
import json, os, sys

src = sys.argv[1]
fold = json.load(open(os.path.join(src, "fold.json")))
cases = fold["cases"]

def pick():
    chosen, seen = [], set()
    preds = [
        lambda c: c["input"]["step_id"] < 0,
        lambda c: c["input"]["step_id"] == 0,
        lambda c: c["input"]["step_id"] > 999999,
        lambda c: c["input"]["files"] is not None,
        lambda c: c["input"]["errors"] is not None,
        lambda c: c["input"]["summary"] == "",
        lambda c: c["input"]["raw_content"] is None,
        lambda c: c["input"]["policy"] is not None,
        lambda c: any(ord(ch) > 0xFFFF for ch in c["input"]["summary"] + (c["input"]["raw_content"] or "")),
        lambda c: "\u0000" in (c["input"]["raw_content"] or "") or "\u2028" in (c["input"]["raw_content"] or ""),
        lambda c: c["origin"] == "demo",
        lambda c: c["origin"] == "reference",
    ]
    for p in preds:
        for c in cases:
            if c["id"] not in seen and p(c) and len(c["expected"]["file_text"]) < 20000:
                chosen.append(c)
                seen.add(c["id"])
                break
    return chosen

out = {
    "source": "IPCF-1.1 public conformance vectors (fold.json and policies of all files)",
    "fold": [
        {"id": c["id"], "file_text": c["expected"]["file_text"], "index_file_text": c["expected"]["index_file_text"]}
        for c in pick()
    ],
    "policies": [],
}
for name in ("fold.json", "recall.json", "scan.json", "hydrate.json"):
    d = json.load(open(os.path.join(src, name)))
    out["policies"].append({"id": name + ":default_policy", "policy": d["default_policy"]})
    for c in d["cases"]:
        if c["input"].get("policy") is not None:
            out["policies"].append({"id": name + ":" + c["id"], "policy": c["input"]["policy"]})
json.dump(out, sys.stdout, indent=1, ensure_ascii=True)
sys.stdout.write("\n")
