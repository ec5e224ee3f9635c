package contextfold

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/scrub/scrubtest"
)

// TestShareSecretsAcrossTurns: a value only one turn's context marks as a
// secret (CLOUDFLARE_API_KEY=…) reaches disk from the turns that show it
// bare or base64-encoded, earlier or later in the batch, when the batch is
// folded turn by turn; after ShareSecrets no byte of the store holds it,
// and a turn without a shared value is passed through as given.
func TestShareSecretsAcrossTurns(t *testing.T) {
	v := "Zk4p" + "Q9vLm2xT7wRb5nYc"
	b64 := base64.StdEncoding.EncodeToString([]byte(v))
	turns := []Turn{
		{StepID: 1, Summary: "user pasted a value", RawContent: "is " + v + " still valid?"},
		{StepID: 2, Summary: "printed the environment", RawContent: "$ env\nHOME=/root\nCLOUDFLARE_API_KEY=" + v + "\n"},
		{StepID: 3, Summary: "assistant", RawContent: "I see the key " + v + " is set (base64 " + b64 + ")."},
		{StepID: 4, Summary: "unrelated", RawContent: "go test ./... ok"},
	}
	leaks := func(dir string) []string {
		var found []string
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), v) || strings.Contains(string(b), b64) || strings.Contains(strings.ToLower(string(b)), strings.ToLower(v)) {
				found = append(found, filepath.Base(p))
			}
			return nil
		})
		return found
	}
	fold := func(share bool) []string {
		dir := t.TempDir()
		if !share {
			// Each turn scrubbed on its own (a store of its own: no
			// session to share with).
			for _, tn := range turns {
				s, err := Open(dir, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Fold(tn); err != nil {
					t.Fatal(err)
				}
			}
			return leaks(dir)
		}
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		in := turns
		if share {
			if in, err = s.ShareSecrets(turns); err != nil {
				t.Fatal(err)
			}
			if in[3].RawContent != turns[3].RawContent || in[1].RawContent != turns[1].RawContent {
				t.Errorf("a turn without another turn's secret changed: %q, %q", in[3].RawContent, in[1].RawContent)
			}
		}
		rs, err := s.FoldBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		// Every turn that held the value is marked sanitized.
		for _, r := range rs[:3] {
			if share && !r.Node.Sanitized {
				t.Errorf("step %d: sanitized false after its secret was redacted", r.Node.StepID)
			}
		}
		return leaks(dir)
	}
	if got := fold(false); len(got) == 0 {
		t.Fatal("folded turn by turn, no file holds the value: the test proves nothing")
	}
	if got := fold(true); len(got) > 0 {
		t.Errorf("after ShareSecrets these files hold the secret: %v", got)
	}
	// Scrubbing off: nothing is shared (the reference-identical profile).
	s, err := Open(t.TempDir(), Options{Scrub: ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := s.ShareSecrets(turns); out[2].RawContent != turns[2].RawContent {
		t.Errorf("scrubbing off, ShareSecrets changed a turn: %q", out[2].RawContent)
	}
}

// TestShareSecretsKeepsContext: a value another turn reveals can hold
// part of this turn's context (read as "SQUARESPACE,<token>" after "?key="
// in the tool call, it holds the keyword the tool output's token needs);
// sharing it must not hide the token from this turn's own rules, which
// also redact its bare repeat ("/srv/keys/<token>.json").
func TestShareSecretsKeepsContext(t *testing.T) {
	sc, err := scrub.New()
	if err != nil {
		t.Fatal(err)
	}
	samples, _ := scrubtest.Samples(sc)
	var s scrubtest.Sample
	for _, x := range samples {
		if x.RuleID == "squarespace-access-token" {
			s = x
		}
	}
	if s.Secret == "" || s.Prefix == "" {
		t.Fatalf("no keyword-context sample: %+v", s)
	}
	turns := []Turn{
		{StepID: 1, Summary: "assistant", RawContent: "curl 'https://api.example.com/v1?key=" + s.Prefix + s.Secret + "'"},
		{StepID: 2, Summary: "tool", RawContent: "out " + s.Line(" ", " end") + "\nuploaded backup to /srv/keys/" + s.Secret + ".json\n"},
	}
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := st.ShareSecrets(turns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.FoldBatch(in); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(strings.ToLower(string(b)), strings.ToLower(s.Secret)) {
				t.Errorf("%s holds the %s token", filepath.Base(p), s.RuleID)
			}
		}
		return nil
	})
}

