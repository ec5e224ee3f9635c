package contextfold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirBytes returns every file's bytes under dir, joined.
func dirBytes(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	return all.String()
}

// TestCredentialFileOutputAcrossTurns: a tool call printing a credential
// file and its output are two turns (Claude Code's tool_use and
// tool_result as ingest stores them, a Chat Completions call, Codex's
// shell call with an argv and its JSON-wrapped output, a terminal's
// command line then its output), folded in one batch or by two fold
// events of one Store: no byte run of a password reaches the store.
// Before, the credential-file rule read a command and its output in one
// text only, and every password here reached disk (the short ones too).
func TestCredentialFileOutputAcrossTurns(t *testing.T) {
	pw := []string{"backupWinter2024", "mirror7sun", "s3cr3tZ"}
	lines := "backup:" + pw[0] + "\nmirror:" + pw[1] + "\nstaging:" + pw[2] + "\n"
	cases := []struct {
		name       string
		call, out  string
		outputOf   string // the output turn's OutputOf
		summaryOut string // the output turn's summary
	}{
		{name: "claude code", call: "[assistant tool_use Bash]\n{\"command\": \"cat /etc/rsyncd.secrets\", \"description\": \"Show the rsync secrets\"}",
			out: "[tool tool_result Bash]\n\n" + lines},
		{name: "chat completions", call: `bash {"command":"sudo head -n 20 /etc/rsyncd.secrets"}`, out: lines},
		{name: "chat completions ingested", call: "[assistant tool_call bash]\n\n[tool_call bash id=c1]\n{\"command\": \"cat /etc/rsyncd.secrets\"}",
			out: "[tool tool_result bash]\n\n[tool_result id=c1]\n" + lines},
		{name: "codex argv", call: `shell {"command":["bash","-lc","cd /etc && cat rsyncd.secrets"],"workdir":"/root"}`,
			out: `{"output":"` + strings.ReplaceAll(lines, "\n", `\n`) + `","metadata":{"exit_code":0,"duration_seconds":0.1}}`},
		{name: "codex exec", call: `exec_command {"cmd":"cat /etc/rsyncd.secrets"}`,
			out: "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n" + lines},
		{name: "terminal", call: "build ok\nroot@host:~# cat /etc/rsyncd.secrets", out: lines},
		{name: "output of", call: "assistant: let me look at the secrets file", out: lines, outputOf: "cat /etc/rsyncd.secrets",
			summaryOut: "tool Bash $ cat /etc/rsyncd.secrets: backup:" + pw[0] + " mirror:" + pw[1] + " staging:" + pw[2]},
	}
	for _, c := range cases {
		for _, twoEvents := range []bool{false, true} {
			turns := []Turn{
				{StepID: 1, Summary: "user asks why the backup fails", RawContent: "The nightly rsync backup fails with an auth error."},
				{StepID: 2, Summary: "assistant calls a tool", RawContent: c.call},
				{StepID: 3, Summary: c.summaryOut, RawContent: c.out, OutputOf: c.outputOf},
				{StepID: 4, Summary: "assistant", RawContent: "The module's user is backup; its password is " + pw[0] + " as the file says."},
			}
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if twoEvents {
				if _, err := s.FoldBatch(turns[:2]); err != nil {
					t.Fatal(err)
				}
				if _, err := s.FoldBatch(turns[2:]); err != nil {
					t.Fatal(err)
				}
			} else if _, err := s.FoldBatch(turns); err != nil {
				t.Fatal(err)
			}
			all := dirBytes(t, dir)
			for _, p := range pw {
				if strings.Contains(all, p) {
					t.Errorf("%s (two fold events: %v): the store holds the password %q", c.name, twoEvents, p)
				}
			}
			if !strings.Contains(all, "[REDACTED:contextfold-credential-file]") {
				t.Errorf("%s (two fold events: %v): no credential-file marker in the store", c.name, twoEvents)
			}
			// The users' names stay: only the secrets go.
			if !strings.Contains(all, "staging:") {
				t.Errorf("%s (two fold events: %v): the user names went too", c.name, twoEvents)
			}
		}
	}
}

// TestCredentialFileOutputLookAlikes: what stays. The output of a command
// that prints no credential file (cat /etc/hosts, a grep over secrets
// files), of a credential file's command two steps before (another turn
// in between), and of a call to a file whose name holds no credential
// word reaches the store as it was.
func TestCredentialFileOutputLookAlikes(t *testing.T) {
	out := "backup:Kq7wT2mZ9x\nweb01 10.0.0.5 tcp\n"
	cases := []struct {
		name  string
		turns []Turn
	}{
		{"cat hosts", []Turn{
			{StepID: 1, RawContent: `Bash {"command":"cat /etc/hosts"}`},
			{StepID: 2, RawContent: out}}},
		{"grep", []Turn{
			{StepID: 1, RawContent: `Bash {"command":"grep -r backup /etc/rsyncd.secrets /etc/rsyncd.conf"}`},
			{StepID: 2, RawContent: out}}},
		{"not next", []Turn{
			{StepID: 1, RawContent: `Bash {"command":"cat /etc/rsyncd.secrets"}`},
			{StepID: 2, RawContent: "(no output)"},
			{StepID: 3, RawContent: out}}},
		{"output of", []Turn{
			{StepID: 1, RawContent: out, OutputOf: "cat config/settings.yaml.bak"}}},
		{"code", []Turn{
			{StepID: 1, RawContent: `Bash {"command":"cat auth.txt"}`},
			{StepID: 2, RawContent: "func main() {\n\tfmt.Println(\"backup:Kq7wT2mZ9x\")\n}\n"}}},
	}
	for _, c := range cases {
		for _, twoEvents := range []bool{false, true} {
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if twoEvents {
				for _, tn := range c.turns {
					if _, err := s.FoldBatch([]Turn{tn}); err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := s.FoldBatch(c.turns); err != nil {
				t.Fatal(err)
			}
			if all := dirBytes(t, dir); !strings.Contains(all, "Kq7wT2mZ9x") {
				t.Errorf("%s (two fold events: %v): the value was redacted", c.name, twoEvents)
			}
		}
	}
}

// TestCredentialFileOutputAcrossStores: the command and its output folded
// by two Stores over one directory (two processes: the CLI's fold of one
// turn a call, an MCP server started again): the second reads the
// command from the stored node of the step before. Before, the password
// reached disk.
func TestCredentialFileOutputAcrossStores(t *testing.T) {
	dir := t.TempDir()
	pw := "mirror7sun"
	for _, tn := range []Turn{
		{StepID: 1, RawContent: `Bash {"command":"cat /etc/rsyncd.secrets"}`},
		{StepID: 2, RawContent: "backup:" + pw + "\n"},
	} {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fold(tn); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(dirBytes(t, dir), pw) {
		t.Error("the store holds the password")
	}
}
