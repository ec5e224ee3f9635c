package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamedSecretsReachNoDisk runs the real binary on a secret of each
// class of scrub/named.go (a credential file's lines, a SQL column's
// values, a CDATA section, a TOML multi-line string, a Wi-Fi QR code, a
// token a terminal wrapped, a here-document into passwd): each folded
// (fold --file) and ingested (a transcript) into new stores, every byte
// under them and the command's output searched for the value in any
// letter case. Without named.go every case reached disk.
func TestNamedSecretsReachNoDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	bin := buildBinary(t)
	rng := rand.New(rand.NewPCG(13, 5))
	gen := func() string {
		const al = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
		b := make([]byte, 12)
		for i := range b {
			b[i] = al[rng.IntN(len(al))]
		}
		b[1], b[3], b[5] = '7', 'Q', 'k'
		return string(b)
	}
	type tc struct{ name, text, needle string }
	var cs []tc
	p := gen()
	cs = append(cs, tc{"rsyncd.secrets", "$ sudo cat /etc/rsyncd.secrets\nbackup:" + p + "\n", p})
	p = gen()
	cs = append(cs, tc{"chap-secrets", "# /etc/ppp/chap-secrets\nbob * " + p + " *\n", p})
	p = gen()
	cs = append(cs, tc{"auth-user-pass", "$ cat auth.txt\nbob\n" + p, p})
	p = gen()
	cs = append(cs, tc{"sql insert", "INSERT INTO users (name, email, password) VALUES ('bob', 'b@x.io', '" + p + "');", p})
	p = gen()
	cs = append(cs, tc{"pg_dump copy", "COPY public.users (id, api_key) FROM stdin;\n1\t" + p + "\n\\.\n", p})
	p = gen()
	cs = append(cs, tc{"cdata", "<password><![CDATA[" + p + "]]></password>", p})
	p = gen()
	cs = append(cs, tc{"toml multi-line", "[db]\npassword = \"\"\"\n" + p + "\n\"\"\"\n", p})
	p = gen()
	cs = append(cs, tc{"wifi qr", "WIFI:S:office;T:WPA;P:" + p + ";;", p})
	first, rest := gen(), gen()
	cs = append(cs, tc{"wrapped token", "export GITHUB_TOKEN=ghp_" + first + "\n" + rest + "x9\n", rest})
	p = gen()
	cs = append(cs, tc{"heredoc passwd", "passwd bob <<EOF\n" + p + "\n" + p + "\nEOF\n", p})
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			in := filepath.Join(tmp, "out.log")
			if err := os.WriteFile(in, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			tr, _ := json.Marshal(map[string]any{"messages": []map[string]string{
				{"role": "user", "content": "run it"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": c.text}}})
			trPath := filepath.Join(tmp, "t.json")
			if err := os.WriteFile(trPath, tr, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"--dir", filepath.Join(tmp, "f"), "fold", "1", "tool output", "--file", in},
				{"--dir", filepath.Join(tmp, "i"), "ingest", trPath},
			} {
				out, err := exec.Command(bin, args...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %v\n%s", args[2], err, out)
				}
				disk := append(storeBytes(t, args[1]), out...)
				if bytes.Contains(bytes.ToLower(disk), []byte(strings.ToLower(c.needle))) {
					t.Errorf("%s: %q reached disk; input:\n%s", args[2], c.needle, c.text)
				}
			}
		})
	}
}