// TestFoldEventsShareSecrets: a value one fold event's turn revealed by its
// context (CLOUDFLARE_API_KEY=… in a tool output) is redacted, bare or
// base64-encoded, in the turns later fold events of the same Store fold
// (the proxy's next fold event, the MCP server's next fold_turn), and in
// those of a new Store that was shown the earlier turns (LearnSecrets: the
// next Stop hook, a longer transcript ingested). Folded one event at a
// time, the later turn alone does not look like a secret: before the
// session shared its values, its text reached disk raw.
func TestFoldEventsShareSecrets(t *testing.T) {
	v := "Tq7w" + "Xn2pLs9vKd4mRb8c"
	b64 := base64.StdEncoding.EncodeToString([]byte(v))
	reveal := Turn{StepID: 2, Summary: "printed the environment", RawContent: "$ env\nHOME=/root\nCLOUDFLARE_API_KEY=" + v + "\n"}
	later := []Turn{
		{StepID: 5, Summary: "assistant", RawContent: "The key " + v + " is set."},
		{StepID: 6, Summary: "tool output", RawContent: "data:\n  key: " + b64 + "\n"},
	}
	holds := func(dir string) []string {
		var found []string
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), v) || strings.Contains(string(b), b64) {
				found = append(found, filepath.Base(p))
			}
			return nil
		})
		return found
	}
	t.Run("same store", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fold(reveal); err != nil {
			t.Fatal(err)
		}
		for _, tn := range later {
			r, err := s.Fold(tn) // one fold event each
			if err != nil {
				t.Fatal(err)
			}
			if !r.Node.Sanitized {
				t.Errorf("step %d: not marked sanitized", tn.StepID)
			}
		}
		if got := holds(dir); len(got) > 0 {
			t.Errorf("these files hold the value an earlier fold event revealed: %v", got)
		}
	})
	t.Run("learned", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fold(reveal); err != nil {
			t.Fatal(err)
		}
		s2, err := Open(dir, Options{}) // another process: knows nothing yet
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.LearnSecrets([]Turn{reveal}); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.FoldBatch(later); err != nil {
			t.Fatal(err)
		}
		if got := holds(dir); len(got) > 0 {
			t.Errorf("these files hold the value the learned turns revealed: %v", got)
		}
	})
	t.Run("unrelated text unchanged", func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fold(reveal); err != nil {
			t.Fatal(err)
		}
		plain := Turn{StepID: 9, Summary: "build", RawContent: "go build ./... ok, Tq7wXn2p is not the key"}
		r, err := s.Fold(plain)
		if err != nil {
			t.Fatal(err)
		}
		if r.Node.RawContent != plain.RawContent || r.Node.Sanitized {
			t.Errorf("a turn without the value changed: %q", r.Node.RawContent)
		}
	})
}

// TestMatchesSharedRedactions: a marker of the stored payload stands for a
// non-empty run of the scrubbed payload; the rest must be equal.
func TestMatchesSharedRedactions(t *testing.T) {
	m := "[REDACTED:contextfold-env-secret]"
	for _, c := range []struct {
		stored, scrubbed string
		want             bool
	}{
		{"the key " + m + " is set", "the key abc123 is set", true},
		{"the key " + m + " is set", "the key abc123 is set!", false},
		{"the key " + m + " is set", "the key  is set", false},
		{m + " and " + m, "x and y", true},
		{m + " and " + m, "x and ", false},
		{m + m, "ab", true},
		{m + m, "a", false},
		{"no markers", "no markers", true},
		{"no markers", "no marker", false},
		{"a " + m + " b " + m + " c", "a 1 b 2 b 3 c", true},
		{"a " + m + " b", "a " + m + " b", true},
		{"a " + m + " b", "A 1 b", false},
	} {
		if got := MatchesSharedRedactions(c.stored, c.scrubbed); got != c.want {
			t.Errorf("MatchesSharedRedactions(%q, %q) = %v, want %v", c.stored, c.scrubbed, got, c.want)
		}
	}
}

