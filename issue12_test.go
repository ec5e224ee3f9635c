package contextfold

import (
	"testing"
)

// TestConflictsFindOtherTurnsAtIndexedSteps: a turn indexed as offered is
// no conflict (scrubbed secrets included); another turn at an indexed step
// is one, naming the stored and the offered session.
func TestConflictsFindOtherTurnsAtIndexedSteps(t *testing.T) {
	s := newTestStore(t)
	secret := "export AWS_ACCESS_KEY_ID=AKIAZ4QXLEWJTNMA7B3C # deploy key"
	turns := []Turn{
		{StepID: 0, Summary: "user: deploy", RawContent: secret, SessionID: "sess-a"},
		{StepID: 1, Summary: "assistant: ran deploy", RawContent: "deploy ok", SessionID: "sess-a"},
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.ReadColdNode(0); n == nil || !n.Sanitized {
		t.Fatal("the secret was not scrubbed; the test needs a scrubbed turn")
	}
	if c, err := s.Conflicts(append(turns, Turn{StepID: 2, Summary: "new"})); err != nil || len(c) != 0 {
		t.Fatalf("re-fold of the same turns: %v %+v", err, c)
	}
	other := []Turn{{StepID: 1, Summary: "user: what is CI doing", SessionID: "sess-b"}, {StepID: 0, Summary: "user: deploy", RawContent: secret, SessionID: "sess-b"}}
	c, err := s.Conflicts(other)
	if err != nil || len(c) != 1 || c[0].StepID != 1 || c[0].StoredSession != "sess-a" || c[0].OfferedSession != "sess-b" {
		t.Fatalf("conflicts: %v %+v", err, c)
	}
}
