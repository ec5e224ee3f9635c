package extract

import (
	"reflect"
	"testing"
)

// TestFilePaths: the files our own derived data names, where the reference
// extraction (Files, unchanged) invents names.
func TestFilePaths(t *testing.T) {
	for text, want := range map[string][]string{
		"see README.rst and docs/index.rst":                      {"README.rst", "docs/index.rst"},
		"pip install -i https://pip.pypa.io/simple requests":     nil,
		"docs at pip.pypa.io, code in requests.py":               {"requests.py"},
		`"C:\\src\\requests.py" and "\nrequests/api.py"`:         {"C:/src/requests.py", "requests/api.py"},
		"ping 172.16.1.1/-172.16.1.1 and 10.0.0.1":               nil,
		"-v/r/n0.55.1 --config=pkg/app.yaml":                     {"pkg/app.yaml"},
		"FAIL pkg/handler_14.go:42:7: undefined: x":              {"pkg/handler_14.go"},
		"edited (src/libponyc/expr/match.c) and Makefile":        {"src/libponyc/expr/match.c"},
		"version 0.55.1 built; see CHANGELOG.md.":                {"CHANGELOG.md"},
		"config.json, setup.cfg; tests/test_api.py::test_get ok": {"config.json", "setup.cfg", "tests/test_api.py"},
	} {
		if got := FilePaths(text); !reflect.DeepEqual(got, want) {
			t.Errorf("FilePaths(%q) = %q, want %q", text, got, want)
		}
	}
	// The reference extraction stays as it is (interop).
	if got := Files("README.rst pip.pypa.io"); !reflect.DeepEqual(got, []string{"README.rs", "pip.py"}) {
		t.Errorf("Files changed: %q", got)
	}
}