// TestSplitSecretsAcrossMessages: a secret a message boundary cut (its
// first part at the end of one turn, the rest at the start of the next:
// "export DEPLOY_API_KEY=" then the value, a bearer token cut mid-way)
// reaches disk in neither part, whether the two turns are folded by one
// fold event or by two; turns whose joint cuts no token are unchanged.
func TestSplitSecretsAcrossMessages(t *testing.T) {
	v := "Zk4p" + "Q9vLm2xT7wRb5nYc"
	tokA, tokB := "abcd1234"+"efgh5678", "ijkl9012"+"mnop3456"
	one := []Turn{
		{StepID: 1, Summary: "shell", RawContent: "$ export DEPLOY_API_KEY="},
		{StepID: 2, Summary: "shell", RawContent: v + "\n$ ./deploy.sh\nok"},
		{StepID: 3, Summary: "curl", RawContent: "> GET /v1/me\n> Authorization: Bearer " + tokA},
		{StepID: 4, Summary: "curl", RawContent: tokB + "\n< 200 OK"},
		{StepID: 5, Summary: "build", RawContent: "The build finished"},
		{StepID: 6, Summary: "build", RawContent: "ok, 12 packages"},
	}
	holds := func(dir string, needles ...string) []string {
		var found []string
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, n := range needles {
				if strings.Contains(string(b), n) {
					found = append(found, filepath.Base(p)+": "+n)
				}
			}
			return nil
		})
		return found
	}
	check := func(t *testing.T, dir string, s *Store) {
		if got := holds(dir, v, tokA, tokB, v[:8], tokB[:8]); len(got) > 0 {
			t.Errorf("the parts of a split secret reached disk: %v", got)
		}
		for _, st := range []int{5, 6} {
			n, err := s.ReadColdNode(st)
			if err != nil {
				t.Fatal(err)
			}
			if n.RawContent != one[st-1].RawContent {
				t.Errorf("step %d changed: %q", st, n.RawContent)
			}
		}
	}
	t.Run("one event", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FoldBatch(one); err != nil {
			t.Fatal(err)
		}
		check(t, dir, s)
	})
	t.Run("one event each", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range one {
			if _, err := s.Fold(tn); err != nil {
				t.Fatal(err)
			}
		}
		check(t, dir, s)
	})
}

// TestSplitSecretsKeepsLatestEnds: after a fold event of many turns the
// Store keeps the ends of the latest seamTailsMax turns only (bounded
// memory), and the next event's first turn is still read with the end of
// the turn before it.
func TestSplitSecretsKeepsLatestEnds(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var turns []Turn
	for i := 1; i <= 3*seamTailsMax; i++ {
		turns = append(turns, Turn{StepID: i, Summary: "s", RawContent: "line " + strings.Repeat("x", i%7)})
	}
	turns[len(turns)-1].RawContent = "$ export DEPLOY_API_KEY="
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	if n := len(s.secrets.tails); n != seamTailsMax {
		t.Fatalf("%d turn ends kept, want %d", n, seamTailsMax)
	}
	if _, ok := s.secrets.tails[3*seamTailsMax-seamTailsMax+1]; !ok {
		t.Fatal("the latest turns' ends are not the ones kept")
	}
	v := "Zk4p" + "Q9vLm2xT7wRb5nYc"
	r, err := s.Fold(Turn{StepID: 3*seamTailsMax + 1, Summary: "s", RawContent: v + "\nok"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Node.RawContent, v) {
		t.Fatalf("the value after the previous event's 'KEY=' survived: %q", r.Node.RawContent)
	}
}

// TestFoldScrubsOnceSameBytes: a fold event that scrubs its new turns once
// (their own secret values read from their scrub's findings, the scrubbed
// form kept for their nodes) writes every byte the fold that derived the
// values by a second run of our rules writes (prepMemoMax 0: nothing
// kept), whether a turn shows another's value (scrubbed again), reveals
// one, or neither, with a session id defaulted or its own.
func TestFoldScrubsOnceSameBytes(t *testing.T) {
	v := "Tq7w" + "Xn2pLs9vKd4mRb8c"
	b64 := base64.StdEncoding.EncodeToString([]byte(v))
	turns := append(manyTurns(30),
		Turn{StepID: 200, Summary: "printed the environment", RawContent: "$ env\nHOME=/root\nCLOUDFLARE_API_KEY=" + v + "\n"},
		Turn{StepID: 201, Summary: "assistant", RawContent: "The key " + v + " is set."},
		Turn{StepID: 202, SessionID: "own-session", Summary: "tool output", RawContent: "data:\n  key: " + b64 + "\npassword: hunter2hunter2x\n"},
		Turn{StepID: 203, Summary: "DB_PASSWORD=s3cr3tV4lu3Xy9Q2", RawContent: "connected", Files: []string{"s3cr3tV4lu3Xy9Q2.txt"}},
	)
	fold := func() map[string][]byte {
		dir := filepath.Join(t.TempDir(), "store") // file_path names it
		s, err := Open(dir, Options{Clock: fixedClock, SessionID: "sess-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FoldBatch(turns[:20]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FoldBatch(turns[20:]); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				files[strings.TrimPrefix(p, dir)] = b
			}
			return nil
		})
		return files
	}
	once := fold()
	defer func(m int) { prepMemoMax = m }(prepMemoMax)
	prepMemoMax = 0
	twice := fold()
	if len(once) != len(twice) || len(once) < 34 {
		t.Fatalf("%d files against %d", len(once), len(twice))
	}
	for name, b := range twice {
		if !bytes.Equal(once[name], b) {
			t.Fatalf("%s differs:\n%s\nwith a second run of the rules:\n%s", name, once[name], b)
		}
	}
	for name, b := range once {
		if bytes.Contains(b, []byte(v)) || bytes.Contains(b, []byte("s3cr3tV4lu3Xy9Q2")) {
			t.Fatalf("%s holds a secret", name)
		}
	}
}

