package match

import (
	"slices"
	"testing"
)

func TestProgramsOf(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{"curl http://web.example.test:8000", []string{"curl"}},
		{"curl -X POST -F 'file=@a.pl' http://host/cgi-bin/file.pl", []string{"curl"}},
		{"cd reproduction && make html", []string{"make html"}},
		{"sed -i 's/a/b/' x.py && cd docs && make -j4 html && grep str _build/index.html", []string{"sed", "make html", "grep"}},
		{"python reproduce_issue.py --verbose", []string{"python reproduce_issue.py"}},
		{"PYTHONPATH=. timeout 60 /usr/bin/python3 -u repro.py", []string{"python3 repro.py"}},
		{"sudo env FOO=1 go test ./...", []string{"go test"}},
		{"python -m pytest -x tests/", []string{"python pytest"}},
		{"cat <<'EOF' > a.py", []string{"cat"}},
		{"python -c \"print(1)\"", []string{"python"}},
		{"ls -la /testbed | head -5", []string{"ls", "head"}},
		{"export A=1; source venv/bin/activate", nil},
		{"", nil},
	} {
		if got := programsOf(c.cmd); !slices.Equal(got, c.want) {
			t.Errorf("programsOf(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
}
