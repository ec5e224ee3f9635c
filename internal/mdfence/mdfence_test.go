package mdfence

import "testing"

func TestFirstShellBlock(t *testing.T) {
	tests := []struct {
		name, text, want string
		ok               bool
	}{
		{"bash", "Let me look.\n```bash\nls -la\n```\n", "ls -la", true},
		{"bare fence", "```\ncat setup.py\n```", "cat setup.py", true},
		{"console", "```console\n  make test \n```", "make test", true},
		{"python block skipped", "```python\nprint(1)\n```\nthen\n```sh\npytest\n```", "pytest", true},
		{"empty block skipped", "```bash\n\n```\n```bash\ngit status\n```", "git status", true},
		{"unterminated", "```bash\nls", "", false},
		{"fence without newline", "text ```bash", "", false},
		{"no fence", "just words", "", false},
		{"multi-line body", "```bash\ncd src\nmake\n```", "cd src\nmake", true},
	}
	for _, tc := range tests {
		got, ok := FirstShellBlock(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: FirstShellBlock = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