// TestSplitSecretRedactedInEveryField: when a message boundary cuts a
// secret, what the joined line shows is redacted in every field of the two
// turns, not only in the payload's part: the summary that repeats the value
// ("deployed with key …" after "export DEPLOY_API_KEY=" | value), and a
// turn's own secret that the replaced part held ("API_TOKEN=…" just after a
// token the joint joined: MCP fold_turn's summary kept it). Before, the
// summary reached the cold node and recall_index.json.
func TestSplitSecretRedactedInEveryField(t *testing.T) {
	v := "Zk4p" + "Q9vLm2xT7wRb5nYc"
	w := "tK3mP9qR2sV8wX4y" + "Z7aB1cD5eF0gH6j"
	aws := "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Xk3Lm8Qp"
	cases := map[string][]Turn{
		"assign": {
			{StepID: 1, Summary: "shell", RawContent: "$ export DEPLOY_API_KEY="},
			{StepID: 2, Summary: "deployed with key " + v, RawContent: v + "\n$ ./deploy.sh\nok"},
		},
		"mcp": {
			{StepID: 5, Summary: "clone", RawContent: "aws_secret_access_key = " + aws},
			{StepID: 6, Summary: "thinking " + w, RawContent: "API_TOKEN=" + w},
		},
	}
	for name, turns := range cases {
		for _, each := range []bool{false, true} {
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if each {
				for _, tn := range turns {
					if _, err := s.Fold(tn); err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := s.FoldBatch(turns); err != nil {
				t.Fatal(err)
			}
			filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() {
					return nil
				}
				b, _ := os.ReadFile(p)
				for _, n := range []string{v, w, aws} {
					if strings.Contains(string(b), n) {
						t.Errorf("%s each=%v: %s holds %s", name, each, filepath.Base(p), n)
					}
				}
				return nil
			})
		}
	}
}

