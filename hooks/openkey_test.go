package hooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/hooks"
)

// TestPrivateKeyOpenAcrossStops: a private key a tool output shows in
// three parts (its BEGIN line and first lines, plain base64 lines, the
// last lines and its END line), the parts folded by three Stop hook
// processes, the real binary: no line of the key reaches the store, and
// the state file holds none of it (only that a key is open, and since
// which step). Before, the second Stop started with no memory of the key
// the first left open, and stored its middle part (plain base64, no secret
// by itself) and its last part in clear. PEM and PuTTY.
func TestPrivateKeyOpenAcrossStops(t *testing.T) {
	line := func(i int) string { // 64 base64 characters, none of them a word
		return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64]
	}
	for name, parts := range map[string][3]string{
		"pem": {
			"$ head -c 140 id_ed25519\n-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + line(1) + "\n" + line(2),
			"$ sed -n 4,5p id_ed25519\n" + line(3) + "\n" + line(4) + "\n",
			line(5) + "\n" + line(6)[:20] + "==\n-----END OPENSSH PRIVATE" + " KEY-----\n",
		},
		"putty": {
			"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5\nPrivate-Lines: 5\n" + line(1) + "\n" + line(2),
			line(3) + "\n" + line(4) + "\n",
			line(5)[:30] + "\nPrivate-MAC: 0f1e2d3c\n",
		},
	} {
		for lost, how := range []string{"", ", state lost", ", state lost, then a Stop with nothing new"} {
			t.Run(name+how, func(t *testing.T) { privateKeyAcrossStops(t, name, parts, lost, line) })
		}
	}
}

// privateKeyAcrossStops is a run of TestPrivateKeyOpenAcrossStops. With
// lost 1, each Stop after the first finds no state file (removed, or a
// rewrite detected: the transcript is read whole) and must learn the key
// the stored turns left open from the transcript itself; with lost 2, a
// Stop with nothing new reads the transcript whole first, and the state
// it saves must keep the key open for the next.
func privateKeyAcrossStops(t *testing.T, name string, parts [3]string, lost int, line func(int) string) {
	dir := filepath.Join(t.TempDir(), "store")
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	n := 0
	rec := func(typ string, content any) []byte {
		n++
		b, _ := json.Marshal(map[string]any{"type": typ, "uuid": fmt.Sprintf("k-%d", n), "sessionId": "s-inc",
			"timestamp": "2026-03-02T11:00:00.000Z", "message": map[string]any{"role": typ, "content": content}})
		return append(b, '\n')
	}
	var data []byte
	data = append(data, rec("user", "show me the deploy key")...)
	for i, p := range parts {
		if lost > 0 && i > 0 {
			if err := os.Remove(filepath.Join(dir, hooks.StateFile)); err != nil {
				t.Fatal(err)
			}
			if lost == 2 {
				stopBin(t, dir, tr)
			}
		}
		id := fmt.Sprintf("toolu_k%d", i)
		data = append(data, rec("assistant", []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("read part %d of the key", i+1)}}})...)
		data = append(data, rec("user", []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": p}})...)
		if err := os.WriteFile(tr, data, 0o600); err != nil {
			t.Fatal(err)
		}
		stopBin(t, dir, tr)
	}
	data = append(data, rec("user", "and now "+line(9)+" is a base64 line that is no key")...)
	if err := os.WriteFile(tr, data, 0o600); err != nil {
		t.Fatal(err)
	}
	stopBin(t, dir, tr)
	files := storeFiles(t, dir)
	state, _ := os.ReadFile(filepath.Join(dir, hooks.StateFile))
	files[hooks.StateFile] = string(state)
	for i := 1; i <= 6; i++ {
		if name == "putty" && i > 5 {
			break
		}
		for p, b := range files {
			if strings.Contains(b, line(i)[:20]) {
				t.Errorf("key line %d reached %s", i, p)
			}
		}
	}
	all := ""
	for _, b := range files {
		all += b
	}
	if !strings.Contains(all, line(9)) {
		t.Errorf("the base64 line after the closed key was redacted")
	}
}
