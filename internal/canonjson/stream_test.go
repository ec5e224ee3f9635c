package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestStreamingEncodersMatch: WritePretty writes exactly Pretty's bytes and
// CanonicalSHA256 is the SHA-256 of Canonical's bytes, for documents small
// and larger than the stream buffer, and they report the same
// errors.
func TestStreamingEncodersMatch(t *testing.T) {
	big := strings.Repeat("line \"q\" \\ \x01 é\n", 20000) // > 64 KiB, escapes across buffer ends
	docs := []any{
		nil, true, "x", 42, json.Number("1.50"), []string{}, map[string]any{},
		map[string]any{"raw_content": big, "identifiers": []string{"a", big[:70000]}, "n": []any{1, "b", map[string]any{"k": []int{3}}}, "r": Raw(`{"x": 1}`)},
	}
	for i, d := range docs {
		p, err := Pretty(d)
		if err != nil {
			t.Fatal(err)
		}
		var w bytes.Buffer
		if err := WritePretty(&w, d); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), p) {
			t.Errorf("doc %d: WritePretty differs from Pretty (%d vs %d bytes)", i, w.Len(), len(p))
		}
		c, err := Canonical(d)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := CanonicalSHA256(d)
		if err != nil {
			t.Fatal(err)
		}
		if sum != sha256.Sum256(c) {
			t.Errorf("doc %d: CanonicalSHA256 is not the hash of Canonical", i)
		}
	}
	bad := map[string]any{"x": struct{}{}}
	var ute *UnsupportedTypeError
	if _, err := CanonicalSHA256(bad); !errors.As(err, &ute) {
		t.Errorf("CanonicalSHA256 of an unsupported type: %v", err)
	}
	if err := WritePretty(&bytes.Buffer{}, bad); !errors.As(err, &ute) {
		t.Errorf("WritePretty of an unsupported type: %v", err)
	}
}

// TestCanonicalSHA256Except: the hash of an object without a key is the hash
// of the object with that key removed (and of the whole object when the key
// is absent).
func TestCanonicalSHA256Except(t *testing.T) {
	doc := map[string]any{"b": []any{"x", json.Number("2")}, "artifact_sha256": "f00", "a": map[string]any{"artifact_sha256": 1}}
	got, err := CanonicalSHA256Except(doc, "artifact_sha256")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := CanonicalSHA256(map[string]any{"b": []any{"x", json.Number("2")}, "a": map[string]any{"artifact_sha256": 1}})
	if got != want {
		t.Fatal("hash without the key differs from the hash of the copy without it")
	}
	if got, _ := CanonicalSHA256Except(doc, "absent"); got != mustSum(t, doc) {
		t.Fatal("hash without an absent key differs from the whole object's")
	}
	if got, _ := CanonicalSHA256Except(map[string]any{"k": 1}, "k"); got != mustSum(t, map[string]any{}) {
		t.Fatal("an object whose only key is skipped must hash as {}")
	}
	if _, err := CanonicalSHA256Except(map[string]any{"k": struct{}{}}, "x"); err == nil {
		t.Fatal("an unsupported value must be an error")
	}
}

func mustSum(t *testing.T, v any) [sha256.Size]byte {
	t.Helper()
	s, err := CanonicalSHA256(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