// TestCommaSplitValueSharedWithLaterTurns: a value a comma split from its
// NAME= (fold --commands "DB_PASSWORD=,VALUE": two commands) is redacted
// in its own turn, and is remembered like a value found whole: a later
// fold event of the same Store, and a new Store shown the turn
// (LearnSecrets), redact it where a later turn repeats it bare. Before,
// only the turn that split it knew it.
func TestCommaSplitValueSharedWithLaterTurns(t *testing.T) {
	v := "Hv3q" + "Wm8zKp2xNc6t"
	split := Turn{StepID: 1, Summary: "ran the migration", RawContent: "migrated 3 tables", Commands: []string{"DB_PASSWORD=", v}}
	later := Turn{StepID: 4, Summary: "assistant", RawContent: "The database password " + v + " works."}
	holds := func(dir string) []string {
		var found []string
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if b, _ := os.ReadFile(p); err == nil && !fi.IsDir() && strings.Contains(string(b), v) {
				found = append(found, filepath.Base(p))
			}
			return nil
		})
		return found
	}
	for _, learned := range []bool{false, true} {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fold(split); err != nil {
			t.Fatal(err)
		}
		if learned {
			if s, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := s.LearnSecrets([]Turn{split}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Fold(later); err != nil {
			t.Fatal(err)
		}
		if got := holds(dir); len(got) > 0 {
			t.Errorf("learned %v: these files hold the value a comma split from DB_PASSWORD=: %v", learned, got)
		}
	}
}

// TestPrivateKeySplitAcrossThreeOutputs: a private key read in three tool
// outputs (a PEM block: its BEGIN line and first lines, then lines alone,
// then the last lines and its END line; a PuTTY key: its Private-Lines
// header and first lines, then the rest) has every part redacted, the
// middle one too, which by itself is plain base64: the lines after a key
// a turn left open are redacted until its END line (or its last private
// line), whether the parts are folded in one fold event or one each. The
// tool calls in between, and base64 lines once the key is closed, stay.
func TestPrivateKeySplitAcrossThreeOutputs(t *testing.T) {
	line := func(i int) string { // 64 base64 characters, none of them a word
		return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64]
	}
	pem := []Turn{
		{StepID: 1, Summary: "tool output", RawContent: "$ head -c 140 id_ed25519\n-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + line(1) + "\n" + line(2)},
		{StepID: 2, Summary: "assistant", RawContent: "tool_call Bash: sed -n 4,5p id_ed25519"},
		{StepID: 3, Summary: "$ sed -n 4,5p id_ed25519: " + line(3), RawContent: "$ sed -n 4,5p id_ed25519\n" + line(3) + "\n" + line(4) + "\n"},
		{StepID: 4, Summary: "assistant", RawContent: "tool_call Bash: tail -n 3 id_ed25519"},
		{StepID: 5, Summary: "tool output", RawContent: line(5) + "\n" + line(6)[:20] + "==\n-----END OPENSSH PRIVATE" + " KEY-----\n"},
		{StepID: 6, Summary: "tool output", RawContent: "$ git rev-parse HEAD\n" + line(7) + "\n"},
	}
	putty := []Turn{
		{StepID: 1, Summary: "tool output", RawContent: "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5\nPrivate-Lines: 3\n" + line(1)},
		{StepID: 2, Summary: "assistant", RawContent: "tool_call Bash: tail -n 3 key.ppk"},
		{StepID: 3, Summary: "tool output", RawContent: line(2) + "\n" + line(3)[:30] + "\nPrivate-MAC: 0f1e2d3c\n"},
		{StepID: 4, Summary: "tool output", RawContent: "$ git rev-parse HEAD\n" + line(7) + "\n"},
	}
	for name, turns := range map[string][]Turn{"pem": pem, "putty": putty} {
		for _, oneEach := range []bool{false, true} {
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if oneEach {
				for _, tn := range turns {
					if _, err := s.Fold(tn); err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := s.FoldBatch(turns); err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					b, _ := os.ReadFile(p)
					all.Write(b)
				}
				return nil
			})
			for i := 1; i <= 6; i++ {
				if name == "putty" && i > 3 {
					break
				}
				if k := line(i)[:20]; strings.Contains(all.String(), k) {
					t.Errorf("%s, one fold each %v: key line %d reached disk", name, oneEach, i)
				}
			}
			if !strings.Contains(all.String(), line(7)) {
				t.Errorf("%s, one fold each %v: the base64 line after the closed key was redacted", name, oneEach)
			}
			if !strings.Contains(all.String(), "sed -n 4,5p id_ed25519") && name == "pem" || !strings.Contains(all.String(), "tail -n 3") {
				t.Errorf("%s, one fold each %v: a tool call between the parts was changed", name, oneEach)
			}
		}
	}
}

// TestOpenKeyResumedByAnotherStore: the key one Store's turns left open
// (OpenKey), given to another Store over the same directory
// (ResumeOpenKey, as the next Stop hook process does), has its middle and
// last parts redacted there; without it they were stored. Closed keys
// report none.
func TestOpenKeyResumedByAnotherStore(t *testing.T) {
	line := func(i int) string { return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64] }
	dir := t.TempDir()
	a, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Fold(Turn{StepID: 1, Summary: "tool output", RawContent: "-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + line(1) + "\n" + line(2)}); err != nil {
		t.Fatal(err)
	}
	k, ok := a.OpenKey()
	if !ok || k != (OpenKey{Step: 1, Left: -1}) {
		t.Fatalf("OpenKey = %+v, %v; want step 1, a PEM block", k, ok)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.ResumeOpenKey(k)
	if _, err := b.FoldBatch([]Turn{
		{StepID: 2, Summary: "tool output", RawContent: line(3) + "\n" + line(4) + "\n"},
		{StepID: 3, Summary: "tool output", RawContent: line(5) + "\n-----END OPENSSH PRIVATE" + " KEY-----\n"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{2, 3} {
		n, err := b.Hydrate(step)
		if err != nil {
			t.Fatal(err)
		}
		for i := 3; i <= 5; i++ {
			if strings.Contains(n.RawContent, line(i)[:20]) {
				t.Errorf("step %d holds key line %d: %q", step, i, n.RawContent)
			}
		}
	}
	if k, ok := b.OpenKey(); ok {
		t.Errorf("the key closed at step 3 is still open: %+v", k)
	}
}
