package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestHidesNoSession: ingest never makes a directory of session
// stores read as one store, which would hide every session in it from
// sessions, recall, scan and mcp.
//
//   - A new session named cold_nodes or recall_index.json (in a proxy's
//     --dir, or in the hooks' sessions/) would make the directory holding
//     it a store; one named sessions directly in a proxy's --dir would make
//     <dir>/sessions a store, not the hooks' directory (the Stop hook of a
//     project whose .contextfold is also the proxy's --dir writes there):
//     refused, exit 1, nothing written.
//   - A proxy's --dir before its first fold (only the proxy's mark,
//     .contextfold-proxy) is a directory of session stores: ingest makes the
//     transcript a session there, named by its session id (one that names
//     none is refused, asking for --session), instead of folding into the
//     directory as a store.
//
// Before: each of the three names was accepted (a proxy's --dir holding
// session a1 and a new session cold_nodes: contextfold sessions "holds no
// session store", validate "ok: 0 nodes"), and the marked directory became
// a store of its own (cold_nodes/ beside .contextfold-proxy).
func TestIngestHidesNoSession(t *testing.T) {
	bin := buildBinary(t)
	wd := t.TempDir()
	chat, err := filepath.Abs("../../ingest/testdata/transcripts/openai-chat/marshmallow-1867.function-calling.traj")
	if err != nil {
		t.Fatal(err)
	}
	tr := ledgerTranscript(t)
	const own = "5f1c2a9e-3b7d-4c1e-9a52-0d6e8b7f4a21" // the transcript's sessionId
	marked := func(name string) string {
		d := filepath.Join(wd, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".contextfold-proxy"), []byte("a proxy's directory\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	run := func(args ...string) (string, string, int) { return binRunIn(t, bin, wd, "", args...) }

	// The marked directory, no session yet: the transcript's session id.
	px := marked("px")
	out, errs, code := run("--dir", px, "ingest", tr)
	if code != 0 || !strings.Contains(out, "into "+filepath.Join(px, own)+"\n") || isStore(px) {
		t.Errorf("ingest into a proxy's empty --dir: %d %q %q (store: %v)", code, out, errs, isStore(px))
	}
	// A transcript naming no session there: refused, naming the mark.
	px2 := marked("px2")
	if _, errs, code := run("--dir", px2, "ingest", chat); code != 1 || !strings.Contains(errs, "holds the proxy's mark, .contextfold-proxy") || !strings.Contains(errs, "--session NAME") {
		t.Errorf("ingest of a transcript naming no session into a proxy's empty --dir: %d %q", code, errs)
	}
	if ents, _ := os.ReadDir(px2); len(ents) != 1 {
		t.Errorf("the refused ingest wrote into %s: %d entries", px2, len(ents))
	}

	// A proxy's --dir and a hooks project, each with one session.
	py := marked("py")
	hooksRoot := filepath.Join(wd, "proj", ".contextfold")
	for _, d := range []string{py, hooksRoot} {
		if _, errs, code := run("--dir", d, "ingest", tr, "--session", own); code != 0 {
			t.Fatalf("ingest into %s: %d %q", d, code, errs)
		}
	}
	for _, c := range []struct{ dir, name string }{
		{py, "cold_nodes"}, {py, "recall_index.json"}, {py, "sessions"},
		{filepath.Join(hooksRoot, "sessions"), "cold_nodes"}, {hooksRoot, "recall_index.json"},
	} {
		before := snapshotRel(t, c.dir)
		_, errs, code := run("--dir", c.dir, "ingest", chat, "--session", c.name)
		if code != 1 || !strings.Contains(errs, "a new session cannot be named "+c.name) || !strings.Contains(errs, "give another id") {
			t.Errorf("--dir %s --session %s: %d %q", c.dir, c.name, code, errs)
		}
		if after := snapshotRel(t, c.dir); len(after) != len(before) {
			t.Errorf("--dir %s --session %s wrote: %d files before, %d after", c.dir, c.name, len(before), len(after))
		}
		out, _, code := run("sessions", "--dir", c.dir)
		if code != 0 || !strings.Contains(out, own) {
			t.Errorf("sessions --dir %s after --session %s: %d %q", c.dir, c.name, code, out)
		}
	}
	// sessions/sessions in the hooks' layout stays a name like any other.
	if _, errs, code := run("--dir", hooksRoot, "ingest", chat, "--session", "sessions"); code != 0 || !isStore(filepath.Join(hooksRoot, "sessions", "sessions")) {
		t.Errorf("--session sessions in the hooks' layout: %d %q", code, errs)
	}
}
