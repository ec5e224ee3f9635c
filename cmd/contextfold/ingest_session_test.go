package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
)

// TestIngestIntoSessionDirectory: `contextfold ingest` in a project whose
// .contextfold the real Claude Code Stop hook wrote (a directory of
// session stores) makes the transcript a session of it, where the hooks
// keep sessions: sessions/<the transcript's session id>, printed (text and
// --json "session"), listed by sessions, and the same store the Stop hook
// of that session folds into (its later Stop adds nothing: the same step
// ids and bytes). --session NAME names a new session (a transcript that
// names none needs it) or adds to an existing one by its whole id;
// a start of an id, a proxy session's name alone, a name that is no
// directory name, and --session on a store are refused with nothing
// written. In a proxy's directory the new session is a store beside the
// proxy's (source store). Without a directory of session stores ingest
// makes its store as before.
//
// Before: ingest refused the project ("folds into one store and does not
// pick a session; give --dir a session's store"), and took no --session.
func TestIngestIntoSessionDirectory(t *testing.T) {
	bin := buildBinary(t)
	proj := t.TempDir()
	root := filepath.Join(proj, ".contextfold")
	tr := ledgerTranscript(t)
	const hooked, own = "0d7c2a41-aaaa-4bbb-8ccc-000000000001", "5f1c2a9e-3b7d-4c1e-9a52-0d6e8b7f4a21" // own: the transcript's sessionId
	stop := func(id string) {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"session_id": id, "transcript_path": tr, "cwd": proj, "hook_event_name": "Stop"})
		if _, errs, code := binRunIn(t, bin, proj, string(payload), "hook", "claude-code", "Stop", "--strict"); code != 0 {
			t.Fatalf("Stop hook %s: %d %s", id, code, errs)
		}
	}
	stop(hooked)
	run := func(args ...string) (string, string, int) { return binRunIn(t, bin, proj, "", args...) }

	// The transcript's own session id names the new session.
	ownStore := filepath.Join(root, "sessions", own)
	out, errs, code := run("ingest", tr, "--json")
	var rep struct {
		Session struct{ ID, Source, Dir string } `json:"session"`
		Store   string                           `json:"store"`
		Folded  int                              `json:"turns_folded"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Session.ID != own || rep.Session.Source != "hooks" || rep.Session.Dir != ownStore || rep.Store != ownStore || rep.Folded != 47 {
		t.Fatalf("ingest in the project: %d %v %q %q", code, err, out, errs)
	}
	if isStore(root) {
		t.Fatal("ingest made .contextfold a store")
	}
	var ls struct {
		Sessions []struct{ Session, Store string } `json:"sessions"`
	}
	out, _, _ = run("sessions", "--json")
	if json.Unmarshal([]byte(out), &ls); len(ls.Sessions) != 2 {
		t.Fatalf("sessions after the ingest: %s", out)
	}
	// The Stop hook of that session folds into the same store: nothing new.
	before := snapshotRel(t, ownStore)
	stop(own)
	after := snapshotRel(t, ownStore)
	delete(after, "hook_transcript.state")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the Stop hook of the ingested session changed its store: %d files before, %d after", len(before), len(after))
	}
	// Again: idempotent, and the text names the session.
	out, _, code = run("ingest", tr)
	if code != 0 || !strings.Contains(out, "  session            "+own+" (a session of "+root+" already, named by the transcript's session id;") || !strings.Contains(out, "already indexed    47") {
		t.Errorf("ingest again: %d %q", code, out)
	}

	// A transcript that names no session needs --session.
	chat, err := filepath.Abs("../../ingest/testdata/transcripts/openai-chat/marshmallow-1867.function-calling.traj")
	if err != nil {
		t.Fatal(err)
	}
	whole := snapshotRel(t, root)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ingest", chat}, "this transcript names none; give it one: contextfold ingest " + chat + " --session NAME"},
		{[]string{"ingest", chat, "--session", "0d7c"}, "--session 0d7c is not a session's whole id but names session " + hooked + " (hooks, store " + filepath.Join(root, "sessions", hooked) + ") by its start: ingest writes"},
		{[]string{"ingest", chat, "--session", "../up"}, `--session "../up" is no session of the directory and cannot name a new one`},
		// A leading '.' (a hidden directory, a proxy's .lineage) or '-'
		// (a flag when typed again): refused, as the proxy's names are.
		{[]string{"ingest", chat, "--session", ".lineage"}, `--session ".lineage" is no session of the directory and cannot name a new one: a new session's id is 1-128 letters, digits, '-', '_' and '.', starting with a letter or a digit`},
		{[]string{"ingest", chat, "--session=-rf"}, `--session "-rf" is no session of the directory and cannot name a new one`},
		{[]string{"ingest", chat, "--session", "old", "--dir", ownStore}, ownStore + " is one store, not a directory of session stores"},
		{[]string{"ingest", chat, "--session", "x", "--store", "postgres://u@127.0.0.1:1/db?session=s"}, "its session is ?session=NAME in the URL"},
	} {
		if _, errs, code := run(c.args...); code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: %d %q, want %q", c.args, code, errs, c.want)
		}
	}
	if !reflect.DeepEqual(whole, snapshotRel(t, root)) {
		t.Fatal("a refused ingest wrote into the directory")
	}
	// --session NAME: a new session; the whole id of one: that session.
	if out, errs, code := run("ingest", chat, "--session", "old-chat"); code != 0 || !strings.Contains(out, "into "+filepath.Join(root, "sessions", "old-chat")+"\n  session            old-chat (a new session of "+root+", named by --session;") {
		t.Errorf("ingest --session old-chat: %d %q %q", code, out, errs)
	}
	if out, errs, code := run("ingest", tr, "--session", hooked); code != 0 || !strings.Contains(out, "already indexed    47") {
		t.Errorf("ingest --session %s (the hooks' store of the same transcript): %d %q %q", hooked, code, out, errs)
	}

	// A proxy's directory: a store beside the proxy's sessions.
	pdir := filepath.Join(t.TempDir(), "proxy")
	s, err := contextfold.Open(filepath.Join(pdir, "s-1", "g1"), contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run("ingest", chat, "--dir", pdir, "--session", "s-1"); code != 1 || !strings.Contains(errs, "names session s-1/g1 (proxy, store "+filepath.Join(pdir, "s-1", "g1")+") by its proxy session name") {
		t.Errorf("ingest --session <a proxy session's name>: %d %q", code, errs)
	}
	out, errs, code = run("ingest", chat, "--dir", pdir, "--session", "imported", "--json")
	if json.Unmarshal([]byte(out), &rep); code != 0 || rep.Session.ID != "imported" || rep.Session.Source != "store" || rep.Session.Dir != filepath.Join(pdir, "imported") {
		t.Errorf("ingest into a proxy's directory: %d %q %q", code, out, errs)
	}

	// No directory of session stores: a store of its own, as before.
	fresh := filepath.Join(t.TempDir(), "plain")
	if _, errs, code := run("ingest", chat, "--dir", fresh); code != 0 || !isStore(fresh) {
		t.Errorf("ingest into a new directory: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(fresh, "sessions")); err == nil {
		t.Error("ingest into a new directory made sessions/")
	}
}
